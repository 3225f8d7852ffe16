/* cuda_ops_attn.cu — the backend's attention ops: the encoder's
 * relative-position attention (the fused tensor-core kernel of
 * cuda_relattn_fused.cu for bf16 and the head sizes it is built for, else a
 * simple kernel, one block per query row), the decoder's KV-cache write and
 * its causal self- and cross-attention over slot-addressed caches (one block
 * per row, position and head; finished rows are not in the slot list, so
 * they cost nothing). Scores and softmax in float32. References:
 * ct_ref_attn_relpos, ct_ref_kv_write, ct_ref_attn_causal, ct_ref_attn_cross.
 */
#include <math.h>

#include "compute/cuda/cuda_be.h"

#define LAUNCH_CHECK() CT_CUDA_TRY(cudaGetLastError())
#define GRID_STRIDE(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

enum { ATT_THREADS = 128 };

/* Bytes of dynamic shared memory for n float scores: rounded up to whole
 * 16-byte vectors, because the compiler reads the tail of the P·V loop in
 * wider loads than one float (memcheck saw 12-byte reads past n). */
static size_t score_smem(int n) { return sizeof(float) * (((size_t)(n > 0 ? n : 1) + 3) & ~(size_t)3) + 16; }

/* Softmax in place over s[0..nk) by the whole block, then out[d] =
 * Σ_j s[j]·v[j][d] for d < Dh (v rows v_stride apart). nk = 0 writes zeros,
 * as the reference's all-masked row does. */
template <typename E>
__device__ void block_softmax_pv(E *out, float *s, int nk, const E *v, size_t v_stride, int Dh, float *red) {
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < nk; j += blockDim.x) mx = fmaxf(mx, s[j]);
    mx = ct_block_max(mx, red);
    float sum = 0.f;
    for (int j = threadIdx.x; j < nk; j += blockDim.x) {
        float e = nk ? __expf(s[j] - mx) : 0.f;
        s[j] = e;
        sum += e;
    }
    sum = ct_block_sum(sum, red);
    __syncthreads(); /* every s[j] written before any thread reads them all */
    float inv = sum > 0.f ? 1.f / sum : 0.f;
    for (int d = threadIdx.x; d < Dh; d += blockDim.x) {
        float acc = 0.f;
        for (int j = 0; j < nk; j++) acc += s[j] * ct_ld(v[(size_t)j * v_stride + d]);
        out[d] = ct_st<E>(acc * inv);
    }
}

/* Scores of one query against nk keys (rows k_stride apart), by warps. */
template <typename E>
__device__ void block_scores(float *s, const E *q, const E *k, size_t k_stride, int nk, int Dh, float scale) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int j = warp; j < nk; j += nw) {
        const E *kj = k + (size_t)j * k_stride;
        float acc = 0.f;
        for (int d = lane; d < Dh; d += 32) acc += ct_ld(q[d]) * ct_ld(kj[d]);
        acc = ct_warp_sum(acc);
        if (lane == 0) s[j] = acc * scale;
    }
    __syncthreads();
}

/* ---- decoder ------------------------------------------------------------- */
template <typename E>
__global__ void k_kv_write(E *cache, const E *src, const int *slot, int n, int S, int pos0, const int *posd, int Smax,
                           int D, int ss) {
    if (posd) pos0 = *posd; /* a device step (version 4): S = 1 */
    GRID_STRIDE(i, (size_t)n * S * D) {
        int d = (int)(i % D), s = (int)(i / D % S);
        size_t r = i / ((size_t)D * S);
        /* source rows ss apart (D, or 3D inside a packed q|k|v row) */
        if (pos0 + s >= 0 && pos0 + s < Smax)
            cache[((size_t)slot[r] * Smax + pos0 + s) * D + d] = src[(r * S + s) * (size_t)ss + d];
    }
}

ct_status ct_cuda_op_kv_write(ct_backend *be, ct_buf cache, ct_buf src, const int *slot, int n, int S, int pos0,
                              int Smax, int D) {
    if (pos0 < 0 || pos0 + S > Smax)
        return ct_fail(CT_ERR_INVALID_ARG, "kv_write: positions %d+%d beyond %d", pos0, S, Smax);
    if (cache.dtype != src.dtype) return ct_fail(CT_ERR_UNSUPPORTED, "cuda kv_write: mixed element types");
    size_t m = (size_t)n * S * D;
    if (!m) return CT_OK;
    const int *dslot;
    CT_TRY(ct_cuda_side(be, CT_SIDE_SLOT, slot, (size_t)n, &dslot));
    CT_CUDA_DISPATCH(src.dtype, E, "kv_write", {
        k_kv_write<E><<<ct_blocks(m, 256), 256, 0, ct_cstream(be)>>>((E *)cache.data, (const E *)src.data, dslot, n, S,
                                                                     pos0, NULL, Smax, D, D);
        LAUNCH_CHECK();
    });
    return CT_OK;
}

ct_status ct_cuda_op_kv_write_dev(ct_backend *be, ct_buf cache, ct_buf src, const int *slot, int n, const int32_t *pos,
                                  int Smax, int D) {
    if (cache.dtype != src.dtype) return ct_fail(CT_ERR_UNSUPPORTED, "cuda kv_write_dev: mixed element types");
    size_t m = (size_t)n * D;
    if (!m) return CT_OK;
    const int *dslot;
    CT_TRY(ct_cuda_side(be, CT_SIDE_SLOT, slot, (size_t)n, &dslot));
    CT_CUDA_DISPATCH(src.dtype, E, "kv_write_dev", {
        k_kv_write<E><<<ct_blocks(m, 256), 256, 0, ct_cstream(be)>>>((E *)cache.data, (const E *)src.data, dslot, n, 1,
                                                                     0, pos, Smax, D, D);
        LAUNCH_CHECK();
    });
    return CT_OK;
}

/* grid (n·S, H): query (r, t) of head h over L cache rows of slot[r]; keys
 * 0..pos0+t when causal, else the first klen[slot[r]] */
template <typename E>
__global__ void k_dec_attn(E *out, const E *q, const E *kc, const E *vc, const int *slot, const int *klen, int S,
                           int pos0, const int *posd, int L, int H, int Dh, float scale, int qs) {
    extern __shared__ float s[];
    __shared__ float red[32];
    int rt = blockIdx.x, h = blockIdx.y, r = rt / S, t = rt % S;
    int D = H * Dh, sl = slot[r];
    if (posd) pos0 = *posd; /* a device step (version 4): S = 1 */
    int nk = klen ? min(klen[sl], L) : min(pos0 + t + 1, L);
    const E *qi = q + (size_t)rt * qs + (size_t)h * Dh;
    const E *K = kc + (size_t)sl * L * D + (size_t)h * Dh, *V = vc + (size_t)sl * L * D + (size_t)h * Dh;
    block_scores(s, qi, K, (size_t)D, nk, Dh, scale);
    block_softmax_pv(out + (size_t)rt * D + (size_t)h * Dh, s, nk, V, (size_t)D, Dh, red);
}

/* The decoder attention's fast form, for 16-byte-aligned rows and Dh ≤ 256
 * with Dh a multiple of one 16-byte vector (the model's shapes): 256
 * threads; scores with a quad of lanes per key (64 keys in flight, 16-byte
 * loads of the key rows), and P·V with each warp taking every 8th key and
 * the lanes the dimensions, partial sums added in shared memory. The plain
 * kernel above reads the values one key after another per thread, which
 * at a few rows per step left the GPU waiting on memory latency (about
 * 0.15 ms per cross-attention over 376 frames). Same sums up to order.
 *
 * VPL (Dh = 32·VPL, 2/4/8): each lane reads its VPL consecutive values of
 * a key row in one load, four keys at a time, as the old engine's
 * attn_one does for the first; VPL 0: lanes take dimensions lane, lane +
 * 32, … one element each (other head sizes). With one 2-byte load per
 * dimension and one key at a time, the cross-attention over 376 frames took
 * 39 µs at one row and 96 µs at 128 rows, against 25 and 72 µs for the old
 * engine's kernel (ncu, H200, 2026-12-03): the whole decoder gap.
 *
 * Split keys (gridDim.z = NS > 1, cross-attention only): at a few rows the
 * grid is a few blocks (8 at one row: 8 of 132 SMs, each walking 376 keys
 * one after another). Block z takes the z-th of NS equal parts of the
 * row's keys, writes its max, exp-sum and unnormalised P·V (Dh floats) to
 * split_part, and the last block of its (row, head) to finish (a counter
 * in split_count, reset by that block for the next launch) adds the parts
 * rescaled to the common max: the flash-decoding split in one launch. */
enum { DEC_THREADS = 256, DEC_WARPS = DEC_THREADS / 32, DEC_DH_MAX = 256 };

/* N consecutive elements from p (N·sizeof(E) bytes, aligned to that or to 16)
 * into float32 registers: whole 16-, 8- or 4-byte loads. */
template <typename E> __device__ __forceinline__ void unpack_word(uint32_t w, float *o);
template <> __device__ __forceinline__ void unpack_word<float>(uint32_t w, float *o) { o[0] = __uint_as_float(w); }
template <> __device__ __forceinline__ void unpack_word<__nv_bfloat16>(uint32_t w, float *o) {
    o[0] = __uint_as_float(w << 16);
    o[1] = __uint_as_float(w & 0xffff0000u);
}
template <> __device__ __forceinline__ void unpack_word<__half>(uint32_t w, float *o) {
    o[0] = __half2float(__ushort_as_half((unsigned short)(w & 0xffffu)));
    o[1] = __half2float(__ushort_as_half((unsigned short)(w >> 16)));
}
template <typename E, int N> __device__ __forceinline__ void ld_vec(const E *p, float (&o)[N]) {
    constexpr int W = N * (int)sizeof(E) / 4, PW = 4 / (int)sizeof(E);
    uint32_t w[W];
    if constexpr (W % 4 == 0) {
#pragma unroll
        for (int i = 0; i < W / 4; i++) {
            uint4 u = reinterpret_cast<const uint4 *>(p)[i];
            w[4 * i] = u.x, w[4 * i + 1] = u.y, w[4 * i + 2] = u.z, w[4 * i + 3] = u.w;
        }
    } else if constexpr (W == 2) {
        uint2 u = *reinterpret_cast<const uint2 *>(p);
        w[0] = u.x, w[1] = u.y;
    } else {
        w[0] = *reinterpret_cast<const uint32_t *>(p);
    }
#pragma unroll
    for (int i = 0; i < W; i++) unpack_word<E>(w[i], o + i * PW);
}

/* qs: the query rows' stride (D, or 3D in a packed q|k|v row); knew (the
 * fused step, version 6: S = 1, causal, NS = 1): the row's new key at
 * knew + r·qs, its value D further, written into this block's head of the
 * caches at position pos0 before the scores read them (each block writes
 * only the part it reads, so no other block waits on it). */
template <typename E, int VPL>
__global__ void __launch_bounds__(DEC_THREADS) k_dec_attn_fast(E *out, const E *q, E *kc, E *vc,
                                                             const int *slot, const int *klen, int S, int pos0,
                                                             const int *posd, int L, int H, int Dh, float scale,
                                                             int qs, const E *knew, float *split_part,
                                                             int *split_count) {
    constexpr int VEC = 16 / sizeof(E);
    extern __shared__ float s[];
    __shared__ float red[32];
    __shared__ float qsh[DEC_DH_MAX];
    __shared__ float part[DEC_WARPS][DEC_DH_MAX];
    __shared__ int is_last;
    int rt = blockIdx.x, h = blockIdx.y, r = rt / S, t = rt % S;
    const int NS = (int)gridDim.z, z = (int)blockIdx.z;
    int D = H * Dh, sl = slot[r];
    if (posd) pos0 = *posd;
    int nk = klen ? min(klen[sl], L) : min(pos0 + t + 1, L);
    /* this block's keys [jb, jb + cnt): the z-th of NS equal parts */
    const int chunk = (nk + NS - 1) / NS, jb = min(nk, z * chunk), cnt = min(nk, jb + chunk) - jb;
    const E *qi = q + (size_t)rt * qs + (size_t)h * Dh;
    E *Kw = kc + (size_t)sl * L * D + (size_t)h * Dh, *Vw = vc + (size_t)sl * L * D + (size_t)h * Dh;
    if (knew && pos0 >= 0 && pos0 < L) {
        const E *kn = knew + (size_t)r * qs + (size_t)h * Dh;
        for (int e = threadIdx.x; e < Dh; e += blockDim.x) {
            Kw[(size_t)pos0 * D + e] = kn[e];
            Vw[(size_t)pos0 * D + e] = kn[D + e];
        }
    }
    const E *K = Kw + (size_t)jb * D, *V = Vw + (size_t)jb * D;
    for (int e = threadIdx.x; e < Dh; e += blockDim.x) qsh[e] = ct_ld(qi[e]);
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int quad = lane & 3, kq = threadIdx.x >> 2, nq = blockDim.x >> 2;
    for (int j0 = 0; j0 < cnt; j0 += nq) {
        int j = j0 + kq;
        float acc = 0.f;
        if (j < cnt) {
            const E *kr = K + (size_t)j * D;
            for (int c = quad; c < Dh / VEC; c += 4) {
                float w[VEC];
                ld_vec<E, VEC>(kr + c * VEC, w);
#pragma unroll
                for (int k = 0; k < VEC; k++) acc += qsh[c * VEC + k] * w[k];
            }
        }
        acc += __shfl_xor_sync(0xffffffffu, acc, 1);
        acc += __shfl_xor_sync(0xffffffffu, acc, 2);
        if (j < cnt && quad == 0) s[j] = acc * scale;
    }
    __syncthreads();
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < cnt; j += blockDim.x) mx = fmaxf(mx, s[j]);
    mx = ct_block_max(mx, red);
    float sum = 0.f;
    __syncthreads(); /* ct_block_max's last read of red before ct_block_sum writes it */
    for (int j = threadIdx.x; j < cnt; j += blockDim.x) {
        float e = __expf(s[j] - mx);
        s[j] = e;
        sum += e;
    }
    sum = ct_block_sum(sum, red);
    __syncthreads();
    if constexpr (VPL > 0) {
        /* lane's dims [lane·VPL, lane·VPL + VPL): four keys' loads in flight per warp */
        float acc[VPL];
#pragma unroll
        for (int k = 0; k < VPL; k++) acc[k] = 0.f;
        const E *vb = V + lane * VPL;
        int j = warp;
        for (; j + 3 * DEC_WARPS < cnt; j += 4 * DEC_WARPS) {
            float a0[VPL], a1[VPL], a2[VPL], a3[VPL];
            ld_vec<E, VPL>(vb + (size_t)j * D, a0);
            ld_vec<E, VPL>(vb + (size_t)(j + DEC_WARPS) * D, a1);
            ld_vec<E, VPL>(vb + (size_t)(j + 2 * DEC_WARPS) * D, a2);
            ld_vec<E, VPL>(vb + (size_t)(j + 3 * DEC_WARPS) * D, a3);
            const float p0 = s[j], p1 = s[j + DEC_WARPS], p2 = s[j + 2 * DEC_WARPS], p3 = s[j + 3 * DEC_WARPS];
#pragma unroll
            for (int k = 0; k < VPL; k++) acc[k] += p0 * a0[k] + p1 * a1[k] + p2 * a2[k] + p3 * a3[k];
        }
        for (; j < cnt; j += DEC_WARPS) {
            float a0[VPL];
            ld_vec<E, VPL>(vb + (size_t)j * D, a0);
            const float p0 = s[j];
#pragma unroll
            for (int k = 0; k < VPL; k++) acc[k] += p0 * a0[k];
        }
#pragma unroll
        for (int k = 0; k < VPL; k++) part[warp][lane * VPL + k] = acc[k];
    } else {
        float acc[DEC_DH_MAX / 32];
#pragma unroll
        for (int k = 0; k < DEC_DH_MAX / 32; k++) acc[k] = 0.f;
        for (int j = warp; j < cnt; j += DEC_WARPS) {
            float p = s[j];
            const E *vr = V + (size_t)j * D + lane;
#pragma unroll
            for (int k = 0; k < DEC_DH_MAX / 32; k++)
                if (lane + 32 * k < Dh) acc[k] += p * ct_ld(vr[32 * k]);
        }
#pragma unroll
        for (int k = 0; k < DEC_DH_MAX / 32; k++)
            if (lane + 32 * k < Dh) part[warp][lane + 32 * k] = acc[k];
    }
    __syncthreads();
    E *o = out + (size_t)rt * D + (size_t)h * Dh;
    if (NS == 1) {
        float inv = sum > 0.f ? 1.f / sum : 0.f;
        for (int e = threadIdx.x; e < Dh; e += blockDim.x) {
            float tsum = 0.f;
#pragma unroll
            for (int w = 0; w < DEC_WARPS; w++) tsum += part[w][e];
            o[e] = ct_st<E>(tsum * inv);
        }
        return;
    }
    /* this part: [max, exp-sum, Dh unnormalised sums] */
    const size_t pair = (size_t)rt * H + h, stride = (size_t)Dh + 2;
    float *mine = split_part + (pair * NS + z) * stride;
    for (int e = threadIdx.x; e < Dh; e += blockDim.x) {
        float tsum = 0.f;
#pragma unroll
        for (int w = 0; w < DEC_WARPS; w++) tsum += part[w][e];
        mine[2 + e] = tsum;
    }
    if (threadIdx.x == 0) {
        mine[0] = cnt > 0 ? mx : -INFINITY;
        mine[1] = sum;
    }
    __threadfence(); /* the part is visible device-wide before the count says so */
    __syncthreads();
    if (threadIdx.x == 0) is_last = atomicAdd(&split_count[pair], 1) == NS - 1;
    __syncthreads();
    if (!is_last) return;
    __threadfence();
    const float *all = split_part + pair * NS * stride;
    float M = -INFINITY;
    for (int k = 0; k < NS; k++) M = fmaxf(M, __ldcg(all + k * stride));
    for (int e = threadIdx.x; e < Dh; e += blockDim.x) {
        float ls = 0.f, acc = 0.f;
        for (int k = 0; k < NS; k++) {
            const float m = __ldcg(all + k * stride);
            const float w = m == -INFINITY ? 0.f : __expf(m - M); /* an empty part adds nothing */
            ls += w * __ldcg(all + k * stride + 1);
            acc += w * __ldcg(all + k * stride + 2 + e);
        }
        o[e] = ct_st<E>(ls > 0.f ? acc / ls : 0.f); /* no keys at all: zeros, as the reference */
    }
    if (threadIdx.x == 0) split_count[pair] = 0; /* ready for the next launch */
}

/* Dynamic shared memory the fast kernel may take beside its static ~9.3 KiB. */
enum { DEC_FAST_SMEM = 38 * 1024 };

/* How many parts a cross-attention's keys are split into: enough blocks
 * for two per SM where (rows × heads) gives fewer, parts of ≥ 32 keys, at
 * most 16; 1 where the grid already fills the GPU. */
static int split_parts(long pairs, int L) {
    long want = 2L * ct_cuda_sm_count();
    if (pairs <= 0 || pairs >= want || pairs > CT_ATTN_SPLIT_PAIRS) return 1;
    long ns = (want + pairs - 1) / pairs, by_keys = (L + 31) / 32;
    if (ns > by_keys) ns = by_keys;
    if (ns > 16) ns = 16;
    return ns > 1 ? (int)ns : 1;
}

template <typename E, int VPL>
static void launch_fast(dim3 grid, size_t smem, cudaStream_t st, E *out, const E *q, E *kc, E *vc, const int *slot,
                        const int *klen, int S, int pos0, const int *posd, int L, int H, int Dh, float scale, int qs,
                        const E *knew, float *part, int *count) {
    k_dec_attn_fast<E, VPL><<<grid, DEC_THREADS, smem, st>>>(out, q, kc, vc, slot, klen, S, pos0, posd, L, H, Dh,
                                                             scale, qs, knew, part, count);
}

/* qs: the query rows' stride; knew: the fused step's packed k|v (the fast
 * kernel writes them; elsewhere they are written first by k_kv_write);
 * ws: room for the split parts (cross-attention; none: no split) */
static ct_status dec_attn(ct_backend *be, const char *name, ct_buf out, ct_buf q, ct_buf kc, ct_buf vc,
                          const int *slot, const int *klen_host, int slots, int n, int S, int pos0, const int *posd,
                          int L, int H, int Dh, int qs, const void *knew, ct_arena *ws) {
    if (out.dtype != q.dtype || kc.dtype != q.dtype || vc.dtype != q.dtype)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda %s: mixed element types", name);
    if (n <= 0 || S <= 0) return CT_OK;
    size_t smem = score_smem(L);
    if (smem > 48 * 1024) return ct_fail(CT_ERR_UNSUPPORTED, "cuda %s: %d keys exceed the kernel's 12280", name, L);
    const int *dslot, *dlen = NULL;
    CT_TRY(ct_cuda_side(be, CT_SIDE_SLOT, slot, (size_t)n, &dslot));
    if (klen_host) CT_TRY(ct_cuda_side(be, CT_SIDE_KLEN, klen_host, (size_t)slots, &dlen));
    dim3 grid((unsigned)(n * S), (unsigned)H);
    float scale = 1.0f / sqrtf((float)Dh);
    size_t es = ct_dtype_size(q.dtype), vec = 16 / (es ? es : 1);
    int fast = Dh <= DEC_DH_MAX && Dh % (int)vec == 0 && (H * Dh) % (int)vec == 0 && smem <= DEC_FAST_SMEM &&
               ((uintptr_t)kc.data & 15) == 0 && ((uintptr_t)vc.data & 15) == 0;
    if (fast) {
        const int vpl = Dh % 32 == 0 && (Dh / 32 == 2 || Dh / 32 == 4 || Dh / 32 == 8) ? Dh / 32 : 0;
        ct_cuda_be *cb = ct_cbe(be);
        int ns = klen_host && !knew && ws ? split_parts((long)n * S * H, L) : 1;
        float *part = NULL;
        size_t mark = ws ? ct_arena_mark(ws) : 0;
        if (ns > 1) {
            part = (float *)ct_arena_alloc(ws, sizeof(float) * (size_t)n * S * H * ns * ((size_t)Dh + 2));
            if (!part) { /* no room: one part, the same result up to order */
                ct_error_clear();
                ns = 1;
            }
        }
        grid.z = (unsigned)ns;
        cudaStream_t st = ct_cstream(be);
        CT_CUDA_DISPATCH(q.dtype, E, name, {
            E *o = (E *)out.data, *k = (E *)kc.data, *v = (E *)vc.data;
            const E *qq = (const E *)q.data, *kn = (const E *)knew;
            switch (vpl) {
            case 2: launch_fast<E, 2>(grid, smem, st, o, qq, k, v, dslot, dlen, S, pos0, posd, L, H, Dh, scale, qs, kn, part, cb->attn_count); break;
            case 4: launch_fast<E, 4>(grid, smem, st, o, qq, k, v, dslot, dlen, S, pos0, posd, L, H, Dh, scale, qs, kn, part, cb->attn_count); break;
            case 8: launch_fast<E, 8>(grid, smem, st, o, qq, k, v, dslot, dlen, S, pos0, posd, L, H, Dh, scale, qs, kn, part, cb->attn_count); break;
            default: launch_fast<E, 0>(grid, smem, st, o, qq, k, v, dslot, dlen, S, pos0, posd, L, H, Dh, scale, qs, kn, part, cb->attn_count);
            }
            cudaError_t e = cudaGetLastError();
            if (ws) ct_arena_rewind(ws, mark); /* later ops' use of it is queued behind this kernel */
            if (e != cudaSuccess) return ct_fail(CT_ERR_DEVICE, "cuda %s: %s", name, cudaGetErrorString(e));
        });
        return CT_OK;
    }
    int D = H * Dh;
    CT_CUDA_DISPATCH(q.dtype, E, name, {
        if (knew) { /* the composition: both writes, then the attention */
            const E *kn = (const E *)knew;
            size_t m = (size_t)n * D;
            k_kv_write<E><<<ct_blocks(m, 256), 256, 0, ct_cstream(be)>>>((E *)kc.data, kn, dslot, n, 1, 0, posd, L, D,
                                                                         qs);
            LAUNCH_CHECK();
            k_kv_write<E><<<ct_blocks(m, 256), 256, 0, ct_cstream(be)>>>((E *)vc.data, kn + D, dslot, n, 1, 0, posd, L,
                                                                         D, qs);
            LAUNCH_CHECK();
        }
        k_dec_attn<E><<<grid, ATT_THREADS, smem, ct_cstream(be)>>>((E *)out.data, (const E *)q.data,
                                                                   (const E *)kc.data, (const E *)vc.data, dslot, dlen,
                                                                   S, pos0, posd, L, H, Dh, scale, qs);
        LAUNCH_CHECK();
    });
    return CT_OK;
}

ct_status ct_cuda_op_attn_causal(ct_backend *be, ct_buf out, ct_buf q, ct_buf kc, ct_buf vc, const int *slot, int n,
                                 int S, int pos0, int Smax, int H, int Dh, ct_arena *ws) {
    if (pos0 + S > Smax) return ct_fail(CT_ERR_INVALID_ARG, "attn_causal: position %d beyond %d", pos0 + S, Smax);
    return dec_attn(be, "attn_causal", out, q, kc, vc, slot, NULL, 0, n, S, pos0, NULL, Smax, H, Dh, H * Dh, NULL, NULL);
}

ct_status ct_cuda_op_attn_causal_dev(ct_backend *be, ct_buf out, ct_buf q, ct_buf kc, ct_buf vc, const int *slot,
                                     int n, const int32_t *pos, int Smax, int H, int Dh, ct_arena *ws) {
    return dec_attn(be, "attn_causal_dev", out, q, kc, vc, slot, NULL, 0, n, 1, 0, pos, Smax, H, Dh, H * Dh, NULL,
                    NULL);
}

ct_status ct_cuda_op_attn_causal_qkv_dev(ct_backend *be, ct_buf out, ct_buf qkv, ct_buf kc, ct_buf vc, const int *slot,
                                         int n, const int32_t *pos, int Smax, int H, int Dh, ct_arena *ws) {
    (void)ws;
    const int D = H * Dh;
    const void *knew = (const char *)qkv.data + ct_dtype_size(qkv.dtype) * (size_t)D;
    return dec_attn(be, "attn_causal_qkv_dev", out, qkv, kc, vc, slot, NULL, 0, n, 1, 0, pos, Smax, H, Dh, 3 * D,
                    knew, NULL);
}

ct_status ct_cuda_op_attn_cross(ct_backend *be, ct_buf out, ct_buf q, ct_buf ek, ct_buf ev, const int *slot,
                                const int *enc_len, int n, int S, int Tenc, int H, int Dh, ct_arena *ws) {
    int slots = 0; /* enc_len is indexed by slot: upload up to the largest one used */
    for (int r = 0; r < n; r++)
        if (slot[r] + 1 > slots) slots = slot[r] + 1;
    return dec_attn(be, "attn_cross", out, q, ek, ev, slot, enc_len, slots, n, S, 0, NULL, Tenc, H, Dh, H * Dh, NULL,
                    ws);
}

/* ---- encoder: simple kernel ---------------------------------------------- */
/* grid (T, H, B): score_j = ((q_i+u)·k_j + (q_i+vb)·p[T−1−i+j])·scale, j < len[b] */
template <typename E>
__global__ void k_relpos_simple(E *out, const E *q, const E *k, const E *v, const E *p, const float *u,
                                const float *vb, const int *len, int T, int H, int Dh, float scale) {
    extern __shared__ float s[];
    __shared__ float red[32];
    int i = blockIdx.x, h = blockIdx.y, b = blockIdx.z, D = H * Dh;
    int L = min(len[b], T);
    E *o = out + ((size_t)b * T + i) * D + (size_t)h * Dh;
    if (i >= L) { /* padded query rows: zeros, as the reference writes */
        for (int d = threadIdx.x; d < Dh; d += blockDim.x) o[d] = ct_st<E>(0.f);
        return;
    }
    const E *qi = q + ((size_t)b * T + i) * D + (size_t)h * Dh;
    const float *uh = u + (size_t)h * Dh, *vh = vb + (size_t)h * Dh;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int j = warp; j < L; j += nw) {
        const E *kj = k + ((size_t)b * T + j) * D + (size_t)h * Dh;
        const E *pj = p + (size_t)(T - 1 - i + j) * D + (size_t)h * Dh;
        float ac = 0.f, bd = 0.f;
        for (int d = lane; d < Dh; d += 32) {
            float qd = ct_ld(qi[d]);
            ac += (qd + uh[d]) * ct_ld(kj[d]);
            bd += (qd + vh[d]) * ct_ld(pj[d]);
        }
        ac = ct_warp_sum(ac);
        bd = ct_warp_sum(bd);
        if (lane == 0) s[j] = ac * scale + bd * scale;
    }
    __syncthreads();
    block_softmax_pv(o, s, L, v + (size_t)b * T * D + (size_t)h * Dh, (size_t)D, Dh, red);
}

/* ---- encoder: the fused kernel's layout ---------------------------------- */
/* qkv (B,T,3D) = [q + u | k | v]: the fused kernel reads one interleaved
 * buffer with u folded into q (cuda_relattn_fused.cu) */
__global__ void k_pack_qkv(__nv_bfloat16 *qkv, const __nv_bfloat16 *q, const __nv_bfloat16 *k,
                           const __nv_bfloat16 *v, const float *u, int D) {
    int c = blockIdx.y * CT_COLS_PER_BLOCK + threadIdx.x;
    if (c >= D) return;
    size_t r = blockIdx.x, i = r * D + c;
    __nv_bfloat16 *o = qkv + r * 3 * D;
    o[c] = __float2bfloat16_rn(__bfloat162float(q[i]) + u[c]);
    o[D + c] = k[i];
    o[2 * D + c] = v[i];
}
__global__ void k_sub(float *y, const float *a, const float *b, int n) {
    GRID_STRIDE(i, (size_t)n) y[i] = a[i] - b[i];
}

ct_status ct_cuda_op_attn_relpos(ct_backend *be, ct_buf out, ct_buf q, ct_buf k, ct_buf v, ct_buf p, const float *u,
                                 const float *vb, const int *len, int B, int T, int H, int Dh, ct_arena *ws) {
    ct_cuda_be *cb = ct_cbe(be);
    ct_dtype dt = q.dtype;
    if (out.dtype != dt || k.dtype != dt || v.dtype != dt || p.dtype != dt)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda attn_relpos: mixed element types");
    if (B <= 0 || T <= 0) return CT_OK;
    const int *dlen;
    CT_TRY(ct_cuda_side(be, CT_SIDE_LEN, len, (size_t)B, &dlen));
    const int D = H * Dh;
    const float scale = 1.0f / sqrtf((float)Dh);
    int fused_ok = dt == CT_DTYPE_BF16 && ct_cuda_relattn_fused_supports(Dh);
    if (cb->attn_variant == CT_ATTN_FUSED && !fused_ok)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda attn_relpos: the fused kernel takes bf16 and head sizes "
                       "16/32/64/80/96/128/160 (asked: %s, %d)", ct_dtype_name(dt), Dh);
    if (fused_ok && cb->attn_variant != CT_ATTN_SIMPLE) {
        size_t rows = (size_t)B * T, qkv_b = (rows * 3 * D * 2 + 255) & ~(size_t)255;
        size_t vr_b = (sizeof(float) * (size_t)H * (2 * T - 1) + 255) & ~(size_t)255;
        char *sc;
        CT_TRY(ct_cuda_scratch(be, qkv_b + vr_b + sizeof(float) * (size_t)D, (void **)&sc));
        __nv_bfloat16 *qkv = (__nv_bfloat16 *)sc;
        float *vr = (float *)(sc + qkv_b), *vmu = (float *)(sc + qkv_b + vr_b);
        cudaStream_t st = cb->c->stream;
        k_pack_qkv<<<ct_grid2(rows, D), CT_COLS_PER_BLOCK, 0, st>>>(qkv, (const __nv_bfloat16 *)q.data,
                                                                    (const __nv_bfloat16 *)k.data,
                                                                    (const __nv_bfloat16 *)v.data, u, D);
        LAUNCH_CHECK();
        /* (q+u)·p + ((vb−u))·p = (q+vb)·p: the position bias goes in as vr */
        k_sub<<<ct_blocks((size_t)D, 256), 256, 0, st>>>(vmu, vb, u, D);
        LAUNCH_CHECK();
        ct_status s = ct_cuda_relattn_uv(cb->c, NULL, vr, (const uint16_t *)qkv, (const uint16_t *)p.data, u, vmu, B,
                                         T, H, Dh);
        if (s == CT_OK)
            s = ct_cuda_relattn_fused(cb->c, (uint16_t *)out.data, (const uint16_t *)qkv, (const uint16_t *)p.data,
                                      vr, dlen, B, T, H, Dh, scale);
        return s;
    }
    size_t smem = score_smem(T);
    if (smem > 48 * 1024) return ct_fail(CT_ERR_UNSUPPORTED, "cuda attn_relpos: %d frames exceed the simple kernel's 12280", T);
    dim3 grid((unsigned)T, (unsigned)H, (unsigned)B);
    CT_CUDA_DISPATCH(dt, E, "attn_relpos", {
        k_relpos_simple<E><<<grid, ATT_THREADS, smem, cb->c->stream>>>((E *)out.data, (const E *)q.data,
                                                                       (const E *)k.data, (const E *)v.data,
                                                                       (const E *)p.data, u, vb, dlen, T, H, Dh, scale);
        LAUNCH_CHECK();
    });
    return CT_OK;
}
