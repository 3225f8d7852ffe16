/* resample.h — our polyphase FIR resampler (Kaiser-windowed sinc) for the
 * libsndfile backend.
 *
 * Rates in_rate → out_rate reduce to L/M (gcd). Output sample j sits at
 * input time j·M/L: with base = ⌊j·M/L⌋ and phase p = j·M mod L it is
 *   y[j] = Σ_{k=0}^{taps-1} h_p[k] · x[base − left + k]
 * where h_p holds g(t) = fc·sinc(fc·t)·kaiser(t/H) at t = k − left − p/L,
 * normalised to sum 1 per phase (unit DC gain), fc = CUTOFF·min(1, L/M),
 * H = ⌈ZEROS/min(1, L/M)⌉, left = H − 1; taps is 2H rounded up to the
 * vector width (the extra weights are zero). Samples outside the signal
 * are zero; the output has ⌈n·L/M⌉ samples.
 *
 * Every output sample is a fixed function of 2H input samples (no state,
 * no accumulated phase), so the signal can be cut into blocks computed in
 * any order by any thread with bit-identical results: that is what lets
 * prep split one long file across workers (docs/PREP.md). Why not
 * libsamplerate: its sinc converter carries a floating-point phase from
 * sample to sample, so a block cannot start mid-stream exactly, and it runs
 * at ~60-90x real time per core against several thousand here.
 */
#ifndef CT_AUDIO_RESAMPLE_H
#define CT_AUDIO_RESAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* Zero crossings of the sinc on each side (at the lower of the two rates)
 * and the cutoff as a fraction of the lower Nyquist frequency. */
#define CT_RESAMPLE_ZEROS 24
#define CT_RESAMPLE_CUTOFF 0.95
#define CT_RESAMPLE_BETA 9.0
/* L above this needs too large a table: such rates (e.g. 44056 Hz) stay
 * with libsamplerate. */
#define CT_RESAMPLE_MAX_PHASES 4096

typedef struct ct_resampler {
    int64_t L, M;      /* out/in rate ratio, reduced */
    int H;             /* half width in input samples */
    int left;          /* H - 1: taps before base */
    int taps;          /* per phase, a multiple of 8 */
    float *table;      /* (L, taps) */
} ct_resampler;

/* CT_ERR_UNSUPPORTED for rates <= 0 or L > CT_RESAMPLE_MAX_PHASES. */
CT_NODISCARD ct_status ct_resampler_new(int in_rate, int out_rate, ct_resampler **out);
void ct_resampler_free(ct_resampler *r);

/* ⌈n·L/M⌉ */
int64_t ct_resampler_out_len(const ct_resampler *r, int64_t n_in);
/* ⌊j·M/L⌋ − left: the first input sample output j reads (it reads taps). */
int64_t ct_resampler_first_input(const ct_resampler *r, int64_t j);

/* out[j − j0] for j in [j0, j1). x[i − x0] is input sample i; the caller
 * provides every sample output j reads, zeros outside the signal:
 * x0 <= first_input(j0) and first_input(j1 − 1) + taps <= x0 + nx. */
void ct_resampler_run(const ct_resampler *r, const float *x, int64_t x0, size_t nx, int64_t j0, int64_t j1,
                      float *out);

/* The plain reference: the same definition evaluated directly in double
 * (g computed per tap, no table), output n_out = ⌈n·L/M⌉ samples. Slow;
 * tests compare the table path with it. */
CT_NODISCARD ct_status ct_resample_ref(int in_rate, int out_rate, const float *x, size_t n, double *out,
                                       size_t n_out);

#endif
