/* cuda_kernels.cu — the model's non-GEMM kernels: layer norm, SiLU, the
 * encoder's relative-position attention pieces (head split with u/v biases,
 * shift + mask + softmax, head merge, position table), the conv module's
 * GLU + depthwise conv + folded BatchNorm + SiLU, the subsampling convs,
 * decoder embedding, self/cross attention for one step, greedy selection,
 * and the mel frontend's framing, power and normalisation. Reductions and
 * softmax run in fp32; bf16 only at storage.
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

/* ---- encoder attention ---------------------------------------------------- */
__global__ void k_relattn_prep(uint16_t *qu, uint16_t *qv, uint16_t *k, uint16_t *v, const uint16_t *qkv,
                               const float *u, const float *vb, int B, int T, int H, int Dh) {
    size_t n = (size_t)B * T * H * Dh;
    int d = H * Dh;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int e = (int)(i % Dh);
        size_t r = i / Dh;
        int h = (int)(r % H);
        size_t bt = r / H; /* b*T + t */
        int t = (int)(bt % T), b = (int)(bt / T);
        const uint16_t *src = qkv + bt * 3 * d + h * Dh + e;
        size_t o = (((size_t)h * B + b) * T + t) * Dh + e;
        float q = ct_bf(src[0]);
        qu[o] = ct_to_bf(q + u[h * Dh + e]);
        qv[o] = ct_to_bf(q + vb[h * Dh + e]);
        k[o] = src[d];
        v[o] = src[2 * d];
    }
}

extern "C" ct_status ct_cuda_relattn_prep(ct_cuda *c, uint16_t *qu, uint16_t *qv, uint16_t *k, uint16_t *v,
                                          const uint16_t *qkv, const float *u, const float *vb, int B, int T, int H,
                                          int Dh) {
    k_relattn_prep<<<4 * 132 * 8, 256, 0, c->stream>>>(qu, qv, k, v, qkv, u, vb, B, T, H, Dh);
    LAUNCH_CHECK();
    return CT_OK;
}

/* One warp per score row (h, b, i); the row's scores sit in shared memory. */
__global__ void k_relattn_softmax(uint16_t *P, const float *ac, const float *bd, const int *len, int B, int T, int H,
                                  float scale) {
    extern __shared__ float sm[];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    size_t row = (size_t)blockIdx.x * (blockDim.x >> 5) + warp;
    if (row >= (size_t)H * B * T) return;
    float *s = sm + (size_t)warp * T;
    int i = (int)(row % T);
    int b = (int)((row / T) % B);
    int L = len[b];
    uint16_t *pr = P + row * T;
    if (i >= L) {
        for (int j = lane; j < T; j += 32) pr[j] = 0;
        return;
    }
    const float *a = ac + row * T;
    const float *d = bd + row * (size_t)(2 * T - 1) + (T - 1 - i);
    float mx = -INFINITY;
    for (int j = lane; j < L; j += 32) {
        float x = (a[j] + d[j]) * scale;
        s[j] = x;
        mx = fmaxf(mx, x);
    }
    mx = ct_warp_max(mx);
    float sum = 0.f;
    for (int j = lane; j < L; j += 32) {
        float e = __expf(s[j] - mx);
        s[j] = e;
        sum += e;
    }
    sum = ct_warp_sum(sum);
    float inv = 1.f / sum;
    for (int j = lane; j < T; j += 32) pr[j] = j < L ? ct_to_bf(s[j] * inv) : (uint16_t)0;
}

extern "C" ct_status ct_cuda_relattn_softmax(ct_cuda *c, uint16_t *P, const float *ac, const float *bd,
                                             const int *len, int B, int T, int H, float scale) {
    const int warps = 8;
    size_t rows = (size_t)H * B * T;
    size_t shmem = (size_t)warps * T * sizeof(float);
    if (shmem > 48 * 1024) return ct_fail(CT_ERR_UNSUPPORTED, "relattn_softmax: T=%d too long", T);
    k_relattn_softmax<<<nblocks(rows, warps), warps * 32, shmem, c->stream>>>(P, ac, bd, len, B, T, H, scale);
    LAUNCH_CHECK();
    return CT_OK;
}

/* One warp per dot product of length Dh. */
__global__ void k_relattn_uv(float *uk, float *vr, const uint16_t *qkv, const uint16_t *p, const float *u,
                             const float *vb, int B, int T, int H, int Dh) {
    int lane = threadIdx.x & 31;
    size_t w = (size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    size_t nuk = (size_t)H * B * T, nvr = (size_t)H * (2 * T - 1);
    int D = H * Dh;
    float acc = 0.f;
    if (w < nuk) {
        int t = (int)(w % T), b = (int)((w / T) % B), h = (int)(w / ((size_t)T * B));
        const uint16_t *kr = qkv + ((size_t)b * T + t) * 3 * D + D + h * Dh;
        for (int e = lane; e < Dh; e += 32) acc += u[h * Dh + e] * ct_bf(kr[e]);
        acc = ct_warp_sum(acc);
        if (lane == 0) uk[w] = acc;
    } else if (w < nuk + nvr) {
        size_t q = w - nuk;
        int r = (int)(q % (2 * T - 1)), h = (int)(q / (2 * T - 1));
        const uint16_t *pr = p + (size_t)r * D + h * Dh;
        for (int e = lane; e < Dh; e += 32) acc += vb[h * Dh + e] * ct_bf(pr[e]);
        acc = ct_warp_sum(acc);
        if (lane == 0) vr[q] = acc;
    }
}

extern "C" ct_status ct_cuda_relattn_uv(ct_cuda *c, float *uk, float *vr, const uint16_t *qkv, const uint16_t *p,
                                        const float *u, const float *vb, int B, int T, int H, int Dh) {
    size_t n = (size_t)H * B * T + (size_t)H * (2 * T - 1);
    k_relattn_uv<<<nblocks(n, 8), 256, 0, c->stream>>>(uk, vr, qkv, p, u, vb, B, T, H, Dh);
    LAUNCH_CHECK();
    return CT_OK;
}

template <typename BD>
__global__ void k_relattn_softmax_uv(uint16_t *P, const float *ac, const BD *bd, size_t ldbd, const float *uk,
                                     const float *vr, const int *len, int B, int T, int H, float scale) {
    extern __shared__ float sm[];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    size_t row = (size_t)blockIdx.x * (blockDim.x >> 5) + warp;
    if (row >= (size_t)H * B * T) return;
    float *s = sm + (size_t)warp * T;
    int i = (int)(row % T);
    size_t hb = row / T; /* h*B + b */
    int b = (int)(hb % B), h = (int)(hb / B);
    int L = len[b];
    uint16_t *pr = P + row * T;
    if (i >= L) {
        for (int j = lane; j < T; j += 32) pr[j] = 0;
        return;
    }
    const float *a = ac + row * T;
    const float *ukr = uk + hb * T;
    const BD *d = bd + row * ldbd + (T - 1 - i);
    const float *vrr = vr + (size_t)h * (2 * T - 1) + (T - 1 - i);
    float mx = -INFINITY;
    for (int j = lane; j < L; j += 32) {
        float bdj;
        if constexpr (sizeof(BD) == 2) bdj = ct_bf(d[j]);
        else bdj = d[j];
        float x = (a[j] + ukr[j] + bdj + vrr[j]) * scale;
        s[j] = x;
        mx = fmaxf(mx, x);
    }
    mx = ct_warp_max(mx);
    float sum = 0.f;
    for (int j = lane; j < L; j += 32) {
        float e = __expf(s[j] - mx);
        s[j] = e;
        sum += e;
    }
    sum = ct_warp_sum(sum);
    float inv = 1.f / sum;
    for (int j = lane; j < T; j += 32) pr[j] = j < L ? ct_to_bf(s[j] * inv) : (uint16_t)0;
}

extern "C" ct_status ct_cuda_relattn_softmax_uv(ct_cuda *c, uint16_t *P, const float *ac, const void *bd,
                                                int bd_bf16, size_t ldbd, const float *uk, const float *vr,
                                                const int *len, int B, int T, int H, float scale) {
    const int warps = 8;
    size_t rows = (size_t)H * B * T;
    size_t shmem = (size_t)warps * T * sizeof(float);
    if (shmem > 48 * 1024) return ct_fail(CT_ERR_UNSUPPORTED, "relattn_softmax: T=%d too long", T);
    if (bd_bf16)
        k_relattn_softmax_uv<uint16_t><<<nblocks(rows, warps), warps * 32, shmem, c->stream>>>(
            P, ac, (const uint16_t *)bd, ldbd, uk, vr, len, B, T, H, scale);
    else
        k_relattn_softmax_uv<float><<<nblocks(rows, warps), warps * 32, shmem, c->stream>>>(
            P, ac, (const float *)bd, ldbd, uk, vr, len, B, T, H, scale);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_heads_merge(uint16_t *o, const uint16_t *oh, int B, int T, int H, int Dh) {
    size_t n = (size_t)B * T * H * Dh;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int e = (int)(i % Dh);
        size_t r = i / Dh;
        int h = (int)(r % H);
        size_t bt = r / H;
        int t = (int)(bt % T), b = (int)(bt / T);
        o[i] = oh[(((size_t)h * B + b) * T + t) * Dh + e];
    }
}

extern "C" ct_status ct_cuda_heads_merge(ct_cuda *c, uint16_t *o, const uint16_t *oh, int B, int T, int H, int Dh) {
    k_heads_merge<<<4 * 132 * 8, 256, 0, c->stream>>>(o, oh, B, T, H, Dh);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_relpos(uint16_t *pe, int T, int d, int rev) {
    int r = blockIdx.x;
    float p = rev ? (float)(r - (T - 1)) : (float)(T - 1 - r);
    for (int i = threadIdx.x; i < d / 2; i += blockDim.x) {
        float f = 1.f / powf(10000.f, (float)(2 * i) / (float)d);
        float a = p * f;
        pe[(size_t)r * d + 2 * i] = ct_to_bf(sinf(a));
        pe[(size_t)r * d + 2 * i + 1] = ct_to_bf(cosf(a));
    }
}

extern "C" ct_status ct_cuda_relpos_table(ct_cuda *c, uint16_t *pe, int T, int d) {
    k_relpos<<<2 * T - 1, 256, 0, c->stream>>>(pe, T, d, 0);
    LAUNCH_CHECK();
    return CT_OK;
}

extern "C" ct_status ct_cuda_relpos_table_rev(ct_cuda *c, uint16_t *pe, int T, int d) {
    k_relpos<<<2 * T - 1, 256, 0, c->stream>>>(pe, T, d, 1);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_blk_ptrs(const void **pa, const void **pb, void **pd, const uint16_t *qkv, const uint16_t *rrev,
                           float *bd, int B, int T, int H, int Dh, int blk, int ldn, int nblk) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= H * B * nblk) return;
    int k = n % nblk, b = (n / nblk) % B, h = n / (nblk * B), D = H * Dh;
    pa[n] = qkv + ((size_t)b * T + (size_t)k * blk) * 3 * D + h * Dh;
    pb[n] = rrev + (size_t)k * blk * D + h * Dh;
    pd[n] = bd + (size_t)n * blk * ldn;
}

extern "C" ct_status ct_cuda_relattn_blk_ptrs(ct_cuda *c, const void **pa, const void **pb, void **pd,
                                              const uint16_t *qkv, const uint16_t *rrev, float *bd, int B, int T,
                                              int H, int Dh, int blk, int ldn) {
    int nblk = (T + blk - 1) / blk, n = H * B * nblk;
    k_blk_ptrs<<<(n + 255) / 256, 256, 0, c->stream>>>(pa, pb, pd, qkv, rrev, bd, B, T, H, Dh, blk, ldn, nblk);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_relattn_softmax_blk(uint16_t *P, const float *ac, const float *bd, int blk, int ldn, int nblk,
                                      const float *uk, const float *vr, int ldvr, const int *len, int B, int T, int H,
                                      float scale) {
    extern __shared__ float sm[];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    size_t row = (size_t)blockIdx.x * (blockDim.x >> 5) + warp;
    if (row >= (size_t)H * B * T) return;
    float *s = sm + (size_t)warp * T;
    int i = (int)(row % T);
    size_t hb = row / T;
    int h = (int)(hb / B);
    int L = len[hb % B];
    uint16_t *pr = P + row * T;
    if (i >= L) {
        for (int j = lane; j < T; j += 32) pr[j] = 0;
        return;
    }
    const float *a = ac + row * T, *ukr = uk + hb * T;
    const float *d = bd + ((hb * nblk + i / blk) * blk + i % blk) * (size_t)ldn + (T - 1 + i % blk);
    const float *vrr = vr + (size_t)h * ldvr + (T - 1 + i);
    float mx = -INFINITY;
    for (int j = lane; j < L; j += 32) {
        float x = (a[j] + ukr[j] + d[-j] + vrr[-j]) * scale;
        s[j] = x;
        mx = fmaxf(mx, x);
    }
    mx = ct_warp_max(mx);
    float sum = 0.f;
    for (int j = lane; j < L; j += 32) {
        float e = __expf(s[j] - mx);
        s[j] = e;
        sum += e;
    }
    sum = ct_warp_sum(sum);
    float inv = 1.f / sum;
    for (int j = lane; j < T; j += 32) pr[j] = j < L ? ct_to_bf(s[j] * inv) : (uint16_t)0;
}

extern "C" ct_status ct_cuda_relattn_softmax_blk(ct_cuda *c, uint16_t *P, const float *ac, const float *bd, int blk,
                                                 int ldn, const float *uk, const float *vr, int ldvr, const int *len,
                                                 int B, int T, int H, float scale) {
    const int warps = 8;
    size_t rows = (size_t)H * B * T, shmem = (size_t)warps * T * sizeof(float);
    if (shmem > 48 * 1024) return ct_fail(CT_ERR_UNSUPPORTED, "relattn_softmax: T=%d too long", T);
    int nblk = (T + blk - 1) / blk;
    k_relattn_softmax_blk<<<nblocks(rows, warps), warps * 32, shmem, c->stream>>>(P, ac, bd, blk, ldn, nblk, uk, vr,
                                                                                  ldvr, len, B, T, H, scale);
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

/* ---- decoder ------------------------------------------------------------------- */
__global__ void k_dec_embed(float *x, const uint16_t *te, const uint16_t *pe, const int *tok, const int *pos,
                            const float *w, const float *b, int d) {
    __shared__ float sh[32];
    int row = blockIdx.x;
    const uint16_t *a = te + (size_t)tok[row] * d;
    const uint16_t *p = pe + (size_t)(*pos) * d;
    float v[8];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        int i = threadIdx.x + k * blockDim.x;
        v[k] = i < d ? ct_bf(a[i]) + ct_bf(p[i]) : 0.f;
        s += v[k];
    }
    float mean = ct_block_sum(s, sh) / d;
    float q = 0.f;
#pragma unroll
    for (int k = 0; k < 8; k++) {
        int i = threadIdx.x + k * blockDim.x;
        float dd = i < d ? v[k] - mean : 0.f;
        q += dd * dd;
    }
    float rstd = rsqrtf(ct_block_sum(q, sh) / d + 1e-5f);
#pragma unroll
    for (int k = 0; k < 8; k++) {
        int i = threadIdx.x + k * blockDim.x;
        if (i < d) x[(size_t)row * d + i] = (v[k] - mean) * rstd * w[i] + b[i];
    }
}

extern "C" ct_status ct_cuda_dec_embed(ct_cuda *c, float *x, const uint16_t *tok_emb, const uint16_t *pos_emb,
                                       const int *tok, const int *pos, const float *w, const float *b, int B, int d) {
    if (d > 2048) return ct_fail(CT_ERR_UNSUPPORTED, "decoder width %d", d);
    k_dec_embed<<<B, 256, 0, c->stream>>>(x, tok_emb, pos_emb, tok, pos, w, b, d);
    LAUNCH_CHECK();
    return CT_OK;
}

/* One block of 128 threads (4 warps) per (row, head); n keys of row stride ld
 * (keys at kv, values at kv + d), output o (Dh). Scores: each lane owns a
 * key and walks its row with 16-byte loads against q in shared memory (no
 * shuffles per key). Values: each warp takes every 4th key, each lane 4 (or
 * more) dimensions, then the warps' partial sums are added in shared memory.
 * Needs Dh % 8 == 0 and Dh ≤ 256; s holds n + 8 floats. */
__device__ void attn_one(uint16_t *o, const uint16_t *q, const uint16_t *kv, size_t ld, int n, int d, int Dh,
                         float scale, float *s) {
    __shared__ float red[32];
    __shared__ float qs[256];
    __shared__ float part[4][256];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int e = threadIdx.x; e < Dh; e += blockDim.x) qs[e] = ct_bf(q[e]);
    __syncthreads();
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        const uint4 *kr = reinterpret_cast<const uint4 *>(kv + (size_t)j * ld);
        float acc = 0.f;
        for (int c = 0; c < Dh / 8; c++) {
            uint4 u = kr[c];
            uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
            for (int k = 0; k < 4; k++) {
                acc += qs[c * 8 + 2 * k] * ct_bf((uint16_t)(w[k] & 0xffff));
                acc += qs[c * 8 + 2 * k + 1] * ct_bf((uint16_t)(w[k] >> 16));
            }
        }
        s[j] = acc * scale;
    }
    __syncthreads();
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < n; j += blockDim.x) mx = fmaxf(mx, s[j]);
    mx = ct_block_max(mx, red);
    float sum = 0.f;
    __syncthreads();
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        float e = __expf(s[j] - mx);
        s[j] = e;
        sum += e;
    }
    sum = ct_block_sum(sum, red);
    if (threadIdx.x < 8) s[n + threadIdx.x] = 0.f; /* keep a vectorised tail read defined */
    __syncthreads();
    float inv = sum > 0.f ? 1.f / sum : 0.f;
    /* values: lane covers dims [lane*per, lane*per + per), per = Dh/32 ≤ 8 */
    int per = Dh / 32;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const uint16_t *vb = kv + d + lane * per;
    for (int j = warp; j < n; j += 4) {
        float p = s[j];
        const uint16_t *vr = vb + (size_t)j * ld;
#pragma unroll
        for (int k = 0; k < 8; k++)
            if (k < per) acc[k] += p * ct_bf(vr[k]);
    }
#pragma unroll
    for (int k = 0; k < 8; k++)
        if (k < per) part[warp][lane * per + k] = acc[k];
    __syncthreads();
    for (int e = threadIdx.x; e < Dh; e += blockDim.x)
        o[e] = ct_to_bf((part[0][e] + part[1][e] + part[2][e] + part[3][e]) * inv);
}

__global__ void k_dec_self(uint16_t *o, const uint16_t *qkv, uint16_t *cache, const int *pos, int S, int H, int Dh) {
    extern __shared__ float s[];
    int b = blockIdx.x / H, h = blockIdx.x % H, d = H * Dh;
    int p = *pos;
    const uint16_t *src = qkv + (size_t)b * 3 * d;
    uint16_t *crow = cache + ((size_t)b * S + p) * 2 * d;
    for (int e = threadIdx.x; e < Dh; e += blockDim.x) {
        crow[h * Dh + e] = src[d + h * Dh + e];
        crow[d + h * Dh + e] = src[2 * d + h * Dh + e];
    }
    __syncthreads();
    attn_one(o + (size_t)b * d + h * Dh, src + h * Dh, cache + (size_t)b * S * 2 * d + h * Dh, 2 * (size_t)d, p + 1,
             d, Dh, rsqrtf((float)Dh), s);
}

extern "C" ct_status ct_cuda_dec_self_attn(ct_cuda *c, uint16_t *o, const uint16_t *qkv, uint16_t *cache,
                                           const int *pos, int B, int S, int H, int Dh) {
    if (Dh % 32 || Dh > 256) return ct_fail(CT_ERR_UNSUPPORTED, "decoder head size %d", Dh);
    k_dec_self<<<B * H, 128, (S + 8) * sizeof(float), c->stream>>>(o, qkv, cache, pos, S, H, Dh);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_dec_cross(uint16_t *o, const uint16_t *q, const uint16_t *kv, size_t ld, const int *len, int T,
                            int H, int Dh) {
    extern __shared__ float s[];
    int b = blockIdx.x / H, h = blockIdx.x % H, d = H * Dh;
    attn_one(o + (size_t)b * d + h * Dh, q + (size_t)b * d + h * Dh, kv + (size_t)b * T * ld + h * Dh, ld, len[b], d,
             Dh, rsqrtf((float)Dh), s);
}

extern "C" ct_status ct_cuda_dec_cross_attn(ct_cuda *c, uint16_t *o, const uint16_t *q, const uint16_t *kv,
                                            size_t ld, const int *len, int B, int T, int H, int Dh) {
    if (Dh % 32 || Dh > 256) return ct_fail(CT_ERR_UNSUPPORTED, "decoder head size %d", Dh);
    if ((size_t)(T + 8) * 4 > 48 * 1024) return ct_fail(CT_ERR_UNSUPPORTED, "cross attention over %d frames", T);
    k_dec_cross<<<B * H, 128, (T + 8) * sizeof(float), c->stream>>>(o, q, kv, ld, len, T, H, Dh);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_greedy(int *tok, int *out, int ld, const int *pos, int *finished, const float *logits,
                         const int *prompt, int prompt_len, const int *rowlim, int V, int eos, int pad, int min_new) {
    __shared__ float sv[32];
    __shared__ int si[32];
    int b = blockIdx.x, p = *pos + 1;
    int g = p - prompt_len, lim = rowlim ? rowlim[b] : -1;
    int next;
    if (p < prompt_len) {
        next = prompt[p];
    } else if (finished[b] || (lim >= 0 && g >= lim)) {
        next = pad;
    } else {
        int ban = (g < min_new || g < lim) ? eos : -1;
        const float *l = logits + (size_t)b * V;
        float best = -INFINITY;
        int bi = 0x7fffffff;
        for (int j = threadIdx.x; j < V; j += blockDim.x) {
            float x = j == ban ? -INFINITY : l[j];
            if (x > best || (x == best && j < bi)) best = x, bi = j;
        }
        for (int o = 16; o > 0; o >>= 1) {
            float ov = __shfl_xor_sync(0xffffffffu, best, o);
            int oi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (ov > best || (ov == best && oi < bi)) best = ov, bi = oi;
        }
        int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
        if (lane == 0) sv[w] = best, si[w] = bi;
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int k = 1; k < (int)(blockDim.x >> 5); k++)
                if (sv[k] > best || (sv[k] == best && si[k] < bi)) best = sv[k], bi = si[k];
            si[0] = bi == 0x7fffffff ? 0 : bi;
        }
        __syncthreads();
        next = si[0];
    }
    if (threadIdx.x == 0) {
        tok[b] = next;
        out[(size_t)b * ld + p] = next;
        if (p >= prompt_len && (next == eos || (lim >= 0 && g + 1 >= lim))) finished[b] = 1;
    }
}

__global__ void k_advance(int *pos) { *pos += 1; }

extern "C" ct_status ct_cuda_greedy_step(ct_cuda *c, int *tok, int *out, int ld, int *pos, int *finished,
                                         const float *logits, const int *prompt, int prompt_len, const int *rowlim,
                                         int B, int V, int eos, int pad, int min_new) {
    k_greedy<<<B, 1024, 0, c->stream>>>(tok, out, ld, pos, finished, logits, prompt, prompt_len, rowlim, V, eos, pad,
                                        min_new);
    LAUNCH_CHECK();
    k_advance<<<1, 1, 0, c->stream>>>(pos);
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
