/* cuda_kernels.cu — the model's elementwise and convolution kernels: layer
 * norms, SiLU, the conv module's GLU + depthwise conv + folded BatchNorm +
 * SiLU, the subsampling convs and masks, casts, and the mel frontend's
 * framing, power and normalisation. Attention lives in cuda_attention.cu.
 * Reductions run in fp32; bf16 only at storage.
 */
#include <math.h>

#include "compute/cuda/cuda_internal.h"

#define LAUNCH_CHECK() CT_CUDA_TRY(cudaGetLastError())

static inline unsigned nblocks(size_t n, int t) { return (unsigned)((n + t - 1) / t); }

/* ---- layer norm ---------------------------------------------------------- */
template <typename OUT>
__global__ void k_layernorm(OUT *y, const float *x, const float *w, const float *b, int n, float eps) {
    __shared__ float sh[32];
    const float *xr = x + (size_t)blockIdx.x * n;
    float v[8];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        int i = threadIdx.x + k * blockDim.x;
        v[k] = i < n ? xr[i] : 0.f;
        s += v[k];
    }
    float mean = ct_block_sum(s, sh) / n;
    float q = 0.f;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        int i = threadIdx.x + k * blockDim.x;
        float d = i < n ? v[k] - mean : 0.f;
        q += d * d;
    }
    float rstd = rsqrtf(ct_block_sum(q, sh) / n + eps);
#pragma unroll
    for (int k = 0; k < 8; k++) {
        int i = threadIdx.x + k * blockDim.x;
        if (i < n) {
            float o = (v[k] - mean) * rstd * w[i] + b[i];
            if constexpr (sizeof(OUT) == 2) y[(size_t)blockIdx.x * n + i] = ct_to_bf(o);
            else y[(size_t)blockIdx.x * n + i] = o;
        }
    }
}

/* One warp per row, float4 loads (n % 128 == 0, n ≤ 2048): no block barriers.
 * MODE 0: bf16 out; 1: fp32 out; 2: fp32 y = LN1(x) and bf16 a = LN2(y). */
template <int MODE>
__global__ void k_ln_warp(float *yf, uint16_t *yb, const float *x, const float *w1, const float *b1,
                          const float *w2, const float *b2, int rows, int n, float eps) {
    int lane = threadIdx.x & 31;
    size_t row = (size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (row >= (size_t)rows) return;
    int nv = n / 128; /* float4 per lane */
    const float4 *xr = reinterpret_cast<const float4 *>(x + row * n);
    float4 v[16];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 16; k++)
        if (k < nv) {
            v[k] = xr[k * 32 + lane];
            s += v[k].x + v[k].y + v[k].z + v[k].w;
        }
#pragma unroll
    for (int pass = 0; pass < (MODE == 2 ? 2 : 1); pass++) {
        const float *w = pass ? w2 : w1, *b = pass ? b2 : b1;
        float mean = ct_warp_sum(s) / n, q = 0.f;
#pragma unroll
        for (int k = 0; k < 16; k++)
            if (k < nv) {
                float4 d = v[k];
                d.x -= mean, d.y -= mean, d.z -= mean, d.w -= mean;
                q += d.x * d.x + d.y * d.y + d.z * d.z + d.w * d.w;
            }
        float rstd = rsqrtf(ct_warp_sum(q) / n + eps);
        s = 0.f;
#pragma unroll
        for (int k = 0; k < 16; k++)
            if (k < nv) {
                int i = (k * 32 + lane) * 4;
                float4 g = *reinterpret_cast<const float4 *>(w + i), bb = *reinterpret_cast<const float4 *>(b + i);
                float4 o;
                o.x = (v[k].x - mean) * rstd * g.x + bb.x;
                o.y = (v[k].y - mean) * rstd * g.y + bb.y;
                o.z = (v[k].z - mean) * rstd * g.z + bb.z;
                o.w = (v[k].w - mean) * rstd * g.w + bb.w;
                if (MODE == 1 || (MODE == 2 && pass == 0)) {
                    reinterpret_cast<float4 *>(yf + row * n)[k * 32 + lane] = o;
                } else {
                    uint2 u;
                    u.x = (uint32_t)ct_to_bf(o.x) | ((uint32_t)ct_to_bf(o.y) << 16);
                    u.y = (uint32_t)ct_to_bf(o.z) | ((uint32_t)ct_to_bf(o.w) << 16);
                    reinterpret_cast<uint2 *>(yb + row * n)[k * 32 + lane] = u;
                }
                v[k] = o;
                s += o.x + o.y + o.z + o.w;
            }
    }
}

static int ln_warp_ok(const void *x, const void *y, int n) {
    return n % 128 == 0 && n <= 2048 && ((uintptr_t)x & 15) == 0 && ((uintptr_t)y & 15) == 0;
}

extern "C" ct_status ct_cuda_layernorm(ct_cuda *c, uint16_t *y, const float *x, const float *w, const float *b,
                                       int rows, int n, float eps) {
    if (n > 8 * 256) return ct_fail(CT_ERR_UNSUPPORTED, "layernorm: width %d > 2048", n);
    if (rows > 0 && ln_warp_ok(x, y, n))
        k_ln_warp<0><<<nblocks(rows, 8), 256, 0, c->stream>>>(NULL, y, x, w, b, NULL, NULL, rows, n, eps);
    else if (rows > 0)
        k_layernorm<uint16_t><<<rows, 256, 0, c->stream>>>(y, x, w, b, n, eps);
    LAUNCH_CHECK();
    return CT_OK;
}

extern "C" ct_status ct_cuda_layernorm_f32(ct_cuda *c, float *y, const float *x, const float *w, const float *b,
                                           int rows, int n, float eps) {
    if (n > 8 * 256) return ct_fail(CT_ERR_UNSUPPORTED, "layernorm: width %d > 2048", n);
    if (rows > 0 && ln_warp_ok(x, y, n))
        k_ln_warp<1><<<nblocks(rows, 8), 256, 0, c->stream>>>(y, NULL, x, w, b, NULL, NULL, rows, n, eps);
    else if (rows > 0)
        k_layernorm<float><<<rows, 256, 0, c->stream>>>(y, x, w, b, n, eps);
    LAUNCH_CHECK();
    return CT_OK;
}

/* ---- SiLU ---------------------------------------------------------------- */
/* 8 bf16 per thread per iteration: 16-byte loads and stores. */
__global__ void k_silu8(uint4 *x, size_t n8) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n8; i += (size_t)gridDim.x * blockDim.x) {
        uint4 v = x[i];
        uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            float a = ct_bf((uint16_t)(w[k] & 0xffff)), b = ct_bf((uint16_t)(w[k] >> 16));
            a = a / (1.f + __expf(-a));
            b = b / (1.f + __expf(-b));
            w[k] = (uint32_t)ct_to_bf(a) | ((uint32_t)ct_to_bf(b) << 16);
        }
        x[i] = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

__global__ void k_silu1(uint16_t *x, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float a = ct_bf(x[i]);
        x[i] = ct_to_bf(a / (1.f + __expf(-a)));
    }
}

extern "C" ct_status ct_cuda_silu(ct_cuda *c, uint16_t *x, size_t n) {
    if (!n) return CT_OK;
    if (((uintptr_t)x & 15) == 0 && n % 8 == 0) k_silu8<<<132 * 16, 256, 0, c->stream>>>((uint4 *)x, n / 8);
    else k_silu1<<<132 * 16, 256, 0, c->stream>>>(x, n);
    LAUNCH_CHECK();
    return CT_OK;
}

/* LN1 into fp32 y, then LN2 of that row into bf16 a. */
__global__ void k_layernorm2(float *y, uint16_t *a, const float *x, const float *w1, const float *b1, const float *w2,
                             const float *b2, int n, float eps) {
    __shared__ float sh[32];
    size_t off = (size_t)blockIdx.x * n;
    float v[8];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        int i = threadIdx.x + k * blockDim.x;
        v[k] = i < n ? x[off + i] : 0.f;
        s += v[k];
    }
    for (int pass = 0; pass < 2; pass++) {
        const float *w = pass ? w2 : w1, *b = pass ? b2 : b1;
        float mean = ct_block_sum(s, sh) / n;
        float q = 0.f;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            int i = threadIdx.x + k * blockDim.x;
            float d = i < n ? v[k] - mean : 0.f;
            q += d * d;
        }
        float rstd = rsqrtf(ct_block_sum(q, sh) / n + eps);
        s = 0.f;
#pragma unroll
        for (int k = 0; k < 8; k++) {
            int i = threadIdx.x + k * blockDim.x;
            if (i < n) {
                float o = (v[k] - mean) * rstd * w[i] + b[i];
                if (pass == 0) y[off + i] = o;
                else a[off + i] = ct_to_bf(o);
                v[k] = o;
                s += o;
            }
        }
    }
}

extern "C" ct_status ct_cuda_layernorm2(ct_cuda *c, float *y, uint16_t *a, const float *x, const float *w1,
                                        const float *b1, const float *w2, const float *b2, int rows, int n,
                                        float eps) {
    if (n > 8 * 256) return ct_fail(CT_ERR_UNSUPPORTED, "layernorm: width %d > 2048", n);
    if (rows > 0 && ln_warp_ok(x, y, n) && ((uintptr_t)a & 15) == 0)
        k_ln_warp<2><<<nblocks(rows, 8), 256, 0, c->stream>>>(y, a, x, w1, b1, w2, b2, rows, n, eps);
    else if (rows > 0)
        k_layernorm2<<<rows, 256, 0, c->stream>>>(y, a, x, w1, b1, w2, b2, n, eps);
    LAUNCH_CHECK();
    return CT_OK;
}

/* ---- conv module ------------------------------------------------------------ */
__device__ __forceinline__ float glu_at(const uint16_t *a, int b, int t, int c, int T, int d, int L) {
    if (t < 0 || t >= L) return 0.f;
    const uint16_t *r = a + ((size_t)b * T + t) * 2 * d;
    float x = ct_bf(r[c]), g = ct_bf(r[c + d]);
    return x / (1.f + __expf(-g));
}

__global__ void k_glu_dwconv_silu(uint16_t *y, const uint16_t *a, const float *w, const float *bias, const int *len,
                                  int B, int T, int d, int K) {
    int bt = blockIdx.x;
    int b = bt / T, t = bt % T, L = len[b];
    int half = K / 2;
    for (int c = threadIdx.x; c < d; c += blockDim.x) {
        float acc = bias[c];
        for (int k = 0; k < K; k++) acc += w[c * K + k] * glu_at(a, b, t + k - half, c, T, d, L);
        float o = acc / (1.f + __expf(-acc));
        y[(size_t)bt * d + c] = ct_to_bf(o);
    }
}

/* K = 9 fast path: a thread owns a channel pair and walks TCH time steps
 * with a sliding window of GLU values in registers, so every GLU is computed
 * about once and every load/store is a coalesced bf16 pair. */
#define GLU_TCH 64
__device__ __forceinline__ float2 glu2_at(const uint16_t *a, size_t row, int c2, int d) {
    uint32_t x = *reinterpret_cast<const uint32_t *>(a + row * 2 * d + 2 * c2);
    uint32_t g = *reinterpret_cast<const uint32_t *>(a + row * 2 * d + d + 2 * c2);
    float x0 = ct_bf((uint16_t)(x & 0xffff)), x1 = ct_bf((uint16_t)(x >> 16));
    float g0 = ct_bf((uint16_t)(g & 0xffff)), g1 = ct_bf((uint16_t)(g >> 16));
    return make_float2(x0 / (1.f + __expf(-g0)), x1 / (1.f + __expf(-g1)));
}

__global__ void k_glu_dw9(uint16_t *y, const uint16_t *a, const float *w, const float *bias, const int *len, int T,
                          int d) {
    int c2 = blockIdx.x * blockDim.x + threadIdx.x;
    if (2 * c2 >= d) return;
    int b = blockIdx.z, t0 = blockIdx.y * GLU_TCH, t1 = min(T, t0 + GLU_TCH), L = len[b];
    float w0[9], w1[9];
#pragma unroll
    for (int k = 0; k < 9; k++) w0[k] = w[(2 * c2) * 9 + k], w1[k] = w[(2 * c2 + 1) * 9 + k];
    float b0 = bias[2 * c2], b1 = bias[2 * c2 + 1];
    float v0[9], v1[9];
#pragma unroll
    for (int k = 0; k < 8; k++) { /* window positions t0−4 .. t0+3 in slots 1..8 */
        int t = t0 - 4 + k;
        float2 g = (t >= 0 && t < L) ? glu2_at(a, (size_t)b * T + t, c2, d) : make_float2(0.f, 0.f);
        v0[k + 1] = g.x, v1[k + 1] = g.y;
    }
    for (int t = t0; t < t1; t++) {
#pragma unroll
        for (int k = 0; k < 8; k++) v0[k] = v0[k + 1], v1[k] = v1[k + 1];
        int tn = t + 4;
        float2 g = (tn < L) ? glu2_at(a, (size_t)b * T + tn, c2, d) : make_float2(0.f, 0.f);
        v0[8] = g.x, v1[8] = g.y;
        float s0 = b0, s1 = b1;
#pragma unroll
        for (int k = 0; k < 9; k++) s0 += w0[k] * v0[k], s1 += w1[k] * v1[k];
        s0 = s0 / (1.f + __expf(-s0));
        s1 = s1 / (1.f + __expf(-s1));
        *reinterpret_cast<uint32_t *>(y + ((size_t)b * T + t) * d + 2 * c2) =
            (uint32_t)ct_to_bf(s0) | ((uint32_t)ct_to_bf(s1) << 16);
    }
}

extern "C" ct_status ct_cuda_glu_dwconv_silu(ct_cuda *c, uint16_t *y, const uint16_t *a, const float *w,
                                             const float *bias, const int *len, int B, int T, int d, int K) {
    if (B <= 0 || T <= 0) return CT_OK;
    if (K == 9 && d % 2 == 0) {
        dim3 grid((unsigned)((d / 2 + 127) / 128), (unsigned)((T + GLU_TCH - 1) / GLU_TCH), (unsigned)B);
        k_glu_dw9<<<grid, 128, 0, c->stream>>>(y, a, w, bias, len, T, d);
    } else {
        k_glu_dwconv_silu<<<B * T, 256, 0, c->stream>>>(y, a, w, bias, len, B, T, d, K);
    }
    LAUNCH_CHECK();
    return CT_OK;
}

/* ---- subsampling -------------------------------------------------------------- */
/* Block per output frame (b, t), thread per channel; the three input mel
 * rows are staged in shared memory once (masked), so the 9-tap loop reads
 * broadcast shared values instead of 576 global loads per thread. */
__global__ void k_conv0(uint16_t *y, const float *x, const float *w, const float *bias, const int *len0,
                        const int *len1, int B, int T, int F, int C) {
    extern __shared__ float rows[]; /* [3][F + 2], column f+1 holds input bin f, edges zero */
    int T1 = (T - 1) / 2 + 1, F1 = (F - 1) / 2 + 1;
    int b = blockIdx.x / T1, t = blockIdx.x % T1;
    int L0 = len0[b], W = F + 2;
    for (int i = threadIdx.x; i < 3 * W; i += blockDim.x) {
        int kt = i / W, f = i % W - 1, ti = 2 * t - 1 + kt;
        rows[i] = (f >= 0 && f < F && ti >= 0 && ti < L0 && ti < T) ? x[((size_t)b * T + ti) * F + f] : 0.f;
    }
    __syncthreads();
    int c = threadIdx.x;
    if (c >= C) return;
    uint16_t *yr = y + ((size_t)b * T1 + t) * F1 * C;
    if (t >= len1[b]) {
        for (int f = 0; f < F1; f++) yr[(size_t)f * C + c] = 0;
        return;
    }
    float wk[9];
#pragma unroll
    for (int k = 0; k < 9; k++) wk[k] = w[c * 9 + k];
    float bc = bias[c];
    for (int f = 0; f < F1; f++) {
        float acc = bc;
#pragma unroll
        for (int kt = 0; kt < 3; kt++)
#pragma unroll
            for (int kf = 0; kf < 3; kf++) acc += wk[kt * 3 + kf] * rows[kt * W + 2 * f + kf]; /* bin 2f−1+kf */
        yr[(size_t)f * C + c] = ct_to_bf(fmaxf(acc, 0.f));
    }
}

extern "C" ct_status ct_cuda_subsample_conv0(ct_cuda *c, uint16_t *y, const float *x, const float *w,
                                             const float *b, const int *len0, const int *len1, int B, int T, int F,
                                             int C) {
    if (C > 1024) return ct_fail(CT_ERR_UNSUPPORTED, "conv0: %d channels", C);
    int T1 = (T - 1) / 2 + 1;
    size_t sh = (size_t)3 * (F + 2) * sizeof(float);
    if (sh > 48 * 1024) return ct_fail(CT_ERR_UNSUPPORTED, "conv0: %d mel bins", F);
    k_conv0<<<B * T1, C, sh, c->stream>>>(y, x, w, b, len0, len1, B, T, F, C);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_dw(uint16_t *y, const uint16_t *x, const float *w, const float *bias, const int *len_in, int B,
                     int Ti, int Fi, int C) {
    int To = (Ti - 1) / 2 + 1, Fo = (Fi - 1) / 2 + 1;
    int b = blockIdx.x / To, t = blockIdx.x % To;
    int c = threadIdx.x;
    if (c >= C) return;
    float wk[9];
#pragma unroll
    for (int k = 0; k < 9; k++) wk[k] = w[c * 9 + k];
    float bc = bias[c];
    int L = len_in[b];
    for (int f = 0; f < Fo; f++) {
        float acc = bc;
#pragma unroll
        for (int kt = 0; kt < 3; kt++) {
            int ti = 2 * t - 1 + kt;
            if (ti < 0 || ti >= L || ti >= Ti) continue;
#pragma unroll
            for (int kf = 0; kf < 3; kf++) {
                int fi = 2 * f - 1 + kf;
                if (fi < 0 || fi >= Fi) continue;
                acc += wk[kt * 3 + kf] * ct_bf(x[(((size_t)b * Ti + ti) * Fi + fi) * C + c]);
            }
        }
        y[(((size_t)b * To + t) * Fo + f) * C + c] = ct_to_bf(acc);
    }
}

extern "C" ct_status ct_cuda_subsample_dw(ct_cuda *c, uint16_t *y, const uint16_t *x, const float *w, const float *b,
                                          const int *len_in, int B, int Ti, int Fi, int C) {
    if (C > 1024) return ct_fail(CT_ERR_UNSUPPORTED, "dwconv: %d channels", C);
    int To = (Ti - 1) / 2 + 1;
    k_dw<<<B * To, C, 0, c->stream>>>(y, x, w, b, len_in, B, Ti, Fi, C);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_mask_rows(uint16_t *x, const int *len, int T, size_t inner) {
    int b = blockIdx.y, t = blockIdx.x;
    if (t < len[b]) return;
    uint16_t *r = x + ((size_t)b * T + t) * inner;
    for (size_t i = threadIdx.x; i < inner; i += blockDim.x) r[i] = 0;
}

extern "C" ct_status ct_cuda_mask_rows(ct_cuda *c, uint16_t *x, const int *len, int B, int T, size_t inner) {
    if (B && T) k_mask_rows<<<dim3(T, B), 256, 0, c->stream>>>(x, len, T, inner);
    LAUNCH_CHECK();
    return CT_OK;
}

/* ---- mel frontend ----------------------------------------------------------------- */
__global__ void k_mel_frames(float *fr, const float *pcm, const int *n, int ns, int T, const float *win) {
    int row = blockIdx.x; /* b*T + f */
    int b = row / T, f = row % T, N = n[b];
    const float *x = pcm + (size_t)b * ns;
    for (int k = threadIdx.x; k < 400; k += blockDim.x) {
        int s = f * 160 - 200 + k;
        float y = 0.f;
        if (s >= 0 && s < N) y = s == 0 ? x[0] : x[s] - 0.97f * x[s - 1];
        fr[(size_t)row * 400 + k] = y * win[k];
    }
}

extern "C" ct_status ct_cuda_mel_frames(ct_cuda *c, float *frames, const float *pcm, const int *n, int B, int ns,
                                        int T, const float *window) {
    if (B > 0 && T > 0) k_mel_frames<<<B * T, 128, 0, c->stream>>>(frames, pcm, n, ns, T, window);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_mel_power(float *p, const float *spec, size_t rows) {
    size_t n = rows * 257;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / 257, k = i % 257;
        float re = spec[r * 514 + k], im = spec[r * 514 + 257 + k];
        float m = sqrtf(re * re + im * im);
        p[i] = m * m;
    }
}

extern "C" ct_status ct_cuda_mel_power(ct_cuda *c, float *p, const float *spec, size_t rows) {
    if (rows) k_mel_power<<<4 * 132 * 8, 256, 0, c->stream>>>(p, spec, rows);
    LAUNCH_CHECK();
    return CT_OK;
}

/* Block (32 bins × 8 frame lanes) per (b, bin group). */
__global__ void k_mel_norm(float *x, const int *Ls, int T, int M) {
    __shared__ float sh[8][33];
    int b = blockIdx.y, m = blockIdx.x * 32 + threadIdx.x, ty = threadIdx.y;
    int L = Ls[b];
    float *xb = x + (size_t)b * T * M;
    const float guard = 5.9604644775390625e-08f; /* 2^-24 */
    float s = 0.f;
    if (m < M)
        for (int t = ty; t < L; t += 8) s += logf(xb[(size_t)t * M + m] + guard);
    sh[ty][threadIdx.x] = s;
    __syncthreads();
    float mean = 0.f;
    for (int k = 0; k < 8; k++) mean += sh[k][threadIdx.x];
    mean /= (float)L;
    __syncthreads();
    float q = 0.f;
    if (m < M)
        for (int t = ty; t < L; t += 8) {
            float d = logf(xb[(size_t)t * M + m] + guard) - mean;
            q += d * d;
        }
    sh[ty][threadIdx.x] = q;
    __syncthreads();
    float var = 0.f;
    for (int k = 0; k < 8; k++) var += sh[k][threadIdx.x];
    var /= (float)(L - 1);
    float den = sqrtf(var) + 1e-5f;
    if (m < M)
        for (int t = ty; t < T; t += 8) {
            float *p = xb + (size_t)t * M + m;
            *p = t < L ? (logf(*p + guard) - mean) / den : 0.f;
        }
}

extern "C" ct_status ct_cuda_mel_normalize(ct_cuda *c, float *feats, const int *L, int B, int T, int M) {
    k_mel_norm<<<dim3((M + 31) / 32, B), dim3(32, 8), 0, c->stream>>>(feats, L, T, M);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_cast_bf16(uint16_t *dst, const float *src, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = ct_to_bf(src[i]);
}

extern "C" ct_status ct_cuda_cast_bf16(ct_cuda *c, uint16_t *dst, const float *src, size_t n) {
    if (n) k_cast_bf16<<<4 * 132 * 8, 256, 0, c->stream>>>(dst, src, n);
    LAUNCH_CHECK();
    return CT_OK;
}
