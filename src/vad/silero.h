/* silero.h — the Silero VAD v6 network (16 kHz branch) in plain C.
 *
 * Weights come from `silero_vad.onnx` (read with vad/onnx.h; no ONNX
 * Runtime). Each 512-sample frame is prefixed with the 64 samples before it
 * (zeros for a file's first frame) and goes through: reflect pad → STFT as a
 * strided conv with the file's basis → magnitude → four conv+ReLU blocks →
 * LSTM cell (state carried frame to frame, reset per file) → ReLU → 1×1 conv
 * → sigmoid. The last frame of a file is zero-padded to 512 samples.
 *
 * The kernels here are private to src/vad (the compute layer is separate).
 */
#ifndef CT_VAD_SILERO_H
#define CT_VAD_SILERO_H

#include <stddef.h>

#include "core/error.h"
#include "vad/onnx.h"

#define CT_SILERO_RATE 16000
#define CT_SILERO_FRAME 512
#define CT_SILERO_CONTEXT 64
/* sha256 of silero_vad.onnx as shipped in the PyPI package silero-vad 6.2.3
 * (the v6.2 weights; verified against the downloaded file). The weight
 * resolver (model/resolve.h) accepts only this file. */
#define CT_SILERO_SHA256_V62 "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"

typedef struct ct_silero ct_silero;

/* Load the 16 kHz weights from an ONNX file. The model is immutable after
 * loading and may be shared by threads. */
CT_NODISCARD ct_status ct_silero_load(const char *path, ct_silero **out);

/* The same from an already parsed model (no hash is recorded). */
CT_NODISCARD ct_status ct_silero_from_onnx(const ct_onnx_model *m, ct_silero **out);

void ct_silero_free(ct_silero *s);

/* Hex sha256 of the file loaded ("" when built from a parsed model), and
 * whether it equals CT_SILERO_SHA256_V62. */
const char *ct_silero_sha256(const ct_silero *s);
int ct_silero_is_v62(const ct_silero *s);

/* Number of probabilities for n samples: ceil(n / 512). */
size_t ct_silero_frame_count(size_t n_samples);

/* Speech probabilities of `batch` files (each 16 kHz mono float), one per
 * 512-sample frame: probs[b] must hold ct_silero_frame_count(n[b]) floats.
 * The files' frames advance together (rows of several files per matrix
 * product), each file with its own LSTM state starting from zero. */
CT_NODISCARD ct_status ct_silero_probs_batch(const ct_silero *s, const float *const *audio,
                                             const size_t *n, int batch, float *const *probs);

struct ct_tasks;

/* Probabilities of one file, bit-identical to ct_silero_probs_batch with
 * batch 1: the frame-independent part of each 512-frame block (STFT, convs,
 * input gates; most of the work) runs on the pool's helpers, up to 16
 * blocks ahead, while the calling thread runs the LSTM recurrence block
 * after block. The blocks are the batched path's own (from frame 0, 512
 * frames each), so every matrix product sees the same rows. tasks NULL:
 * all in the calling thread. */
CT_NODISCARD ct_status ct_silero_probs_tasks(const ct_silero *s, const float *audio, size_t n,
                                             struct ct_tasks *tasks, float *probs);

/* The same probabilities for a file whose samples arrive in order, from its
 * decoder: each 512-frame block goes to the pool as soon as its samples
 * are in (the gates, as above), and a thread of the stream's own runs the
 * recurrence as the blocks come back, so the VAD follows the decode instead
 * of starting after it. Bit-identical to ct_silero_probs_tasks over the
 * whole file, however the samples are cut into feeds. At most 16 blocks
 * (about 33 MB with their gates) are held; a feed waits while the
 * recurrence is that far behind. One feeding thread. tasks NULL: the gates
 * run in the feeding thread. */
typedef struct ct_silero_stream ct_silero_stream;
CT_NODISCARD ct_status ct_silero_stream_open(const ct_silero *s, struct ct_tasks *tasks,
                                             ct_silero_stream **out);
/* The next k samples of the file. */
CT_NODISCARD ct_status ct_silero_stream_feed(ct_silero_stream *st, const float *x, size_t k);
/* The file ended after n samples (those fed): the last block, the rest of
 * the recurrence. *probs (ct_silero_frame_count(n) floats; free() it). */
CT_NODISCARD ct_status ct_silero_stream_finish(ct_silero_stream *st, size_t n, float **probs);
/* Also before finish (a failed decode): waits for the blocks in the pool. */
void ct_silero_stream_free(ct_silero_stream *st);

/* Plain float32 reference of the same computation for one file, one frame at
 * a time with direct loops (no BLAS). Slow; tests compare it with the above. */
CT_NODISCARD ct_status ct_silero_probs_ref(const ct_silero *s, const float *audio, size_t n,
                                           float *probs);

#endif
