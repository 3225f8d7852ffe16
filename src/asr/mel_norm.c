/* mel_norm.c — per-bin normalisation of the log-mel features with the
 * reference's float32 arithmetic, including the order of its sums.
 *
 * The reference's features are a permuted view whose contiguous dimension is
 * time, so `x.sum(dim=1)` is torch's contiguous ("inner") float32 reduction
 * (SumKernel.cpp cascade_sum): 8-lane vectors (Vectorized<float> of the
 * AVX2 kernel, which torch 2.11 runs for sums on AVX2 and AVX-512 CPUs alike:
 * checked against torch for sizes 5..3001) summed four at a time through a
 * four-level cascade of 16-row chunks, then the leftover vectors, the
 * leftover scalars and the 8 lanes. It runs over the batch's padded frame count T (masked frames add
 * zeros), so the rounding of a row's mean depends on T; we follow that. It
 * matters where a bin is constant (digital silence without dither): there
 * the reference's rounding shows as values of about -0.16 or -0.28 instead
 * of 0; elsewhere it is ~1e-6.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "asr/mel_internal.h"

#define LANES 8  /* torch's Vectorized<float>::size() in the AVX2 kernel */
#define ILP 4    /* row_sum's ilp_factor */
#define LEVELS 4 /* multi_row_sum's num_levels */

typedef float v8f __attribute__((vector_size(LANES * 4)));

static int level_power(size_t size) {
    int c = 0; /* ceil(log2(size)) */
    while (((size_t)1 << c) < size) c++;
    return c / LEVELS > 4 ? c / LEVELS : 4;
}

/* multi_row_sum + row_sum for one contiguous run of `count` items of type
 * T (scalar or 8-lane vector), `get(i)` yielding item i. */
#define ROW_SUM(T, ZERO, get, count, result)                                                  \
    do {                                                                                      \
        size_t n_ilp = (count) / ILP;                                                         \
        int lp = level_power(n_ilp);                                                          \
        size_t step = (size_t)1 << lp, lmask = step - 1;                                      \
        T acc[LEVELS][ILP];                                                                   \
        for (int a = 0; a < LEVELS; a++)                                                      \
            for (int k = 0; k < ILP; k++) acc[a][k] = ZERO;                                   \
        size_t i = 0;                                                                         \
        while (i + step <= n_ilp) {                                                           \
            for (size_t j = 0; j < step; j++, i++)                                            \
                for (int k = 0; k < ILP; k++) acc[0][k] += get(ILP * i + (size_t)k);          \
            for (int a = 1; a < LEVELS; a++) {                                                \
                for (int k = 0; k < ILP; k++) {                                               \
                    acc[a][k] += acc[a - 1][k];                                               \
                    acc[a - 1][k] = ZERO;                                                     \
                }                                                                             \
                if ((i & (lmask << (a * lp))) != 0) break;                                    \
            }                                                                                 \
        }                                                                                     \
        for (; i < n_ilp; i++)                                                                \
            for (int k = 0; k < ILP; k++) acc[0][k] += get(ILP * i + (size_t)k);              \
        for (int a = 1; a < LEVELS; a++)                                                      \
            for (int k = 0; k < ILP; k++) acc[0][k] += acc[a][k];                             \
        for (size_t r = n_ilp * ILP; r < (count); r++) acc[0][0] += get(r);                   \
        for (int k = 1; k < ILP; k++) acc[0][0] += acc[0][k];                                 \
        (result) = acc[0][0];                                                                 \
    } while (0)

/* load8(p): the 8 floats at p as one vector (a macro: a function returning
 * a 32-byte vector would have an ISA-dependent ABI). */
#define load8(p) __extension__({ v8f v_; memcpy(&v_, (p), sizeof v_); v_; })

/* torch's float32 sum of x[0..n) (contiguous). */
static float torch_sum(const float *x, size_t n) {
    float out;
    if (n < LANES) { /* scalar_inner_sum */
#define GET_S(i) x[i]
        ROW_SUM(float, 0.0f, GET_S, n, out);
#undef GET_S
        return out;
    }
    size_t nvec = n / LANES; /* vectorized_inner_sum */
    v8f vacc;
#define GET_V(i) load8(x + LANES * (i))
    ROW_SUM(v8f, ((v8f){0}), GET_V, nvec, vacc);
#undef GET_V
    float fin = 0.0f;
    for (size_t k = nvec * LANES; k < n; k++) fin += x[k];
    for (int l = 0; l < LANES; l++) fin += vacc[l];
    return fin;
}

/* Mean and (std + 1e-5) of column j, the plain way: the column copied out
 * and summed with torch_sum. */
static void column_stats(const float *feat, size_t L, size_t T, size_t nm, size_t j, float *col,
                         float *mean, float *den) {
    /* input_features * mask: masked frames are zeros */
    for (size_t t = 0; t < L; t++) col[t] = feat[t * nm + j];
    for (size_t t = L; t < T; t++) col[t] = 0.0f;
    float mu = torch_sum(col, T) / (float)L;
    /* ((x * mask - mean) ** 2 * mask).sum / (L - 1) */
    for (size_t t = 0; t < L; t++) {
        float d = col[t] - mu;
        col[t] = d * d;
    }
    float var = torch_sum(col, T) / (float)(L - 1);
    *mean = mu;
    *den = sqrtf(var) + 1e-5f;
}

/* The same for eight columns at once: every operation of torch_sum is done
 * on a vector of eight columns (lane = column), so each column sees exactly
 * the scalar arithmetic above. x(t) is row t's eight values (0 past L). */
typedef float vcol __attribute__((vector_size(32)));
#define LOADC(p) __extension__({ vcol c_; memcpy(&c_, (p), sizeof c_); c_; })

/* Row t's eight values (0 past L), squared deviations from *mu if sq.
 * Macros and pointers rather than vector arguments: a function passing a
 * 32-byte vector by value has an ISA-dependent ABI (GCC's -Wpsabi). */
#define COL8(t)                                                                                  \
    __extension__({                                                                              \
        vcol v_ = (vcol){0};                                                                     \
        if ((t) < L) {                                                                           \
            v_ = LOADC(feat + (t) * nm);                                                         \
            if (sq) {                                                                            \
                v_ = v_ - *mu;                                                                   \
                v_ = v_ * v_;                                                                    \
            }                                                                                    \
        }                                                                                        \
        v_;                                                                                      \
    })

static void torch_sum8(const float *feat, size_t nm, size_t L, size_t T, const vcol *mu, int sq,
                       vcol *result) {
#define X(t) COL8(t)
    if (T < LANES) {
        vcol out;
#define GET_S(i) X(i)
        ROW_SUM(vcol, ((vcol){0}), GET_S, T, out);
#undef GET_S
        *result = out;
        return;
    }
    size_t nvec = T / LANES;
    size_t n_ilp = nvec / ILP;
    int lp = level_power(n_ilp);
    size_t step = (size_t)1 << lp, lmask = step - 1;
    vcol acc[LEVELS][ILP][LANES];
    memset(acc, 0, sizeof acc);
    size_t i = 0;
    while (i + step <= n_ilp) {
        for (size_t j = 0; j < step; j++, i++)
            for (int k = 0; k < ILP; k++)
                for (int l = 0; l < LANES; l++) acc[0][k][l] += X(LANES * (ILP * i + (size_t)k) + (size_t)l);
        for (int a = 1; a < LEVELS; a++) {
            for (int k = 0; k < ILP; k++)
                for (int l = 0; l < LANES; l++) {
                    acc[a][k][l] += acc[a - 1][k][l];
                    acc[a - 1][k][l] = (vcol){0};
                }
            if ((i & (lmask << (a * lp))) != 0) break;
        }
    }
    for (; i < n_ilp; i++)
        for (int k = 0; k < ILP; k++)
            for (int l = 0; l < LANES; l++) acc[0][k][l] += X(LANES * (ILP * i + (size_t)k) + (size_t)l);
    for (int a = 1; a < LEVELS; a++)
        for (int k = 0; k < ILP; k++)
            for (int l = 0; l < LANES; l++) acc[0][k][l] += acc[a][k][l];
    for (size_t r = n_ilp * ILP; r < nvec; r++)
        for (int l = 0; l < LANES; l++) acc[0][0][l] += X(LANES * r + (size_t)l);
    for (int k = 1; k < ILP; k++)
        for (int l = 0; l < LANES; l++) acc[0][0][l] += acc[0][k][l];
    vcol fin = (vcol){0};
    for (size_t t = nvec * LANES; t < T; t++) fin += X(t);
    for (int l = 0; l < LANES; l++) fin += acc[0][0][l];
#undef X
    *result = fin;
}

static int normalize_impl(float *feat, size_t L, size_t T, int n_mels, int plain) {
    const size_t nm = (size_t)n_mels;
    if (T <= L) T = L + 1;
    float *col = malloc(sizeof(float) * T);
    float *mean = malloc(sizeof(float) * (nm + 8)), *den = malloc(sizeof(float) * (nm + 8));
    if (!col || !mean || !den) {
        free(col);
        free(mean);
        free(den);
        return -1;
    }
    size_t j = 0;
    if (!plain) {
        for (; j + 8 <= nm; j += 8) {
            vcol zero = (vcol){0}, mu, var;
            torch_sum8(feat + j, nm, L, T, &zero, 0, &mu);
            mu = mu / (float)L;
            torch_sum8(feat + j, nm, L, T, &mu, 1, &var);
            var = var / (float)(L - 1);
            memcpy(mean + j, &mu, sizeof mu);
            for (int l = 0; l < 8; l++) den[j + (size_t)l] = sqrtf(var[l]) + 1e-5f;
        }
    }
    for (; j < nm; j++) column_stats(feat, L, T, nm, j, col, &mean[j], &den[j]);
    /* (input_features - mean) / (std + 1e-5), then * mask */
    for (size_t t = 0; t < L; t++) {
        float *r = feat + t * nm;
        size_t k = 0;
        if (!plain)
            for (; k + 8 <= nm; k += 8) {
                vcol x = LOADC(r + k), mu = LOADC(mean + k), dn = LOADC(den + k);
                x = (x - mu) / dn;
                memcpy(r + k, &x, sizeof x);
            }
        for (; k < nm; k++) r[k] = (r[k] - mean[k]) / den[k];
    }
    free(col);
    free(mean);
    free(den);
    return 0;
}

int ct_mel__normalize(float *feat, size_t L, size_t T, int n_mels) {
    return normalize_impl(feat, L, T, n_mels, 0);
}

int ct_mel__normalize_plain(float *feat, size_t L, size_t T, int n_mels) {
    return normalize_impl(feat, L, T, n_mels, 1);
}
