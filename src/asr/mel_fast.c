/* mel_fast.c — the fast frontend: CT_MEL_VW (16) frames at a time, one frame
 * per SIMD lane, so every FFT butterfly, filterbank product and log runs on
 * whole vectors with no shuffles. Written with GCC vector types and compiled
 * for AVX-512, AVX2 and baseline x86-64 (chosen at load time). The batch
 * driver spreads (clip, frame group) items over OpenMP threads. The plain
 * path it is tested against is ct_mel_compute_reference (mel.c).
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "asr/mel_internal.h"

/* The vector helpers below are always inlined into the per-ISA clones, so
 * the ABI of passing 64-byte vectors by value never matters. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#define VW CT_MEL_VW
typedef float vf __attribute__((vector_size(VW * 4)));
typedef int32_t vi __attribute__((vector_size(VW * 4)));

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
/* no-math-errno lets GCC turn the per-lane sqrtf into one vector sqrt. */
#define CT_KERNEL __attribute__((target_clones("avx512f", "avx2", "default"), optimize("no-math-errno")))
#elif defined(__x86_64__)
#define CT_KERNEL __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CT_KERNEL
#endif
#define CT_INLINE static inline __attribute__((always_inline))

CT_INLINE vf vsplat(float v) { return (vf){0} + v; }

/* Natural log, Cephes-style (frexp, a degree-8 polynomial on [sqrt(1/2),
 * sqrt(2)), the exponent added back in two parts); about 1 ulp, for x > 0
 * normal (the callers add 2^-24 first). */
CT_INLINE vf vlog(vf x) {
    vi bits = (vi)x;
    vi ex = ((bits >> 23) & 0xff) - 0x7e;
    vf m = (vf)((bits & 0x007fffff) | 0x3f000000); /* [0.5, 1) */
    vf e = __builtin_convertvector(ex, vf);
    vi small = m < 0.707106781186547524f;
    e = e - (vf)((vi)vsplat(1.0f) & small);
    m = m + (vf)((vi)m & small) - 1.0f;
    vf z = m * m;
    vf y = vsplat(7.0376836292E-2f);
    y = y * m - 1.1514610310E-1f;
    y = y * m + 1.1676998740E-1f;
    y = y * m - 1.2420140846E-1f;
    y = y * m + 1.4249322787E-1f;
    y = y * m - 1.6668057665E-1f;
    y = y * m + 2.0000714765E-1f;
    y = y * m - 2.4999993993E-1f;
    y = y * m + 3.3333331174E-1f;
    y = y * m * z;
    y = y + e * -2.12194440e-4f;
    y = y - z * 0.5f;
    return (m + y) + e * 0.693359375f;
}

/* Frames t0 .. t0+VW-1 of one clip: sig points at the padded signal sample
 * of frame t0's first point; rows of out (n_mels each) for the first nfr
 * frames get log-mel values (not yet normalised). */
CT_KERNEL static void frames_vw(const ct_mel *m, const float *sig, int nfr, float *out, vf *zr,
                                vf *zi, vf *pw) {
    const int M = m->half, hop = m->o.hop_length, nm = m->o.n_mels;
    const float *win = m->window;

    /* z[n] = w[2n] x[2n] + i w[2n+1] x[2n+1], stored bit-reversed */
    for (int i = 0; i < M; i++) {
        int p = m->bitrev[i];
        int s0 = 2 * i;
        if (s0 + 1 < m->win_lo || s0 >= m->win_hi) {
            zr[p] = vsplat(0.0f);
            zi[p] = vsplat(0.0f);
            continue;
        }
        vf a, b;
        for (int j = 0; j < VW; j++) {
            a[j] = sig[(size_t)j * hop + s0];
            b[j] = sig[(size_t)j * hop + s0 + 1];
        }
        zr[p] = a * win[s0];
        zi[p] = b * win[s0 + 1];
    }

    /* radix-2 decimation in time; the first pass has only unit twiddles */
    for (int g = 0; g < M; g += 2) {
        vf ar = zr[g], ai = zi[g], br = zr[g + 1], bi = zi[g + 1];
        zr[g] = ar + br;
        zi[g] = ai + bi;
        zr[g + 1] = ar - br;
        zi[g + 1] = ai - bi;
    }
    for (int len = 4; len <= M; len <<= 1) {
        int h = len >> 1, ts = M / len;
        for (int g = 0; g < M; g += len) {
            for (int k = 0; k < h; k++) {
                float wr = m->tw_re[k * ts], wi = m->tw_im[k * ts];
                int a = g + k, b = a + h;
                vf br = zr[b], bi = zi[b];
                vf tr = br * wr - bi * wi;
                vf ti = br * wi + bi * wr;
                vf ar = zr[a], ai = zi[a];
                zr[a] = ar + tr;
                zi[a] = ai + ti;
                zr[b] = ar - tr;
                zi[b] = ai - ti;
            }
        }
    }

    /* real spectrum X[k] = E[k] + W^k O[k] from Z[k] and conj(Z[M-k]);
     * power as the reference: (sqrt(re^2 + im^2))^2 */
    for (int k = 0; k <= M; k++) {
        int k1 = k == M ? 0 : k, k2 = k == 0 ? 0 : M - k;
        vf ar = zr[k1], ai = zi[k1], cr = zr[k2], ci = zi[k2];
        vf er = (ar + cr) * 0.5f, ei = (ai - ci) * 0.5f;
        vf or_ = (ai + ci) * 0.5f, oi = (cr - ar) * 0.5f;
        float wr = m->sp_re[k], wi = m->sp_im[k];
        vf xr = er + (or_ * wr - oi * wi);
        vf xi = ei + (oi * wr + or_ * wi);
        vf s = xr * xr + xi * xi;
        vf mag;
        for (int j = 0; j < VW; j++) mag[j] = sqrtf(s[j]);
        pw[k] = mag * mag;
    }

    /* mel = log(fb @ power + 2^-24) over each row's nonzero run */
    for (int r = 0; r < nm; r++) {
        const float *w = m->fb_w + (size_t)r * m->n_bins;
        const vf *p = pw + m->fb_start[r];
        int len = m->fb_len[r];
        vf acc = vsplat(0.0f);
        for (int i = 0; i < len; i++) acc += p[i] * w[i];
        vf lg = vlog(acc + 0x1p-24f);
        for (int j = 0; j < nfr; j++) out[(size_t)j * nm + r] = lg[j];
    }
}

/* One clip's frame group as a work item. */
typedef struct {
    int clip;
    size_t t0;
} work_item;

ct_status ct_mel__run_batch(ct_mel *m, const float *const *clips, const size_t *n, int batch,
                            int dither, float *out, size_t T_max, int *valid_frames) {
    const int nm = m->o.n_mels, hop = m->o.hop_length;
    const size_t row = T_max * (size_t)nm;
    size_t *off = malloc(sizeof(size_t) * ((size_t)batch + 1));
    size_t n_items = 0;
    if (!off) return ct_fail(CT_ERR_OOM, "mel: out of memory");
    off[0] = 0;
    for (int b = 0; b < batch; b++) {
        size_t L = ct_mel_valid_frames(m, n[b]);
        if (valid_frames) valid_frames[b] = (int)L;
        off[b + 1] = off[b] + ct_mel__padded_len(m, n[b]);
        if (L >= 2) n_items += (L + VW - 1) / VW;
    }
    float *sig = malloc(sizeof(float) * off[batch]);
    work_item *items = malloc(sizeof(work_item) * (n_items ? n_items : 1));
    if (!sig || !items) {
        free(off);
        free(sig);
        free(items);
        return ct_fail(CT_ERR_OOM, "mel: out of memory for %d clips", batch);
    }
    size_t k = 0;
    for (int b = 0; b < batch; b++) {
        size_t L = ct_mel_valid_frames(m, n[b]);
        if (L < 2) continue;
        for (size_t t0 = 0; t0 < L; t0 += VW) items[k++] = (work_item){b, t0};
    }

    int nt = m->o.threads > 0 ? m->o.threads : omp_get_max_threads();
    int failed = 0;

    /* 1. dither + pre-emphasis into each clip's padded buffer; zero rows >= L */
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) reduction(| : failed)
    for (int b = 0; b < batch; b++) {
        size_t L = ct_mel_valid_frames(m, n[b]);
        size_t first_zero = L >= 2 ? L : 0;
        float *o = out + (size_t)b * row;
        memset(o + first_zero * nm, 0, sizeof(float) * (T_max - first_zero) * nm);
        if (L >= 2 && ct_mel__signal(m, clips[b], n[b], dither, sig + off[b],
                                     off[b + 1] - off[b], 0) != CT_OK)
            failed |= 1;
    }

    /* 2. frames */
#pragma omp parallel num_threads(nt) reduction(| : failed)
    {
        size_t M = (size_t)m->half;
        vf *scratch = aligned_alloc(64, sizeof(vf) * (3 * M + 1));
        if (!scratch) failed |= 1;
#pragma omp for schedule(dynamic, 4)
        for (size_t i = 0; i < n_items; i++) {
            if (!scratch) continue;
            const work_item *it = &items[i];
            size_t L = ct_mel_valid_frames(m, n[it->clip]);
            int nfr = (int)(L - it->t0 < VW ? L - it->t0 : VW);
            frames_vw(m, sig + off[it->clip] + it->t0 * (size_t)hop, nfr,
                      out + (size_t)it->clip * row + it->t0 * (size_t)nm, scratch,
                      scratch + M, scratch + 2 * M);
        }
        free(scratch);
    }

    /* 3. per-row normalisation over its own valid frames */
#pragma omp parallel num_threads(nt)
    {
        double *acc = malloc(sizeof(double) * 2 * (size_t)nm);
#pragma omp for schedule(dynamic, 1)
        for (int b = 0; b < batch; b++) {
            size_t L = ct_mel_valid_frames(m, n[b]);
            if (L >= 2 && acc) ct_mel__normalize(out + (size_t)b * row, L, nm, acc);
        }
        if (!acc) failed |= 1;
        free(acc);
    }
    free(off);
    free(sig);
    free(items);
    if (failed) return ct_fail(CT_ERR_OOM, "mel: out of memory in a worker thread");
    return CT_OK;
}
