/* torch_rng.c — mt19937 and torch.randn(float32) on the CPU, bit-exact.
 *
 * The block-of-16 Box-Muller of torch's AVX2 kernel is written twice: once in
 * portable C (fmaf where the torch build fused a multiply-add) and once with
 * AVX2/FMA intrinsics performing the same operations in the same order, so
 * both give identical bits. Does not cover torch's CUDA generator (Philox).
 */
#include "asr/torch_rng.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CT_RNG_X86 1
#endif

/* ---- mt19937 ------------------------------------------------------------ */

enum { MT_N = 624, MT_M = 397 };

void ct_mt19937_seed(ct_mt19937 *mt, uint64_t seed) {
    mt->state[0] = (uint32_t)seed;
    for (uint32_t i = 1; i < MT_N; i++) {
        uint32_t p = mt->state[i - 1];
        mt->state[i] = 1812433253u * (p ^ (p >> 30)) + i;
    }
    mt->next = MT_N;
}

static uint32_t mt_mix(uint32_t a, uint32_t b, uint32_t c) {
    uint32_t y = (a & 0x80000000u) | (b & 0x7fffffffu);
    return c ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
}

typedef uint32_t v8u __attribute__((vector_size(32)));

/* mt_mix on eight consecutive words: dst[k] = mix(a[k], a[k+1], c[k]). */
static void mt_mix8(uint32_t *dst, const uint32_t *a, const uint32_t *c) {
    v8u x, x1, z;
    memcpy(&x, a, sizeof x);
    memcpy(&x1, a + 1, sizeof x1);
    memcpy(&z, c, sizeof z);
    v8u y = (x & 0x80000000u) | (x1 & 0x7fffffffu);
    v8u r = z ^ (y >> 1) ^ ((-(y & 1u)) & 0x9908b0dfu);
    memcpy(dst, &r, sizeof r);
}

static void mt_twist(ct_mt19937 *mt) {
    uint32_t *s = mt->state;
    int i = 0;
    /* s[i + 1] is still the old word and s[i + M] (first part) the old one,
     * s[i + M - N] (second part) an already-new one, 227 words back: eight
     * words at a time read exactly what the one-word loop would. */
    for (; i + 8 <= MT_N - MT_M; i += 8) mt_mix8(s + i, s + i, s + i + MT_M);
    for (; i < MT_N - MT_M; i++) s[i] = mt_mix(s[i], s[i + 1], s[i + MT_M]);
    for (; i + 8 <= MT_N - 1; i += 8) mt_mix8(s + i, s + i, s + i + MT_M - MT_N);
    for (; i < MT_N - 1; i++) s[i] = mt_mix(s[i], s[i + 1], s[i + MT_M - MT_N]);
    s[MT_N - 1] = mt_mix(s[MT_N - 1], s[0], s[MT_M - 1]);
    mt->next = 0;
}

uint32_t ct_mt19937_next(ct_mt19937 *mt) {
    if (mt->next >= MT_N) mt_twist(mt);
    uint32_t y = mt->state[mt->next++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

/* uniform_real_distribution<float>(0,1): the low 24 bits times 2^-24 (exact). */
static float uniform_f24(ct_mt19937 *mt) {
    return (float)(ct_mt19937_next(mt) & 0xFFFFFFu) * 0x1p-24f;
}

/* out[0..n) = uniform_f24 of the next n words. Whole state blocks are
 * tempered eight words at a time (the same arithmetic, so the same bits). */
typedef float v8f __attribute__((vector_size(32)));
typedef int32_t v8i __attribute__((vector_size(32)));

static void fill_f24(ct_mt19937 *mt, float *out, size_t n) {
    size_t i = 0;
    while (i < n) {
        if (mt->next >= MT_N) mt_twist(mt);
        size_t run = (size_t)(MT_N - mt->next);
        if (run > n - i) run = n - i;
        const uint32_t *s = mt->state + mt->next;
        size_t k = 0;
        for (; k + 8 <= run; k += 8) {
            v8u y;
            memcpy(&y, s + k, sizeof y);
            y ^= y >> 11;
            y ^= (y << 7) & 0x9d2c5680u;
            y ^= (y << 15) & 0xefc60000u;
            y ^= y >> 18;
            v8f f = __builtin_convertvector((v8i)(y & 0xFFFFFFu), v8f) * 0x1p-24f;
            memcpy(out + i + k, &f, sizeof f);
        }
        mt->next += (int)k;
        for (; k < run; k++) out[i + k] = uniform_f24(mt);
        i += run;
    }
}

/* uniform_real_distribution<double>(0,1) from random64() = first<<32 | second. */
static double uniform_d53(ct_mt19937 *mt) {
    uint64_t hi = ct_mt19937_next(mt);
    uint64_t lo = ct_mt19937_next(mt);
    uint64_t v = ((hi << 32) | lo) & ((UINT64_C(1) << 53) - 1);
    return (double)v * 0x1p-53;
}

/* ---- the avx_mathfun-style log and sincos, one lane ---------------------- */

static uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Cephes logf in the avx_mathfun formulation; x in (0, 1] here. */
static float cephes_logf(float x) {
    if (x < 0x1p-126f) x = 0x1p-126f;
    int32_t ex = (int32_t)(f2u(x) >> 23) - 0x7f;
    x = u2f((f2u(x) & ~0x7f800000u) | 0x3f000000u); /* mantissa in [0.5, 1) */
    float e = (float)ex + 1.0f;
    float tmp = 0.0f;
    if (x < 0.707106781186547524f) {
        tmp = x;
        e = e - 1.0f;
    }
    x = (x - 1.0f) + tmp;
    float y = 7.0376836292E-2f;
    y = fmaf(x, y, -1.1514610310E-1f);
    y = fmaf(x, y, 1.1676998740E-1f);
    y = fmaf(x, y, -1.2420140846E-1f);
    y = fmaf(x, y, 1.4249322787E-1f);
    y = fmaf(x, y, -1.6668057665E-1f);
    y = fmaf(x, y, 2.0000714765E-1f);
    y = fmaf(x, y, -2.4999993993E-1f);
    y = fmaf(x, y, 3.3333331174E-1f);
    y = x * y;
    float z = x * x;
    y = fmaf(y, z, e * -2.12194440e-4f);
    y = fmaf(-z, 0.5f, y);
    x = x + y;
    return fmaf(e, 0.693359375f, x);
}

static void cephes_sincosf(float x, float *s, float *c) {
    uint32_t sign_sin = f2u(x) & 0x80000000u;
    x = fabsf(x);
    int32_t j = (int32_t)(x * 1.27323954473516f); /* truncation, x * 4/pi */
    j = (j + 1) & ~1;
    float y = (float)j;
    uint32_t swap_sin = (uint32_t)(j & 4) << 29;
    uint32_t sign_cos = (uint32_t)(~(j - 2) & 4) << 29;
    int first_poly_is_cos = (j & 2) == 0;
    x = fmaf(y, -0.78515625f, x);
    x = fmaf(y, -2.4187564849853515625e-4f, x);
    x = fmaf(y, -3.77489497744594108e-8f, x);
    sign_sin ^= swap_sin;
    float z = x * x;
    float yc = 2.443315711809948E-005f;
    yc = fmaf(z, yc, -1.388731625493765E-003f);
    yc = fmaf(z, yc, 4.166664568298827E-002f);
    yc = fmaf(yc * z, z, -(z * 0.5f));
    yc = yc + 1.0f;
    float ys = -1.9515295891E-4f;
    ys = fmaf(z, ys, 8.3321608736E-3f);
    ys = fmaf(z, ys, -1.6666654611E-1f);
    ys = z * ys;
    ys = fmaf(ys, x, x);
    /* torch selects with and/andnot and then adds and subtracts; doing the
     * same keeps even the sign of a zero identical. */
    float ysin2 = first_poly_is_cos ? ys : 0.0f;
    float ysin1 = first_poly_is_cos ? 0.0f : yc;
    float sv = ysin1 + ysin2;
    float cv = (yc - ysin1) + (ys - ysin2);
    *s = u2f(f2u(sv) ^ sign_sin);
    *c = u2f(f2u(cv) ^ sign_cos);
}

#define TWO_PI_F ((float)(2.0 * 3.14159265358979323846))

/* d[0..16) holds uniforms; replaced by 16 normals (std 1, mean 0). The final
 * "+ 0.0f" is torch's fmadd(n, std, mean): it turns -0 into +0. */
static void block16_avx2_scalar(float *d) {
    for (int j = 0; j < 8; j++) {
        float u1 = 1.0f - d[j];
        float u2 = d[j + 8];
        float r = sqrtf(-2.0f * cephes_logf(u1));
        float s, c;
        cephes_sincosf(TWO_PI_F * u2, &s, &c);
        d[j] = r * c + 0.0f;
        d[j + 8] = r * s + 0.0f;
    }
}

/* torch's scalar normal_fill_16<float> (ATEN_CPU_CAPABILITY=default). */
static void block16_default(float *d) {
    for (int j = 0; j < 8; j++) {
        float u1 = 1.0f - d[j];
        float u2 = d[j + 8];
        float r = sqrtf(-2.0f * logf(u1));
        float th = (float)(2.0 * 3.14159265358979323846 * (double)u2);
        d[j] = r * cosf(th) * 1.0f + 0.0f;
        d[j + 8] = r * sinf(th) * 1.0f + 0.0f;
    }
}

#ifdef CT_RNG_X86
/* The same as block16_avx2_scalar, eight lanes at a time. */
__attribute__((target("avx2,fma"))) static void block16_avx2(float *d) {
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 x = _mm256_sub_ps(one, _mm256_loadu_ps(d));
    __m256 u2 = _mm256_loadu_ps(d + 8);

    /* log(x) */
    x = _mm256_max_ps(x, _mm256_set1_ps(0x1p-126f));
    __m256i ex = _mm256_sub_epi32(_mm256_srli_epi32(_mm256_castps_si256(x), 23),
                                  _mm256_set1_epi32(0x7f));
    x = _mm256_or_ps(_mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(~0x7f800000))),
                     _mm256_set1_ps(0.5f));
    __m256 e = _mm256_add_ps(_mm256_cvtepi32_ps(ex), one);
    __m256 lt = _mm256_cmp_ps(x, _mm256_set1_ps(0.707106781186547524f), _CMP_LT_OS);
    __m256 tmp = _mm256_and_ps(x, lt);
    x = _mm256_sub_ps(x, one);
    e = _mm256_sub_ps(e, _mm256_and_ps(one, lt));
    x = _mm256_add_ps(x, tmp);
    __m256 y = _mm256_set1_ps(7.0376836292E-2f);
    y = _mm256_fmadd_ps(x, y, _mm256_set1_ps(-1.1514610310E-1f));
    y = _mm256_fmadd_ps(x, y, _mm256_set1_ps(1.1676998740E-1f));
    y = _mm256_fmadd_ps(x, y, _mm256_set1_ps(-1.2420140846E-1f));
    y = _mm256_fmadd_ps(x, y, _mm256_set1_ps(1.4249322787E-1f));
    y = _mm256_fmadd_ps(x, y, _mm256_set1_ps(-1.6668057665E-1f));
    y = _mm256_fmadd_ps(x, y, _mm256_set1_ps(2.0000714765E-1f));
    y = _mm256_fmadd_ps(x, y, _mm256_set1_ps(-2.4999993993E-1f));
    y = _mm256_fmadd_ps(x, y, _mm256_set1_ps(3.3333331174E-1f));
    y = _mm256_mul_ps(x, y);
    __m256 z = _mm256_mul_ps(x, x);
    y = _mm256_fmadd_ps(y, z, _mm256_mul_ps(e, _mm256_set1_ps(-2.12194440e-4f)));
    y = _mm256_fnmadd_ps(z, _mm256_set1_ps(0.5f), y);
    x = _mm256_add_ps(x, y);
    __m256 lg = _mm256_fmadd_ps(e, _mm256_set1_ps(0.693359375f), x);
    __m256 r = _mm256_sqrt_ps(_mm256_mul_ps(_mm256_set1_ps(-2.0f), lg));

    /* sincos(2 pi u2); the argument is >= 0, so the sine's input sign is + */
    __m256 th = _mm256_mul_ps(_mm256_set1_ps(TWO_PI_F), u2);
    __m256i j = _mm256_cvttps_epi32(_mm256_mul_ps(th, _mm256_set1_ps(1.27323954473516f)));
    j = _mm256_and_si256(_mm256_add_epi32(j, _mm256_set1_epi32(1)), _mm256_set1_epi32(~1));
    __m256 yj = _mm256_cvtepi32_ps(j);
    __m256i four = _mm256_set1_epi32(4);
    __m256 sign_sin = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_and_si256(j, four), 29));
    __m256 sign_cos = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_andnot_si256(_mm256_sub_epi32(j, _mm256_set1_epi32(2)), four), 29));
    __m256 poly = _mm256_castsi256_ps(
        _mm256_cmpeq_epi32(_mm256_and_si256(j, _mm256_set1_epi32(2)), _mm256_setzero_si256()));
    __m256 a = _mm256_and_ps(th, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
    a = _mm256_fmadd_ps(yj, _mm256_set1_ps(-0.78515625f), a);
    a = _mm256_fmadd_ps(yj, _mm256_set1_ps(-2.4187564849853515625e-4f), a);
    a = _mm256_fmadd_ps(yj, _mm256_set1_ps(-3.77489497744594108e-8f), a);
    __m256 z2 = _mm256_mul_ps(a, a);
    __m256 yc = _mm256_set1_ps(2.443315711809948E-005f);
    yc = _mm256_fmadd_ps(z2, yc, _mm256_set1_ps(-1.388731625493765E-003f));
    yc = _mm256_fmadd_ps(z2, yc, _mm256_set1_ps(4.166664568298827E-002f));
    yc = _mm256_fmsub_ps(_mm256_mul_ps(yc, z2), z2, _mm256_mul_ps(z2, _mm256_set1_ps(0.5f)));
    yc = _mm256_add_ps(yc, one);
    __m256 ys = _mm256_set1_ps(-1.9515295891E-4f);
    ys = _mm256_fmadd_ps(z2, ys, _mm256_set1_ps(8.3321608736E-3f));
    ys = _mm256_fmadd_ps(z2, ys, _mm256_set1_ps(-1.6666654611E-1f));
    ys = _mm256_mul_ps(z2, ys);
    ys = _mm256_fmadd_ps(ys, a, a);
    __m256 ysin2 = _mm256_and_ps(poly, ys);
    __m256 ysin1 = _mm256_andnot_ps(poly, yc);
    __m256 sv = _mm256_add_ps(ysin1, ysin2);
    __m256 cv = _mm256_add_ps(_mm256_sub_ps(yc, ysin1), _mm256_sub_ps(ys, ysin2));
    sv = _mm256_xor_ps(sv, sign_sin);
    cv = _mm256_xor_ps(cv, sign_cos);
    __m256 zero = _mm256_setzero_ps();
    _mm256_storeu_ps(d, _mm256_add_ps(_mm256_mul_ps(r, cv), zero));
    _mm256_storeu_ps(d + 8, _mm256_add_ps(_mm256_mul_ps(r, sv), zero));
}

static int have_avx2_fma(void) {
    static int cached = -1;
    if (cached < 0) {
        __builtin_cpu_init();
        cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return cached;
}
#endif

/* ---- randn ---------------------------------------------------------------- */

static void randn_small(ct_mt19937 *mt, size_t n, float *out) {
    double cached = 0.0;
    int have = 0;
    for (size_t i = 0; i < n; i++) {
        if (have) {
            out[i] = (float)cached;
            have = 0;
            continue;
        }
        double u1 = uniform_d53(mt);
        double u2 = uniform_d53(mt);
        double r = sqrt(-2.0 * log1p(-u2));
        double th = 2.0 * 3.14159265358979323846 * u1;
        cached = r * sin(th);
        have = 1;
        out[i] = (float)(r * cos(th));
    }
}

static void randn_fill(uint64_t seed, size_t n, ct_randn_kind kind, float *out, int vector) {
    ct_mt19937 mt;
    ct_mt19937_seed(&mt, seed);
    if (n < 16) {
        randn_small(&mt, n, out);
        return;
    }
    void (*block)(float *) = kind == CT_RANDN_TORCH_DEFAULT ? block16_default : block16_avx2_scalar;
#ifdef CT_RNG_X86
    if (vector && kind == CT_RANDN_TORCH_AVX2 && have_avx2_fma()) block = block16_avx2;
#else
    (void)vector;
#endif
    fill_f24(&mt, out, n);
    for (size_t i = 0; i + 16 <= n; i += 16) block(out + i);
    if (n % 16 != 0) {
        /* torch redraws 16 uniforms for the last 16 elements and recomputes them,
         * overwriting normals of the last full block. */
        float *tail = out + n - 16;
        for (int i = 0; i < 16; i++) tail[i] = uniform_f24(&mt);
        block(tail);
    }
}

void ct_torch_randn(uint64_t seed, size_t n, ct_randn_kind kind, float *out) {
    randn_fill(seed, n, kind, out, 1);
}

void ct_torch_randn_scalar(uint64_t seed, size_t n, ct_randn_kind kind, float *out) {
    randn_fill(seed, n, kind, out, 0);
}
