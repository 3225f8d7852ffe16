/* mel.c — frontend setup (window, slaney filterbank, FFT tables), the batch
 * driver (dither, pre-emphasis, padding, threads, per-row normalisation) and
 * the plain reference path. The fast per-frame kernel is in mel_fast.c.
 * Audio decoding and long-audio splitting live elsewhere (audio/, chunk.h).
 */
#include "asr/mel.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "asr/mel_internal.h"
#include "asr/torch_rng.h"

ct_mel_options ct_mel_default_options(void) {
    ct_mel_options o;
    o.sample_rate = 16000;
    o.n_fft = 512;
    o.win_length = 400;
    o.hop_length = 160;
    o.n_mels = 128;
    o.preemphasis = 0.97f;
    o.dither = 1e-5f;
    o.max_clip_s = 35.0;
    o.threads = 0;
    return o;
}

/* ---- librosa.filters.mel(norm="slaney", htk=False), float32 result ------- */

/* Slaney mel scale: linear below 1 kHz, logarithmic above (librosa's
 * hz_to_mel/mel_to_hz with htk=False), in double as numpy computes it. */
static const double F_SP = 200.0 / 3.0;
static const double MIN_LOG_HZ = 1000.0;

static double hz_to_mel(double f) {
    double min_log_mel = MIN_LOG_HZ / F_SP;
    double logstep = log(6.4) / 27.0;
    if (f >= MIN_LOG_HZ) return min_log_mel + log(f / MIN_LOG_HZ) / logstep;
    return f / F_SP;
}

static double mel_to_hz(double m) {
    double min_log_mel = MIN_LOG_HZ / F_SP;
    double logstep = log(6.4) / 27.0;
    if (m >= min_log_mel) return MIN_LOG_HZ * exp(logstep * (m - min_log_mel));
    return F_SP * m;
}

/* fb (n_mels, n_bins). librosa fills a float32 array with
 * max(0, min(lower, upper)) computed in float64, then multiplies it in place
 * by the float64 slaney norm (so the product is rounded to float32 again). */
static ct_status make_filterbank(int sr, int n_fft, int n_mels, float *fb) {
    int n_bins = n_fft / 2 + 1;
    double *mel_f = malloc(sizeof(double) * (size_t)(n_mels + 2));
    double *freqs = malloc(sizeof(double) * (size_t)n_bins);
    if (!mel_f || !freqs) {
        free(mel_f);
        free(freqs);
        return ct_fail(CT_ERR_OOM, "mel: filterbank tables");
    }
    /* np.fft.rfftfreq(n, d=1/sr): k * (1 / (n * d)) */
    double val = 1.0 / ((double)n_fft * (1.0 / (double)sr));
    for (int k = 0; k < n_bins; k++) freqs[k] = (double)k * val;
    /* np.linspace(mel(0), mel(sr/2), n_mels + 2): i * step + start, last = stop */
    double m_lo = hz_to_mel(0.0), m_hi = hz_to_mel((double)sr / 2.0);
    double step = (m_hi - m_lo) / (double)(n_mels + 1);
    for (int i = 0; i < n_mels + 2; i++) mel_f[i] = mel_to_hz((double)i * step + m_lo);
    mel_f[n_mels + 1] = mel_to_hz(m_hi);
    for (int i = 0; i < n_mels; i++) {
        double fd0 = mel_f[i + 1] - mel_f[i];
        double fd1 = mel_f[i + 2] - mel_f[i + 1];
        double enorm = 2.0 / (mel_f[i + 2] - mel_f[i]);
        for (int k = 0; k < n_bins; k++) {
            double lower = -(mel_f[i] - freqs[k]) / fd0;
            double upper = (mel_f[i + 2] - freqs[k]) / fd1;
            double w = fmin(lower, upper);
            float w32 = (float)(w > 0.0 ? w : 0.0);
            fb[(size_t)i * n_bins + k] = (float)((double)w32 * enorm);
        }
    }
    free(mel_f);
    free(freqs);
    return CT_OK;
}

/* ---- create / free -------------------------------------------------------- */

static int is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

ct_status ct_mel_create(const ct_mel_options *opts, ct_mel **out) {
    if (!out) return ct_fail(CT_ERR_INVALID_ARG, "mel: out is NULL");
    *out = NULL;
    ct_mel_options o = opts ? *opts : ct_mel_default_options();
    if (o.sample_rate <= 0 || o.sample_rate > 384000)
        return ct_fail(CT_ERR_INVALID_ARG, "mel: sample_rate %d is out of range", o.sample_rate);
    if (!is_pow2(o.n_fft) || o.n_fft < 16 || o.n_fft > 8192)
        return ct_fail(CT_ERR_INVALID_ARG, "mel: n_fft %d is not a power of two in [16, 8192]",
                       o.n_fft);
    if (o.win_length <= 1 || o.win_length > o.n_fft)
        return ct_fail(CT_ERR_INVALID_ARG, "mel: win_length %d is not in [2, n_fft]", o.win_length);
    if (o.hop_length <= 0 || o.hop_length > o.n_fft)
        return ct_fail(CT_ERR_INVALID_ARG, "mel: hop_length %d is not in [1, n_fft]", o.hop_length);
    if (o.n_mels <= 0 || o.n_mels > 1024)
        return ct_fail(CT_ERR_INVALID_ARG, "mel: n_mels %d is not in [1, 1024]", o.n_mels);
    if (!(o.dither >= 0.0f) || !isfinite(o.preemphasis))
        return ct_fail(CT_ERR_INVALID_ARG, "mel: dither/preemphasis must be finite, dither >= 0");
    if (!(o.max_clip_s > 0.0) || o.max_clip_s > 3600.0)
        return ct_fail(CT_ERR_INVALID_ARG, "mel: max_clip_s %g is not in (0, 3600]", o.max_clip_s);
    if (o.threads < 0) return ct_fail(CT_ERR_INVALID_ARG, "mel: threads %d < 0", o.threads);

    ct_mel *m = calloc(1, sizeof *m);
    if (!m) return ct_fail(CT_ERR_OOM, "mel: out of memory");
    m->o = o;
    m->n_bins = o.n_fft / 2 + 1;
    m->half = o.n_fft / 2;
    m->max_samples = (size_t)llround(o.max_clip_s * o.sample_rate);
    size_t nb = (size_t)m->n_bins, nm = (size_t)o.n_mels, nf = (size_t)o.n_fft;
    m->window = calloc(nf, sizeof(float));
    m->fb = calloc(nm * nb, sizeof(float));
    m->fb_start = calloc(nm, sizeof(int));
    m->fb_len = calloc(nm, sizeof(int));
    m->fb_w = calloc(nm * nb, sizeof(float));
    m->bitrev = calloc((size_t)m->half, sizeof(int));
    m->tw_re = calloc((size_t)m->half, sizeof(double));
    m->tw_im = calloc((size_t)m->half, sizeof(double));
    m->sp_re = calloc((size_t)m->half + 1, sizeof(double));
    m->sp_im = calloc((size_t)m->half + 1, sizeof(double));
    m->cos_d = calloc(nf, sizeof(double));
    m->sin_d = calloc(nf, sizeof(double));
    if (!m->window || !m->fb || !m->fb_start || !m->fb_len || !m->fb_w || !m->bitrev ||
        !m->tw_re || !m->tw_im || !m->sp_re || !m->sp_im || !m->cos_d || !m->sin_d) {
        ct_mel_free(m);
        return ct_fail(CT_ERR_OOM, "mel: out of memory");
    }

    /* torch.hann_window(W, periodic=False) = 0.5 - 0.5 cos(2 pi i / (W - 1)),
     * which torch evaluates in float32; zero-padded to n_fft with the window
     * centred ((n_fft - W) / 2 zeros on the left, as torch.stft pads it). */
    int left = (o.n_fft - o.win_length) / 2;
    m->win_lo = left;
    m->win_hi = left + o.win_length;
    float step = (float)(2.0 * M_PI / (double)(o.win_length - 1));
    for (int i = 0; i < o.win_length; i++) {
        float c = (float)cos((double)((float)i * step));
        m->window[left + i] = c * -0.5f + 0.5f;
    }

    ct_status st = make_filterbank(o.sample_rate, o.n_fft, o.n_mels, m->fb);
    if (st != CT_OK) {
        ct_mel_free(m);
        return st;
    }
    /* Sparse rows: each slaney triangle covers a contiguous run of bins. */
    for (int i = 0; i < o.n_mels; i++) {
        const float *row = m->fb + (size_t)i * nb;
        int a = 0, b = m->n_bins;
        while (a < b && row[a] == 0.0f) a++;
        while (b > a && row[b - 1] == 0.0f) b--;
        m->fb_start[i] = a;
        m->fb_len[i] = b - a;
        memcpy(m->fb_w + (size_t)i * nb, row + a, sizeof(float) * (size_t)(b - a));
    }

    /* Complex FFT of size half on z[n] = x[2n] + i x[2n+1]; tables in double,
     * rounded once. */
    int bits = 0;
    while ((1 << bits) < m->half) bits++;
    for (int i = 0; i < m->half; i++) {
        int r = 0;
        for (int b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
        m->bitrev[i] = r;
    }
    for (int k = 0; k < m->half; k++) {
        double a = -2.0 * M_PI * (double)k / (double)m->half;
        m->tw_re[k] = cos(a);
        m->tw_im[k] = sin(a);
    }
    for (int k = 0; k <= m->half; k++) {
        double a = -2.0 * M_PI * (double)k / (double)o.n_fft;
        m->sp_re[k] = cos(a);
        m->sp_im[k] = sin(a);
    }
    for (int k = 0; k < o.n_fft; k++) {
        double a = 2.0 * M_PI * (double)k / (double)o.n_fft;
        m->cos_d[k] = cos(a);
        m->sin_d[k] = sin(a);
    }
    *out = m;
    return CT_OK;
}

void ct_mel_free(ct_mel *m) {
    if (!m) return;
    free(m->window);
    free(m->fb);
    free(m->fb_start);
    free(m->fb_len);
    free(m->fb_w);
    free(m->bitrev);
    free(m->tw_re);
    free(m->tw_im);
    free(m->sp_re);
    free(m->sp_im);
    free(m->cos_d);
    free(m->sin_d);
    free(m);
}

size_t ct_mel_frames(const ct_mel *m, size_t n) { return 1 + n / (size_t)m->o.hop_length; }
size_t ct_mel_valid_frames(const ct_mel *m, size_t n) { return n / (size_t)m->o.hop_length; }
int ct_mel_n_mels(const ct_mel *m) { return m->o.n_mels; }
size_t ct_mel_max_samples(const ct_mel *m) { return m->max_samples; }
const float *ct_mel_filterbank(const ct_mel *m) { return m->fb; }
const float *ct_mel_window(const ct_mel *m) { return m->window; }

/* ---- shared pieces ----------------------------------------------------------- */

size_t ct_mel__padded_len(const ct_mel *m, size_t n) {
    /* centre padding both sides, plus room for a whole group of frames past
     * the last valid one (the fast kernel computes VW frames at a time) */
    return (size_t)m->o.n_fft + n + (size_t)CT_MEL_VW * (size_t)m->o.hop_length + (size_t)m->o.n_fft;
}

/* The helpers below run over whole clips, so they are built for AVX-512,
 * AVX2 and baseline x86-64 (GCC picks at load time); the vector types are
 * GCC's generic ones, so the arithmetic is the same scalar float/double
 * arithmetic lane by lane. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define CT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CT_CLONES
#endif
typedef float v8f __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));

CT_CLONES ct_status ct_mel__signal(const ct_mel *m, const float *x, size_t n, int dither, float *sig,
                                   size_t sig_len, int scalar_rng) {
    size_t pad = (size_t)m->half;
    float *y = sig + pad;
    memset(sig, 0, sizeof(float) * pad);
    memset(y + n, 0, sizeof(float) * (sig_len - pad - n));
    if (n == 0) return CT_OK;
    const float a = m->o.preemphasis;
    const float amp = dither ? m->o.dither : 0.0f;
    if (amp > 0.0f) {
        /* reference: waveform[:N] += dither * randn(N), then pre-emphasis,
         * both in float32. y holds the noise; d[i] = x[i] + amp * y[i] is
         * formed twice per sample (as "current" and as "previous"), with the
         * same two roundings each time, right to left so y is read before it
         * is overwritten. */
        if (scalar_rng)
            ct_torch_randn_scalar((uint64_t)n, n, CT_RANDN_TORCH_AVX2, y);
        else
            ct_torch_randn((uint64_t)n, n, CT_RANDN_TORCH_AVX2, y);
        size_t i = n; /* indices [1, i) still to do */
        for (; i >= 9; i -= 8) {
            size_t b = i - 8;
            v8f xc, xp, yc, yp;
            memcpy(&xc, x + b, 32);
            memcpy(&xp, x + b - 1, 32);
            memcpy(&yc, y + b, 32);
            memcpy(&yp, y + b - 1, 32);
            v8f cur = xc + yc * amp, prev = xp + yp * amp;
            v8f r = cur - prev * a;
            memcpy(y + b, &r, 32);
        }
        for (; i > 1; i--) {
            float cur = x[i - 1] + amp * y[i - 1], prev = x[i - 2] + amp * y[i - 2];
            y[i - 1] = cur - a * prev;
        }
        y[0] = x[0] + amp * y[0];
    } else {
        y[0] = x[0];
        size_t i = 1;
        for (; i + 8 <= n; i += 8) {
            v8f xc, xp;
            memcpy(&xc, x + i, 32);
            memcpy(&xp, x + i - 1, 32);
            v8f r = xc - xp * a;
            memcpy(y + i, &r, 32);
        }
        for (; i < n; i++) y[i] = x[i] - a * x[i - 1];
    }
    return CT_OK;
}

/* 1 when every sample is finite and |x| < 2^50: an exponent field of all
 * ones is Inf/NaN, and below 2^50 no power or mel sum can overflow float32
 * (|X| <= 2 * 400 * 2^50 < 2^60, so |X|^2 < 2^120), so features stay finite. */
CT_CLONES static int all_finite(const float *x, size_t n) {
    v8u acc = {0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v8u u;
        memcpy(&u, x + i, 32);
        acc |= (v8u)((u & 0x7f800000u) >= ((127u + 50u) << 23));
    }
    uint32_t bad = 0;
    for (int k = 0; k < 8; k++) bad |= acc[k];
    for (; i < n; i++) bad |= !(fabsf(x[i]) < 0x1p50f);
    return bad == 0;
}

static ct_status check_clip(const ct_mel *m, const float *x, size_t n, int b) {
    if (n > m->max_samples)
        return ct_fail(CT_ERR_LIMIT,
                       "mel: clip %d has %zu samples (%.2f s), more than the %.1f s limit "
                       "(split long audio first)",
                       b, n, (double)n / m->o.sample_rate, m->o.max_clip_s);
    if (n > 0 && !x) return ct_fail(CT_ERR_INVALID_ARG, "mel: clip %d is NULL", b);
    /* A NaN or Inf sample (or one so large that the power overflows) would
     * turn its whole row into NaN; refuse it. */
    if (n > 0 && !all_finite(x, n))
        return ct_fail(CT_ERR_INVALID_ARG, "mel: clip %d has a sample that is not finite (or beyond +-2^50)", b);
    return CT_OK;
}

/* ---- the batch driver ----------------------------------------------------------- */

ct_status ct_mel_check_clips(const ct_mel *m, const float *const *clips, const size_t *n, int batch) {
    /* the finiteness scan reads every sample (245 MB at 128 × 30 s): one
     * clip per thread; the first failing clip's error is the one reported */
    int bad = batch;
#pragma omp parallel for schedule(dynamic, 1) num_threads(m->o.threads > 0 ? m->o.threads : omp_get_max_threads())
    for (int b = 0; b < batch; b++) {
        int fails = n[b] > m->max_samples || (n[b] > 0 && (!clips[b] || !all_finite(clips[b], n[b])));
        if (fails) {
#pragma omp critical(ct_mel_check)
            if (b < bad) bad = b;
        }
    }
    return bad < batch ? check_clip(m, clips[bad], n[bad], bad) : CT_OK; /* its message */
}

ct_status ct_mel_dither(const ct_mel *m, const float *x, size_t n, float *out) {
    const float amp = m->o.dither;
    if (!(amp > 0.0f)) {
        if (out != x) memmove(out, x, sizeof(float) * n);
        return CT_OK;
    }
    float *r = out == x ? malloc(sizeof(float) * (n ? n : 1)) : out;
    if (!r) return ct_fail(CT_ERR_OOM, "mel: dither noise for %zu samples", n);
    ct_torch_randn((uint64_t)n, n, CT_RANDN_TORCH_AVX2, r);
    /* two roundings, as ct_mel__signal forms x + amp·y (no FMA: mel.c is
     * built without it, so the bits are the CPU mel's) */
    for (size_t i = 0; i < n; i++) out[i] = x[i] + amp * r[i];
    if (r != out) free(r);
    return CT_OK;
}

ct_status ct_mel_dither_batch(const ct_mel *m, const float *const *clips, const size_t *n, int batch, float **buf,
                              float ***rows) {
    *buf = NULL, *rows = NULL;
    size_t total = 0;
    for (int b = 0; b < batch; b++) {
        if (!clips[b] && n[b]) return ct_fail(CT_ERR_INVALID_ARG, "mel: clip %d has no samples", b);
        total += n[b];
    }
    float *d = malloc(sizeof(float) * (total ? total : 1));
    float **r = malloc(sizeof(float *) * (size_t)(batch > 0 ? batch : 1));
    if (!d || !r) {
        free(d), free(r);
        return ct_fail(CT_ERR_OOM, "mel: dithered PCM of %zu samples", total);
    }
    size_t off = 0;
    for (int b = 0; b < batch; b++) r[b] = d + off, off += n[b];
    int bad = 0;
    /* dither never fails with out != clip; the flag is for the contract */
#pragma omp parallel for schedule(dynamic, 1) reduction(| : bad) if (batch > 1)
    for (int b = 0; b < batch; b++) bad |= ct_mel_dither(m, clips[b], n[b], r[b]) != CT_OK;
    if (bad) {
        free(d), free(r);
        return ct_fail(CT_ERR_INTERNAL, "mel: dither of a batch");
    }
    *buf = d, *rows = r;
    return CT_OK;
}

ct_status ct_mel_compute_batch(ct_mel *m, const float *const *clips, const size_t *n, int batch,
                               int dither, float *out, int T_max, int *valid_frames) {
    if (!m || !clips || !n || !out || batch <= 0 || T_max <= 0)
        return ct_fail(CT_ERR_INVALID_ARG, "mel: bad arguments (batch %d, T_max %d)", batch, T_max);
    size_t need = 0;
    for (int b = 0; b < batch; b++) {
        CT_TRY(check_clip(m, clips[b], n[b], b));
        size_t f = ct_mel_frames(m, n[b]);
        if (f > need) need = f;
    }
    if ((size_t)T_max < need)
        return ct_fail(CT_ERR_INVALID_ARG, "mel: T_max %d < %zu frames of the longest clip", T_max,
                       need);
    return ct_mel__run_batch(m, clips, n, batch, dither, out, (size_t)T_max, valid_frames);
}

/* ---- the plain reference ---------------------------------------------------------- */

ct_status ct_mel_compute_reference(ct_mel *m, const float *clip, size_t n, int dither, float *out,
                                   int T_max) {
    if (!m || !out || T_max <= 0) return ct_fail(CT_ERR_INVALID_ARG, "mel: bad arguments");
    CT_TRY(check_clip(m, clip, n, 0));
    if ((size_t)T_max < ct_mel_frames(m, n))
        return ct_fail(CT_ERR_INVALID_ARG, "mel: T_max %d too small", T_max);
    int nm = m->o.n_mels, nb = m->n_bins, nfft = m->o.n_fft, hop = m->o.hop_length;
    size_t L = ct_mel_valid_frames(m, n);
    memset(out, 0, sizeof(float) * (size_t)T_max * (size_t)nm);
    if (L < 2) return CT_OK;
    size_t len = ct_mel__padded_len(m, n);
    float *sig = malloc(sizeof(float) * len);
    float *fr = malloc(sizeof(float) * (size_t)nfft);
    float *pw = malloc(sizeof(float) * (size_t)nb);
    ct_status st = CT_OK;
    if (!sig || !fr || !pw) {
        st = ct_fail(CT_ERR_OOM, "mel: out of memory");
        goto done;
    }
    st = ct_mel__signal(m, clip, n, dither, sig, len, 1);
    if (st != CT_OK) goto done;
    for (size_t t = 0; t < L; t++) {
        const float *s = sig + t * (size_t)hop;
        for (int i = 0; i < nfft; i++) fr[i] = s[i] * m->window[i];
        for (int k = 0; k < nb; k++) {
            double re = 0.0, im = 0.0;
            for (int i = 0; i < nfft; i++) {
                int a = (int)(((long)k * i) % nfft);
                re += fr[i] * m->cos_d[a];
                im -= fr[i] * m->sin_d[a];
            }
            float r = (float)re, q = (float)im;
            float mag = sqrtf(r * r + q * q);
            pw[k] = mag * mag;
        }
        for (int j = 0; j < nm; j++) {
            double v = 0.0;
            for (int k = 0; k < nb; k++) v += (double)m->fb[(size_t)j * nb + k] * pw[k];
            float g = (float)v + 0x1p-24f; /* the reference adds the guard in float32 */
            out[t * (size_t)nm + j] = (float)log((double)g);
        }
    }
    if (ct_mel__normalize_plain(out, L, ct_mel_frames(m, n), nm) != 0) st = ct_fail(CT_ERR_OOM, "mel: out of memory");
done:
    free(sig);
    free(fr);
    free(pw);
    return st;
}
