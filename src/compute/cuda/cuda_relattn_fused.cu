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

#include "compute/cuda/cuda_internal.h"

namespace {

constexpr int QB = 64;      /* query rows per block: 4 warps × 16 */
constexpr int KB = 64;      /* keys per tile */
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

__device__ __forceinline__ void mma_bf16(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Four 8×8 bf16 matrices, transposed on the way in (B operands from row-major V). */
__device__ __forceinline__ void ldsm_x4_trans(uint32_t r[4], const uint16_t *p) {
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

__device__ __forceinline__ uint32_t ld32(const uint16_t *p) { return *reinterpret_cast<const uint32_t *>(p); }

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* Four 8×8 bf16 matrices, as stored (B operands from row-major K and R rows). */
__device__ __forceinline__ void ldsm_x4(uint32_t r[4], const uint16_t *p) {
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

/* 16 bytes global → shared without passing through registers; ok = 0 writes
 * zeros and reads nothing (src then only has to be some valid address). */
__device__ __forceinline__ void cp_async16(uint16_t *dst, const uint16_t *src, bool ok) {
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

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
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        /* key 0 < L is in the first tile, so the running maxima are finite from then on */
        float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
        float a0 = exp2f(m0 - n0), a1 = exp2f(m1 - n1);
        m0 = n0;
        m1 = n1;
        float r0 = 0.f, r1 = 0.f;
#pragma unroll
        for (int n = 0; n < 8; n++) {
            s[n][0] = exp2f(s[n][0] - n0);
            s[n][1] = exp2f(s[n][1] - n0);
            s[n][2] = exp2f(s[n][2] - n1);
            s[n][3] = exp2f(s[n][3] - n1);
            r0 += s[n][0] + s[n][1];
            r1 += s[n][2] + s[n][3];
        }
        l0 = l0 * a0 + r0; /* per-thread partial sums; the quad adds them at the end */
        l1 = l1 * a1 + r1;
#pragma unroll
        for (int n = 0; n < NO; n++) {
            acc[n][0] *= a0;
            acc[n][1] *= a0;
            acc[n][2] *= a1;
            acc[n][3] *= a1;
        }

        /* o += P·V: 4 steps of 16 keys; V fragments by transposing loads */
#pragma unroll
        for (int kk = 0; kk < KB / 16; kk++) {
            uint32_t pa[4] = {pack_bf16(s[2 * kk][0], s[2 * kk][1]), pack_bf16(s[2 * kk][2], s[2 * kk][3]),
                              pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
            const int key = 16 * kk + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
            for (int n = 0; n < NO; n += 2) {
                uint32_t vb[4];
                ldsm_x4_trans(vb, sV + key * LDS + 8 * n + (lane >> 4) * 8);
                mma_bf16(acc[n], pa, vb[0], vb[1]);
                mma_bf16(acc[n + 1], pa, vb[2], vb[3]);
            }
        }
        __syncthreads(); /* every warp is done with sV and its window */
        if (jn < L) stage<DH>(sV, rows + (size_t)jn * ld + 2 * D, ld, KB, min(KB, T - jn));
        cp_async_wait_all();
        __syncthreads();
    }

    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const int ia = i0 + 16 * warp + g, ib = ia + 8;
    /* padded query rows (i ≥ L) come out zero, as the reference path's all-zero P rows give */
    const float inv0 = ia < L ? 1.f / l0 : 0.f, inv1 = ib < L ? 1.f / l1 : 0.f;
#pragma unroll
    for (int n = 0; n < NO; n++) {
        int col = 8 * n + 2 * t;
        if (ia < T)
            *reinterpret_cast<uint32_t *>(orow + (size_t)ia * D + col) = pack_bf16(acc[n][0] * inv0, acc[n][1] * inv0);
        if (ib < T)
            *reinterpret_cast<uint32_t *>(orow + (size_t)ib * D + col) = pack_bf16(acc[n][2] * inv1, acc[n][3] * inv1);
    }
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
