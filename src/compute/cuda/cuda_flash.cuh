/* cuda_flash.cuh — the pieces the two flash-style attention kernels share
 * (cuda_relattn_fused.cu: the encoder's relative-position attention;
 * cuda_ops_w2v2_attn.cu: the aligner's plain attention): bf16 tensor-core
 * products (mma.sync m16n8k16, fp32 accumulate), ldmatrix fragment loads,
 * cp.async staging, and the step that follows one 64-key tile's scores:
 * the online softmax and o += P·V from the score registers. Each kernel
 * keeps only what differs (the scores: with or without the position
 * window; the staging of q, k, v and the block shape). Fragment layout of a
 * warp's 16 query rows: thread (g = lane / 4, t = lane % 4) holds rows g and
 * g + 8; s[n][e] is key 8n + 2t + (e & 1) of row g + 8·(e >> 1).
 * Everything is inline: each kernel compiles as if written in one piece. */
#ifndef CT_COMPUTE_CUDA_FLASH_CUH
#define CT_COMPUTE_CUDA_FLASH_CUH

#include <cuda_bf16.h>
#include <stdint.h>

namespace {

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

/* Four 8×8 bf16 matrices, as stored (B operands from row-major K and R rows). */
__device__ __forceinline__ void ldsm_x4(uint32_t r[4], const uint16_t *p) {
    unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

__device__ __forceinline__ uint32_t ld32(const uint16_t *p) { return *reinterpret_cast<const uint32_t *>(p); }

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* 16 bytes global → shared without passing through registers; ok = 0 writes
 * zeros and reads nothing (src then only has to be some valid address). */
__device__ __forceinline__ void cp_async16(uint16_t *dst, const uint16_t *src, bool ok) {
    unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
/* Groups of cp.async copies: commit closes the copies issued since the last
 * one into a group; wait_group<N> waits until at most N groups are pending
 * (so a tile staged a step ahead can stay in flight while this one is used). */
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait_group() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* One 64-key tile after its scores: s holds them scaled to log2 units
 * (−inf where masked), mx0/mx1 this thread's maxima over its entries of
 * rows g and g + 8. Takes the quad's maxima, moves the running maxima
 * m0/m1 and partial sums l0/l1 (per thread; the quad adds them at the
 * end), rescales the NO output n-tiles acc, and adds P·V with P from the
 * score registers (rounded to bf16) and V from the staged tile sV (row
 * stride LDS). Key 0 < L is in the first tile, so the running maxima are
 * finite from then on. */
template <int NO, int LDS>
__device__ __forceinline__ void flash_tile(float (&s)[8][4], float mx0, float mx1, float &m0, float &m1, float &l0,
                                           float &l1, float (&acc)[NO][4], const uint16_t *sV, int lane) {
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
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
    l0 = l0 * a0 + r0;
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
    for (int kk = 0; kk < 4; kk++) {
        uint32_t pa[4] = {pack_bf16(s[2 * kk][0], s[2 * kk][1]), pack_bf16(s[2 * kk][2], s[2 * kk][3]),
                          pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3])};
        const int key = 16 * kk + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
        for (int n = 0; n < NO; n += 2) {
            uint32_t vb[4];
            ldsm_x4_trans(vb, sV + key * LDS + 8 * n + (lane >> 4) * 8);
            mma_bf16(acc[n], pa, vb[0], vb[1]);
            mma_bf16(acc[n + 1], pa, vb[2], vb[3]);
        }
    }
}

/* After the last tile: the quad's partial sums, then rows ia = i0 +
 * 16·warp + g and ib = ia + 8 of acc / l written to orow (row stride D,
 * this thread's columns 8n + 2t) as bf16; rows ≥ T are not written, padded
 * query rows (≥ L) come out zero, as the reference path's all-zero P rows
 * give. */
template <int NO>
__device__ __forceinline__ void flash_store(uint16_t *orow, const float (&acc)[NO][4], float l0, float l1, int ia,
                                            int L, int T, int D, int t) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const int ib = ia + 8;
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

} /* namespace */

#endif
