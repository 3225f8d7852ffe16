/* prep_internal.h — the per-file steps shared by prep_file.c (sequential)
 * and prep.c (the worker pool). Not part of the module's interface.
 */
#ifndef CT_PREP_PREP_INTERNAL_H
#define CT_PREP_PREP_INTERNAL_H

#include <stdatomic.h>

#include "prep/prep.h"

struct ct_tasks;

/* A fresh item for path (status CT_OK, nothing decoded). */
CT_NODISCARD ct_status ct_prep_item_new(const char *path, size_t index, ct_prep_item **out);

/* Record status s with this thread's ct_last_error() and drop any results. */
void ct_prep_item_set_error(ct_prep_item *it, ct_status s);

/* Bytes of decoded PCM to reserve for path before decoding it: the probe's
 * duration plus slack, clamped to cap; cap when the duration is unknown. */
uint64_t ct_prep_estimate_bytes(const char *path, uint64_t cap);

/* Silero fed by the decoder (ct_silero_stream): with helpers, a file's VAD
 * runs while it is decoded instead of after it, so a long file is ready
 * about when its decode ends. The probabilities are bit-identical to the
 * VAD over the decoded file; a stream that cannot follow (no memory, a
 * backend that started over) is dropped and the file takes that path. */
typedef struct ct_prep_vad_feed {
    struct ct_silero_stream *st; /* NULL: none (not Silero, no helpers, dropped) */
    size_t fed;
} ct_prep_vad_feed;

/* Open feed's stream when the options and the pool allow one (Silero,
 * helpers, no --vad-threads); dropping one it holds. */
void ct_prep_vad_feed_open(ct_prep_vad_feed *feed, const ct_prep_options *o, const struct ct_silero *silero,
                           struct ct_tasks *tasks);
void ct_prep_vad_feed_clear(ct_prep_vad_feed *feed);

/* Decode with o's backend/deadline/resampler, PCM capped at `cap` bytes,
 * polling cancel (may be NULL), resampling blocks on tasks (may be NULL),
 * feeding feed's stream (may be NULL); the samples buffer is trimmed to its
 * length. */
CT_NODISCARD ct_status ct_prep_decode(const char *path, const ct_prep_options *o, uint64_t cap,
                                      const atomic_int *cancel, struct ct_tasks *tasks, ct_prep_vad_feed *feed,
                                      ct_audio **out);

/* Segment it->audio into it->vad (Silero blocks on tasks, may be NULL; the
 * probabilities of feed's stream when it followed the whole decode, may be
 * NULL); errors name the file. */
CT_NODISCARD ct_status ct_prep_segment(ct_prep_item *it, const ct_prep_options *o,
                                       const struct ct_silero *silero, struct ct_tasks *tasks,
                                       ct_prep_vad_feed *feed);

#endif
