/* mel_internal.h — the frontend's state and the pieces mel.c and mel_fast.c
 * share. Not part of the library's interface. */
#ifndef CT_ASR_MEL_INTERNAL_H
#define CT_ASR_MEL_INTERNAL_H

#include <stddef.h>

#include "asr/mel.h"

/* Frames computed together by the fast kernel (one SIMD lane each). */
#define CT_MEL_VW 16
#define CT_MEL_MAX_MELS 1024

struct ct_mel {
    ct_mel_options o;
    int n_bins;         /* n_fft/2 + 1 */
    int half;           /* n_fft/2: size of the complex FFT */
    size_t max_samples; /* max_clip_s * sample_rate */
    float *window;      /* (n_fft) Hann, centred, zero outside [win_lo, win_hi) */
    int win_lo, win_hi;
    float *fb;          /* (n_mels, n_bins) dense filterbank */
    int *fb_start;      /* (n_mels) first nonzero bin of each row */
    int *fb_len;        /* (n_mels) nonzero run length */
    float *fb_w;        /* (n_mels, n_bins) the runs, packed from column 0 */
    int *bitrev;        /* (half) bit-reversal permutation */
    double *tw_re, *tw_im; /* (half) exp(-2 pi i k / half) */
    double *sp_re, *sp_im; /* (half + 1) exp(-2 pi i k / n_fft), the real-FFT split */
    double *cos_d, *sin_d; /* (n_fft) cos/sin(2 pi k / n_fft) for the plain DFT */
};

/* Length of the padded, pre-emphasised signal buffer for n samples. */
size_t ct_mel__padded_len(const ct_mel *m, size_t n);

/* sig (sig_len, zeroed here) = [n_fft/2 zeros, pre-emphasis(x + dither), zeros].
 * scalar_rng picks the portable randn (same bits, slower). */
ct_status ct_mel__signal(const ct_mel *m, const float *x, size_t n, int dither, float *sig,
                         size_t sig_len, int scalar_rng);

/* Normalise rows [0, L) of feat (L, n_mels) in place as the reference does
 * for a batch padded to T frames (mel_norm.c). 0, or -1 when out of memory. */
int ct_mel__normalize(float *feat, size_t L, size_t T, int n_mels);
/* The same one column at a time (the plain reference; identical bits). */
int ct_mel__normalize_plain(float *feat, size_t L, size_t T, int n_mels);

/* The kernel in use: 2 AVX-512, 1 AVX2, 0 baseline. Tests may force a
 * narrower one than the CPU has (-1 restores the default); not thread-safe,
 * tests only. */
int ct_mel__isa(void);
void ct_mel__set_isa(int isa);

/* The fast batch path (mel_fast.c); arguments already checked. */
ct_status ct_mel__run_batch(ct_mel *m, const float *const *clips, const size_t *n, int batch,
                            int dither, float *out, size_t T_max, int *valid_frames);

#endif
