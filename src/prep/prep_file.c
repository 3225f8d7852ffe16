/* prep_file.c — preparing one file without threads: options, the reservation
 * estimate from a probe, decode + segment into a ct_prep_item. The pool in
 * prep.c runs exactly these steps in its workers, so the sequential path and
 * the pool give bit-identical results.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "core/log.h"
#include "prep/prep_internal.h"
#include "vad/silero.h"

ct_prep_options ct_prep_default_options(void) {
    return (ct_prep_options){
        .workers = 0,
        .lookahead = 0,
        .memory_cap_bytes = (uint64_t)4 << 30,
        .backend = CT_AUDIO_BACKEND_AUTO,
        .resampler = CT_AUDIO_RESAMPLER_AUTO,
        .split_threads = 0,
        .decode_deadline_seconds = 0,
        .vad = ct_vad_default_options(),
        .silero = NULL,
        .silero_path = NULL,
        .vad_batch_size = 16,
        .vad_block_frames = 512,
        .vad_threads = 0,
    };
}

ct_status ct_prep_check_options(const ct_prep_options *o) {
    if (!o) return ct_fail(CT_ERR_INVALID_ARG, "prep: NULL options");
    if (o->memory_cap_bytes < sizeof(float))
        return ct_fail(CT_ERR_INVALID_ARG, "--audio-memory-gb must be finite and positive");
    if (o->workers < 0) return ct_fail(CT_ERR_INVALID_ARG, "--preprocess-workers must be positive");
    if (o->vad_batch_size <= 0 || o->vad_block_frames <= 0)
        return ct_fail(CT_ERR_INVALID_ARG, "--vad-batch-size and --vad-block-frames must be positive");
    if (o->vad.mode == CT_VAD_SILERO && (int64_t)o->vad_batch_size * o->vad_block_frames > 32768)
        return ct_fail(CT_ERR_INVALID_ARG, "--vad-batch-size * --vad-block-frames must not exceed 32768 frames");
    if (o->vad_threads < 0) return ct_fail(CT_ERR_INVALID_ARG, "--vad-threads must be positive");
    if (o->vad_threads > 0 && o->vad.mode != CT_VAD_SILERO)
        return ct_fail(CT_ERR_INVALID_ARG, "--vad-threads applies only to Silero VAD");
    return ct_vad_check_options(&o->vad);
}

int ct_prep_auto_split_threads(int cores) { return cores > 2 ? cores - 1 : 1; }

int ct_prep_auto_workers(int cores) {
    int w = cores - 1;
    if (w < 1) w = 1;
    if (w > 8) w = 8;
    return w;
}

void ct_prep_item_free(ct_prep_item *it) {
    if (!it) return;
    ct_audio_free(it->audio);
    ct_vad_result_free(&it->vad);
    free(it->path);
    free(it);
}

ct_status ct_prep_item_new(const char *path, size_t index, ct_prep_item **out) {
    *out = NULL;
    ct_prep_item *it = calloc(1, sizeof *it);
    char *p = strdup(path);
    if (!it || !p) {
        free(it);
        free(p);
        return ct_fail(CT_ERR_OOM, "prep: out of memory");
    }
    it->path = p;
    it->index = index;
    *out = it;
    return CT_OK;
}

void ct_prep_item_set_error(ct_prep_item *it, ct_status s) {
    it->status = s;
    snprintf(it->error, sizeof it->error, "%s", ct_last_error());
    ct_audio_free(it->audio);
    it->audio = NULL;
    ct_vad_result_free(&it->vad);
}

uint64_t ct_prep_estimate_bytes(const char *path, uint64_t cap) {
    ct_audio_info info;
    /* An unreadable file fails its decode quickly; a small reservation keeps
     * it from holding up the others (and if the decoder reads it after all,
     * the pool decodes it again under the full cap). */
    if (ct_audio_probe(path, &info) != CT_OK) return cap < (1u << 20) ? cap : (1u << 20);
    if (!(info.duration >= 0) || !isfinite(info.duration)) return cap;
    /* The claim plus slack for codec padding and resampler delay: 1 % and
     * 1 s exact, 25 % and 1 s when FFmpeg guessed from the bitrate. */
    double slack = info.duration_estimated ? 1.25 : 1.01;
    double bytes = (ceil(info.duration * CT_AUDIO_SAMPLE_RATE) * slack + CT_AUDIO_SAMPLE_RATE) * sizeof(float);
    if (bytes >= (double)cap) return cap;
    uint64_t b = (uint64_t)bytes;
    return b < sizeof(float) ? sizeof(float) : b;
}

void ct_prep_vad_feed_clear(ct_prep_vad_feed *feed) {
    if (!feed) return;
    ct_silero_stream_free(feed->st);
    feed->st = NULL;
    feed->fed = 0;
}

void ct_prep_vad_feed_open(ct_prep_vad_feed *feed, const ct_prep_options *o, const ct_silero *silero,
                           struct ct_tasks *tasks) {
    ct_prep_vad_feed_clear(feed);
    if (!tasks || !silero || o->vad.mode != CT_VAD_SILERO || o->vad_threads > 0) return;
    if (ct_silero_stream_open(silero, tasks, &feed->st) != CT_OK) {
        CT_LOGD("prep: no VAD stream (%s): the VAD runs after the decode", ct_last_error());
        feed->st = NULL;
    }
}

static void feed_samples(void *user, const float *x, size_t first, size_t k) {
    ct_prep_vad_feed *feed = user;
    if (!feed->st) return;
    if (first != feed->fed || ct_silero_stream_feed(feed->st, x, k) != CT_OK) {
        ct_prep_vad_feed_clear(feed); /* started over, or failed: the VAD runs after the decode */
        return;
    }
    feed->fed += k;
}

ct_status ct_prep_decode(const char *path, const ct_prep_options *o, uint64_t cap,
                         const atomic_int *cancel, struct ct_tasks *tasks, ct_prep_vad_feed *feed,
                         ct_audio **out) {
    ct_audio_options ao = ct_audio_default_options();
    if (feed && feed->st) {
        ao.on_samples = feed_samples;
        ao.on_samples_user = feed;
    }
    ao.backend = o->backend;
    ao.resampler = o->resampler;
    ao.tasks = tasks;
    ao.memory_cap_bytes = cap;
    ao.cancel_flag = cancel;
    ao.deadline_seconds = o->decode_deadline_seconds;
    CT_TRY(ct_audio_decode(path, &ao, out));
    /* Trim the buffer to the samples so that the bytes the pool accounts for
     * are the bytes allocated (a shrinking realloc keeps the values). */
    ct_audio *a = *out;
    if (a->n) {
        float *p = realloc(a->samples, a->n * sizeof(float));
        if (p) a->samples = p;
    }
    return CT_OK;
}

ct_status ct_prep_segment(ct_prep_item *it, const ct_prep_options *o, const ct_silero *silero,
                          struct ct_tasks *tasks, ct_prep_vad_feed *feed) {
    const ct_audio *a = it->audio;
    if (feed && feed->st && feed->fed == a->n) {
        float *probs = NULL;
        ct_status s = ct_silero_stream_finish(feed->st, a->n, &probs);
        ct_prep_vad_feed_clear(feed);
        if (s == CT_OK) {
            s = ct_vad_segment_probs(probs, ct_silero_frame_count(a->n), a->n, &o->vad, &it->vad);
            free(probs);
            if (s != CT_OK) return ct_fail_wrap(s, "%s: segmentation", it->path);
            it->vad_streamed = 1;
            return CT_OK;
        }
        CT_LOGD("prep: %s: VAD stream: %s; the VAD runs after the decode", it->path, ct_last_error());
    }
    ct_prep_vad_feed_clear(feed);
    ct_status s = ct_vad_segment_tasks(a->samples, a->n, &o->vad, silero, tasks, &it->vad);
    if (s != CT_OK) return ct_fail_wrap(s, "%s: segmentation", it->path);
    return CT_OK;
}

ct_status ct_prep_file(const char *path, size_t index, const ct_prep_options *o, const ct_silero *silero,
                       ct_prep_item **out) {
    CT_TRY(ct_prep_item_new(path, index, out));
    ct_prep_item *it = *out;
    double t0 = ct_now();
    ct_status s = ct_prep_decode(path, o, o->memory_cap_bytes, NULL, NULL, NULL, &it->audio);
    double t1 = ct_now();
    it->decode_seconds = t1 - t0;
    if (s == CT_OK) {
        s = ct_prep_segment(it, o, silero, NULL, NULL);
        it->vad_seconds = ct_now() - t1;
    }
    if (s != CT_OK) ct_prep_item_set_error(it, s);
    return CT_OK;
}
