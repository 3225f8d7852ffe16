/* mel.h — the log-mel frontend, equal to transformers 5.17's
 * CohereAsrFeatureExtractor (MODEL.md "Frontend").
 *
 * Per clip of N float32 samples at 16 kHz:
 *   1. dither (optional): x[i] += 1e-5f * randn[i], randn = torch.randn(N)
 *      after manual_seed(N) (asr/torch_rng.h); padding is not dithered;
 *   2. pre-emphasis y[0] = x[0], y[t] = x[t] - 0.97f * x[t-1], zero past N;
 *   3. STFT: 256 zeros either side (torch.stft center=True, pad_mode
 *      "constant"), a frame every 160 samples, Hann(400, periodic=False)
 *      centred in the 512-point frame (56 zeros left), one-sided;
 *      power = (sqrt(re^2 + im^2))^2 as the reference does;
 *   4. mel = log(fb @ power + 2^-24), fb = librosa's slaney filterbank
 *      (128 x 257, float32, computed as librosa computes it);
 *   5. T = 1 + N/160 frames exist, L = N/160 are valid (the reference's
 *      attention mask); per mel bin over the L valid frames: mean, variance
 *      with divisor L-1, (x - mean) / (sqrt(var) + 1e-5); frames >= L are 0.
 *
 * Layout. The reference builds (B, 128, T) inside _torch_extract_fbank_features
 * and permutes it to (B, T, 128) before normalising; its `input_features`
 * output is (B, T, 128). Ours is the same: out[(b * T_max + t) * 128 + m] is
 * input_features[b, t, m]. A batch pads every row to T_max frames (the
 * reference pads the audio to the longest clip, which gives T = 1 + maxN/160;
 * a larger T_max only adds zero frames). Each row is normalised on its own L;
 * other rows matter only through the rounding noted below.
 *
 * Differences from the reference, on purpose: a clip with L < 2 valid frames
 * (N < 320 samples) is NaN in the reference (0/0 in the mean or variance);
 * here its row is all zeros. Samples that are not finite, or so large
 * (|x| >= 2^50) that the power spectrum would overflow, are refused.
 * Clips longer than max_clip_s (35 s: the reference splits longer audio
 * first, see asr/chunk.h) are refused with CT_ERR_LIMIT. The STFT runs in
 * double, not in torch's float32 FFT (MKL), whose rounding noise reaches
 * ~1e-4 in the quietest bins of pure tones (docs/TESTING.md, mel).
 *
 * Normalisation repeats the reference's float32 arithmetic, sums in torch's
 * order included (asr/mel_norm.c). That order runs over the batch's padded
 * length (1 + longest/160), so a row's rounding depends on the longest clip
 * of its batch, as in the reference; this matters where a bin is constant
 * (digital silence without dither: values near -0.16 or -0.28, not 0).
 */
#ifndef CT_ASR_MEL_H
#define CT_ASR_MEL_H

#include <stddef.h>

#include "core/error.h"

typedef struct ct_mel_options {
    int sample_rate;   /* 16000 */
    int n_fft;         /* 512; a power of two, >= win_length */
    int win_length;    /* 400 */
    int hop_length;    /* 160 */
    int n_mels;        /* 128 */
    float preemphasis; /* 0.97; 0 turns it off */
    float dither;      /* 1e-5: amplitude used when a call asks for dither */
    double max_clip_s; /* 35.0 */
    int threads;       /* OpenMP threads for a batch; 0 = OpenMP's default */
} ct_mel_options;

typedef struct ct_mel ct_mel;

ct_mel_options ct_mel_default_options(void);

/* Precomputes window, filterbank and FFT tables. A ct_mel is read-only
 * afterwards: several threads may compute with one at the same time. */
ct_status ct_mel_create(const ct_mel_options *opts, ct_mel **out);
void ct_mel_free(ct_mel *mel);

/* Frames for a clip of n samples: all of them (1 + n/hop) and the valid
 * ones (n/hop), as the reference counts them. */
size_t ct_mel_frames(const ct_mel *mel, size_t n);
size_t ct_mel_valid_frames(const ct_mel *mel, size_t n);
int ct_mel_n_mels(const ct_mel *mel);
/* Largest clip accepted, in samples. */
size_t ct_mel_max_samples(const ct_mel *mel);

/* Features of `batch` clips (clips[b] has n[b] samples) into
 * out (batch, T_max, n_mels), row-major; valid_frames[b] = n[b]/hop (may be
 * NULL). T_max must be >= ct_mel_frames(max n). dither: 0 off, 1 on. */
ct_status ct_mel_compute_batch(ct_mel *mel, const float *const *clips, const size_t *n, int batch,
                               int dither, float *out /* (B, T_max, n_mels) */, int T_max,
                               int *valid_frames);

/* The dither alone: out[i] = clip[i] + dither · r[i] in float32, r =
 * torch.randn(n) from a generator seeded with n (the clip's own length, so
 * a clip's noise does not depend on its batch): what ct_mel_compute_batch
 * adds to a clip before pre-emphasis when dither is on. A mel that takes
 * undithered PCM (the GPU's) gives the dithered features from this PCM, up
 * to its own rounding. out may be clip (then a noise buffer is allocated).
 * Thread-safe. */
ct_status ct_mel_dither(const ct_mel *mel, const float *clip, size_t n, float *out);

/* ct_mel_dither over a batch, rows over OpenMP threads, into one new buffer:
 * *rows (batch pointers into *buf) are the dithered clips; free(*buf) and
 * free(*rows). On failure both are NULL. */
ct_status ct_mel_dither_batch(const ct_mel *mel, const float *const *clips, const size_t *n, int batch, float **buf,
                              float ***rows);

/* The checks ct_mel_compute_batch makes on each clip (length limit, NULL,
 * non-finite samples), for callers that compute the features elsewhere
 * (mel_device.c). */
ct_status ct_mel_check_clips(const ct_mel *mel, const float *const *clips, const size_t *n, int batch);

/* The same for one clip with a plain, slow path (double-precision DFT per
 * frame, dense filterbank, libm log): the reference the fast path is tested
 * against. out (T_max, n_mels). */
ct_status ct_mel_compute_reference(ct_mel *mel, const float *clip, size_t n, int dither,
                                   float *out /* (T_max, n_mels) */, int T_max);

/* The filterbank (n_mels, n_fft/2 + 1), row-major float32, exactly as librosa
 * computes it in float32; and the window (n_fft), zero outside the centred
 * win_length. Owned by mel. */
const float *ct_mel_filterbank(const ct_mel *mel);
const float *ct_mel_window(const ct_mel *mel);

#endif
