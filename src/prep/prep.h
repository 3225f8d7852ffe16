/* prep.h — audio preparation ahead of the model: a pool of worker threads
 * that decode (audio/audio.h) and segment (vad/vad.h) an ordered list of
 * files and hand the results to one consumer in input order.
 *
 * What it guarantees (docs/PREP.md gives the reasons):
 * - order: ct_prep_next returns file 0, 1, 2, ... whatever order the
 *   workers finish in;
 * - per-file errors: a file that cannot be decoded or segmented becomes an
 *   item with status and message; the pool goes on with the next file;
 * - memory: decoded PCM held by the pool (decodes in flight, by their
 *   reservation, plus finished files not yet taken by the consumer) never
 *   exceeds memory_cap_bytes; a file over the cap by itself is that file's
 *   CT_ERR_LIMIT from ct_audio; files the consumer has taken are its own;
 * - look-ahead: at most `lookahead` files are in flight or waiting;
 * - cancellation: ct_prep_cancel stops decodes promptly (ct_audio polls the
 *   flag); ct_prep_free cancels, joins the workers and frees what is left.
 * The Silero model is loaded once and shared read-only; the LSTM state is
 * per file (inside ct_vad_segment).
 */
#ifndef CT_PREP_PREP_H
#define CT_PREP_PREP_H

#include <stddef.h>
#include <stdint.h>

#include "audio/audio.h"
#include "core/error.h"
#include "vad/vad.h"

struct ct_silero;

typedef struct ct_prep_options {
    int workers;               /* --preprocess-workers; <= 0: ct_prep_auto_workers() */
    int lookahead;             /* files in flight + finished-unconsumed; <= 0: 2·workers + 2 */
    uint64_t memory_cap_bytes; /* --audio-memory-gb: per file and for the pool; default 4 GiB */
    ct_audio_backend backend;  /* --audio-backend */
    ct_audio_resampler resampler; /* --resampler (libsndfile backend) */
    /* Pool only: helper threads that split one file's work (FIR resampling
     * blocks, Silero feature blocks) so that a long file does not run on
     * one core. < 0: none; 0: automatic (ct_prep_auto_split_threads); the
     * results are the same bits as without (docs/PREP.md). */
    int split_threads;
    double decode_deadline_seconds; /* per decode, <= 0: none */
    ct_vad_options vad;        /* --vad and its options */
    /* Silero weights: `silero` (borrowed, must outlive the pool) or, when
     * NULL, loaded once from `silero_path` by ct_prep_create. Only read in
     * Silero mode. */
    const struct ct_silero *silero;
    const char *silero_path;
    /* Silero throughput knobs (PRODUCT.md §2). vad_threads > 0 caps how many
     * workers run the network at once (each runs it single-threaded);
     * vad_batch_size and vad_block_frames are validated like the product
     * does (positive, product ≤ 32768) but the pool segments one file per
     * call with vad/silero.c's fixed 512-row blocks (see docs/PREP.md). */
    int vad_batch_size;   /* 16 */
    int vad_block_frames; /* 512 */
    int vad_threads;      /* 0: unset */
    /* Optional (NULL: every file is decoded). Called by the worker that
     * admitted file `index`, before decoding it: nonzero leaves the file
     * undecoded, and its item comes back with not_admitted set (status
     * CT_OK, no audio). The pipeline takes the output set's lock here, so
     * that of several processes sharing a corpus only the lock's owner
     * spends a decode on a file (docs/DURABILITY.md §8). */
    int (*admit)(void *user, size_t index);
    void *admit_user;
    /* 0: ct_prep_next returns files in input order. 1: it returns the
     * lowest-numbered file that is ready, so a consumer that can go faster
     * than one long file is prepared (a GPU) takes the short files behind
     * it meanwhile. Claims, memory admission and the look-ahead window stay
     * in input order (the window still ends L files after the first file
     * not yet returned), so memory and the number of files held are bounded
     * as before; only the order of the items changes. */
    int any_order;
} ct_prep_options;

/* workers/lookahead automatic, 4 GiB, backend AUTO, no deadline, VAD
 * defaults, 16 / 512 / unset. */
ct_prep_options ct_prep_default_options(void);

/* The rules of PRODUCT-DETAILS §10.5 that concern preparation, plus
 * ct_vad_check_options. */
CT_NODISCARD ct_status ct_prep_check_options(const ct_prep_options *o);

/* Automatic worker count for `cores` online cores: cores − 1 (one left for
 * the model's host thread or its BLAS threads), at least 1, at most 8. */
int ct_prep_auto_workers(int cores);

/* Automatic split-helper count for `cores` online cores: cores − 1, at
 * least 1. They sleep when no long file needs them. */
int ct_prep_auto_split_threads(int cores);

/* One prepared file. */
typedef struct ct_prep_item {
    size_t index;       /* position in the input list */
    char *path;         /* copy of the input path */
    ct_status status;   /* CT_OK or the file's error */
    char error[1024];   /* the message ("" when status is CT_OK) */
    ct_audio *audio;    /* decoded samples (NULL on error) */
    ct_vad_result vad;  /* segments (empty on error) */
    double decode_seconds, vad_seconds; /* wall time of each stage (a streamed VAD: what was left after the decode) */
    int vad_streamed;   /* the VAD followed the decode (pool with helpers; prep_internal.h) */
    size_t finish_rank; /* pool only: how many files were posted before this one */
    int not_admitted;   /* the admit hook declined it: not decoded */
} ct_prep_item;

void ct_prep_item_free(ct_prep_item *it);

/* Prepare one file in the calling thread: decode with o's backend, cap and
 * deadline, then segment. The sequential path; the workers run the same
 * steps. Never fails as a whole: the item carries the file's status. silero
 * may be NULL outside Silero mode. *out is a fresh item (free with
 * ct_prep_item_free); only CT_ERR_OOM for the item itself is returned. */
CT_NODISCARD ct_status ct_prep_file(const char *path, size_t index, const ct_prep_options *o,
                                    const struct ct_silero *silero, ct_prep_item **out);

typedef struct ct_prep ct_prep;

/* Start preparing paths[0..n) (copied). Fails on bad options or when the
 * Silero weights cannot be loaded; file problems are per-item. */
CT_NODISCARD ct_status ct_prep_create(const char *const *paths, size_t n, const ct_prep_options *o,
                                      ct_prep **out);

/* The next file in input order (any_order: the lowest-numbered ready
 * file), blocking until it is ready. Every file is returned once. *out is
 * NULL after the last file (CT_OK). CT_ERR_ABORTED once cancelled. The consumer
 * owns the item (ct_prep_item_free). One consumer thread only. */
CT_NODISCARD ct_status ct_prep_next(ct_prep *p, ct_prep_item **out);

/* Ask the workers to stop (safe from any thread, idempotent). */
void ct_prep_cancel(ct_prep *p);

/* Cancel, join the workers, free everything not yet consumed. */
void ct_prep_free(ct_prep *p);

typedef struct ct_prep_stats {
    int workers, lookahead, split_threads;
    uint64_t memory_cap_bytes;
    uint64_t held_bytes;      /* now: reservations in flight + finished-unconsumed PCM */
    uint64_t peak_held_bytes; /* the most ever held at once */
    size_t peak_files;        /* the most files in flight + finished-unconsumed */
    size_t redecodes;         /* files decoded again under the full cap (see PREP.md) */
    size_t vad_streamed;      /* files whose VAD followed their decode */
    double decode_seconds, vad_seconds; /* summed over workers (wall) */
    double consumer_wait_seconds;       /* time ct_prep_next spent blocked */
} ct_prep_stats;

void ct_prep_get_stats(ct_prep *p, ct_prep_stats *st);

#endif
