/* cuda_ops_fused.cu — the backend's version-5 fused encoder ops (backend.h)
 * and the warp-per-row layer norm that the plain layer_norm op uses too:
 *   - layer_norm2: one layer's last norm (fp32 out) and the next layer's
 *     first (activation type) in one read of the residual stream;
 *   - glu_dwconv1d: the conv module's GLU, time mask, depthwise conv
 *     (BatchNorm folded) and SiLU in one pass over the pointwise output,
 *     where the plain ops wrote and re-read two (B,T,C) intermediates;
 *   - attn_relpos_qkv: the relative-position attention straight on the one
 *     packed q̃|k|v projection (the fused kernel's own layout), so neither
 *     the three q/k/v GEMMs nor the packing pass are needed.
 * References: ct_ref_layer_norm2, ct_ref_glu_dwconv1d,
 * ct_ref_attn_relpos_qkv (compute/ref/ref_fused.c); test_cuda_backend.c
 * compares each. Arithmetic in float32 whatever the storage type.
 */
#include <math.h>

#include "compute/cuda/cuda_be.h"

#define LAUNCH_CHECK() CT_CUDA_TRY(cudaGetLastError())

/* ---- layer norm, one warp per row ---------------------------------------- */
/* Rows of D ≤ 2048 float32 with D % 128 == 0 and 16-byte aligned buffers:
 * each lane holds D/128 float4 in registers, two warp reductions (mean,
 * then the variance around it, as the reference), no block barriers. The
 * block-per-row kernel (cuda_ops.cu) spent two __syncthreads reductions per
 * 1280-wide row. TWO: y = LN1(x) in float32, then z = LN2(y) in Z. Without
 * TWO, z = LN1(x). y may alias x: a lane reads its whole share of the row
 * before it writes any of it. */
template <typename Z, bool TWO>
__global__ void k_ln_warp(float *y, Z *z, const float *x, const float *g1, const float *b1, const float *g2,
                          const float *b2, int rows, int D, float eps) {
    const int lane = threadIdx.x & 31;
    const size_t row = (size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= (size_t)rows)
        return;
    const int nv = D / 128;
    const float4 *xr = reinterpret_cast<const float4 *>(x + row * D);
    float4 v[16];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 16; k++)
        if (k < nv) {
            v[k] = xr[k * 32 + lane];
            s += v[k].x + v[k].y + v[k].z + v[k].w;
        }
#pragma unroll
    for (int pass = 0; pass < (TWO ? 2 : 1); pass++) {
        const float *g = pass ? g2 : g1, *b = pass ? b2 : b1;
        const float mean = ct_warp_sum(s) / (float)D;
        float q = 0.f;
#pragma unroll
        for (int k = 0; k < 16; k++)
            if (k < nv) {
                float a = v[k].x - mean, c = v[k].y - mean, d = v[k].z - mean, e = v[k].w - mean;
                q += a * a + c * c + d * d + e * e;
            }
        const float inv = rsqrtf(ct_warp_sum(q) / (float)D + eps);
        s = 0.f;
#pragma unroll
        for (int k = 0; k < 16; k++)
            if (k < nv) {
                const int i = (k * 32 + lane) * 4;
                const float4 gg = *reinterpret_cast<const float4 *>(g + i),
                             bb = *reinterpret_cast<const float4 *>(b + i);
                float4 o;
                o.x = (v[k].x - mean) * inv * gg.x + bb.x;
                o.y = (v[k].y - mean) * inv * gg.y + bb.y;
                o.z = (v[k].z - mean) * inv * gg.z + bb.z;
                o.w = (v[k].w - mean) * inv * gg.w + bb.w;
                if (TWO && pass == 0) {
                    reinterpret_cast<float4 *>(y + row * D)[k * 32 + lane] = o;
                    v[k] = o;
                    s += o.x + o.y + o.z + o.w;
                } else {
                    Z *zr = z + row * D + i;
                    zr[0] = ct_st<Z>(o.x), zr[1] = ct_st<Z>(o.y), zr[2] = ct_st<Z>(o.z), zr[3] = ct_st<Z>(o.w);
                }
            }
    }
}

/* The same over 16-bit rows into the same type (the aligner's feature
 * encoder: its first conv writes bf16, normalised in place; a block per
 * 512-wide row was 3.5 M blocks of two barriers each at 32 windows). D %
 * 256 == 0, D ≤ 2048: each lane holds D/256 16-byte vectors of 8 elements. */
template <typename T>
__global__ void k_ln_warp16(T *y, const T *x, const float *g, const float *b, int rows, int D, float eps) {
    const int lane = threadIdx.x & 31;
    const size_t row = (size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= (size_t)rows) return;
    const int nv = D / 256;
    const uint4 *xr = reinterpret_cast<const uint4 *>(x + row * D);
    float v[8][8];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 8; k++)
        if (k < nv) {
            uint4 u = xr[k * 32 + lane];
            const T *e = reinterpret_cast<const T *>(&u);
#pragma unroll
            for (int j = 0; j < 8; j++) {
                v[k][j] = ct_ld(e[j]);
                s += v[k][j];
            }
        }
    const float mean = ct_warp_sum(s) / (float)D;
    float q = 0.f;
#pragma unroll
    for (int k = 0; k < 8; k++)
        if (k < nv)
#pragma unroll
            for (int j = 0; j < 8; j++) {
                const float t = v[k][j] - mean;
                q += t * t;
            }
    const float inv = rsqrtf(ct_warp_sum(q) / (float)D + eps);
    uint4 *yr = reinterpret_cast<uint4 *>(y + row * D);
#pragma unroll
    for (int k = 0; k < 8; k++)
        if (k < nv) {
            const int i = (k * 32 + lane) * 8;
            uint4 u;
            T *e = reinterpret_cast<T *>(&u);
#pragma unroll
            for (int j = 0; j < 8; j++) e[j] = ct_st<T>((v[k][j] - mean) * inv * g[i + j] + b[i + j]);
            yr[k * 32 + lane] = u;
        }
}

static int warp_ln_ok(const void *a, const void *b, const void *g, int D) {
    return D % 128 == 0 && D <= 2048 && ((uintptr_t)a & 15) == 0 && ((uintptr_t)b & 15) == 0 &&
           ((uintptr_t)g & 15) == 0;
}

int ct_cuda_ln_warp(ct_backend *be, ct_buf y, ct_buf x, const float *g, const float *b, int M, int D, float eps,
                    ct_status *st) {
    if (!warp_ln_ok(x.data, y.data, g, D) || ((uintptr_t)b & 15) != 0) return 0;
    unsigned blocks = (unsigned)(((size_t)M + 7) / 8);
    cudaStream_t s = ct_cstream(be);
    if ((x.dtype == CT_DTYPE_BF16 || x.dtype == CT_DTYPE_F16) && y.dtype == x.dtype && D % 256 == 0) {
        if (x.dtype == CT_DTYPE_BF16)
            k_ln_warp16<__nv_bfloat16><<<blocks, 256, 0, s>>>((__nv_bfloat16 *)y.data, (const __nv_bfloat16 *)x.data,
                                                              g, b, M, D, eps);
        else
            k_ln_warp16<__half><<<blocks, 256, 0, s>>>((__half *)y.data, (const __half *)x.data, g, b, M, D, eps);
        cudaError_t e = cudaGetLastError();
        *st = e == cudaSuccess ? CT_OK : ct_fail(CT_ERR_DEVICE, "cuda layer_norm: %s", cudaGetErrorString(e));
        return 1;
    }
    if (x.dtype != CT_DTYPE_F32) return 0;
    *st = CT_OK;
    switch (y.dtype) {
    case CT_DTYPE_F32:
        k_ln_warp<float, false>
            <<<blocks, 256, 0, s>>>(NULL, (float *)y.data, (const float *)x.data, g, b, NULL, NULL, M, D, eps);
        break;
    case CT_DTYPE_BF16:
        k_ln_warp<__nv_bfloat16, false>
            <<<blocks, 256, 0, s>>>(NULL, (__nv_bfloat16 *)y.data, (const float *)x.data, g, b, NULL, NULL, M, D, eps);
        break;
    case CT_DTYPE_F16:
        k_ln_warp<__half, false>
            <<<blocks, 256, 0, s>>>(NULL, (__half *)y.data, (const float *)x.data, g, b, NULL, NULL, M, D, eps);
        break;
    default:
        return 0;
    }
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        *st = ct_fail(CT_ERR_DEVICE, "cuda layer_norm: %s", cudaGetErrorString(e));
    return 1;
}

ct_status ct_cuda_op_layer_norm2(ct_backend *be, ct_buf y, ct_buf z, ct_buf x, const float *g1, const float *b1,
                                 const float *g2, const float *b2, int M, int D, float eps) {
    if (M <= 0 || D <= 0)
        return CT_OK;
    if (x.dtype != CT_DTYPE_F32 || y.dtype != CT_DTYPE_F32)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda layer_norm2: x and y must be float32");
    if (z.data == x.data || z.data == y.data)
        return ct_fail(CT_ERR_INVALID_ARG, "cuda layer_norm2: z must not be x or y");
    int fast = warp_ln_ok(x.data, y.data, g1, D) && ((uintptr_t)b1 & 15) == 0 && ((uintptr_t)g2 & 15) == 0 &&
               ((uintptr_t)b2 & 15) == 0;
    if (!fast) { /* the two plain norms: other widths than the model's */
        CT_TRY(ct_cuda_op_layer_norm(be, y, x, g1, b1, M, D, eps));
        return ct_cuda_op_layer_norm(be, z, y, g2, b2, M, D, eps);
    }
    unsigned blocks = (unsigned)(((size_t)M + 7) / 8);
    cudaStream_t s = ct_cstream(be);
    CT_CUDA_DISPATCH(z.dtype, Z, "layer_norm2", {
        k_ln_warp<Z, true>
            <<<blocks, 256, 0, s>>>((float *)y.data, (Z *)z.data, (const float *)x.data, g1, b1, g2, b2, M, D, eps);
        LAUNCH_CHECK();
    });
    return CT_OK;
}

/* ---- GLU + mask + depthwise conv + activation ------------------------------ */
/* Block: GLU_C channels × GLU_T time steps of one row b. The GLU values of
 * the steps t0 − pad … t0 + GLU_T − 1 + pad (zero outside [0, len[b]): the
 * mask, and outside [0, T): the conv's padding) are computed once into
 * shared memory, then each thread convolves its channel over the tile. */
enum { GLU_C = 128, GLU_T = 32, GLU_KMAX = 63 };

template <typename E>
__global__ void __launch_bounds__(GLU_C)
    k_glu_dwconv(E *y, const E *x, const float *w, const float *bias, const int *len, int T, int C, int K, int act) {
    extern __shared__ float gl[]; /* [GLU_T + K − 1][GLU_C] */
    const int b = blockIdx.z, t0 = blockIdx.y * GLU_T, c = blockIdx.x * GLU_C + threadIdx.x;
    const int pad = (K - 1) / 2, rows = GLU_T + K - 1, L = min(max(len[b], 0), T);
    if (c < C) {
        for (int r = 0; r < rows; r++) {
            int t = t0 - pad + r;
            float v = 0.f;
            if (t >= 0 && t < L) {
                const E *xr = x + ((size_t)b * T + t) * 2 * C;
                float a = ct_ld(xr[c]), g = ct_ld(xr[C + c]);
                v = a * (1.f / (1.f + __expf(-g)));
            }
            gl[r * GLU_C + threadIdx.x] = v;
        }
    }
    /* each thread reads only its own column: no barrier needed */
    if (c >= C)
        return;
    const float *wc = w + (size_t)c * K;
    const float bc = bias[c];
    const int tn = min(GLU_T, T - t0);
    for (int i = 0; i < tn; i++) {
        float s = bc;
        for (int k = 0; k < K; k++)
            s += wc[k] * gl[(i + k) * GLU_C + threadIdx.x];
        y[((size_t)b * T + t0 + i) * C + c] = ct_st<E>(ct_apply_act(s, act));
    }
}

/* Kernel 9 (the model's), 16-bit storage, C even: a thread owns a channel
 * pair and walks GLU9_T steps with a sliding window of nine GLU values per
 * channel in registers, so each GLU is computed about once and every load
 * and store moves a pair (the old engine's k_glu_dw9). Twice as fast as the
 * shared-memory tile above, which re-read its column K times per output. */
enum { GLU9_T = 64, GLU9_THREADS = 128 };
/* Steps per block: GLU9_T where the grid fills the GPU (two blocks per SM),
 * fewer (down to 8) where it would not: at batch 1 (376 frames, 1280
 * channels) 64 steps made 30 blocks, 53 µs a call; the window's eight
 * extra GLU values per block cost little beside an idle GPU. */
static int glu9_steps(int B, int T, int C) {
    long long cb = (C / 2 + GLU9_THREADS - 1) / GLU9_THREADS, want = 2LL * ct_cuda_sm_count();
    int tch = GLU9_T;
    while (tch > 8 && cb * B * ((T + tch - 1) / tch) < want) tch /= 2;
    return tch;
}

template <typename E> struct alignas(2 * sizeof(E)) e_pair { E a, b; };

template <typename E> __device__ __forceinline__ float2 glu_pair(const E *x, size_t row, int c2, int C, int t, int L) {
    if (t < 0 || t >= L)
        return make_float2(0.f, 0.f);
    const E *xr = x + row * 2 * C;
    e_pair<E> a = *reinterpret_cast<const e_pair<E> *>(xr + 2 * c2);
    e_pair<E> g = *reinterpret_cast<const e_pair<E> *>(xr + C + 2 * c2);
    return make_float2(ct_ld(a.a) * (1.f / (1.f + __expf(-ct_ld(g.a)))),
                       ct_ld(a.b) * (1.f / (1.f + __expf(-ct_ld(g.b)))));
}

template <typename E>
__global__ void __launch_bounds__(GLU9_THREADS)
    k_glu_dw9(E *y, const E *x, const float *w, const float *bias, const int *len, int T, int C, int act, int tch) {
    const int c2 = blockIdx.x * blockDim.x + threadIdx.x;
    if (2 * c2 >= C)
        return;
    const int b = blockIdx.z, t0 = blockIdx.y * tch, t1 = min(T, t0 + tch), L = min(max(len[b], 0), T);
    const size_t base = (size_t)b * T;
    float w0[9], w1[9], v0[9], v1[9];
#pragma unroll
    for (int k = 0; k < 9; k++)
        w0[k] = w[(2 * c2) * 9 + k], w1[k] = w[(2 * c2 + 1) * 9 + k];
    const float b0 = bias[2 * c2], b1 = bias[2 * c2 + 1];
#pragma unroll
    for (int k = 0; k < 8; k++) { /* steps t0−4 … t0+3 in slots 1…8 */
        float2 g = glu_pair(x, base + (t0 - 4 + k), c2, C, t0 - 4 + k, L);
        v0[k + 1] = g.x, v1[k + 1] = g.y;
    }
    for (int t = t0; t < t1; t++) {
#pragma unroll
        for (int k = 0; k < 8; k++)
            v0[k] = v0[k + 1], v1[k] = v1[k + 1];
        float2 g = glu_pair(x, base + (t + 4), c2, C, t + 4, L);
        v0[8] = g.x, v1[8] = g.y;
        float s0 = b0, s1 = b1;
#pragma unroll
        for (int k = 0; k < 9; k++)
            s0 += w0[k] * v0[k], s1 += w1[k] * v1[k];
        e_pair<E> o;
        o.a = ct_st<E>(ct_apply_act(s0, act));
        o.b = ct_st<E>(ct_apply_act(s1, act));
        *reinterpret_cast<e_pair<E> *>(y + (base + t) * C + 2 * c2) = o;
    }
}

ct_status ct_cuda_op_glu_dwconv1d(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, const int *len,
                                  int B, int T, int C, int K, ct_act act, ct_arena *ws) {
    if (x.dtype != y.dtype)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda glu_dwconv1d: mixed element types");
    if (y.data == x.data)
        return ct_fail(CT_ERR_INVALID_ARG, "cuda glu_dwconv1d: y must not be x");
    if (K < 1 || K > GLU_KMAX || K % 2 == 0)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda glu_dwconv1d: kernel %d (odd, at most %d)", K, (int)GLU_KMAX);
    if ((size_t)B * T * C == 0)
        return CT_OK;
    if (B > 65535 || (T + GLU_T - 1) / GLU_T > 65535)
        return ct_fail(CT_ERR_LIMIT, "cuda glu_dwconv1d: %d rows of %d steps", B, T);
    const int *dlen;
    CT_TRY(ct_cuda_side(be, CT_SIDE_LEN, len, (size_t)B, &dlen));
    if (K == 9 && C % 2 == 0 && ct_dtype_size(y.dtype) == 2 && ((uintptr_t)x.data & 3) == 0 &&
        ((uintptr_t)y.data & 3) == 0) {
        const int tch = glu9_steps(B, T, C);
        dim3 g9((unsigned)((C / 2 + GLU9_THREADS - 1) / GLU9_THREADS), (unsigned)((T + tch - 1) / tch), (unsigned)B);
        CT_CUDA_DISPATCH(y.dtype, E, "glu_dwconv1d", {
            k_glu_dw9<E><<<g9, GLU9_THREADS, 0, ct_cstream(be)>>>((E *)y.data, (const E *)x.data, w, b, dlen, T, C,
                                                                 (int)act, tch);
            LAUNCH_CHECK();
        });
        return CT_OK;
    }
    dim3 grid((unsigned)((C + GLU_C - 1) / GLU_C), (unsigned)((T + GLU_T - 1) / GLU_T), (unsigned)B);
    size_t smem = sizeof(float) * (size_t)(GLU_T + K - 1) * GLU_C;
    CT_CUDA_DISPATCH(y.dtype, E, "glu_dwconv1d", {
        k_glu_dwconv<E>
            <<<grid, GLU_C, smem, ct_cstream(be)>>>((E *)y.data, (const E *)x.data, w, b, dlen, T, C, K, (int)act);
        LAUNCH_CHECK();
    });
    return CT_OK;
}

/* ---- relative-position attention over the packed projection --------------- */
/* The simple kernel of cuda_ops_attn.cu on rows 3D apart and without u (it
 * is in q̃ already): for the element types and head sizes the fused kernel
 * does not take. grid (T, H, B), one block per query row. */
template <typename E>
__global__ void k_relpos_qkv_simple(E *out, const E *qkv, const E *p, const float *c, const int *len, int T, int H,
                                    int Dh, float scale) {
    extern __shared__ float s[];
    __shared__ float red[32];
    const int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z, D = H * Dh;
    const int L = min(len[b], T);
    E *o = out + ((size_t)b * T + i) * D + (size_t)h * Dh;
    if (i >= L) {
        for (int d = threadIdx.x; d < Dh; d += blockDim.x)
            o[d] = ct_st<E>(0.f);
        return;
    }
    const size_t ld = (size_t)3 * D;
    const E *qi = qkv + ((size_t)b * T + i) * ld + (size_t)h * Dh;
    const float *ch = c + (size_t)h * Dh;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int j = warp; j < L; j += nw) {
        const E *kj = qkv + ((size_t)b * T + j) * ld + D + (size_t)h * Dh;
        const E *pj = p + (size_t)(T - 1 - i + j) * D + (size_t)h * Dh;
        float ac = 0.f, bd = 0.f;
        for (int d = lane; d < Dh; d += 32) {
            float qd = ct_ld(qi[d]);
            ac += qd * ct_ld(kj[d]);
            bd += (qd + ch[d]) * ct_ld(pj[d]);
        }
        ac = ct_warp_sum(ac);
        bd = ct_warp_sum(bd);
        if (lane == 0)
            s[j] = ac * scale + bd * scale;
    }
    __syncthreads();
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < L; j += blockDim.x)
        mx = fmaxf(mx, s[j]);
    mx = ct_block_max(mx, red);
    __syncthreads(); /* ct_block_max's last read of red before ct_block_sum writes it */
    float sum = 0.f;
    for (int j = threadIdx.x; j < L; j += blockDim.x) {
        float e = __expf(s[j] - mx);
        s[j] = e;
        sum += e;
    }
    sum = ct_block_sum(sum, red);
    __syncthreads();
    const float inv = sum > 0.f ? 1.f / sum : 0.f;
    const E *V = qkv + (size_t)b * T * ld + 2 * D + (size_t)h * Dh;
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) {
        float acc = 0.f;
        for (int j = 0; j < L; j++)
            acc += s[j] * ct_ld(V[(size_t)j * ld + d]);
        o[d] = ct_st<E>(acc * inv);
    }
}

ct_status ct_cuda_op_attn_relpos_qkv(ct_backend *be, ct_buf out, ct_buf qkv, ct_buf p, const float *c, const int *len,
                                     int B, int T, int H, int Dh, ct_arena *ws) {
    ct_cuda_be *cb = ct_cbe(be);
    const ct_dtype dt = qkv.dtype;
    if (out.dtype != dt || p.dtype != dt)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda attn_relpos_qkv: mixed element types");
    if (B <= 0 || T <= 0)
        return CT_OK;
    const int *dlen;
    CT_TRY(ct_cuda_side(be, CT_SIDE_LEN, len, (size_t)B, &dlen));
    const float scale = 1.0f / sqrtf((float)Dh);
    const int fused_ok = dt == CT_DTYPE_BF16 && ct_cuda_relattn_fused_supports(Dh);
    if (cb->attn_variant == CT_ATTN_FUSED && !fused_ok)
        return ct_fail(CT_ERR_UNSUPPORTED,
                       "cuda attn_relpos_qkv: the fused kernel takes bf16 and head sizes "
                       "16/32/64/80/96/128/160 (asked: %s, %d)",
                       ct_dtype_name(dt), Dh);
    if (fused_ok && cb->attn_variant != CT_ATTN_SIMPLE) {
        /* vr (H, 2T−1) = c·p per head and offset: the fused kernel's position bias */
        float *vr;
        CT_TRY(ct_cuda_scratch(be, sizeof(float) * (size_t)H * (2 * T - 1), (void **)&vr));
        CT_TRY(ct_cuda_relattn_uv(cb->c, NULL, vr, (const uint16_t *)qkv.data, (const uint16_t *)p.data, NULL, c, B, T,
                                  H, Dh));
        return ct_cuda_relattn_fused(cb->c, (uint16_t *)out.data, (const uint16_t *)qkv.data, (const uint16_t *)p.data,
                                     vr, dlen, B, T, H, Dh, scale);
    }
    size_t smem = sizeof(float) * (((size_t)T + 3) & ~(size_t)3) + 16;
    if (smem > 48 * 1024)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda attn_relpos_qkv: %d frames exceed the simple kernel's 12280", T);
    dim3 grid((unsigned)T, (unsigned)H, (unsigned)B);
    CT_CUDA_DISPATCH(dt, E, "attn_relpos_qkv", {
        k_relpos_qkv_simple<E><<<grid, 128, smem, cb->c->stream>>>((E *)out.data, (const E *)qkv.data,
                                                                   (const E *)p.data, c, dlen, T, H, Dh, scale);
        LAUNCH_CHECK();
    });
    return CT_OK;
}
