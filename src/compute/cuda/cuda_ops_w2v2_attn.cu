/* cuda_ops_w2v2_attn.cu — the wav2vec2 aligner's attention (backend.h
 * version 5, attn_full_t): plain bidirectional multi-head attention with key
 * lengths. For bf16 and the head sizes built here, one flash-style kernel per
 * (batch, head, 64-query block): q·kᵀ on tensor cores (mma.sync m16n8k16,
 * fp32 accumulate), an online softmax in fp32, P·V from the score registers,
 * no score written to memory. It is the kernel of cuda_relattn_fused.cu
 * without the position window: the same fragment layouts and cp.async
 * staging, and the same tile step and store (cuda_flash.cuh, shared by
 * both). Other types or head sizes take a
 * simple kernel, one block per query row, scores in shared memory.
 * Reference: ct_ref_attn_full (no mask; the test masks by passing shorter
 * rows to it).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compute/cuda/cuda_be.h"
#include "compute/cuda/cuda_flash.cuh"

namespace {

constexpr int KB = 64; /* keys per tile */
static_assert(KB == 64, "flash_tile (cuda_flash.cuh) steps over 64-key tiles");

/* NW warps of 16 query rows each: QB = 16·NW rows per block share each
 * staged K and V tile; K and V are double-buffered, so the copy of tile
 * j + 1 runs under tile j's products. MINB: blocks per SM the register cap
 * is set for (4 at DH ≤ 64: 16 warps per SM hide the softmax's latency; the
 * 46 KB of shared memory per block allow it). */
template <int DH, int NW> struct fshape {
    static constexpr int QB = 16 * NW;
    static constexpr int THREADS = 32 * NW;
    static constexpr int LDS = DH + 8; /* bf16 row stride: conflict-free fragment loads */
    static constexpr int NK = DH / 16;
    static constexpr int NO = DH / 8;
    static constexpr int TILE = KB * LDS;
    static constexpr int MINB = DH <= 64 ? 4 : 2;
    static constexpr size_t SMEM = (size_t)(4 * TILE + QB * LDS) * 2;
};
constexpr int THREADS = 128; /* the simple kernel */
constexpr int NWARPS = 4;    /* the fused kernel: 4 warps, 64 query rows a block (8 were 1–3 % slower, PERFORMANCE.md) */

/* rows [0, n) of a DH-wide slice into shared memory; rows ≥ valid zero */
template <int DH, int NT>
__device__ __forceinline__ void stage(uint16_t *s, const uint16_t *g, size_t ldg, int n, int valid) {
    constexpr int V = DH / 8, LDS = DH + 8;
    for (int idx = threadIdx.x; idx < n * V; idx += NT) {
        int r = idx / V, c = idx % V;
        bool ok = r < valid;
        cp_async16(s + r * LDS + c * 8, ok ? g + (size_t)r * ldg + c * 8 : g, ok);
    }
}

/* q, k, v, o (B, T, H·DH) bf16; len (B) device or NULL (all T) */
template <int DH, int NW>
__global__ void __launch_bounds__(32 * NW, fshape<DH, NW>::MINB)
    k_attn_full_fused(uint16_t *o, const uint16_t *q, const uint16_t *k, const uint16_t *v, const int *len, int T,
                      int H, int nqb, float scale_log2) {
    using S = fshape<DH, NW>;
    constexpr int LDS = S::LDS, NK = S::NK, NO = S::NO, QB = S::QB, NT = S::THREADS;
    extern __shared__ __align__(16) unsigned char smem[];
    uint16_t *sK0 = reinterpret_cast<uint16_t *>(smem); /* K tiles 0, 1 then V tiles 0, 1 */
    uint16_t *sV0 = sK0 + 2 * S::TILE;
    uint16_t *sQ = sV0 + 2 * S::TILE;

    const int D = H * DH;
    const int qb = blockIdx.x % nqb, bh = blockIdx.x / nqb, b = bh / H, h = bh % H;
    const int i0 = qb * QB, L = len ? min(len[b], T) : T;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const size_t base = (size_t)b * T * D + h * DH;
    const uint16_t *qr = q + base, *kr = k + base, *vr = v + base;
    uint16_t *orow = o + base;
    const int nrow = min(QB, T - i0);

    if (i0 >= L) { /* every query row padded: output zero */
        for (int idx = threadIdx.x; idx < nrow * (DH / 8); idx += NT)
            *reinterpret_cast<uint4 *>(orow + (size_t)(i0 + idx / (DH / 8)) * D + (idx % (DH / 8)) * 8) =
                make_uint4(0, 0, 0, 0);
        return;
    }

    /* group 0: Q and tile 0 */
    stage<DH, NT>(sQ, qr + (size_t)i0 * D, D, QB, nrow);
    stage<DH, NT>(sK0, kr, D, KB, min(KB, L));
    stage<DH, NT>(sV0, vr, D, KB, min(KB, L));
    cp_async_commit();

    uint32_t qa[NK][4];
    float acc[NO][4];
#pragma unroll
    for (int n = 0; n < NO; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f; /* rows g and g+8 */
    const int brow = (lane & 7) + ((lane >> 4) << 3), bcol = ((lane >> 3) & 1) * 8;

    /* per tile: start tile j + 1's copy into the other buffers, wait for
     * tile j's, scores, softmax and P·V, then a barrier before tile j + 2's
     * copy overwrites these buffers */
    for (int j0 = 0, cur = 0; j0 < L; j0 += KB, cur ^= 1) {
        const int jn = j0 + KB;
        uint16_t *sK = sK0 + cur * S::TILE, *sV = sV0 + cur * S::TILE;
        if (jn < L) {
            stage<DH, NT>(sK0 + (cur ^ 1) * S::TILE, kr + (size_t)jn * D, D, KB, min(KB, L - jn));
            stage<DH, NT>(sV0 + (cur ^ 1) * S::TILE, vr + (size_t)jn * D, D, KB, min(KB, L - jn));
            cp_async_commit();
            cp_async_wait_group<1>();
        } else {
            cp_async_wait_group<0>();
        }
        __syncthreads();
        if (j0 == 0) {
#pragma unroll
            for (int kk = 0; kk < NK; kk++) {
                const uint16_t *qp = sQ + (16 * warp + g) * LDS + 16 * kk + 2 * t;
                qa[kk][0] = ld32(qp);
                qa[kk][1] = ld32(qp + 8 * LDS);
                qa[kk][2] = ld32(qp + 8);
                qa[kk][3] = ld32(qp + 8 * LDS + 8);
            }
        }
        float s[8][4];
#pragma unroll
        for (int n = 0; n < 8; n++) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
#pragma unroll
        for (int kk = 0; kk < NK; kk++)
#pragma unroll
            for (int n = 0; n < 8; n += 2) {
                uint32_t kb[4];
                ldsm_x4(kb, sK + (8 * n + brow) * LDS + 16 * kk + bcol);
                mma_bf16(s[n], qa[kk], kb[0], kb[1]);
                mma_bf16(s[n + 1], qa[kk], kb[2], kb[3]);
            }
        float mx0 = -INFINITY, mx1 = -INFINITY;
        if (jn <= L) { /* a full tile: no key masked */
#pragma unroll
            for (int n = 0; n < 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    float x = s[n][e] * scale_log2;
                    s[n][e] = x;
                    if (e < 2) mx0 = fmaxf(mx0, x);
                    else mx1 = fmaxf(mx1, x);
                }
        } else {
#pragma unroll
            for (int n = 0; n < 8; n++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    int jj = 8 * n + 2 * t + (e & 1);
                    float x = (j0 + jj < L) ? s[n][e] * scale_log2 : -INFINITY;
                    s[n][e] = x;
                    if (e < 2) mx0 = fmaxf(mx0, x);
                    else mx1 = fmaxf(mx1, x);
                }
        }
        flash_tile<NO, LDS>(s, mx0, mx1, m0, m1, l0, l1, acc, sV, lane);
        __syncthreads(); /* every warp is done with buffers cur before tile j + 2 is staged into them */
    }

    flash_store<NO>(orow, acc, l0, l1, i0 + 16 * warp + g, L, T, D, t);
}

template <int DH>
ct_status launch_fused(cudaStream_t st, uint16_t *o, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                       const int *len, int B, int T, int H, float scale) {
    using S = fshape<DH, NWARPS>;
    CT_CUDA_TRY(cudaFuncSetAttribute(k_attn_full_fused<DH, NWARPS>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)S::SMEM));
    int nqb = (T + S::QB - 1) / S::QB;
    size_t nblk = (size_t)nqb * B * H;
    if (nblk > 0x7fffffffu) return ct_fail(CT_ERR_UNSUPPORTED, "cuda attn_full: %zu blocks", nblk);
    k_attn_full_fused<DH, NWARPS><<<(unsigned)nblk, S::THREADS, S::SMEM, st>>>(o, q, k, v, len, T, H, nqb,
                                                                              scale * 1.4426950408889634f);
    CT_CUDA_TRY(cudaGetLastError());
    return CT_OK;
}

/* The simple kernel: one block per (b, h, i), the L scores in shared memory,
 * softmax and P·V in fp32. */
template <typename E>
__global__ void k_attn_full_simple(E *o, const E *q, const E *k, const E *v, const int *len, int T, int H, int Dh,
                                   float scale) {
    extern __shared__ float sc[];
    __shared__ float red[32];
    const unsigned row = blockIdx.x, i = row % (unsigned)T, bh = row / (unsigned)T, h = bh % (unsigned)H,
                   b = bh / (unsigned)H;
    const int D = H * Dh, L = len ? min(len[b], T) : T;
    const size_t base = (size_t)b * T * D + (size_t)h * Dh;
    E *orow = o + base + (size_t)i * D;
    if ((int)i >= L) {
        for (int d = threadIdx.x; d < Dh; d += blockDim.x) orow[d] = ct_st<E>(0.f);
        return;
    }
    const E *qi = q + base + (size_t)i * D;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int j = warp; j < L; j += nw) {
        const E *kj = k + base + (size_t)j * D;
        float a = 0.f;
        for (int d = lane; d < Dh; d += 32) a += ct_ld(qi[d]) * ct_ld(kj[d]);
        a = ct_warp_sum(a);
        if (lane == 0) sc[j] = a * scale;
    }
    __syncthreads();
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < L; j += blockDim.x) mx = fmaxf(mx, sc[j]);
    mx = ct_block_max(mx, red);
    float sum = 0.f;
    for (int j = threadIdx.x; j < L; j += blockDim.x) {
        float e = expf(sc[j] - mx);
        sc[j] = e;
        sum += e;
    }
    sum = ct_block_sum(sum, red);
    __syncthreads();
    const float inv = 1.f / sum;
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) {
        float a = 0.f;
        for (int j = 0; j < L; j++) a += sc[j] * ct_ld(v[base + (size_t)j * D + d]);
        orow[d] = ct_st<E>(a * inv);
    }
}

} /* namespace */

ct_status ct_cuda_op_attn_full(ct_backend *be, ct_buf out, ct_buf q, ct_buf k, ct_buf v, const int *len, int B,
                               int T, int H, int Dh, ct_dtype prod, ct_arena *ws) {
    (void)prod; /* the products take the activation type */
    (void)ws;
    if (B <= 0 || T <= 0 || H <= 0 || Dh <= 0) return CT_OK;
    ct_dtype dt = out.dtype;
    if (q.dtype != dt || k.dtype != dt || v.dtype != dt)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda attn_full: mixed element types");
    const int *dlen = NULL;
    if (len) CT_TRY(ct_cuda_side(be, CT_SIDE_LEN, len, (size_t)B, &dlen));
    const float scale = 1.f / sqrtf((float)Dh);
    cudaStream_t st = ct_cstream(be);
    const int env_simple = ct_cbe(be)->attn_variant == CT_ATTN_SIMPLE;
    if (dt == CT_DTYPE_BF16 && !env_simple && (Dh == 32 || Dh == 64 || Dh == 128)) {
        uint16_t *o = (uint16_t *)out.data;
        const uint16_t *qq = (const uint16_t *)q.data, *kk = (const uint16_t *)k.data, *vv = (const uint16_t *)v.data;
        if (Dh == 32) return launch_fused<32>(st, o, qq, kk, vv, dlen, B, T, H, scale);
        if (Dh == 64) return launch_fused<64>(st, o, qq, kk, vv, dlen, B, T, H, scale);
        return launch_fused<128>(st, o, qq, kk, vv, dlen, B, T, H, scale);
    }
    size_t rows = (size_t)B * H * T;
    if (rows > 0x7fffffffu) return ct_fail(CT_ERR_LIMIT, "cuda attn_full: %zu query rows", rows);
    size_t smem = sizeof(float) * (((size_t)T + 3) & ~(size_t)3) + 16;
    if (smem > 48 * 1024) return ct_fail(CT_ERR_UNSUPPORTED, "cuda attn_full: %d keys for the simple kernel", T);
    CT_CUDA_DISPATCH(dt, E, "attn_full", {
        k_attn_full_simple<E><<<(unsigned)rows, THREADS, smem, st>>>((E *)out.data, (const E *)q.data,
                                                                    (const E *)k.data, (const E *)v.data, dlen, T, H,
                                                                    Dh, scale);
        CT_CUDA_TRY(cudaGetLastError());
    });
    return CT_OK;
}
