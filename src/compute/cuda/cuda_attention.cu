/* cuda_attention.cu — attention kernels: the encoder's relative-position
 * pieces for the unfused reference path (u/v bias terms, shift + mask +
 * softmax over GEMM-made scores, the position table; the fused kernel is
 * cuda_relattn_fused.cu), the decoder's
 * one-step self/cross attention with device KV caches, its embedding, and
 * greedy token selection. Softmax and reductions in fp32.
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

/* One block of ATT_THREADS threads (8 warps) per (row, head); n keys of row
 * stride ld (keys at kv, values at kv + d), output o (Dh).
 * Scores: four lanes per key read its row in 16-byte chunks against q in
 * shared memory and add up with two shuffles. (A thread per key read 16
 * bytes of 32 rows 32 KiB apart per instruction, fetching half of every
 * sector twice: cross-attention took 0.79 instead of 0.60 ms per step.)
 * Values: each warp takes every 8th key; with Dh 64, 128 or 256 each lane
 * loads Dh/32 consecutive values at once, else lanes take dims lane,
 * lane + 32, .... The warps' partial sums are added in shared memory.
 * Needs Dh % 8 == 0 and Dh ≤ 256; s holds n + 8 floats. */
#define ATT_THREADS 256
#define ATT_WARPS (ATT_THREADS / 32)
__device__ void attn_one(uint16_t *o, const uint16_t *q, const uint16_t *kv, size_t ld, int n, int d, int Dh,
                         float scale, float *s) {
    __shared__ float red[32];
    __shared__ float qs[256];
    __shared__ float part[ATT_WARPS][256];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int e = threadIdx.x; e < Dh; e += blockDim.x) qs[e] = ct_bf(q[e]);
    __syncthreads();
    /* a quad of lanes per key, each lane every 4th 16-byte chunk of the key
     * row, so one load instruction reads 64 contiguous bytes of 8 keys */
    const int quad = lane & 3, kq = threadIdx.x >> 2, nq = blockDim.x >> 2;
    for (int j0 = 0; j0 < n; j0 += nq) {
        int j = j0 + kq;
        float acc = 0.f;
        if (j < n) {
            const uint4 *kr = reinterpret_cast<const uint4 *>(kv + (size_t)j * ld);
            for (int c = quad; c < Dh / 8; c += 4) {
                uint4 u = kr[c];
                uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    acc += qs[c * 8 + 2 * k] * ct_bf((uint16_t)(w[k] & 0xffff));
                    acc += qs[c * 8 + 2 * k + 1] * ct_bf((uint16_t)(w[k] >> 16));
                }
            }
        }
        acc += __shfl_xor_sync(0xffffffffu, acc, 1);
        acc += __shfl_xor_sync(0xffffffffu, acc, 2);
        if (j < n && quad == 0) s[j] = acc * scale;
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
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (Dh == 64 || Dh == 128 || Dh == 256) {
        /* lane covers dims [lane·V, lane·V + V), V = Dh/32 ∈ {2, 4, 8}: one 4/8/16-byte load per key */
        const int V = Dh / 32;
        const uint16_t *vb = kv + d + lane * V;
        for (int j = warp; j < n; j += ATT_WARPS) {
            float p = s[j];
            const uint16_t *vr = vb + (size_t)j * ld;
            uint32_t w[4];
            if (V == 8) {
                uint4 u = *reinterpret_cast<const uint4 *>(vr);
                w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w;
            } else if (V == 4) {
                uint2 u = *reinterpret_cast<const uint2 *>(vr);
                w[0] = u.x, w[1] = u.y, w[2] = w[3] = 0;
            } else {
                w[0] = *reinterpret_cast<const uint32_t *>(vr);
                w[1] = w[2] = w[3] = 0;
            }
#pragma unroll
            for (int k = 0; k < 4; k++) {
                acc[2 * k] += p * ct_bf((uint16_t)(w[k] & 0xffff));
                acc[2 * k + 1] += p * ct_bf((uint16_t)(w[k] >> 16));
            }
        }
        for (int k = 0; k < V; k++) part[warp][lane * V + k] = acc[k];
    } else {
        /* other head sizes: lane covers dims lane, lane + 32, ... (coalesced 2-byte loads) */
        const uint16_t *vb = kv + d + lane;
        for (int j = warp; j < n; j += ATT_WARPS) {
            float p = s[j];
            const uint16_t *vr = vb + (size_t)j * ld;
#pragma unroll
            for (int k = 0; k < 8; k++)
                if (lane + 32 * k < Dh) acc[k] += p * ct_bf(vr[32 * k]);
        }
#pragma unroll
        for (int k = 0; k < 8; k++)
            if (lane + 32 * k < Dh) part[warp][lane + 32 * k] = acc[k];
    }
    __syncthreads();
    for (int e = threadIdx.x; e < Dh; e += blockDim.x) {
        float t = 0.f;
#pragma unroll
        for (int w = 0; w < ATT_WARPS; w++) t += part[w][e];
        o[e] = ct_to_bf(t * inv);
    }
}

/* A row that already finished (skip[b] set: it emitted eos) writes zeros and
 * reads nothing: its tokens are pad from then on, and in a batch of mixed
 * lengths the cross-attention reads of finished rows are most of the waste. */
__device__ __forceinline__ bool skip_row(uint16_t *o, const int *skip, int b, int Dh) {
    if (!skip || !skip[b]) return false;
    for (int e = threadIdx.x; e < Dh; e += blockDim.x) o[e] = 0;
    return true;
}

__global__ void k_dec_self(uint16_t *o, const uint16_t *qkv, uint16_t *cache, const int *pos, const int *skip, int S,
                           int H, int Dh) {
    extern __shared__ float s[];
    int b = blockIdx.x / H, h = blockIdx.x % H, d = H * Dh;
    if (skip_row(o + (size_t)b * d + h * Dh, skip, b, Dh)) return;
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
                                           const int *pos, const int *skip, int B, int S, int H, int Dh) {
    if (Dh % 8 || Dh > 256) return ct_fail(CT_ERR_UNSUPPORTED, "decoder head size %d", Dh);
    if ((size_t)(S + 8) * 4 > 38 * 1024) return ct_fail(CT_ERR_UNSUPPORTED, "self attention over %d positions", S);
    k_dec_self<<<B * H, ATT_THREADS, (S + 8) * sizeof(float), c->stream>>>(o, qkv, cache, pos, skip, S, H, Dh);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_dec_cross(uint16_t *o, const uint16_t *q, const uint16_t *kv, size_t ld, const int *len,
                            const int *skip, int T, int H, int Dh) {
    extern __shared__ float s[];
    int b = blockIdx.x / H, h = blockIdx.x % H, d = H * Dh;
    if (skip_row(o + (size_t)b * d + h * Dh, skip, b, Dh)) return;
    attn_one(o + (size_t)b * d + h * Dh, q + (size_t)b * d + h * Dh, kv + (size_t)b * T * ld + h * Dh, ld, len[b], d,
             Dh, rsqrtf((float)Dh), s);
}

extern "C" ct_status ct_cuda_dec_cross_attn(ct_cuda *c, uint16_t *o, const uint16_t *q, const uint16_t *kv,
                                            size_t ld, const int *len, const int *skip, int B, int T, int H, int Dh) {
    if (Dh % 8 || Dh > 256) return ct_fail(CT_ERR_UNSUPPORTED, "decoder head size %d", Dh);
    /* the scores' dynamic shared memory beside attn_one's static 9.1 KiB, under the 48 KiB default */
    if ((size_t)(T + 8) * 4 > 38 * 1024) return ct_fail(CT_ERR_UNSUPPORTED, "cross attention over %d frames", T);
    k_dec_cross<<<B * H, ATT_THREADS, (T + 8) * sizeof(float), c->stream>>>(o, q, kv, ld, len, skip, T, H, Dh);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_greedy(int *tok, int *out, int ld, const int *pos, int *finished, const float *logits,
                         const int *prompt, int prompt_len, const int *rowlim, const int *forced, int max_new, int V,
                         int eos, int pad, int min_new) {
    __shared__ float sv[32];
    __shared__ int si[32];
    int b = blockIdx.x, p = *pos + 1;
    int g = p - prompt_len, lim = rowlim ? rowlim[b] : -1;
    int next, pred; /* the input for the next step; what the row records */
    if (p < prompt_len) {
        next = pred = prompt[p];
    } else if (finished[b] || (lim >= 0 && g >= lim)) {
        next = pred = pad;
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
        pred = si[0];
        /* teacher forcing: the given token goes in, the prediction is recorded */
        next = forced ? forced[(size_t)b * max_new + g] : pred;
    }
    if (threadIdx.x == 0) {
        tok[b] = next;
        out[(size_t)b * ld + p] = pred;
        if (p >= prompt_len && ((pred == eos && !forced) || (lim >= 0 && g + 1 >= lim))) finished[b] = 1;
    }
}

__global__ void k_advance(int *pos) { *pos += 1; }

extern "C" ct_status ct_cuda_greedy_step(ct_cuda *c, int *tok, int *out, int ld, int *pos, int *finished,
                                         const float *logits, const int *prompt, int prompt_len, const int *rowlim,
                                         const int *forced, int max_new, int B, int V, int eos, int pad, int min_new) {
    k_greedy<<<B, 1024, 0, c->stream>>>(tok, out, ld, pos, finished, logits, prompt, prompt_len, rowlim, forced,
                                        max_new, V, eos, pad, min_new);
    LAUNCH_CHECK();
    k_advance<<<1, 1, 0, c->stream>>>(pos);
    LAUNCH_CHECK();
    return CT_OK;
}

