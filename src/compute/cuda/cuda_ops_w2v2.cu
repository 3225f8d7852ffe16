/* cuda_ops_w2v2.cu — the wav2vec2 aligner's convolutions and elementwise
 * ops (backend.h version 5): conv1d_t, conv1d_grouped_t, gelu_t, add_t.
 * References: ct_ref_conv1d, ct_ref_conv1d_grouped, ct_ref_gelu, ct_ref_add
 * (tests/unit/test_cuda_w2v2_ops.c compares each).
 *
 * conv1d, channels last: one input channel (the first layer, over the PCM)
 * is k_conv1d_ci1, many rows a block; other layers with few taps (Ci·K <
 * 64) a direct kernel, one thread per output. The others are
 * GEMMs on cuBLASLt without im2col: output frame t reads input frames
 * tS … tS+K−1, K·Ci contiguous elements, and frame t+1 starts S·Ci later. A
 * GEMM row may not overlap the next one (ld ≥ K), so the taps go in chunks
 * of at most S frames, each one strided batched GEMM (batch = the rows b,
 * A's row stride S·Ci) accumulating into y (beta = 1) after y is filled with
 * the bias. The weight is re-laid (Co, K, Ci) in the workspace first.
 *
 * conv1d_grouped (the positional conv, K = 128 taps over C/G = 64
 * channels a group): im2col of a few rows b at a time into device scratch,
 * (k, i) order so that each copy reads 64 contiguous channels, then one
 * strided batched GEMM over the G groups (K = 8192), bias after.
 */
#include <math.h>

#include "compute/cuda/cuda_be.h"

#define LAUNCH_CHECK() CT_CUDA_TRY(cudaGetLastError())
#define GRID_STRIDE(i, n) \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

static int is16(ct_dtype t) { return t == CT_DTYPE_BF16 || t == CT_DTYPE_F16; }

/* ---- GELU, add ------------------------------------------------------------ */
__device__ __forceinline__ float gelu_erf(float x) { return 0.5f * x * (1.f + erff(x * 0.70710678118654752f)); }

template <typename T> __global__ void k_gelu(T *x, size_t n) { GRID_STRIDE(i, n) x[i] = ct_st<T>(gelu_erf(ct_ld(x[i]))); }

/* 8 16-bit values per thread (one 16-byte access) */
template <typename T> __global__ void k_gelu8(uint4 *x, size_t n8) {
    GRID_STRIDE(i, n8) {
        uint4 u = x[i];
        T *e = reinterpret_cast<T *>(&u);
#pragma unroll
        for (int k = 0; k < 8; k++) e[k] = ct_st<T>(gelu_erf(ct_ld(e[k])));
        x[i] = u;
    }
}

ct_status ct_cuda_op_gelu(ct_backend *be, ct_buf x, size_t n) {
    if (!n) return CT_OK;
    cudaStream_t st = ct_cstream(be);
    if (is16(x.dtype) && n % 8 == 0 && ((uintptr_t)x.data & 15) == 0) {
        CT_CUDA_DISPATCH(x.dtype, T, "gelu", {
            k_gelu8<T><<<ct_blocks(n / 8, 256), 256, 0, st>>>((uint4 *)x.data, n / 8);
            LAUNCH_CHECK();
        });
        return CT_OK;
    }
    CT_CUDA_DISPATCH(x.dtype, T, "gelu", {
        k_gelu<T><<<ct_blocks(n, 256), 256, 0, st>>>((T *)x.data, n);
        LAUNCH_CHECK();
    });
    return CT_OK;
}

template <typename Y, typename A, typename B> __global__ void k_add(Y *y, const A *a, const B *b, size_t n) {
    GRID_STRIDE(i, n) y[i] = ct_st<Y>(ct_ld(a[i]) + ct_ld(b[i]));
}

ct_status ct_cuda_op_add(ct_backend *be, ct_buf y, ct_buf a, ct_buf b, size_t n) {
    if (!n) return CT_OK;
    /* in place only where the element types agree (each element is read before it is written) */
    if ((y.data == a.data && y.dtype != a.dtype) || (y.data == b.data && y.dtype != b.dtype))
        return ct_fail(CT_ERR_INVALID_ARG, "cuda add: in place across element types");
    cudaStream_t st = ct_cstream(be);
    CT_CUDA_DISPATCH(y.dtype, Y, "add", CT_CUDA_DISPATCH(a.dtype, A, "add", CT_CUDA_DISPATCH(b.dtype, B, "add", {
        k_add<Y, A, B><<<ct_blocks(n, 256), 256, 0, st>>>((Y *)y.data, (const A *)a.data, (const B *)b.data, n);
        LAUNCH_CHECK();
    })));
    return CT_OK;
}

/* ---- conv1d ---------------------------------------------------------------- */
/* direct: grid (B·To rows, Co / 256); the row's K·Ci inputs in shared memory */
template <typename Y, typename X, typename W>
__global__ void k_conv1d_direct(Y *y, const X *x, const W *w, const float *bias, int T, int Ci, int Co, int K,
                                int stride, int To) {
    extern __shared__ float xs[];
    const unsigned row = blockIdx.x, t = row % (unsigned)To, b = row / (unsigned)To;
    const X *xr = x + ((size_t)b * T + (size_t)t * stride) * Ci;
    const int n = K * Ci; /* frames tS … tS+K−1, contiguous: xs[k·Ci + i] */
    for (int e = threadIdx.x; e < n; e += blockDim.x) xs[e] = ct_ld(xr[e]);
    __syncthreads();
    int o = blockIdx.y * blockDim.x + threadIdx.x;
    if (o >= Co) return;
    const W *wo = w + (size_t)o * Ci * K; /* w[o][i][k] */
    float s = bias ? bias[o] : 0.f;
    for (int i = 0; i < Ci; i++)
        for (int k = 0; k < K; k++) s += ct_ld(wo[i * K + k]) * xs[k * Ci + i];
    y[(size_t)row * Co + o] = ct_st<Y>(s);
}

/* Ci = 1 (the first layer, over the PCM: 512 channels of 3.5 M frames at
 * 32 windows, the feature encoder's largest output): a block covers
 * 2·256 channels of CONV1_ROWS consecutive output rows; each thread keeps
 * its two channels' K ≤ KMAX taps in registers, the rows' samples are in
 * shared memory, and a warp's stores are 128 contiguous bytes. (One block
 * per row, as k_conv1d_direct, is ~3.5 M blocks that each write 1 KB:
 * bound by the block launches, 11 ms where the write costs ~1.) Taps are
 * summed in the order k_conv1d_direct sums them. */
constexpr int CONV1_ROWS = 32, CONV1_KMAX = 16;
template <typename Y, typename X, typename W>
__global__ void __launch_bounds__(256) k_conv1d_ci1(Y *y, const X *x, const W *w, const float *bias, int T, int Co,
                                                    int K, int stride, int To, size_t rows) {
    __shared__ float xs[CONV1_ROWS * CONV1_KMAX];
    const size_t r0 = (size_t)blockIdx.x * CONV1_ROWS;
    const int nr = rows - r0 < (size_t)CONV1_ROWS ? (int)(rows - r0) : CONV1_ROWS;
    for (int e = threadIdx.x; e < nr * K; e += blockDim.x) {
        const size_t row = r0 + (size_t)(e / K);
        const size_t b = row / (size_t)To, t = row % (size_t)To;
        xs[e] = ct_ld(x[b * (size_t)T + t * (size_t)stride + (size_t)(e % K)]);
    }
    __syncthreads();
    const int o = 2 * (blockIdx.y * blockDim.x + threadIdx.x);
    if (o >= Co) return;
    const bool two = o + 1 < Co;
    float w0[CONV1_KMAX], w1[CONV1_KMAX];
#pragma unroll
    for (int k = 0; k < CONV1_KMAX; k++) {
        w0[k] = k < K ? ct_ld(w[(size_t)o * K + k]) : 0.f;
        w1[k] = k < K && two ? ct_ld(w[(size_t)(o + 1) * K + k]) : 0.f;
    }
    const float b0 = bias ? bias[o] : 0.f, b1 = bias && two ? bias[o + 1] : 0.f;
    for (int r = 0; r < nr; r++) {
        float s0 = b0, s1 = b1;
        const float *xr = xs + r * K;
#pragma unroll
        for (int k = 0; k < CONV1_KMAX; k++)
            if (k < K) {
                s0 += w0[k] * xr[k];
                s1 += w1[k] * xr[k];
            }
        Y *yr = y + (r0 + (size_t)r) * Co + o;
        yr[0] = ct_st<Y>(s0);
        if (two) yr[1] = ct_st<Y>(s1);
    }
}

/* w (Co, Ci, K) → wp (Co, K, Ci) */
template <typename T> __global__ void k_relay_oik_oki(T *wp, const T *w, int Ci, int K, size_t n) {
    GRID_STRIDE(e, n) {
        size_t o = e / ((size_t)Ci * K);
        int r = (int)(e % ((size_t)Ci * K)), k = r / Ci, i = r % Ci;
        wp[e] = w[o * Ci * K + (size_t)i * K + k];
    }
}

/* rows × cols of y = bias[col]; grid ct_grid2(rows, cols) */
template <typename Y> __global__ void k_fill_bias(Y *y, const float *bias, int cols) {
    int c = blockIdx.y * CT_COLS_PER_BLOCK + threadIdx.x;
    if (c < cols) y[(size_t)blockIdx.x * cols + c] = ct_st<Y>(bias[c]);
}

ct_status ct_cuda_op_conv1d(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *bias, int B, int T,
                            int Ci, int Co, int K, int stride, ct_arena *ws) {
    ct_cuda_be *cb = ct_cbe(be);
    if (K <= 0 || stride <= 0 || T < K) return ct_fail(CT_ERR_INVALID_ARG, "cuda conv1d: T=%d K=%d", T, K);
    if (w->ndim != 3 || w->shape[0] != Co || w->shape[1] != Ci || w->shape[2] != K)
        return ct_fail(CT_ERR_INVALID_ARG, "cuda conv1d: weight shape for Co=%d Ci=%d K=%d", Co, Ci, K);
    const int To = (T - K) / stride + 1;
    const size_t rows = (size_t)B * To;
    if (!rows || Co <= 0) return CT_OK;
    if (rows > 0x7fffffffu) return ct_fail(CT_ERR_LIMIT, "cuda conv1d: %zu output frames", rows);
    cudaStream_t st = ct_cstream(be);
    if (Ci == 1 && K <= CONV1_KMAX) {
        dim3 grid((unsigned)((rows + CONV1_ROWS - 1) / CONV1_ROWS), (unsigned)((Co + 511) / 512));
        CT_CUDA_DISPATCH(y.dtype, Y, "conv1d", CT_CUDA_DISPATCH(x.dtype, X, "conv1d", CT_CUDA_DISPATCH(w->dtype, W, "conv1d", {
            k_conv1d_ci1<Y, X, W><<<grid, 256, 0, st>>>((Y *)y.data, (const X *)x.data, (const W *)w->data, bias, T,
                                                        Co, K, stride, To, rows);
            LAUNCH_CHECK();
        })));
        return CT_OK;
    }
    if (Ci * K < 64 || !is16(x.dtype)) {
        if ((size_t)Ci * K * sizeof(float) > 48 * 1024)
            return ct_fail(CT_ERR_UNSUPPORTED, "cuda conv1d: %s input with Ci·K = %d", ct_dtype_name(x.dtype), Ci * K);
        dim3 grid((unsigned)rows, (unsigned)((Co + 255) / 256));
        size_t smem = sizeof(float) * (size_t)Ci * K;
        CT_CUDA_DISPATCH(y.dtype, Y, "conv1d", CT_CUDA_DISPATCH(x.dtype, X, "conv1d", CT_CUDA_DISPATCH(w->dtype, W, "conv1d", {
            k_conv1d_direct<Y, X, W><<<grid, 256, smem, st>>>((Y *)y.data, (const X *)x.data, (const W *)w->data,
                                                              bias, T, Ci, Co, K, stride, To);
            LAUNCH_CHECK();
        })));
        return CT_OK;
    }
    if (w->dtype != x.dtype || (y.dtype != CT_DTYPE_F32 && y.dtype != x.dtype))
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda conv1d: x %s, weights %s, y %s", ct_dtype_name(x.dtype),
                       ct_dtype_name(w->dtype), ct_dtype_name(y.dtype));
    if ((Ci * 2) % 16) return ct_fail(CT_ERR_UNSUPPORTED, "cuda conv1d: Ci = %d (a multiple of 8 here)", Ci);
    size_t nw = (size_t)Co * Ci * K, mark = ws ? ct_arena_mark(ws) : 0;
    void *wp = ws ? ct_arena_alloc(ws, nw * 2) : NULL;
    if (!wp) return ct_fail(CT_ERR_OOM, "cuda conv1d: workspace for the weight (%zu bytes)", nw * 2);
    k_relay_oik_oki<uint16_t><<<ct_blocks(nw, 256), 256, 0, st>>>((uint16_t *)wp, (const uint16_t *)w->data, Ci, K, nw);
    LAUNCH_CHECK();
    ct_status s = CT_OK;
    if (bias) {
        CT_CUDA_DISPATCH(y.dtype, Y, "conv1d", {
            k_fill_bias<Y><<<ct_grid2(rows, Co), CT_COLS_PER_BLOCK, 0, st>>>((Y *)y.data, bias, Co);
            LAUNCH_CHECK();
        });
    }
    for (int k0 = 0; k0 < K && s == CT_OK; k0 += stride) {
        const int kc = K - k0 < stride ? K - k0 : stride;
        ct_cuda_bgemm_args g = {};
        g.M = To, g.N = Co, g.K = kc * Ci, g.batch = B;
        g.A = (const uint16_t *)x.data + (size_t)k0 * Ci, g.lda = stride * Ci, g.sa = (long long)T * Ci;
        g.B = (const uint16_t *)wp + (size_t)k0 * Ci, g.ldb = K * Ci, g.sb = 0, g.b_trans = 1;
        g.D = y.data, g.ldd = Co, g.sd = (long long)To * Co, g.d_f32 = y.dtype == CT_DTYPE_F32;
        g.alpha = 1.f, g.f16 = x.dtype == CT_DTYPE_F16;
        s = ct_cuda_bgemm_beta(cb->c, &g, (bias || k0 > 0) ? 1.f : 0.f);
    }
    if (ws) ct_arena_rewind(ws, mark);
    return s;
}

/* ---- grouped positional conv ----------------------------------------------- */
/* w (C, Cg, K) f32 → wp (C, K, Cg) act: row o of group g is the GEMM's B row */
template <typename T> __global__ void k_posw(T *wp, const float *w, int Cg, int K, size_t n) {
    GRID_STRIDE(e, n) {
        size_t o = e / ((size_t)Cg * K);
        int r = (int)(e % ((size_t)Cg * K)), k = r / Cg, i = r % Cg;
        wp[e] = ct_st<T>(w[o * Cg * K + (size_t)i * K + k]);
    }
}

/* col[(r, g)][k·Cg + i] = x[b][t + k − K/2][g·Cg + i] (zero outside), r = (b − b0)·T + t;
 * one block per row r, 16-byte copies in (g, k, i) order: the writes are the
 * row's G·K·Cg contiguous elements, each read 64 contiguous channels */
__global__ void k_im2col_pos(uint4 *col, const uint4 *x, int T, int C, int G, int K, int b0) {
    const unsigned r = blockIdx.x;
    const int t = (int)(r % (unsigned)T), b = b0 + (int)(r / (unsigned)T);
    const int Cg8 = C / G / 8, C8 = C / 8, n = G * K * Cg8;
    uint4 *dst = col + (size_t)r * n;
    const uint4 *xb = x + (size_t)b * T * C8;
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
        int i = e % Cg8, gk = e / Cg8, k = gk % K, g = gk / K;
        int ts = t + k - K / 2;
        dst[e] = (ts >= 0 && ts < T) ? xb[(size_t)ts * C8 + g * Cg8 + i] : make_uint4(0, 0, 0, 0);
    }
}

ct_status ct_cuda_op_conv1d_grouped(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *bias, int B,
                                    int T, int C, int G, int K, ct_arena *ws) {
    ct_cuda_be *cb = ct_cbe(be);
    (void)ws;
    if (B <= 0 || T <= 0) return CT_OK;
    if (!is16(x.dtype) || y.dtype != x.dtype)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda conv1d_grouped: x %s, y %s (the activation type)",
                       ct_dtype_name(x.dtype), ct_dtype_name(y.dtype));
    if (y.data == x.data) return ct_fail(CT_ERR_INVALID_ARG, "cuda conv1d_grouped: y must differ from x");
    if (G <= 0 || C % G || (C / G) % 8 || K <= 0)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda conv1d_grouped: C=%d G=%d K=%d", C, G, K);
    const int Cg = C / G;
    const size_t nw = (size_t)C * Cg * K, row_bytes = (size_t)C * K * 2;
    /* scratch: the weight, then im2col for nb rows b at a time (≤ ~1 GiB) */
    size_t nb = ((size_t)1 << 30) / (row_bytes * (size_t)T);
    if (nb < 1) nb = 1;
    if (nb > (size_t)B) nb = (size_t)B;
    if ((size_t)T * nb > 0x7fffffffu) nb = 1;
    void *scr = NULL;
    CT_TRY(ct_cuda_scratch(be, nw * 2 + nb * T * row_bytes + 256, &scr));
    uint16_t *wp = (uint16_t *)scr;
    uint16_t *col = (uint16_t *)(((uintptr_t)scr + nw * 2 + 255) & ~(uintptr_t)255);
    cudaStream_t st = ct_cstream(be);
    CT_CUDA_DISPATCH(x.dtype, E, "conv1d_grouped", {
        k_posw<E><<<ct_blocks(nw, 256), 256, 0, st>>>((E *)wp, w, Cg, K, nw);
        LAUNCH_CHECK();
    });
    for (size_t b0 = 0; b0 < (size_t)B; b0 += nb) {
        const size_t n = (size_t)B - b0 < nb ? (size_t)B - b0 : nb;
        k_im2col_pos<<<(unsigned)(n * T), 256, 0, st>>>((uint4 *)col, (const uint4 *)x.data, T, C, G, K, (int)b0);
        LAUNCH_CHECK();
        ct_cuda_bgemm_args g = {};
        g.M = (int)(n * T), g.N = Cg, g.K = K * Cg, g.batch = G;
        g.A = col, g.lda = C * K, g.sa = (long long)K * Cg;
        g.B = wp, g.ldb = K * Cg, g.sb = (long long)Cg * K * Cg, g.b_trans = 1;
        g.D = (char *)y.data + b0 * T * C * 2, g.ldd = C, g.sd = Cg, g.d_f32 = 0;
        g.alpha = 1.f, g.f16 = x.dtype == CT_DTYPE_F16;
        CT_TRY(ct_cuda_bgemm(cb->c, &g));
    }
    return ct_cuda_bias_act(be, y, bias, (size_t)B * T, C, 0, C, CT_ACT_NONE);
}
