/* cuda_ops.cu — the backend's elementwise, norm, convolution, position,
 * embedding, selection and conversion ops (typed, backend.h version 3), one
 * plain kernel each over the layouts of backend.h. Their references are the
 * cpu-ref ops (compute/ref/); tests/unit/test_cuda_backend.c compares every
 * one. Arithmetic in float32 whatever the storage type.
 */
#include <math.h>

#include "compute/cuda/cuda_be.h"

#define LAUNCH_CHECK() CT_CUDA_TRY(cudaGetLastError())
#define GRID_STRIDE(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* ---- conversions --------------------------------------------------------- */
template <typename Y, typename X> __global__ void k_convert(Y *y, const X *x, float alpha, size_t n) {
    GRID_STRIDE(i, n) y[i] = ct_st<Y>(alpha * ct_ld(x[i]));
}

ct_status ct_cuda_op_convert(ct_backend *be, ct_buf y, ct_buf x, size_t n) {
    if (!n) return CT_OK;
    if (y.dtype == x.dtype && y.data == x.data) return CT_OK;
    CT_CUDA_DISPATCH(y.dtype, Y, "convert", CT_CUDA_DISPATCH(x.dtype, X, "convert", {
        k_convert<Y, X><<<ct_blocks(n, 256), 256, 0, ct_cstream(be)>>>((Y *)y.data, (const X *)x.data, 1.f, n);
        LAUNCH_CHECK();
    }));
    return CT_OK;
}

ct_status ct_cuda_scale_convert(ct_backend *be, ct_dtype dt, void *dst, const float *src, float alpha, size_t n) {
    if (!n) return CT_OK;
    CT_CUDA_DISPATCH(dt, Y, "bias", {
        k_convert<Y, float><<<ct_blocks(n, 256), 256, 0, ct_cstream(be)>>>((Y *)dst, src, alpha, n);
        LAUNCH_CHECK();
    });
    return CT_OK;
}

/* VEC elements per thread (one 16-byte access when VEC·sizeof(T) = 16:
 * these passes are memory-bound), the row's VEC-aligned columns */
template <typename T, int VEC>
__global__ void k_bias_act(T *x, const float *bias, int cols, int per_row, int bias_n, int act) {
    int c0 = (blockIdx.y * blockDim.x + threadIdx.x) * VEC;
    if (c0 >= cols) return;
    T *p = x + (size_t)blockIdx.x * cols + c0;
    float rb = bias && per_row ? bias[blockIdx.x % (unsigned)bias_n] : 0.f;
    T v[VEC];
    if (VEC * sizeof(T) == 16) *reinterpret_cast<uint4 *>(v) = *reinterpret_cast<const uint4 *>(p);
    else
        for (int k = 0; k < VEC; k++) v[k] = p[k];
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        float b = bias ? (per_row ? rb : bias[c0 + k]) : 0.f;
        v[k] = ct_st<T>(ct_apply_act(ct_ld(v[k]) + b, act));
    }
    if (VEC * sizeof(T) == 16) *reinterpret_cast<uint4 *>(p) = *reinterpret_cast<const uint4 *>(v);
    else
        for (int k = 0; k < VEC; k++) p[k] = v[k];
}

/* The same pass grid-stride over the whole (rows, cols) block in 16-byte
 * vectors (cols a multiple of V), a fixed grid of a few blocks per SM: the
 * FF modules' bias + SiLU over (B·T, 5120), where a block per row and a
 * vector per thread spent more on block scheduling than the old engine's
 * grid-stride SiLU pass (docs/PERFORMANCE.md, issue 13). Two vectors in
 * flight per thread per iteration. */
template <typename T, int V>
__global__ void k_bias_act_flat(T *x, const float *bias, size_t nvec, int nv, int per_row, int bias_n, int act) {
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nvec; i += 2 * stride) {
        T v[2][V];
        size_t idx[2] = {i, i + stride};
        int n = idx[1] < nvec ? 2 : 1;
#pragma unroll
        for (int u = 0; u < 2; u++)
            if (u < n) *reinterpret_cast<uint4 *>(v[u]) = *reinterpret_cast<const uint4 *>(x + idx[u] * V);
#pragma unroll
        for (int u = 0; u < 2; u++) {
            if (u >= n) break;
            size_t row = idx[u] / (unsigned)nv;
            int c0 = (int)(idx[u] - row * (unsigned)nv) * V;
            float rb = bias && per_row ? bias[row % (unsigned)bias_n] : 0.f;
#pragma unroll
            for (int k = 0; k < V; k++) {
                float b = bias ? (per_row ? rb : bias[c0 + k]) : 0.f;
                v[u][k] = ct_st<T>(ct_apply_act(ct_ld(v[u][k]) + b, act));
            }
            *reinterpret_cast<uint4 *>(x + idx[u] * V) = *reinterpret_cast<const uint4 *>(v[u]);
        }
    }
}

int ct_cuda_sm_count(void) {
    static int n = 0;
    if (!n) {
        int dev = 0, v = 0;
        if (cudaGetDevice(&dev) == cudaSuccess && cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) ==
                                                      cudaSuccess && v > 0)
            n = v;
        else
            n = 132;
    }
    return n;
}

ct_status ct_cuda_bias_act(ct_backend *be, ct_buf x, const float *bias, size_t rows, int cols, int per_row, int bias_n,
                           ct_act act) {
    if (!rows || cols <= 0 || (!bias && act == CT_ACT_NONE)) return CT_OK;
    if (rows > 0x7fffffffu) return ct_fail(CT_ERR_LIMIT, "cuda bias/activation: %zu rows", rows);
    int bn = bias_n > 0 ? bias_n : 1;
    CT_CUDA_DISPATCH(x.dtype, T, "bias/activation", {
        constexpr int V = 16 / sizeof(T);
        /* 16-byte rows and base: vectors; else one element per thread */
        size_t nvec = rows * (size_t)(cols / V);
        if (cols % V == 0 && ((uintptr_t)x.data & 15) == 0 && nvec >= ((size_t)1 << 16)) {
            /* large blocks (the FF modules' SiLU): grid-stride */
            size_t want = (nvec + 511) / 512, cap = (size_t)ct_cuda_sm_count() * 16;
            k_bias_act_flat<T, V><<<(unsigned)(want < cap ? want : cap), 256, 0, ct_cstream(be)>>>(
                (T *)x.data, bias, nvec, cols / V, per_row, bn, (int)act);
        } else if (cols % V == 0 && ((uintptr_t)x.data & 15) == 0) {
            /* a block width that divides the row's vectors where one does
             * (5120 bf16 = 640 vectors: 128 × 5, where 256 left 1/6 idle) */
            int nv = cols / V, th = 256;
            while (th > 32 && nv % th) th >>= 1;
            if (nv % th) th = 256;
            dim3 grid((unsigned)rows, (unsigned)((nv + th - 1) / th));
            k_bias_act<T, V><<<grid, th, 0, ct_cstream(be)>>>((T *)x.data, bias, cols, per_row, bn, (int)act);
        } else {
            k_bias_act<T, 1><<<ct_grid2(rows, cols), CT_COLS_PER_BLOCK, 0, ct_cstream(be)>>>((T *)x.data, bias, cols,
                                                                                          per_row, bn, (int)act);
        }
        LAUNCH_CHECK();
    });
    return CT_OK;
}

/* ---- layer norm: one block per row, two passes like the reference -------- */
/* The row is read once into registers (NPT per thread, D ≤ 256·NPT); mean,
 * then the variance around it, as the reference computes them. y may alias
 * x: every read happens before the first reduction's barrier. */
template <typename Y, typename X, int NPT>
__global__ void k_layer_norm(Y *y, const X *x, const float *g, const float *b, int D, float eps) {
    __shared__ float sh[32];
    const X *xr = x + (size_t)blockIdx.x * D;
    Y *yr = y + (size_t)blockIdx.x * D;
    float v[NPT];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < NPT; k++) {
        int d = threadIdx.x + k * blockDim.x;
        v[k] = d < D ? ct_ld(xr[d]) : 0.f;
        s += v[k];
    }
    float mean = ct_block_sum(s, sh) / (float)D;
    float q = 0.f;
#pragma unroll
    for (int k = 0; k < NPT; k++) {
        int d = threadIdx.x + k * blockDim.x;
        float t = d < D ? v[k] - mean : 0.f;
        q += t * t;
    }
    float inv = rsqrtf(ct_block_sum(q, sh) / (float)D + eps);
#pragma unroll
    for (int k = 0; k < NPT; k++) {
        int d = threadIdx.x + k * blockDim.x;
        if (d < D) yr[d] = ct_st<Y>((v[k] - mean) * inv * g[d] + b[d]);
    }
}

ct_status ct_cuda_op_layer_norm(ct_backend *be, ct_buf y, ct_buf x, const float *g, const float *b, int M, int D,
                                float eps) {
    if (M <= 0 || D <= 0) return CT_OK;
    if (y.data == x.data && y.dtype != x.dtype)
        return ct_fail(CT_ERR_INVALID_ARG, "cuda layer_norm: in place across element types");
    if (D > 256 * 16) return ct_fail(CT_ERR_UNSUPPORTED, "cuda layer_norm: rows of %d (at most 4096)", D);
    ct_status ws; /* a warp per row where the width allows (cuda_ops_fused.cu): no block barriers */
    if (ct_cuda_ln_warp(be, y, x, g, b, M, D, eps, &ws)) return ws;
    cudaStream_t st = ct_cstream(be);
    CT_CUDA_DISPATCH(y.dtype, Y, "layer_norm", CT_CUDA_DISPATCH(x.dtype, X, "layer_norm", {
        if (D <= 256 * 2) k_layer_norm<Y, X, 2><<<M, 256, 0, st>>>((Y *)y.data, (const X *)x.data, g, b, D, eps);
        else if (D <= 256 * 6) k_layer_norm<Y, X, 6><<<M, 256, 0, st>>>((Y *)y.data, (const X *)x.data, g, b, D, eps);
        else k_layer_norm<Y, X, 16><<<M, 256, 0, st>>>((Y *)y.data, (const X *)x.data, g, b, D, eps);
        LAUNCH_CHECK();
    }));
    return CT_OK;
}

/* ---- GLU ----------------------------------------------------------------- */
template <typename T> __global__ void k_glu(T *y, const T *x, int D) {
    int c = blockIdx.y * CT_COLS_PER_BLOCK + threadIdx.x;
    if (c >= D) return;
    size_t m = blockIdx.x;
    float a = ct_ld(x[m * 2 * D + c]), gte = ct_ld(x[m * 2 * D + D + c]);
    y[m * D + c] = ct_st<T>(a / (1.f + __expf(-gte)));
}

ct_status ct_cuda_op_glu(ct_backend *be, ct_buf y, ct_buf x, int M, int D) {
    if (x.dtype != y.dtype) return ct_fail(CT_ERR_UNSUPPORTED, "cuda glu: mixed element types");
    size_t n = (size_t)M * D;
    if (!n) return CT_OK;
    CT_CUDA_DISPATCH(y.dtype, T, "glu", {
        k_glu<T><<<ct_grid2((size_t)M, D), CT_COLS_PER_BLOCK, 0, ct_cstream(be)>>>((T *)y.data, (const T *)x.data, D);
        LAUNCH_CHECK();
    });
    return CT_OK;
}

/* ---- subsampling convolutions, layout (B, C, T, F) ----------------------- */
/* 3×3 stride 2 pad 1 from one channel: x (B,T,F) → y (B,C,To,Fo); grid
 * (B·C·To output rows, Fo) through rows_grid */
template <typename Y, typename X>
__global__ void k_conv2d_s2(Y *y, const X *x, const float *w, const float *b, int C, int T, int F, int To, int Fo,
                            int act, unsigned rows) {
    int fo = blockIdx.y * blockDim.x + threadIdx.x;
    unsigned row = blockIdx.x * blockDim.y + threadIdx.y;
    if (fo >= Fo || row >= rows) return;
    unsigned to = row % (unsigned)To, bc = row / (unsigned)To, c = bc % (unsigned)C,
             bb = bc / (unsigned)C;
    const X *xb = x + (size_t)bb * T * F;
    const float *wc = w + c * 9;
    float s = b[c];
    for (int kt = 0; kt < 3; kt++) {
        int t = 2 * (int)to - 1 + kt;
        if (t < 0 || t >= T) continue;
        for (int kf = 0; kf < 3; kf++) {
            int f = 2 * fo - 1 + kf;
            if (f >= 0 && f < F) s += wc[kt * 3 + kf] * ct_ld(xb[(size_t)t * F + f]);
        }
    }
    y[(size_t)row * Fo + fo] = ct_st<Y>(ct_apply_act(s, act));
}

static int stride2(int L) { return L <= 0 ? 0 : (L - 1) / 2 + 1; }

/* Blocks of 256 threads over (rows, Fo) output rows of Fo ≤ 64 columns: a
 * row of threads per output row (Fo rounded up to a power of two) and as
 * many rows per block as fit. One 256-wide block row per output row, as
 * ct_grid2 lays out, left 3/4 of the threads idle at Fo = 64 and 15/16 at
 * 16 (the subsampling's 64, 32, 16 bins). */
typedef struct rows_launch {
    dim3 grid, block;
} rows_launch;
static rows_launch rows_grid(size_t rows, int Fo) {
    unsigned fx = 1;
    while (fx < (unsigned)Fo && fx < 256) fx <<= 1;
    unsigned fy = 256 / fx;
    rows_launch l;
    l.block = dim3(fx, fy);
    l.grid = dim3((unsigned)((rows + fy - 1) / fy), (unsigned)((Fo + fx - 1) / fx));
    return l;
}

ct_status ct_cuda_op_conv2d_s2(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int C,
                               int T, int F, ct_act act) {
    int To = stride2(T), Fo = stride2(F);
    size_t n = (size_t)B * C * To * Fo;
    if (!n) return CT_OK;
    size_t rows = (size_t)B * C * To;
    if (rows > 0xffffffffu) return ct_fail(CT_ERR_LIMIT, "cuda stride-2 conv: %zu output rows", rows);
    const rows_launch l = rows_grid(rows, Fo);
    CT_CUDA_DISPATCH(y.dtype, Y, "conv2d_s2", CT_CUDA_DISPATCH(x.dtype, X, "conv2d_s2", {
        k_conv2d_s2<Y, X><<<l.grid, l.block, 0, ct_cstream(be)>>>((Y *)y.data, (const X *)x.data, w, b, C, T, F, To,
                                                                    Fo, (int)act, (unsigned)rows);
        LAUNCH_CHECK();
    }));
    return CT_OK;
}

/* depthwise 3×3 stride 2 pad 1: x (B,C,T,F) → y (B,C,To,Fo); rows_grid over (B·C·To, Fo) */
template <typename T>
__global__ void k_dwconv2d_s2(T *y, const T *x, const float *w, const float *b, int C, int Ti, int F, int To, int Fo,
                              int act, unsigned rows) {
    int fo = blockIdx.y * blockDim.x + threadIdx.x;
    unsigned row = blockIdx.x * blockDim.y + threadIdx.y;
    if (fo >= Fo || row >= rows) return;
    unsigned to = row % (unsigned)To, bc = row / (unsigned)To, c = bc % (unsigned)C;
    const T *xc = x + (size_t)bc * Ti * F;
    const float *wc = w + c * 9;
    float s = b[c];
    for (int kt = 0; kt < 3; kt++) {
        int t = 2 * (int)to - 1 + kt;
        if (t < 0 || t >= Ti) continue;
        for (int kf = 0; kf < 3; kf++) {
            int f = 2 * fo - 1 + kf;
            if (f >= 0 && f < F) s += wc[kt * 3 + kf] * ct_ld(xc[(size_t)t * F + f]);
        }
    }
    y[(size_t)row * Fo + fo] = ct_st<T>(ct_apply_act(s, act));
}

ct_status ct_cuda_op_dwconv2d_s2(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int C,
                                 int T, int F, ct_act act) {
    if (x.dtype != y.dtype) return ct_fail(CT_ERR_UNSUPPORTED, "cuda dwconv2d_s2: mixed element types");
    int To = stride2(T), Fo = stride2(F);
    size_t n = (size_t)B * C * To * Fo;
    if (!n) return CT_OK;
    size_t rows = (size_t)B * C * To;
    if (rows > 0xffffffffu) return ct_fail(CT_ERR_LIMIT, "cuda stride-2 conv: %zu output rows", rows);
    const rows_launch l = rows_grid(rows, Fo);
    CT_CUDA_DISPATCH(y.dtype, E, "dwconv2d_s2", {
        k_dwconv2d_s2<E><<<l.grid, l.block, 0, ct_cstream(be)>>>((E *)y.data, (const E *)x.data, w, b, C, T, F, To,
                                                                   Fo, (int)act, (unsigned)rows);
        LAUNCH_CHECK();
    });
    return CT_OK;
}

/* Only the masked tail is touched: plane (b, c) has (T − len[b])·F
 * elements to zero from t = len[b]; grid (B·C planes, the longest tail) */
template <typename E> __global__ void k_mask_time(E *x, const int *len, int C, int T, int F) {
    unsigned plane = blockIdx.x, bb = plane / (unsigned)C;
    int L = min(max(len[bb], 0), T);
    size_t tail = (size_t)(T - L) * F, i = (size_t)blockIdx.y * CT_COLS_PER_BLOCK + threadIdx.x;
    if (i < tail) x[((size_t)plane * T + L) * F + i] = ct_st<E>(0.f);
}

ct_status ct_cuda_op_mask_time(ct_backend *be, ct_buf x, const int *len, int B, int C, int T, int F) {
    if ((size_t)B * C * T * F == 0) return CT_OK;
    int minlen = T; /* the longest tail decides the grid; rows at full length cost nothing */
    for (int b = 0; b < B; b++) {
        int L = len[b] < 0 ? 0 : len[b] > T ? T : len[b];
        if (L < minlen) minlen = L;
    }
    size_t tail = (size_t)(T - minlen) * F;
    if (!tail) return CT_OK;
    if ((size_t)B * C > 0x7fffffffu || (tail + CT_COLS_PER_BLOCK - 1) / CT_COLS_PER_BLOCK > 65535)
        return ct_fail(CT_ERR_LIMIT, "cuda mask_time: %d x %d planes of %zu masked elements", B, C, tail);
    const int *dlen;
    CT_TRY(ct_cuda_side(be, CT_SIDE_LEN, len, (size_t)B, &dlen));
    dim3 grid((unsigned)(B * C), (unsigned)((tail + CT_COLS_PER_BLOCK - 1) / CT_COLS_PER_BLOCK));
    CT_CUDA_DISPATCH(x.dtype, E, "mask_time", {
        k_mask_time<E><<<grid, CT_COLS_PER_BLOCK, 0, ct_cstream(be)>>>((E *)x.data, dlen, C, T, F);
        LAUNCH_CHECK();
    });
    return CT_OK;
}

/* (B,C,T,F) → (B,T,C·F) */
template <typename E> __global__ void k_flatten_ct(E *y, const E *x, int B, int C, int T, int F) {
    GRID_STRIDE(i, (size_t)B * C * T * F) {
        int f = (int)(i % F), c = (int)(i / F % C), t = (int)(i / ((size_t)F * C) % T);
        size_t bb = i / ((size_t)F * C * T);
        y[i] = x[((bb * C + c) * T + t) * F + f];
    }
}

ct_status ct_cuda_op_flatten_ct(ct_backend *be, ct_buf y, ct_buf x, int B, int C, int T, int F) {
    if (x.dtype != y.dtype) return ct_fail(CT_ERR_UNSUPPORTED, "cuda flatten_ct: mixed element types");
    size_t n = (size_t)B * C * T * F;
    if (!n) return CT_OK;
    CT_CUDA_DISPATCH(y.dtype, E, "flatten_ct", {
        k_flatten_ct<E><<<ct_blocks(n, 256), 256, 0, ct_cstream(be)>>>((E *)y.data, (const E *)x.data, B, C, T, F);
        LAUNCH_CHECK();
    });
    return CT_OK;
}

/* depthwise conv1d over time, channels last: y, x (B,T,C), w (C,K); grid (B·T, C) */
template <typename E>
__global__ void k_dwconv1d(E *y, const E *x, const float *w, const float *b, int T, int C, int K, int act) {
    int c = blockIdx.y * CT_COLS_PER_BLOCK + threadIdx.x;
    if (c >= C) return;
    unsigned row = blockIdx.x, t = row % (unsigned)T;
    const E *xb = x + (size_t)(row - t) * C; /* row b·T */
    int pad = (K - 1) / 2;
    float s = b[c];
    for (int k = 0; k < K; k++) {
        int tt = (int)t + k - pad;
        if (tt >= 0 && tt < T) s += w[(size_t)c * K + k] * ct_ld(xb[(size_t)tt * C + c]);
    }
    y[(size_t)row * C + c] = ct_st<E>(ct_apply_act(s, act));
}

ct_status ct_cuda_op_dwconv1d(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int T,
                              int C, int K, ct_act act) {
    if (x.dtype != y.dtype) return ct_fail(CT_ERR_UNSUPPORTED, "cuda dwconv1d: mixed element types");
    if (y.data == x.data) return ct_fail(CT_ERR_INVALID_ARG, "cuda dwconv1d: y must not be x");
    size_t n = (size_t)B * T * C;
    if (!n) return CT_OK;
    CT_CUDA_DISPATCH(y.dtype, E, "dwconv1d", {
        k_dwconv1d<E><<<ct_grid2((size_t)B * T, C), CT_COLS_PER_BLOCK, 0, ct_cstream(be)>>>(
            (E *)y.data, (const E *)x.data, w, b, T, C, K, (int)act);
        LAUNCH_CHECK();
    });
    return CT_OK;
}

/* ---- positions, embeddings, selection ------------------------------------ */
template <typename E> __global__ void k_pos_relative(E *y, int T, int D) {
    GRID_STRIDE(i, (size_t)(2 * T - 1) * (D / 2)) {
        int k = (int)(i / (D / 2)), j = (int)(i % (D / 2));
        float pos = (float)(T - 1 - k);
        /* the reference's float32 formula; powf/sinf/cosf at full precision */
        float inv_freq = 1.0f / powf(10000.0f, (float)(2 * j) / (float)D);
        float a = inv_freq * pos;
        y[(size_t)k * D + 2 * j] = ct_st<E>(sinf(a));
        y[(size_t)k * D + 2 * j + 1] = ct_st<E>(cosf(a));
    }
}

ct_status ct_cuda_op_pos_relative(ct_backend *be, ct_buf y, int T, int D) {
    size_t n = (size_t)(2 * T - 1) * (D / 2);
    if (T <= 0 || !n) return CT_OK;
    CT_CUDA_DISPATCH(y.dtype, E, "pos_relative", {
        k_pos_relative<E><<<ct_blocks(n, 256), 256, 0, ct_cstream(be)>>>((E *)y.data, T, D);
        LAUNCH_CHECK();
    });
    return CT_OK;
}

template <typename Y, typename W1, typename W2>
__global__ void k_embed(Y *y, const int *ids, const int *positions, int n, const W1 *tok, const W2 *pos, int D) {
    GRID_STRIDE(i, (size_t)n * D) {
        size_t r = i / D, d = i % D;
        y[i] = ct_st<Y>(ct_ld(tok[(size_t)ids[r] * D + d]) + ct_ld(pos[(size_t)positions[r] * D + d]));
    }
}

ct_status ct_cuda_op_embed(ct_backend *be, ct_buf y, const int32_t *ids, const int32_t *positions, int n,
                           const ct_tensor *tok, const ct_tensor *pos, int D) {
    int64_t V = tok->shape[0], P = pos->shape[0];
    for (int r = 0; r < n; r++) { /* host arrays: checked here, as the reference does */
        if (ids[r] < 0 || ids[r] >= V)
            return ct_fail(CT_ERR_INVALID_ARG, "embed: token id %d outside [0,%lld)", ids[r], (long long)V);
        if (positions[r] < 0 || positions[r] >= P)
            return ct_fail(CT_ERR_INVALID_ARG, "embed: position %d outside [0,%lld)", positions[r], (long long)P);
    }
    if (n <= 0) return CT_OK;
    const int *dids, *dpos;
    CT_TRY(ct_cuda_side(be, CT_SIDE_IDS, ids, (size_t)n, &dids));
    CT_TRY(ct_cuda_side(be, CT_SIDE_POS, positions, (size_t)n, &dpos));
    size_t m = (size_t)n * D;
    CT_CUDA_DISPATCH(y.dtype, Y, "embed", CT_CUDA_DISPATCH(tok->dtype, W1, "embed", CT_CUDA_DISPATCH(pos->dtype, W2, "embed", {
        k_embed<Y, W1, W2><<<ct_blocks(m, 256), 256, 0, ct_cstream(be)>>>((Y *)y.data, dids, dpos, n,
                                                                          (const W1 *)tok->data, (const W2 *)pos->data, D);
        LAUNCH_CHECK();
    })));
    return CT_OK;
}

/* one block per row (ct_block_argmax, cuda_be.h) */
__global__ void k_argmax(int *ids, const float *x, int N) {
    int best = ct_block_argmax(x + (size_t)blockIdx.x * N, N);
    if (threadIdx.x == 0) ids[blockIdx.x] = best;
}

ct_status ct_cuda_op_argmax(ct_backend *be, int32_t *ids, ct_buf x, int n, int N) {
    if (x.dtype != CT_DTYPE_F32) return ct_fail(CT_ERR_UNSUPPORTED, "cuda argmax: logits must be float32");
    if (n <= 0) return CT_OK;
    if (n > CT_SIDE_INTS) return ct_fail(CT_ERR_LIMIT, "cuda argmax: %d rows", n);
    ct_cuda_be *cb = ct_cbe(be);
    int *d = cb->side + (size_t)CT_SIDE_OUT * CT_SIDE_INTS;
    cb->side_n[CT_SIDE_OUT] = 0; /* written by the kernel: never a cache hit */
    k_argmax<<<n, 1024, 0, cb->c->stream>>>(d, (const float *)x.data, N);
    LAUNCH_CHECK();
    CT_TRY(ct_cuda_d2h(cb->c, cb->host_ids, d, sizeof(int) * (size_t)n));
    memcpy(ids, cb->host_ids, sizeof(int32_t) * (size_t)n);
    return CT_OK;
}
