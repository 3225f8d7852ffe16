/* resample_stream.h — feeds a decoder's mono samples through ct_resampler in
 * blocks of output and appends the 16 kHz result to the decode job in order.
 * With a task pool the blocks are computed by its helpers while the
 * decoder reads on (a bounded queue of blocks in flight); without one each
 * block is computed at once. Both give the same samples: each output sample
 * is a function of its own input window (resample.h). Not public.
 */
#ifndef CT_AUDIO_RESAMPLE_STREAM_H
#define CT_AUDIO_RESAMPLE_STREAM_H

#include "audio/audio_internal.h"
#include "audio/resample.h"

struct ct_tasks;
typedef struct ct_rs_stream ct_rs_stream;

/* tasks may be NULL (blocks computed in the calling thread). */
CT_NODISCARD ct_status ct_rs_stream_new(const ct_resampler *r, struct ct_tasks *tasks, ct_audio_job *job,
                                        ct_rs_stream **out);
/* Take n more input samples. */
CT_NODISCARD ct_status ct_rs_stream_feed(ct_rs_stream *s, const float *x, size_t n);
/* End of input: the remaining outputs, then every block appended. */
CT_NODISCARD ct_status ct_rs_stream_finish(ct_rs_stream *s);
/* Waits for blocks still in flight (a failed decode) and frees. */
void ct_rs_stream_free(ct_rs_stream *s);

#endif
