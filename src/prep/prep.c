/* prep.c — the preparation pool of prep.h: worker threads that claim files
 * in input order, reserve decoded-PCM memory in input order, decode and
 * segment, and post results into a ring that the consumer drains in order
 * (or, with any_order, lowest ready file first).
 * The per-file steps are in prep_file.c. docs/PREP.md explains the design.
 *
 * All shared state is guarded by one mutex; workers wait on cv_work (a slot
 * in the look-ahead, memory, a VAD turn), the consumer on cv_done.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"
#include "core/tasks.h"
#include "core/trace.h"
#include "compute/cpu/blas_budget.h"
#include "prep/prep_internal.h"
#include "vad/silero.h"

struct ct_prep {
    ct_prep_options o;
    char **paths;
    size_t n;
    ct_silero *owned_silero;
    const ct_silero *silero;
    ct_tasks *tasks; /* split helpers (NULL: none) */
    int vad_stream;  /* the VAD may follow the decode (room for the streams' threads) */

    pthread_mutex_t mu;
    pthread_cond_t cv_work; /* workers: claim, admission, VAD turn, upgrade */
    pthread_cond_t cv_done; /* consumer: the next item is posted */
    atomic_int cancel;

    /* Files [next_consume, next_claim) are claimed and not yet consumed; at
     * most L of them, so file i lives in ring[i % L] once posted. */
    ct_prep_item **ring;
    uint64_t *ring_bytes; /* PCM bytes each posted item holds */
    size_t L;
    size_t next_claim;   /* the next file a worker takes */
    size_t next_admit;   /* the next file allowed to reserve memory (in order) */
    size_t next_consume; /* the first file ct_prep_next has not returned */
    unsigned char *consumed; /* per file: returned (any_order returns files after next_consume too) */
    uint64_t gen;        /* bumped when claims after a file are rewound */
    uint64_t held;       /* reservations of admitted decodes + posted PCM */
    int busy;            /* admitted, not yet posted (upgrade waiters excluded) */
    int upgrade_waiters; /* workers waiting to re-decode under the full cap */
    int vad_running;

    /* statistics (under mu) */
    uint64_t peak_held;
    size_t peak_files, redecodes, posted;
    double decode_s, vad_s, wait_s;
    size_t vad_streamed;

    int nthreads;
    pthread_t *threads;
};

static int cancelled(const ct_prep *p) { return atomic_load(&p->cancel) != 0; }

static void note_peaks(ct_prep *p) {
    if (p->held > p->peak_held) p->peak_held = p->held;
    size_t files = p->next_claim - p->next_consume;
    if (files > p->peak_files) p->peak_files = files;
}

/* Re-decode file i under the whole cap after a decode under its estimate hit
 * the estimate (the container understated its length). Waits until every
 * earlier file is consumed and nothing else is decoding, then drops the
 * finished files after i (they would otherwise hold memory that file i
 * needs while they cannot be consumed before it) and rewinds the claims to
 * i + 1 so that they are prepared again. Called and returns with mu held;
 * returns 0 when the claim was dropped (cancel or an earlier rewind). */
static int upgrade(ct_prep *p, size_t i, uint64_t *gen, uint64_t *r) {
    p->held -= *r;
    p->busy--;
    p->upgrade_waiters++;
    pthread_cond_broadcast(&p->cv_work);
    while (!cancelled(p) && p->gen == *gen && (p->next_consume != i || p->busy > 0))
        pthread_cond_wait(&p->cv_work, &p->mu);
    p->upgrade_waiters--;
    if (cancelled(p) || p->gen != *gen) {
        pthread_cond_broadcast(&p->cv_work);
        return 0;
    }
    for (size_t j = i + 1; j < p->next_admit; j++) {
        size_t slot = j % p->L;
        if (!p->ring[slot]) continue;
        p->held -= p->ring_bytes[slot];
        ct_prep_item_free(p->ring[slot]);
        p->ring[slot] = NULL;
        p->ring_bytes[slot] = 0;
    }
    p->gen++;
    *gen = p->gen;
    p->next_claim = p->next_admit = i + 1;
    *r = p->o.memory_cap_bytes;
    p->held += *r;
    p->busy++;
    p->redecodes++;
    note_peaks(p);
    pthread_cond_broadcast(&p->cv_work);
    return 1;
}

/* Decode and segment file i, admitted with reservation *rp (raised to the
 * cap by an upgrade). Called without mu, returns with mu held. Returns the
 * item to post, or NULL when the file was dropped (cancel or rewind); its
 * reservation is then already released. A declined file (the admit hook)
 * comes back undecoded at once. */
static ct_prep_item *prepare(ct_prep *p, size_t i, uint64_t g, uint64_t *rp, int declined) {
    uint64_t r = *rp;
    const uint64_t cap = p->o.memory_cap_bytes;
    ct_prep_item *it = NULL;
    ct_status s = ct_prep_item_new(p->paths[i], i, &it);
    if (s != CT_OK) { /* out of memory for the item itself: the whole run fails */
        pthread_mutex_lock(&p->mu);
        p->held -= r;
        p->busy--;
        atomic_store(&p->cancel, 1);
        CT_LOGE("prep: %s", ct_last_error());
        pthread_cond_broadcast(&p->cv_work);
        pthread_cond_broadcast(&p->cv_done);
        return NULL;
    }
    if (declined) { /* the admit hook said no: not decoded (prep.h) */
        it->not_admitted = 1;
        pthread_mutex_lock(&p->mu);
        if (cancelled(p)) {
            p->held -= r;
            p->busy--;
            pthread_cond_broadcast(&p->cv_work);
            ct_prep_item_free(it);
            return NULL;
        }
        return it;
    }
    double t0 = ct_now();
    ct_prep_vad_feed feed = {0}; /* the VAD follows the decode (prep_internal.h) */
    ct_prep_vad_feed_open(&feed, &p->o, p->silero, p->vad_stream ? p->tasks : NULL);
    s = ct_prep_decode(it->path, &p->o, r, &p->cancel, p->tasks, &feed, &it->audio);
    if (s == CT_ERR_LIMIT && r < cap && !cancelled(p)) {
        ct_prep_vad_feed_clear(&feed);
        pthread_mutex_lock(&p->mu);
        if (!upgrade(p, i, &g, &r)) {
            ct_prep_item_free(it);
            return NULL;
        }
        pthread_mutex_unlock(&p->mu);
        *rp = r;
        t0 = ct_now();
        ct_prep_vad_feed_open(&feed, &p->o, p->silero, p->vad_stream ? p->tasks : NULL);
        s = ct_prep_decode(it->path, &p->o, r, &p->cancel, p->tasks, &feed, &it->audio);
    }
    double t1 = ct_now();
    it->decode_seconds = t1 - t0;
    ct_trace_span("decode", t0, t1, ct_trace_file(it->path), "\"file\":%zu,\"audio_s\":%.3f", it->index,
                  s == CT_OK ? (double)it->audio->n / CT_AUDIO_SAMPLE_RATE : 0.0);
    /* --vad-threads: at most that many workers run the network at once. */
    int vad_turn = s == CT_OK && p->o.vad_threads > 0;
    if (vad_turn) {
        pthread_mutex_lock(&p->mu);
        while (!cancelled(p) && p->vad_running >= p->o.vad_threads) pthread_cond_wait(&p->cv_work, &p->mu);
        p->vad_running++;
        pthread_mutex_unlock(&p->mu);
    }
    if (s == CT_OK && !cancelled(p)) {
        t1 = ct_now();
        /* --vad-threads bounds the threads running the network: its files
         * are not split over the helpers */
        s = ct_prep_segment(it, &p->o, p->silero, p->o.vad_threads > 0 ? NULL : p->tasks, &feed);
        double t2 = ct_now();
        it->vad_seconds = t2 - t1;
        ct_trace_span("vad", t1, t2, ct_trace_file(it->path), "\"file\":%zu,\"segments\":%zu,\"streamed\":%d",
                      it->index, s == CT_OK ? it->vad.n_segments : 0, it->vad_streamed);
    }
    ct_prep_vad_feed_clear(&feed); /* a failed or cancelled decode's stream */
    if (s != CT_OK) ct_prep_item_set_error(it, s);
    pthread_mutex_lock(&p->mu);
    if (vad_turn) {
        p->vad_running--;
        pthread_cond_broadcast(&p->cv_work);
    }
    if (cancelled(p)) { /* a cancelled decode is no file error: drop it */
        p->held -= r;
        p->busy--;
        pthread_cond_broadcast(&p->cv_work);
        ct_prep_item_free(it);
        return NULL;
    }
    return it;
}

static void *worker(void *arg) {
    ct_prep *p = arg;
    ct_trace_thread("prep worker");
    const uint64_t cap = p->o.memory_cap_bytes;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        /* Claim the next file while the look-ahead has room. */
        while (!cancelled(p) && p->next_claim < p->n &&
               (p->next_claim - p->next_consume >= p->L || p->upgrade_waiters > 0))
            pthread_cond_wait(&p->cv_work, &p->mu);
        if (cancelled(p) || p->next_claim >= p->n) break;
        size_t i = p->next_claim++;
        uint64_t g = p->gen;
        /* any_order: a rewind (upgrade) re-claims files after i that the
         * consumer may already hold; they only pass admission, in order */
        int skip = p->consumed[i];
        note_peaks(p);
        pthread_mutex_unlock(&p->mu);

        /* the admit hook (prep.h) before anything opens the file: a file
         * it declines needs no estimate and no reservation */
        int declined = !skip && p->o.admit && p->o.admit(p->o.admit_user, i);
        uint64_t r = skip || declined ? 0 : ct_prep_estimate_bytes(p->paths[i], cap);

        /* Admission strictly in input order: everything holding memory is
         * then an earlier file, which is consumed or finishes without waiting
         * for this one, so the wait always ends. */
        pthread_mutex_lock(&p->mu);
        while (!cancelled(p) && p->gen == g &&
               (p->next_admit != i || p->upgrade_waiters > 0 || p->held + r > cap))
            pthread_cond_wait(&p->cv_work, &p->mu);
        if (cancelled(p)) break;
        if (p->gen != g) continue; /* rewound: someone claims file i again */
        if (skip) {
            p->next_admit++;
            pthread_cond_broadcast(&p->cv_work);
            continue;
        }
        p->next_admit++;
        p->held += r;
        p->busy++;
        note_peaks(p);
        pthread_cond_broadcast(&p->cv_work);
        pthread_mutex_unlock(&p->mu);

        ct_prep_item *it = prepare(p, i, g, &r, declined); /* returns with mu held */
        if (!it) continue;
        /* The decode was capped at the reservation r, so the samples fit in
         * it: swap the reservation for what the file really holds. */
        uint64_t bytes = it->audio ? (uint64_t)it->audio->n * sizeof(float) : 0;
        p->held = p->held - r + bytes;
        size_t slot = i % p->L;
        p->ring[slot] = it;
        p->ring_bytes[slot] = bytes;
        it->finish_rank = p->posted++;
        p->busy--;
        p->decode_s += it->decode_seconds;
        p->vad_s += it->vad_seconds;
        p->vad_streamed += (size_t)it->vad_streamed;
        pthread_cond_broadcast(&p->cv_work);
        pthread_cond_broadcast(&p->cv_done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void destroy(ct_prep *p) {
    if (p->ring)
        for (size_t k = 0; k < p->L; k++) ct_prep_item_free(p->ring[k]);
    free(p->ring);
    free(p->ring_bytes);
    free(p->consumed);
    if (p->paths)
        for (size_t k = 0; k < p->n; k++) free(p->paths[k]);
    free(p->paths);
    ct_tasks_free(p->tasks);
    ct_silero_free(p->owned_silero);
    pthread_cond_destroy(&p->cv_done);
    pthread_cond_destroy(&p->cv_work);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p);
}

static void join_all(ct_prep *p) {
    ct_prep_cancel(p);
    for (int t = 0; t < p->nthreads; t++) pthread_join(p->threads[t], NULL);
    p->nthreads = 0;
}

ct_status ct_prep_create(const char *const *paths, size_t n, const ct_prep_options *o, ct_prep **out) {
    if (!out) return ct_fail(CT_ERR_INVALID_ARG, "ct_prep_create: NULL argument");
    *out = NULL;
    if (!o || (n && !paths)) return ct_fail(CT_ERR_INVALID_ARG, "ct_prep_create: NULL argument");
    CT_TRY(ct_prep_check_options(o));
    for (size_t k = 0; k < n; k++)
        if (!paths[k]) return ct_fail(CT_ERR_INVALID_ARG, "ct_prep_create: path %zu is NULL", k);
    ct_prep *p = calloc(1, sizeof *p);
    if (!p) return ct_fail(CT_ERR_OOM, "prep: out of memory");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_work, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    atomic_init(&p->cancel, 0);
    p->o = *o;
    p->o.silero_path = NULL; /* not kept: the caller's string may go */
    p->n = n;

    int workers = o->workers;
    if (workers <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        workers = ct_prep_auto_workers(cores > 0 && cores < 4096 ? (int)cores : 1);
    }
    if (n && (size_t)workers > n) workers = (int)n; /* no idle threads */
    p->L = o->lookahead > 0 ? (size_t)o->lookahead : 2 * (size_t)workers + 2;
    p->o.workers = workers;
    p->o.lookahead = (int)p->L;

    ct_status s = CT_OK;
    p->paths = calloc(n ? n : 1, sizeof *p->paths);
    p->ring = calloc(p->L, sizeof *p->ring);
    p->ring_bytes = calloc(p->L, sizeof *p->ring_bytes);
    p->threads = calloc((size_t)workers, sizeof *p->threads);
    p->consumed = calloc(n ? n : 1, 1);
    if (!p->paths || !p->ring || !p->ring_bytes || !p->threads || !p->consumed)
        s = ct_fail(CT_ERR_OOM, "prep: out of memory");
    for (size_t k = 0; k < n && s == CT_OK; k++)
        if (!(p->paths[k] = strdup(paths[k]))) s = ct_fail(CT_ERR_OOM, "prep: out of memory");
    if (s == CT_OK && o->vad.mode == CT_VAD_SILERO && n) {
        if (o->silero) {
            p->silero = o->silero;
        } else if (o->silero_path) {
            s = ct_silero_load(o->silero_path, &p->owned_silero);
            p->silero = p->owned_silero;
        } else {
            s = ct_fail(CT_ERR_INVALID_ARG, "prep: Silero VAD needs its weights (silero or silero_path)");
        }
    }
    if (s != CT_OK) {
        destroy(p);
        return s;
    }
    p->o.silero = p->silero;
    int split = o->split_threads;
    if (split == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        split = ct_prep_auto_split_threads(cores > 0 && cores < 4096 ? (int)cores : 1);
    }
    /* Under an address-space limit every thread that may call cblas at once
     * needs its OpenBLAS buffer mapped up front (blas_budget.h); when the
     * helpers' do not fit, the files run unsplit (same results, slower).
     * Each worker's VAD stream adds its recurrence thread (prep_internal.h):
     * without room for those, the VAD runs after the decode. */
    p->vad_stream = split > 0;
    if (split > 0 && n && o->vad.mode == CT_VAD_SILERO && ct_blas_reserve(2 * workers + split) != CT_OK) {
        p->vad_stream = 0;
        if (ct_blas_reserve(workers + split) != CT_OK) {
            CT_LOGD("prep: no room for %d split helpers' BLAS buffers: %s", split, ct_last_error());
            split = 0;
        }
    }
    if (split > 0 && n) {
        s = ct_tasks_create(split, &p->tasks);
        if (s != CT_OK) {
            destroy(p);
            return s;
        }
    }
    p->o.split_threads = p->tasks ? ct_tasks_threads(p->tasks) : -1;
    for (int t = 0; t < workers && n; t++) {
        int e = pthread_create(&p->threads[t], NULL, worker, p);
        if (e) {
            s = ct_fail(CT_ERR_INTERNAL, "prep: cannot start worker thread %d: %s", t, strerror(e));
            break;
        }
        p->nthreads++;
    }
    if (s != CT_OK) {
        join_all(p);
        destroy(p);
        return s;
    }
    *out = p;
    return CT_OK;
}

/* The file ct_prep_next returns now, or n when none is ready: next_consume
 * when posted; with any_order the lowest posted file of the window (files
 * [next_consume, next_claim) occupy distinct ring slots, and a posted slot
 * in the window is never a returned file). Called with mu held. */
static size_t ready_file(const ct_prep *p) {
    size_t end = p->o.any_order ? p->next_claim : p->next_consume + 1;
    for (size_t i = p->next_consume; i < end && i < p->n; i++)
        if (p->ring[i % p->L]) return i;
    return p->n;
}

ct_status ct_prep_next(ct_prep *p, ct_prep_item **out) {
    if (!p || !out) return ct_fail(CT_ERR_INVALID_ARG, "ct_prep_next: NULL argument");
    *out = NULL;
    pthread_mutex_lock(&p->mu);
    double t0 = ct_now();
    size_t i = p->n;
    while (!cancelled(p) && p->next_consume < p->n && (i = ready_file(p)) == p->n)
        pthread_cond_wait(&p->cv_done, &p->mu);
    p->wait_s += ct_now() - t0;
    if (cancelled(p)) {
        pthread_mutex_unlock(&p->mu);
        return ct_fail(CT_ERR_ABORTED, "audio preparation cancelled");
    }
    if (p->next_consume < p->n) {
        size_t slot = i % p->L;
        *out = p->ring[slot];
        p->ring[slot] = NULL;
        p->held -= p->ring_bytes[slot];
        p->ring_bytes[slot] = 0;
        p->consumed[i] = 1;
        while (p->next_consume < p->n && p->consumed[p->next_consume]) p->next_consume++;
        pthread_cond_broadcast(&p->cv_work);
    }
    pthread_mutex_unlock(&p->mu);
    return CT_OK;
}

void ct_prep_cancel(ct_prep *p) {
    if (!p) return;
    atomic_store(&p->cancel, 1);
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->cv_work);
    pthread_cond_broadcast(&p->cv_done);
    pthread_mutex_unlock(&p->mu);
}

void ct_prep_free(ct_prep *p) {
    if (!p) return;
    join_all(p);
    destroy(p);
}

void ct_prep_get_stats(ct_prep *p, ct_prep_stats *st) {
    memset(st, 0, sizeof *st);
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    st->workers = p->o.workers;
    st->lookahead = (int)p->L;
    st->split_threads = p->o.split_threads;
    st->memory_cap_bytes = p->o.memory_cap_bytes;
    st->held_bytes = p->held;
    st->peak_held_bytes = p->peak_held;
    st->peak_files = p->peak_files;
    st->redecodes = p->redecodes;
    st->decode_seconds = p->decode_s;
    st->vad_seconds = p->vad_s;
    st->vad_streamed = p->vad_streamed;
    st->consumer_wait_seconds = p->wait_s;
    pthread_mutex_unlock(&p->mu);
}
