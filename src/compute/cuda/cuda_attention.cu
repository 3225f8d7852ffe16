/* cuda_attention.cu — the encoder's relative-position attention pieces of
 * the simple path (u/v bias terms, shift + mask + softmax over GEMM-made
 * scores) and the position table; the fused kernel is cuda_relattn_fused.cu.
 * Softmax and reductions in fp32.
 */
#include <math.h>

#include "compute/cuda/cuda_internal.h"

#define LAUNCH_CHECK() CT_CUDA_TRY(cudaGetLastError())

static inline unsigned nblocks(size_t n, int t) { return (unsigned)((n + t - 1) / t); }

/* ---- encoder attention ---------------------------------------------------- */
/* One warp per dot product of length Dh. */
__global__ void k_relattn_uv(float *uk, float *vr, const uint16_t *qkv, const uint16_t *p, const float *u,
                             const float *vb, int B, int T, int H, int Dh) {
    int lane = threadIdx.x & 31;
    size_t w = (size_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    size_t nuk = uk ? (size_t)H * B * T : 0, nvr = (size_t)H * (2 * T - 1);
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
    size_t n = (uk ? (size_t)H * B * T : 0) + (size_t)H * (2 * T - 1);
    k_relattn_uv<<<nblocks(n, 8), 256, 0, c->stream>>>(uk, vr, qkv, p, u, vb, B, T, H, Dh);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_relattn_softmax_uv(uint16_t *P, const float *ac, const float *bd, size_t ldbd, const float *uk,
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
    const float *ukr = uk ? uk + hb * T : NULL; /* NULL: u already folded into q */
    const float *d = bd + row * ldbd + (T - 1 - i);
    const float *vrr = vr + (size_t)h * (2 * T - 1) + (T - 1 - i);
    float mx = -INFINITY;
    for (int j = lane; j < L; j += 32) {
        float x = (a[j] + (ukr ? ukr[j] : 0.f) + d[j] + vrr[j]) * scale;
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

extern "C" ct_status ct_cuda_relattn_softmax_uv(ct_cuda *c, uint16_t *P, const float *ac, const float *bd,
                                                size_t ldbd, const float *uk, const float *vr,
                                                const int *len, int B, int T, int H, float scale) {
    const int warps = 8;
    size_t rows = (size_t)H * B * T;
    size_t shmem = (size_t)warps * T * sizeof(float);
    if (shmem > 48 * 1024) return ct_fail(CT_ERR_UNSUPPORTED, "relattn_softmax: T=%d too long", T);
    k_relattn_softmax_uv<<<nblocks(rows, warps), warps * 32, shmem, c->stream>>>(P, ac, bd, ldbd, uk, vr, len, B, T,
                                                                                 H, scale);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_relpos(uint16_t *pe, int T, int d) {
    int r = blockIdx.x;
    float p = (float)(T - 1 - r);
    for (int i = threadIdx.x; i < d / 2; i += blockDim.x) {
        float f = 1.f / powf(10000.f, (float)(2 * i) / (float)d);
        float a = p * f;
        pe[(size_t)r * d + 2 * i] = ct_to_bf(sinf(a));
        pe[(size_t)r * d + 2 * i + 1] = ct_to_bf(cosf(a));
    }
}

extern "C" ct_status ct_cuda_relpos_table(ct_cuda *c, uint16_t *pe, int T, int d) {
    k_relpos<<<2 * T - 1, 256, 0, c->stream>>>(pe, T, d);
    LAUNCH_CHECK();
    return CT_OK;
}
