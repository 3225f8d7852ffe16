/* cuda_relattn_fused.cu — the encoder's relative-position attention in one
 * kernel: scores q·kᵀ and the shifted position scores q·R[T−1−i+j] on tensor
 * cores (mma.sync m16n8k16 bf16, fp32 accumulate), an online softmax in fp32
 * and P·V, per (batch, head, 64-query block), without writing any score to
 * memory. The unfused path (batched GEMMs + ct_cuda_relattn_softmax_uv + P·V
 * GEMMs) stays as the reference it is tested against.
 *
 * Why a window: query row i needs position row p = T−1−i+j for key j, a
 * different row per (i, j), so bd is not a GEMM. For a warp's 16 query rows
 * and a 64-key tile the rows needed form one contiguous window of 79; the
 * warp computes q·Rwinᵀ (16 × 80) as a GEMM, parks it in shared memory and
 * reads each score's term back along its diagonal. That costs 1.25× the q·kᵀ
 * FLOPs instead of the (2T−1)/T ≈ 2× of the full bd GEMM, and no traffic.
 *
 * Fragment layouts are those of the PTX ISA for mma.m16n8k16 (.bf16): with
 * g = lane/4 and t = lane%4, A regs hold (row g | g+8, cols 2t,2t+1 | +8), B
 * regs (k 2t,2t+1 | +8, col g), C (row g | g+8, cols 2t, 2t+1). The C layout of
 * two adjacent 8-key tiles is the A layout of one 16-key step, so P goes from
 * the score accumulators into the P·V MMA without touching memory.
 */
#include <math.h>

#include "compute/cuda/cuda_flash.cuh"
#include "compute/cuda/cuda_internal.h"

namespace {

constexpr int QB = 64;      /* query rows per block: 4 warps × 16 */
constexpr int KB = 64;      /* keys per tile */
static_assert(KB == 64, "flash_tile (cuda_flash.cuh) steps over 64-key tiles");
constexpr int RW = QB + KB; /* position rows staged per tile (127 used) */
constexpr int WN = 80;      /* a warp's window columns (79 used): 10 n-tiles */
constexpr int WLD = WN + 4; /* fp32 row stride of the parked window */
constexpr int THREADS = 128;

template <int DH> struct shape {
    static constexpr int LDS = DH + 8; /* bf16 row stride: DH/2 + 4 words ≡ 4 (mod 8), conflict-free fragment loads */
    static constexpr int NK = DH / 16; /* k-steps over the head dimension */
    static constexpr int NO = DH / 8;  /* output n-tiles */
    static constexpr int TILE = KB * LDS;
    static constexpr int QW_BYTES = (QB * LDS * 2 > 4 * 16 * WLD * 4) ? QB * LDS * 2 : 4 * 16 * WLD * 4;
    static constexpr size_t SMEM = (size_t)(2 * TILE + RW * LDS) * 2 + QW_BYTES + 2 * RW * 4; /* vr terms: 2 buffers */
};

/* Start copying rows [0, n) of a DH-wide slice into shared memory (stride
 * LDS); rows ≥ valid become zero. Asynchronous: cp_async_wait_all + a barrier
 * before use. (Plain loads here were serialised by the compiler behind the
 * shared stores and cost most of the kernel's time.) */
template <int DH>
__device__ __forceinline__ void stage(uint16_t *s, const uint16_t *g, size_t ldg, int n, int valid) {
    constexpr int V = DH / 8; /* 16-byte vectors per row */
    for (int idx = threadIdx.x; idx < n * V; idx += THREADS) {
        int r = idx / V, c = idx % V;
        bool ok = r < valid;
        cp_async16(s + r * shape<DH>::LDS + c * 8, ok ? g + (size_t)r * ldg + c * 8 : g, ok);
    }
}

/* The position rows p = pmin + r, r < RW, of head slice rp_h (rows outside
 * [0, 2T−2] zero), asynchronously, and their vr terms (plain: 128 floats). */
template <int DH>
__device__ __forceinline__ void stage_pos(uint16_t *sR, float *sVr, const uint16_t *rp_h, const float *vr_h, int D,
                                          int T, int pmin) {
    constexpr int V = DH / 8;
    for (int idx = threadIdx.x; idx < RW * V; idx += THREADS) {
        int r = idx / V, c = idx % V, p = pmin + r;
        bool ok = p >= 0 && p <= 2 * T - 2;
        cp_async16(sR + r * shape<DH>::LDS + c * 8, ok ? rp_h + (size_t)p * D + c * 8 : rp_h, ok);
    }
    for (int r = threadIdx.x; r < RW; r += THREADS) {
        int p = pmin + r;
        sVr[r] = (p >= 0 && p <= 2 * T - 2) ? vr_h[p] : 0.f;
    }
}

template <int DH>
__global__ void __launch_bounds__(THREADS, 2)
    k_relattn_fused(uint16_t *o, const uint16_t *qkv, const uint16_t *rp, const float *vr, const int *len, int B,
                    int T, int H, int nqb, float scale_log2) {
    using S = shape<DH>;
    constexpr int LDS = S::LDS, NK = S::NK, NO = S::NO;
    extern __shared__ __align__(16) unsigned char smem[];
    uint16_t *sK = reinterpret_cast<uint16_t *>(smem);
    uint16_t *sV = sK + S::TILE;
    uint16_t *sR = sV + S::TILE;
    uint16_t *sQ = sR + RW * LDS;
    float *sW = reinterpret_cast<float *>(sQ); /* the windows overlay sQ, read into registers (and a barrier) first */
    float *sVr = reinterpret_cast<float *>(reinterpret_cast<unsigned char *>(sQ) + S::QW_BYTES); /* 2 × RW */

    const int D = H * DH, ld = 3 * D;
    const int qb = blockIdx.x % nqb, bh = blockIdx.x / nqb, b = bh / H, h = bh % H;
    const int i0 = qb * QB, L = len[b];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const uint16_t *rows = qkv + (size_t)b * T * ld + h * DH;
    uint16_t *orow = o + (size_t)b * T * D + h * DH;
    const int nrow = min(QB, T - i0);

    if (i0 >= L) { /* every query row padded: output zero */
        for (int idx = threadIdx.x; idx < nrow * (DH / 8); idx += THREADS)
            *reinterpret_cast<uint4 *>(orow + (size_t)(i0 + idx / (DH / 8)) * D + (idx % (DH / 8)) * 8) =
                make_uint4(0, 0, 0, 0);
        return;
    }

    /* Q, then the first tile's K, R and V, all in flight at once */
    const uint16_t *rp_h = rp + h * DH;
    const float *vr_h = vr + (size_t)h * (2 * T - 1);
    stage<DH>(sQ, rows + (size_t)i0 * ld, ld, QB, nrow);
    stage<DH>(sK, rows + D, ld, KB, min(KB, T));
    stage_pos<DH>(sR, sVr, rp_h, vr_h, D, T, T - QB - i0);
    stage<DH>(sV, rows + 2 * D, ld, KB, min(KB, T));
    cp_async_wait_all();
    __syncthreads();
    uint32_t qa[NK][4];
#pragma unroll
    for (int kk = 0; kk < NK; kk++) {
        const uint16_t *q = sQ + (16 * warp + g) * LDS + 16 * kk + 2 * t;
        qa[kk][0] = ld32(q);
        qa[kk][1] = ld32(q + 8 * LDS);
        qa[kk][2] = ld32(q + 8);
        qa[kk][3] = ld32(q + 8 * LDS + 8);
    }
    __syncthreads(); /* all of Q is in registers: the windows may now overwrite sQ */

    float acc[NO][4];
#pragma unroll
    for (int n = 0; n < NO; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f; /* rows g and g+8 */
    const int rw = 48 - 16 * warp; /* the warp's first window row within sR */
    float *w = sW + warp * 16 * WLD;
    /* ldmatrix.x4 lane roles for B fragments of two adjacent n-tiles: row (key
     * or position) offset and column (head dim) offset within a 16×16 block */
    const int brow = (lane & 7) + ((lane >> 4) << 3), bcol = ((lane >> 3) & 1) * 8;

    /* Per tile: barrier (this tile's copies landed, Q is in registers) → q·kᵀ
     * and q·Rwinᵀ → barrier → next K, R copies start → softmax, P·V →
     * barrier → next V copy starts. The copies overlap the other half's math. */
    for (int j0 = 0, it = 0; j0 < L; j0 += KB, it++) {
        const float *vrt = sVr + (it & 1) * RW; /* this tile's vr terms (the next tile's go to the other half) */
        /* content scores q·kᵀ: 16 rows × 64 keys */
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

        /* position window q·Rwinᵀ: 16 rows × 80 window columns, parked in shared memory */
#pragma unroll
        for (int n = 0; n < WN / 8; n += 2) {
            float c0[4] = {0.f, 0.f, 0.f, 0.f}, c1[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
            for (int kk = 0; kk < NK; kk++) {
                uint32_t rb[4];
                ldsm_x4(rb, sR + (rw + 8 * n + brow) * LDS + 16 * kk + bcol);
                mma_bf16(c0, qa[kk], rb[0], rb[1]);
                mma_bf16(c1, qa[kk], rb[2], rb[3]);
            }
            *reinterpret_cast<float2 *>(w + g * WLD + 8 * n + 2 * t) = make_float2(c0[0], c0[1]);
            *reinterpret_cast<float2 *>(w + (g + 8) * WLD + 8 * n + 2 * t) = make_float2(c0[2], c0[3]);
            *reinterpret_cast<float2 *>(w + g * WLD + 8 * n + 8 + 2 * t) = make_float2(c1[0], c1[1]);
            *reinterpret_cast<float2 *>(w + (g + 8) * WLD + 8 * n + 8 + 2 * t) = make_float2(c1[2], c1[3]);
        }
        __syncthreads(); /* every warp is done with sK and sR (and its window is written) */
        const int jn = j0 + KB;
        if (jn < L) {
            stage<DH>(sK, rows + (size_t)jn * ld + D, ld, KB, min(KB, T - jn));
            stage_pos<DH>(sR, sVr + ((it + 1) & 1) * RW, rp_h, vr_h, D, T, T - QB - i0 + jn);
        }

        /* score(i, j) = (ac + window[ii][15 − ii + jj] + vr[p]) · scale, keys ≥ L masked */
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int n = 0; n < 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int ii = g + (e >> 1) * 8, jj = 8 * n + 2 * t + (e & 1);
                int col = 15 - ii + jj;
                float x = (s[n][e] + w[ii * WLD + col] + vrt[rw + col]) * scale_log2;
                x = (j0 + jj < L) ? x : -INFINITY;
                s[n][e] = x;
                if (e < 2) mx0 = fmaxf(mx0, x);
                else mx1 = fmaxf(mx1, x);
            }
        flash_tile<NO, LDS>(s, mx0, mx1, m0, m1, l0, l1, acc, sV, lane);
        __syncthreads(); /* every warp is done with sV and its window */
        if (jn < L) stage<DH>(sV, rows + (size_t)jn * ld + 2 * D, ld, KB, min(KB, T - jn));
        cp_async_wait_all();
        __syncthreads();
    }

    flash_store<NO>(orow, acc, l0, l1, i0 + 16 * warp + g, L, T, D, t);
}

template <int DH>
ct_status launch(ct_cuda *c, uint16_t *o, const uint16_t *qkv, const uint16_t *rp, const float *vr, const int *len,
                 int B, int T, int H, float scale) {
    /* over 48 KiB of dynamic shared memory must be opted into, per function and device: cheap, so every call */
    CT_CUDA_TRY(cudaFuncSetAttribute(k_relattn_fused<DH>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)shape<DH>::SMEM));
    int nqb = (T + QB - 1) / QB;
    size_t nblk = (size_t)nqb * B * H;
    if (nblk > 0x7fffffffu) return ct_fail(CT_ERR_UNSUPPORTED, "relattn_fused: %zu blocks", nblk);
    k_relattn_fused<DH><<<(unsigned)nblk, THREADS, shape<DH>::SMEM, c->stream>>>(o, qkv, rp, vr, len, B, T, H, nqb,
                                                                                 scale * 1.4426950408889634f);
    CT_CUDA_TRY(cudaGetLastError());
    return CT_OK;
}

} /* namespace */

extern "C" int ct_cuda_relattn_fused_supports(int Dh) {
    return Dh == 16 || Dh == 32 || Dh == 64 || Dh == 80 || Dh == 96 || Dh == 128 || Dh == 160;
}

extern "C" ct_status ct_cuda_relattn_fused(ct_cuda *c, uint16_t *o, const uint16_t *qkv, const uint16_t *rp,
                                           const float *vr, const int *len, int B, int T, int H, int Dh,
                                           float scale) {
    if (B <= 0 || T <= 0 || H <= 0) return ct_fail(CT_ERR_INVALID_ARG, "relattn_fused: empty shape");
    switch (Dh) {
    case 16: return launch<16>(c, o, qkv, rp, vr, len, B, T, H, scale);
    case 32: return launch<32>(c, o, qkv, rp, vr, len, B, T, H, scale);
    case 64: return launch<64>(c, o, qkv, rp, vr, len, B, T, H, scale);
    case 80: return launch<80>(c, o, qkv, rp, vr, len, B, T, H, scale);
    case 96: return launch<96>(c, o, qkv, rp, vr, len, B, T, H, scale);
    case 128: return launch<128>(c, o, qkv, rp, vr, len, B, T, H, scale);
    case 160: return launch<160>(c, o, qkv, rp, vr, len, B, T, H, scale);
    default: return ct_fail(CT_ERR_UNSUPPORTED, "relattn_fused: head size %d not built", Dh);
    }
}
