/* wav2vec2.h — the MMS-300M forced aligner's network (transformers'
 * Wav2Vec2ForCTC with feat_extract_norm "layer" and do_stable_layer_norm)
 * written once over compute/backend.h, and the file's CTC emissions in the
 * 0.1.0 scheme of PRODUCT-DETAILS §9.6: 30 s windows with 2 s of zero-filled
 * context each side (34 s, even for audio shorter than one window), frames
 * [100, 1600) of each, log-softmax in float32, a <star> column of zeros. */
#ifndef CT_ALIGN_WAV2VEC2_H
#define CT_ALIGN_WAV2VEC2_H

#include <stddef.h>

#include "compute/backend.h"
#include "core/error.h"

#define CT_W2V2_MAX_CONV 16

typedef struct ct_w2v2_config {
    int n_conv, conv_dim[CT_W2V2_MAX_CONV], conv_kernel[CT_W2V2_MAX_CONV], conv_stride[CT_W2V2_MAX_CONV];
    int conv_bias;
    int hidden, layers, heads, ffn, vocab;
    int pos_kernel, pos_groups;
    float eps;
    int ratio; /* product of the conv strides: samples per frame (320) */
} ct_w2v2_config;

typedef struct ct_w2v2 ct_w2v2;

typedef struct ct_w2v2_options {
    ct_dtype weight_dtype; /* matrices: F32 (default) or BF16/F16 where the backend takes them */
    /* On a device backend, the device memory a window batch leaves free for
     * the rest of the process (the ASR model's next batch on the same GPU):
     * ct_w2v2_emissions takes fewer windows a batch when the forward's
     * buffers would not fit in the free memory less this. 0: an eighth of
     * the device's memory. */
    size_t device_reserve_bytes;
} ct_w2v2_options;
ct_w2v2_options ct_w2v2_default_options(void);

/* Load dir/config.json and the safetensors in dir (model.safetensors or an
 * index) onto backend be (not owned; must outlive the model). Every size comes
 * from the config and is checked against the tensors; the positional conv's
 * weight norm is applied once here, from either spelling
 * (parametrizations.weight.original0/1 or weight_g/weight_v). */
ct_status ct_w2v2_open(const char *dir, ct_backend *be, const ct_w2v2_options *opts, ct_w2v2 **out);
void ct_w2v2_free(ct_w2v2 *m);
const ct_w2v2_config *ct_w2v2_get_config(const ct_w2v2 *m);

/* Logits of nb input rows of n samples each (host memory): logits (nb, *frames,
 * vocab) host, malloc'd. CT_ERR_OOM when the batch does not fit. */
ct_status ct_w2v2_forward(ct_w2v2 *m, const float *pcm, int nb, size_t n, float **logits, int *frames);

/* Bytes of the forward's buffers (device memory on a device backend) for
 * nb rows of n samples; 0 when n gives no frames. */
size_t ct_w2v2_forward_bytes(const ct_w2v2 *m, int nb, size_t n);

/* Geometry of the 0.1.0 windows. */
#define CT_ALIGN_SR 16000
#define CT_ALIGN_WINDOW (30 * CT_ALIGN_SR)
#define CT_ALIGN_CONTEXT (2 * CT_ALIGN_SR)

/* Emissions of a whole file (pcm, n samples at 16 kHz, n > 0): *out (frames,
 * vocab + 1) malloc'd host float32, last column 0 (<star>); *stride_ms = ratio ·
 * 1000 / 16000. Windows go batch_size at a time; an out-of-memory halves the
 * batch (never below 1) and the model remembers the smaller size for later
 * calls, as the twin does. One call at a time per model (that memory and the
 * backend's stream are shared); separate models are independent. */
ct_status ct_w2v2_emissions(ct_w2v2 *m, const float *pcm, size_t n, int batch_size, float **out, int *frames,
                            int *classes, double *stride_ms);

/* Build window rows [first, first + count) of a file: (count, 544 000) zero-filled. */
void ct_w2v2_window_batch(float *rows, const float *pcm, size_t n, int first, int count);

#endif
