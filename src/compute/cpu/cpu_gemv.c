/* cpu_gemv.c — the few-row matrix product of decoding (see cpu_gemv.h).
 *
 * Decoding one token multiplies 1–4 rows by every decoder weight, so the time
 * is the time to stream the weights from memory. Each kernel therefore reads
 * NR weight rows at a time, widens each vector of weights once in registers
 * and multiplies it into all M activation rows (M·NR independent
 * accumulators), so a weight byte is loaded once whatever M is; the M
 * activation rows (≤ 4 × 16 KB) stay in L1/L2. The three levels (AVX-512,
 * AVX2, plain C) are chosen by the caller, at run time, from cpuid. */
#include "compute/cpu/cpu_gemv.h"

#include <immintrin.h>
#include <omp.h>
#include <stdint.h>

#include "compute/cpu/cpu_fast.h"
#include "compute/cpu/cpu_math.h"

/* One call's operands, shared read-only by the threads. */
typedef struct gemv_job {
    float *y;
    const float *x, *b, *res;
    const void *w;
    float alpha;
    int act, M, N, K;
} gemv_job;

/* Threads take chunks of output features, about this many weight bytes
 * each (long enough runs to stream) and a multiple of 16 features (so no
 * two threads write one cache line of y), from a shared counter: a thread
 * the scheduler starts late (a loaded machine) finds fewer chunks left
 * instead of holding up the others with a fixed half. */
#define CHUNK_BYTES (128 * 1024)
#define CHUNK_ALIGN 16
/* Software prefetch distance, bytes ahead in each weight row: the hardware
 * streamers follow each row's sequential stream; the prefetch is meant for
 * the start of the next rows, where a streamer restarts (its gain alone was
 * not measured: the loaded machine's noise was larger). */
#define PF_BYTES 512

/* The store: bias, activation, scale, residual, as ct_ref_matmul orders
 * them (SiLU through the vectorisable expf of the other fast ops). */
static inline void store(const gemv_job *j, int m, int n, float dot) {
    float v = dot + (j->b ? j->b[n] : 0.0f);
    if (j->act == CT_ACT_RELU) v = v > 0.0f ? v : 0.0f;
    else if (j->act == CT_ACT_SILU) v = ct_fast_silu(v);
    v *= j->alpha;
    size_t o = (size_t)m * j->N + n;
    if (j->res) v += j->res[o]; /* read before y is written: residual may be y */
    j->y[o] = v;
}

/* ---- AVX-512 ------------------------------------------------------------
 * 16 floats per vector; NR = 4 weight rows per block: M·4 ≤ 16 accumulators
 * + 4 weight vectors + 1 activation vector of the 32 registers. The
 * functions below are inlined with constant M, NR and dtype, so every loop
 * over rows unrolls and the accumulators live in registers. */
#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,fma,f16c")))
#define INL __attribute__((always_inline)) static inline

/* 16 weights from element `off` widened to float32; `mask` selects the
 * lanes to load (the rest read as 0, and masked lanes never fault). */
T512 INL __m512 w512(const void *w, size_t off, int dt, __mmask16 mask) {
    if (dt == CT_DTYPE_F32) return _mm512_maskz_loadu_ps(mask, (const float *)w + off);
    __m256i h = _mm256_maskz_loadu_epi16(mask, (const uint16_t *)w + off);
    if (dt == CT_DTYPE_BF16) /* bf16 is the top half of a float32 */
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

T512 INL void block512(const gemv_job *j, int n, const int M, const int NR, const int dt) {
    const size_t K = (size_t)j->K, es = dt == CT_DTYPE_F32 ? 4 : 2;
    const char *wb = (const char *)j->w;
    __m512 acc[CT_GEMV_MAX_M][4];
#pragma GCC unroll 4
    for (int m = 0; m < M; m++)
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) acc[m][r] = _mm512_setzero_ps();
    size_t k = 0;
    for (; k + 16 <= K; k += 16) {
        __m512 wv[4];
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            size_t off = (size_t)(n + r) * K + k;
            _mm_prefetch(wb + off * es + PF_BYTES, _MM_HINT_T0);
            wv[r] = w512(j->w, off, dt, (__mmask16)0xffff);
        }
#pragma GCC unroll 4
        for (int m = 0; m < M; m++) {
            __m512 xv = _mm512_loadu_ps(j->x + (size_t)m * K + k);
#pragma GCC unroll 4
            for (int r = 0; r < NR; r++) acc[m][r] = _mm512_fmadd_ps(xv, wv[r], acc[m][r]);
        }
    }
    if (k < K) { /* the last K mod 16 elements, masked */
        __mmask16 mask = (__mmask16)((1u << (K - k)) - 1u);
        __m512 wv[4];
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) wv[r] = w512(j->w, (size_t)(n + r) * K + k, dt, mask);
#pragma GCC unroll 4
        for (int m = 0; m < M; m++) {
            __m512 xv = _mm512_maskz_loadu_ps(mask, j->x + (size_t)m * K + k);
#pragma GCC unroll 4
            for (int r = 0; r < NR; r++) acc[m][r] = _mm512_fmadd_ps(xv, wv[r], acc[m][r]);
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < M; m++)
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) store(j, m, n + r, _mm512_reduce_add_ps(acc[m][r]));
}

/* bf16 weights without widening shuffles: 32 weights are one 64-byte load;
 * as 16 32-bit lanes, each holds an even element in its low half and an odd
 * one in its high half, so `<< 16` gives the even ones as float32 and
 * masking the low half the odd ones (two cheap integer ops, where
 * vpmovzxwd is a cross-lane shuffle that Zen 4 runs at half rate on 512-bit
 * registers: the bf16 GEMV there was compute-bound at 1.8x its memory
 * bound). The activations were split per 32-block into [even | odd] once
 * per call (xs), so each lane multiplies matching elements; only the
 * summation order differs from block512 (K a multiple of 32). */
T512 INL void block512_bf16_split(const gemv_job *j, const float *xs, int n, const int M, const int NR) {
    const size_t K = (size_t)j->K;
    const uint16_t *w = (const uint16_t *)j->w;
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    __m512 acc[CT_GEMV_MAX_M][4];
#pragma GCC unroll 4
    for (int m = 0; m < M; m++)
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) acc[m][r] = _mm512_setzero_ps();
    for (size_t k = 0; k < K; k += 32) {
        __m512 we[4], wo[4];
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            const uint16_t *p = w + (size_t)(n + r) * K + k;
            /* the same place in the next block's row: a block ahead (NR rows) */
            _mm_prefetch((const char *)(p + (size_t)NR * K), _MM_HINT_T0);
            __m512i v = _mm512_loadu_si512((const void *)p);
            we[r] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
            wo[r] = _mm512_castsi512_ps(_mm512_and_si512(v, hi));
        }
#pragma GCC unroll 4
        for (int m = 0; m < M; m++) {
            __m512 xe = _mm512_loadu_ps(xs + (size_t)m * K + k), xo = _mm512_loadu_ps(xs + (size_t)m * K + k + 16);
#pragma GCC unroll 4
            for (int r = 0; r < NR; r++) acc[m][r] = _mm512_fmadd_ps(xo, wo[r], _mm512_fmadd_ps(xe, we[r], acc[m][r]));
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < M; m++)
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) store(j, m, n + r, _mm512_reduce_add_ps(acc[m][r]));
}

T512 INL void rows512_bf16_split(const gemv_job *j, const float *xs, int n0, int n1, const int M) {
    int n = n0;
    for (; n + 4 <= n1; n += 4) block512_bf16_split(j, xs, n, M, 4);
    for (; n < n1; n++) block512_bf16_split(j, xs, n, M, 1);
}

T512 static void run512_bf16_split(const gemv_job *j, const float *xs, int n0, int n1) {
    switch (j->M) {
    case 1: rows512_bf16_split(j, xs, n0, n1, 1); break;
    case 2: rows512_bf16_split(j, xs, n0, n1, 2); break;
    case 3: rows512_bf16_split(j, xs, n0, n1, 3); break;
    default: rows512_bf16_split(j, xs, n0, n1, CT_GEMV_MAX_M); break;
    }
}

/* x (M,K) → xs: per 32-element block, the 16 even elements then the 16 odd. */
static void split_even_odd(float *xs, const float *x, int M, int K) {
    for (int m = 0; m < M; m++)
        for (int k0 = 0; k0 < K; k0 += 32) {
            const float *src = x + (size_t)m * K + k0;
            float *dst = xs + (size_t)m * K + k0;
            for (int i = 0; i < 16; i++) dst[i] = src[2 * i], dst[16 + i] = src[2 * i + 1];
        }
}

T512 INL void rows512(const gemv_job *j, int n0, int n1, const int M, const int dt) {
    int n = n0;
    for (; n + 4 <= n1; n += 4) block512(j, n, M, 4, dt);
    for (; n < n1; n++) block512(j, n, M, 1, dt);
}

/* ---- AVX2 ---------------------------------------------------------------
 * 8 floats per vector, 16 registers: NR = 4 rows for M ≤ 2 and 2 rows for
 * M = 3, 4 keep M·NR ≤ 8 accumulators. The K mod 8 tail is scalar. */
#define T256 __attribute__((target("avx2,fma,f16c")))

T256 INL __m256 w256(const void *w, size_t off, int dt) {
    if (dt == CT_DTYPE_F32) return _mm256_loadu_ps((const float *)w + off);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + off));
    if (dt == CT_DTYPE_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

T256 INL float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float weight_at(const void *w, size_t i, int dt) {
    if (dt == CT_DTYPE_F32) return ((const float *)w)[i];
    uint16_t h = ((const uint16_t *)w)[i];
    return dt == CT_DTYPE_BF16 ? ct_bf16_to_f32(h) : ct_f16_to_f32(h);
}

T256 INL void block256(const gemv_job *j, int n, const int M, const int NR, const int dt) {
    const size_t K = (size_t)j->K, es = dt == CT_DTYPE_F32 ? 4 : 2;
    const char *wb = (const char *)j->w;
    __m256 acc[CT_GEMV_MAX_M][4];
#pragma GCC unroll 4
    for (int m = 0; m < M; m++)
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) acc[m][r] = _mm256_setzero_ps();
    size_t k = 0;
    for (; k + 8 <= K; k += 8) {
        __m256 wv[4];
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            size_t off = (size_t)(n + r) * K + k;
            _mm_prefetch(wb + off * es + PF_BYTES, _MM_HINT_T0);
            wv[r] = w256(j->w, off, dt);
        }
#pragma GCC unroll 4
        for (int m = 0; m < M; m++) {
            __m256 xv = _mm256_loadu_ps(j->x + (size_t)m * K + k);
#pragma GCC unroll 4
            for (int r = 0; r < NR; r++) acc[m][r] = _mm256_fmadd_ps(xv, wv[r], acc[m][r]);
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < M; m++)
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            float dot = hsum256(acc[m][r]);
            for (size_t t = k; t < K; t++) dot += j->x[(size_t)m * K + t] * weight_at(j->w, (size_t)(n + r) * K + t, dt);
            store(j, m, n + r, dot);
        }
}

T256 INL void rows256(const gemv_job *j, int n0, int n1, const int M, const int dt) {
    const int NR = M <= 2 ? 4 : 2;
    int n = n0;
    for (; n + NR <= n1; n += NR) block256(j, n, M, NR, dt);
    for (; n < n1; n++) block256(j, n, M, 1, dt);
}

/* ---- plain C --------------------------------------------------------------
 * One weight row at a time, 16 weights at a time: widened once into a local
 * block and multiplied into all M rows, each with 16 partial sums (lanes
 * the compiler maps onto several vector registers, so the adds do not wait
 * on one another). */
#define PLAIN_LANES 16

static inline void row_plain(const gemv_job *j, int n, const int M, const int dt) {
    const size_t K = (size_t)j->K, off = (size_t)n * K;
    float acc[CT_GEMV_MAX_M][PLAIN_LANES] = {{0}};
    size_t k = 0;
    for (; k + PLAIN_LANES <= K; k += PLAIN_LANES) {
        float wf[PLAIN_LANES];
        if (dt == CT_DTYPE_F32)
            for (int u = 0; u < PLAIN_LANES; u++) wf[u] = ((const float *)j->w)[off + k + u];
        else if (dt == CT_DTYPE_BF16)
            for (int u = 0; u < PLAIN_LANES; u++) wf[u] = ct_bf16_to_f32(((const uint16_t *)j->w)[off + k + u]);
        else
            for (int u = 0; u < PLAIN_LANES; u++) wf[u] = ct_f16_to_f32(((const uint16_t *)j->w)[off + k + u]);
        for (int m = 0; m < M; m++) {
            const float *xm = j->x + (size_t)m * K + k;
            for (int u = 0; u < PLAIN_LANES; u++) acc[m][u] += xm[u] * wf[u];
        }
    }
    for (int m = 0; m < M; m++) {
        float dot = 0.0f;
        for (int u = 0; u < PLAIN_LANES; u++) dot += acc[m][u];
        for (size_t t = k; t < K; t++) dot += j->x[(size_t)m * K + t] * weight_at(j->w, off + t, dt);
        store(j, m, n, dot);
    }
}

static inline void rows_plain(const gemv_job *j, int n0, int n1, const int M, const int dt) {
    for (int n = n0; n < n1; n++) row_plain(j, n, M, dt);
}

/* ---- dispatch: one instance per (level, dtype, M) ------------------------- */
#define BY_M(fn, j, n0, n1, dt)                         \
    switch ((j)->M) {                                   \
    case 1: fn(j, n0, n1, 1, dt); break;                \
    case 2: fn(j, n0, n1, 2, dt); break;                \
    case 3: fn(j, n0, n1, 3, dt); break;                \
    default: fn(j, n0, n1, CT_GEMV_MAX_M, dt); break;   \
    }
#define BY_DTYPE(fn, j, n0, n1, dt)                                         \
    do {                                                                    \
        if ((dt) == CT_DTYPE_F32) BY_M(fn, j, n0, n1, CT_DTYPE_F32)         \
        else if ((dt) == CT_DTYPE_BF16) BY_M(fn, j, n0, n1, CT_DTYPE_BF16)  \
        else BY_M(fn, j, n0, n1, CT_DTYPE_F16)                              \
    } while (0)

T512 static void run512(const gemv_job *j, int n0, int n1, ct_dtype dt) { BY_DTYPE(rows512, j, n0, n1, dt); }
T256 static void run256(const gemv_job *j, int n0, int n1, ct_dtype dt) { BY_DTYPE(rows256, j, n0, n1, dt); }
static void run_plain(const gemv_job *j, int n0, int n1, ct_dtype dt) { BY_DTYPE(rows_plain, j, n0, n1, dt); }

/* The split bf16 kernel's activations live on the caller's stack: at most
 * this many floats (M · K: 4 rows of the decoder's 4096-wide FFN). */
#define SPLIT_MAX_X 16384

static void run(ct_cpu_isa isa, const gemv_job *j, const float *xs, int n0, int n1, ct_dtype dt) {
    if (n0 >= n1) return;
    if (xs) run512_bf16_split(j, xs, n0, n1);
    else if (isa == CT_CPU_ISA_AVX512) run512(j, n0, n1, dt);
    else if (isa == CT_CPU_ISA_AVX2) run256(j, n0, n1, dt);
    else run_plain(j, n0, n1, dt);
}

ct_status ct_gemv(ct_cpu_isa isa, int threads, float *y, const float *x, const ct_tensor *w, const float *b,
                  const float *residual, float alpha, ct_act act, int M, int N, int K) {
    // y (M,N), x (M,K), w (N,K), b (N), residual (M,N)
    if (M < 1 || M > CT_GEMV_MAX_M || N < 0 || K < 0)
        return ct_fail(CT_ERR_INVALID_ARG, "gemv: %d x %d x %d (rows must be 1..%d)", M, N, K, CT_GEMV_MAX_M);
    if (w->dtype != CT_DTYPE_F32 && w->dtype != CT_DTYPE_BF16 && w->dtype != CT_DTYPE_F16)
        return ct_fail(CT_ERR_UNSUPPORTED, "gemv: weight dtype %s", ct_dtype_name(w->dtype));
    if (ct_tensor_numel(w) != (int64_t)N * K)
        return ct_fail(CT_ERR_INVALID_ARG, "gemv: weight has %lld elements, want %d x %d",
                       (long long)ct_tensor_numel(w), N, K);
    if ((unsigned)isa >= CT_CPU_ISA_COUNT || isa > ct_cpu_isa_best())
        return ct_fail(CT_ERR_UNSUPPORTED, "gemv: this CPU cannot run %s kernels (best: %s)", ct_cpu_isa_name(isa),
                       ct_cpu_isa_name(ct_cpu_isa_best()));
    if (N == 0) return CT_OK;
    gemv_job j = {.y = y, .x = x, .b = b, .res = residual, .w = w->data, .alpha = alpha, .act = (int)act, .M = M,
                  .N = N, .K = K};
    const size_t row_bytes = (size_t)(K > 0 ? K : 1) * ct_dtype_size(w->dtype);
    int rows = (int)(CHUNK_BYTES / row_bytes) / CHUNK_ALIGN * CHUNK_ALIGN;
    if (rows < CHUNK_ALIGN) rows = CHUNK_ALIGN;
    const int chunks = (N + rows - 1) / rows;
    int nth = threads < 1 ? 1 : threads;
    if (nth > chunks) nth = chunks;
    /* 2·CT_PAR_MIN weights: even the decoder's d×d projections (1 M weights)
     * are worth two threads (docs/PERFORMANCE.md). */
    if ((size_t)N * K <= 2 * CT_PAR_MIN) nth = 1;
    float xs_buf[SPLIT_MAX_X];
    const float *xs = NULL;
    if (isa == CT_CPU_ISA_AVX512 && w->dtype == CT_DTYPE_BF16 && K > 0 && K % 32 == 0 &&
        (size_t)M * K <= SPLIT_MAX_X) {
        split_even_odd(xs_buf, x, M, K);
        xs = xs_buf;
    }
    if (nth == 1) {
        run(isa, &j, xs, 0, N, w->dtype);
        return CT_OK;
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth)
    for (int c = 0; c < chunks; c++) {
        int n0 = c * rows, n1 = n0 + rows < N ? n0 + rows : N;
        run(isa, &j, xs, n0, n1, w->dtype);
    }
    return CT_OK;
}
