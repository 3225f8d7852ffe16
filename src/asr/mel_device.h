/* mel_device.h — the mel frontend on a backend that has the mel op
 * (backend.h version 4, CUDA): the tables it needs, made once from the CPU
 * mel's own window and filterbank (asr/mel.c), and a batch call that
 * uploads the PCM and runs the op. The same features as
 * ct_mel_compute_batch without dither, to float32 rounding of another
 * summation order (tests/unit/test_mel_device.c). */
#ifndef CT_ASR_MEL_DEVICE_H
#define CT_ASR_MEL_DEVICE_H

#include "asr/mel.h"
#include "compute/backend.h"

typedef struct ct_mel_device {
    ct_backend *be;
    const ct_mel *mel; /* the CPU mel the tables come from (its checks too) */
    float *window, *dft, *fbT; /* backend memory: (400), (400, 514), (257, M) */
    int n_mels;
    /* the padded PCM batch on the host, kept from batch to batch (a fresh
     * 245 MB buffer at 128 × 30 s cost its page faults every batch): in
     * page-locked memory where the backend has it (host_alloc), so that
     * the upload is one transfer */
    float *host;
    size_t host_floats;
    int host_pinned;
} ct_mel_device;

/* NULL *out (and CT_OK) where the backend has no mel op or the CPU mel's
 * options are not the ones the op computes (n_fft 512, window 400, hop 160,
 * pre-emphasis 0.97). */
ct_status ct_mel_device_create(const ct_mel *mel, const ct_mel_options *opts, ct_backend *be, ct_mel_device **out);
void ct_mel_device_free(ct_mel_device *md);

/* Workspace bytes of ct_mel_device_compute for B clips, T frames, the
 * longest clip ns samples. */
size_t ct_mel_device_ws_bytes(int B, int T, size_t ns);

/* feats (B, T, M) f32 backend memory; clips host, each at least 2 hops
 * (320 samples: the normalisation needs two valid frames; shorter ones go
 * to the CPU mel); valid (B) receives n/hop. The clips are checked as
 * ct_mel_compute_batch checks them. The PCM goes to scratch from ws. */
ct_status ct_mel_device_compute(ct_mel_device *md, const float *const *clips, const size_t *n, int B, int T,
                                float *feats, int *valid, ct_arena *ws);

#endif
