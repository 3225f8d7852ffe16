/* resample.c — see resample.h. The table is built in double and rounded to
 * float once; the dot product uses GCC vector types of 8 floats with a fixed
 * order of additions (two SSE registers on the baseline x86-64 build, no
 * fused multiply-add), so a given binary gives the same bits for an output
 * sample whichever thread computes it and wherever its block starts.
 */
#include "audio/resample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define VEC 8
typedef float v8f __attribute__((vector_size(VEC * sizeof(float))));

static int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Modified Bessel function of the first kind, order 0 (power series; the
 * terms fall fast for the β ≤ 20 used here). */
static double bessel_i0(double x) {
    double sum = 1.0, term = 1.0, q = x * x / 4.0;
    for (int k = 1; k < 200; k++) {
        term *= q / ((double)k * k);
        sum += term;
        if (term < sum * 1e-17) break;
    }
    return sum;
}

typedef struct {
    int64_t L, M;
    int H;
    double fc, i0beta;
} design;

static ct_status make_design(int in_rate, int out_rate, design *d) {
    if (in_rate <= 0 || out_rate <= 0)
        return ct_fail(CT_ERR_UNSUPPORTED, "resample: invalid rates %d -> %d Hz", in_rate, out_rate);
    int64_t g = gcd64(in_rate, out_rate);
    d->L = out_rate / g;
    d->M = in_rate / g;
    if (d->L > CT_RESAMPLE_MAX_PHASES)
        return ct_fail(CT_ERR_UNSUPPORTED, "resample: %d -> %d Hz needs %lld filter phases", in_rate, out_rate,
                       (long long)d->L);
    double rel = d->L < d->M ? (double)d->L / (double)d->M : 1.0;
    d->fc = CT_RESAMPLE_CUTOFF * rel;
    d->H = (int)ceil(CT_RESAMPLE_ZEROS / rel);
    d->i0beta = bessel_i0(CT_RESAMPLE_BETA);
    return CT_OK;
}

/* The kernel at time t (input samples), unnormalised. */
static double kernel(const design *d, double t) {
    double u = t / d->H;
    if (u <= -1.0 || u >= 1.0) return 0.0;
    double x = M_PI * d->fc * t;
    double sinc = fabs(x) < 1e-12 ? 1.0 : sin(x) / x;
    return d->fc * sinc * bessel_i0(CT_RESAMPLE_BETA * sqrt(1.0 - u * u)) / d->i0beta;
}

/* Normalised weights of phase p: w[k] for k in [0, 2H). */
static void phase_weights(const design *d, int64_t p, double *w) {
    double sum = 0.0;
    int left = d->H - 1;
    for (int k = 0; k < 2 * d->H; k++) {
        w[k] = kernel(d, (double)(k - left) - (double)p / (double)d->L);
        sum += w[k];
    }
    for (int k = 0; k < 2 * d->H; k++) w[k] /= sum;
}

ct_status ct_resampler_new(int in_rate, int out_rate, ct_resampler **out) {
    *out = NULL;
    design d;
    CT_TRY(make_design(in_rate, out_rate, &d));
    ct_resampler *r = calloc(1, sizeof *r);
    double *w = malloc((size_t)2 * d.H * sizeof(double));
    if (!r || !w) {
        free(r);
        free(w);
        return ct_fail(CT_ERR_OOM, "resample: out of memory");
    }
    r->L = d.L;
    r->M = d.M;
    r->H = d.H;
    r->left = d.H - 1;
    r->taps = (2 * d.H + VEC - 1) / VEC * VEC;
    r->table = calloc((size_t)d.L * (size_t)r->taps, sizeof(float));
    if (!r->table) {
        free(w);
        free(r);
        return ct_fail(CT_ERR_OOM, "resample: out of memory");
    }
    for (int64_t p = 0; p < d.L; p++) {
        phase_weights(&d, p, w);
        float *row = r->table + p * r->taps;
        for (int k = 0; k < 2 * d.H; k++) row[k] = (float)w[k];
    }
    free(w);
    *out = r;
    return CT_OK;
}

void ct_resampler_free(ct_resampler *r) {
    if (!r) return;
    free(r->table);
    free(r);
}

int64_t ct_resampler_out_len(const ct_resampler *r, int64_t n) { return (n * r->L + r->M - 1) / r->M; }

int64_t ct_resampler_first_input(const ct_resampler *r, int64_t j) { return j * r->M / r->L - r->left; }

void ct_resampler_run(const ct_resampler *r, const float *x, int64_t x0, size_t nx, int64_t j0, int64_t j1,
                      float *out) {
    (void)nx; /* the contract is the caller's; see resample.h */
    const int nv = r->taps / VEC;
    for (int64_t j = j0; j < j1; j++) {
        int64_t pos = j * r->M;
        int64_t p = pos % r->L;
        const float *h = r->table + p * r->taps;
        const float *xx = x + (pos / r->L - r->left - x0);
        v8f acc = {0};
        for (int v = 0; v < nv; v++) {
            v8f a, b;
            memcpy(&a, h + v * VEC, sizeof a);
            memcpy(&b, xx + v * VEC, sizeof b);
            acc += a * b;
        }
        /* fixed pairwise order */
        float s0 = (acc[0] + acc[4]) + (acc[2] + acc[6]);
        float s1 = (acc[1] + acc[5]) + (acc[3] + acc[7]);
        out[j - j0] = s0 + s1;
    }
}

ct_status ct_resample_ref(int in_rate, int out_rate, const float *x, size_t n, double *out, size_t n_out) {
    design d;
    CT_TRY(make_design(in_rate, out_rate, &d));
    double *w = malloc((size_t)2 * d.H * sizeof(double));
    if (!w) return ct_fail(CT_ERR_OOM, "resample: out of memory");
    int left = d.H - 1;
    for (size_t j = 0; j < n_out; j++) {
        int64_t pos = (int64_t)j * d.M;
        int64_t base = pos / d.L;
        phase_weights(&d, pos % d.L, w);
        double acc = 0.0;
        for (int k = 0; k < 2 * d.H; k++) {
            int64_t i = base - left + k;
            if (i >= 0 && i < (int64_t)n) acc += w[k] * (double)x[i];
        }
        out[j] = acc;
    }
    free(w);
    return CT_OK;
}
