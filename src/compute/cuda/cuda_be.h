/* cuda_be.h — shared by the "cuda" backend table's .cu files only
 * (cuda_backend.cu: memory and the table; cuda_ops*.cu: the ops): the
 * backend's state, element-type dispatch and the small host-array uploads
 * the ops need (lengths, slots, ids are host memory in backend.h).
 */
#ifndef CT_CUDA_BE_H
#define CT_CUDA_BE_H

#include <cuda_fp16.h>

#include "compute/cuda/cuda_internal.h"
extern "C" {
#include "compute/ops.h"
}

/* Side arrays: host int arrays an op needs on the device go into a fixed
 * region of a device buffer, one region per purpose. Reuse is safe without
 * waiting: the copy is queued on the backend's stream behind every kernel
 * that read the region before, and cudaMemcpyAsync has taken the host data
 * when it returns (pageable source). A host copy of each region's contents
 * skips the upload when an op passes what is already there: the decoder's
 * eight layers pass the same slots and lengths, so a step uploads each once. */
enum {
    CT_SIDE_LEN = 0,   /* per-row lengths (mask_time, attn_relpos) */
    CT_SIDE_IDS = 1,   /* token ids (embed) */
    CT_SIDE_POS = 2,   /* positions (embed) */
    CT_SIDE_SLOT = 3,  /* decoder slots (kv_write, attention) */
    CT_SIDE_KLEN = 4,  /* per-slot key counts (attn_cross) */
    CT_SIDE_OUT = 5,   /* argmax results */
    CT_SIDE_SAMPLES = 6, /* per-clip sample counts (mel) */
    CT_SIDE_REGIONS = 7,
    CT_SIDE_INTS = 1 << 16
};

typedef struct ct_cuda_be {
    ct_cuda *c;
    ct_dtype act;        /* BF16 or F16 */
    int attn_variant;    /* ct_attn_variant */
    int *side;           /* device, CT_SIDE_REGIONS × CT_SIDE_INTS */
    int *side_host;      /* what each region holds (host copy) */
    size_t side_n[CT_SIDE_REGIONS]; /* ints valid in each region's copy */
    int32_t *host_ids;   /* pinned, CT_SIDE_INTS: argmax results */
    int capturing;       /* between graph_begin and graph_end */
    void *stage[2];      /* pinned, CT_STAGE_BYTES each: large uploads (cuda_backend.cu) */
    struct ct_cuda_uploader *upload; /* to_device_async's threads (cuda_upload.cu), made on first use */
    cudaEvent_t stage_done[2];
    void *scratch;       /* device, grown on demand: see ct_cuda_scratch */
    size_t scratch_cap;
    struct ct_cuda_bias *biases; /* converted GEMM biases (cuda_ops_gemm.cu) */
    int *attn_count;     /* device, CT_ATTN_SPLIT_PAIRS zeros between launches: the split cross-attention's
                          * per-(row, head) counts of finished parts (cuda_ops_attn.cu) */
} ct_cuda_be;

/* The most (query row × head) pairs a cross-attention splits its keys for:
 * splitting is for grids that leave SMs idle, far fewer pairs than this. */
enum { CT_ATTN_SPLIT_PAIRS = 1024 };

/* A float32 bias converted once for a 16-bit GEMM epilogue, kept while its
 * source lives: cuBLASLt refuses a float32 bias with a 16-bit output for
 * some shapes (the decoder step's), which cost one conversion launch per
 * product per step. Keyed by the source pointer, so every free of backend
 * memory drops them all (ct_cuda_biases_clear; the model's weights are
 * freed once, the arenas only grow, so in a run that is at unload). */
struct ct_cuda_bias {
    struct ct_cuda_bias *next;
    const float *src;
    float alpha;
    int dtype, n;
    void *dev;
};
void ct_cuda_biases_clear(ct_backend *be);

enum { CT_STAGE_BYTES = 8 << 20 };

/* Background uploads (cuda_upload.cu; backend.h version 7, to_device_async):
 * queue src → dst (src unchanged until the drain), creating the uploader
 * in *slot on first use; whether any piece is queued or on its way; wait
 * for all of them (the first failure is returned once); drain and free. */
struct ct_cuda_uploader;
extern "C" ct_status ct_cuda_upload_async(struct ct_cuda_uploader **slot, ct_cuda *c, void *dst, const void *src,
                                          size_t bytes);
extern "C" int ct_cuda_upload_pending(const struct ct_cuda_uploader *u);
extern "C" ct_status ct_cuda_upload_drain(struct ct_cuda_uploader *u);
extern "C" void ct_cuda_upload_free(struct ct_cuda_uploader *u);

static inline ct_cuda_be *ct_cbe(ct_backend *be) { return (ct_cuda_be *)be->impl; }
static inline cudaStream_t ct_cstream(ct_backend *be) { return ct_cbe(be)->c->stream; }

/* Device scratch of at least `bytes` that an op uses between its own
 * launches: the fused attention's packed q+u|k|v, which the model's
 * workspace estimate (sized for the CPU's per-thread scratch) does not
 * cover. Grown on the first larger batch (the old buffer is freed, which
 * waits for the kernels that use it), kept until the backend is freed. */
ct_status ct_cuda_scratch(ct_backend *be, size_t bytes, void **p);

/* Copy n host ints into side region r; *dev is where they are. */
ct_status ct_cuda_side(ct_backend *be, int r, const int *host, size_t n, const int **dev);

/* ---- element types in device code ------------------------------------ */
__device__ __forceinline__ float ct_ld(float x) { return x; }
__device__ __forceinline__ float ct_ld(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float ct_ld(__half x) { return __half2float(x); }
template <typename T> __device__ __forceinline__ T ct_st(float x);
template <> __device__ __forceinline__ float ct_st<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 ct_st<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ __half ct_st<__half>(float x) { return __float2half_rn(x); }

__device__ __forceinline__ float ct_apply_act(float v, int act) {
    return act == CT_ACT_RELU ? fmaxf(v, 0.f) : act == CT_ACT_SILU ? v / (1.f + __expf(-v)) : v;
}

/* argmax of xr (N) by a block of any multiple of 32 threads (≤ 1024),
 * ties and NaN as the reference (ct_ref_argmax): the first NaN wins, else
 * the first maximum; the result is valid in every thread (0 for N = 0).
 * Candidates are ordered NaN first, then by value, then by lower index, a
 * total order, so warp shuffles and then one warp over the warps' winners
 * give the same index as a scan (two barriers; the tree over 256 shared
 * slots took eight, and tied the greedy step to 256 threads, which at one
 * row left it scanning 64 logits a thread: 17 us against 4.5 us for the
 * old engine's 1024 threads). */
__device__ __forceinline__ bool ct_argmax_take(float v, int vi, float b, int bj, int N) {
    if (vi == N) return false;
    if (bj == N) return true;
    if (isnan(v) != isnan(b)) return isnan(v);
    if (isnan(v) || v == b) return vi < bj;
    return v > b;
}
__device__ __forceinline__ int ct_block_argmax(const float *xr, int N) {
    __shared__ float sv[32];
    __shared__ int si[32];
    float best = -INFINITY;
    int bi = N; /* none yet */
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
        float v = xr[j];
        int better = bi == N || (isnan(v) && !isnan(best)) || (!isnan(best) && v > best);
        if (better) best = v, bi = j;
    }
    for (int o = 16; o > 0; o >>= 1) {
        float v = __shfl_xor_sync(0xffffffffu, best, o);
        int vi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (ct_argmax_take(v, vi, best, bi, N)) best = v, bi = vi;
    }
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    __syncthreads(); /* a previous call's readers of si[0] are done */
    if (lane == 0) sv[w] = best, si[w] = bi;
    __syncthreads();
    if (w == 0) {
        const int nw = blockDim.x >> 5;
        best = lane < nw ? sv[lane] : -INFINITY;
        bi = lane < nw ? si[lane] : N;
        for (int o = 16; o > 0; o >>= 1) {
            float v = __shfl_xor_sync(0xffffffffu, best, o);
            int vi = __shfl_xor_sync(0xffffffffu, bi, o);
            if (ct_argmax_take(v, vi, best, bi, N)) best = v, bi = vi;
        }
        if (lane == 0) si[0] = bi;
    }
    __syncthreads();
    return si[0] == N ? 0 : si[0];
}

/* Run a statement with T bound to the C++ type of a ct_dtype (F32, BF16,
 * F16); other types fail with CT_ERR_UNSUPPORTED naming the op. */
#define CT_CUDA_DISPATCH(dt, T, opname, ...)                                                  \
    do {                                                                                      \
        switch (dt) {                                                                         \
        case CT_DTYPE_F32: { typedef float T; __VA_ARGS__; } break;                           \
        case CT_DTYPE_BF16: { typedef __nv_bfloat16 T; __VA_ARGS__; } break;                  \
        case CT_DTYPE_F16: { typedef __half T; __VA_ARGS__; } break;                          \
        default:                                                                              \
            return ct_fail(CT_ERR_UNSUPPORTED, "cuda %s: element type %s", opname, ct_dtype_name(dt)); \
        }                                                                                     \
    } while (0)

static inline unsigned ct_blocks(size_t n, int threads) {
    size_t b = (n + threads - 1) / threads;
    return (unsigned)(b > 65535u * 16 ? 65535u * 16 : b); /* grid-stride loops cover the rest */
}

/* ---- the ops (cuda_ops.cu, cuda_ops_gemm.cu, cuda_ops_attn.cu) ---------- */
ct_status ct_cuda_op_matmul(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *b, ct_buf residual,
                            float alpha, ct_act act, int M, int N, int K, ct_arena *ws);
ct_status ct_cuda_op_conv_pointwise(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *b, int B,
                                    int Ci, int Co, int P, ct_act act, ct_arena *ws);
ct_status ct_cuda_op_layer_norm(ct_backend *be, ct_buf y, ct_buf x, const float *g, const float *b, int M, int D,
                                float eps);
ct_status ct_cuda_op_glu(ct_backend *be, ct_buf y, ct_buf x, int M, int D);
ct_status ct_cuda_op_conv2d_s2(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int C,
                               int T, int F, ct_act act);
ct_status ct_cuda_op_dwconv2d_s2(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int C,
                                 int T, int F, ct_act act);
ct_status ct_cuda_op_mask_time(ct_backend *be, ct_buf x, const int *len, int B, int C, int T, int F);
ct_status ct_cuda_op_flatten_ct(ct_backend *be, ct_buf y, ct_buf x, int B, int C, int T, int F);
ct_status ct_cuda_op_dwconv1d(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int T,
                              int C, int K, ct_act act);
ct_status ct_cuda_op_pos_relative(ct_backend *be, ct_buf y, int T, int D);
ct_status ct_cuda_op_embed(ct_backend *be, ct_buf y, const int32_t *ids, const int32_t *positions, int n,
                           const ct_tensor *tok, const ct_tensor *pos, int D);
ct_status ct_cuda_op_argmax(ct_backend *be, int32_t *ids, ct_buf x, int n, int N);
ct_status ct_cuda_op_convert(ct_backend *be, ct_buf y, ct_buf x, size_t n);
ct_status ct_cuda_op_kv_write(ct_backend *be, ct_buf cache, ct_buf src, const int *slot, int n, int S, int pos0,
                              int Smax, int D);
ct_status ct_cuda_op_attn_relpos(ct_backend *be, ct_buf out, ct_buf q, ct_buf k, ct_buf v, ct_buf p, const float *u,
                                 const float *vb, const int *len, int B, int T, int H, int Dh, ct_arena *ws);
ct_status ct_cuda_op_attn_causal(ct_backend *be, ct_buf out, ct_buf q, ct_buf kc, ct_buf vc, const int *slot, int n,
                                 int S, int pos0, int Smax, int H, int Dh, ct_arena *ws);
ct_status ct_cuda_op_attn_cross(ct_backend *be, ct_buf out, ct_buf q, ct_buf ek, ct_buf ev, const int *slot,
                                const int *enc_len, int n, int S, int Tenc, int H, int Dh, ct_arena *ws);
/* version 4 (cuda_ops_attn.cu, cuda_ops_step.cu) */
ct_status ct_cuda_op_kv_write_dev(ct_backend *be, ct_buf cache, ct_buf src, const int *slot, int n, const int32_t *pos,
                                  int Smax, int D);
ct_status ct_cuda_op_attn_causal_dev(ct_backend *be, ct_buf out, ct_buf q, ct_buf kc, ct_buf vc, const int *slot,
                                     int n, const int32_t *pos, int Smax, int H, int Dh, ct_arena *ws);
ct_status ct_cuda_op_embed_dev(ct_backend *be, ct_buf y, const int32_t *ids, const int32_t *pos, int n,
                               const ct_tensor *tok, const ct_tensor *posemb, int D);
ct_status ct_cuda_op_greedy_step(ct_backend *be, const ct_greedy_state *g, ct_buf logits, int n, int V);
ct_status ct_cuda_graph_begin(ct_backend *be);
ct_status ct_cuda_graph_end(ct_backend *be, void **graph);
ct_status ct_cuda_graph_launch(ct_backend *be, void *graph);
void ct_cuda_graph_free(ct_backend *be, void *graph);
ct_status ct_cuda_op_mel(ct_backend *be, float *feats, const float *pcm, const int *n, const int *valid, int B, int ns,
                         int T, int M, const float *window, const float *dft, const float *fbT, ct_arena *ws);

/* Version 5: the fused encoder ops (cuda_ops_fused.cu). */
ct_status ct_cuda_op_layer_norm2(ct_backend *be, ct_buf y, ct_buf z, ct_buf x, const float *g1, const float *b1,
                                 const float *g2, const float *b2, int M, int D, float eps);
ct_status ct_cuda_op_glu_dwconv1d(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, const int *len,
                                  int B, int T, int C, int K, ct_act act, ct_arena *ws);
ct_status ct_cuda_op_attn_relpos_qkv(ct_backend *be, ct_buf out, ct_buf qkv, ct_buf p, const float *c, const int *len,
                                     int B, int T, int H, int Dh, ct_arena *ws);
/* The warp-per-row layer norm of float32 x into y (any type), or of
 * 16-bit x into y of its type (D % 256 == 0), where its
 * shape and alignment allow: returns 1 with *st the launch status, or 0
 * (nothing launched: the caller runs the block-per-row kernel). */
int ct_cuda_ln_warp(ct_backend *be, ct_buf y, ct_buf x, const float *g, const float *b, int M, int D, float eps,
                    ct_status *st);
/* version 5: the wav2vec2 aligner (cuda_ops_w2v2.cu, cuda_ops_w2v2_attn.cu) */
ct_status ct_cuda_op_conv1d(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *bias, int B, int T,
                            int Ci, int Co, int K, int stride, ct_arena *ws);
ct_status ct_cuda_op_conv1d_grouped(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *bias, int B,
                                    int T, int C, int G, int K, ct_arena *ws);
ct_status ct_cuda_op_gelu(ct_backend *be, ct_buf x, size_t n);
ct_status ct_cuda_op_add(ct_backend *be, ct_buf y, ct_buf a, ct_buf b, size_t n);
ct_status ct_cuda_op_attn_full(ct_backend *be, ct_buf out, ct_buf q, ct_buf k, ct_buf v, const int *len, int B,
                               int T, int H, int Dh, ct_dtype prod, ct_arena *ws);

/* version 6: the fused decoder step (cuda_ops_attn.cu) */
ct_status ct_cuda_op_attn_causal_qkv_dev(ct_backend *be, ct_buf out, ct_buf qkv, ct_buf kc, ct_buf vc, const int *slot,
                                         int n, const int32_t *pos, int Smax, int H, int Dh, ct_arena *ws);
/* version 6: the subsampling in channels-last layout (cuda_ops_sub.cu) */
ct_status ct_cuda_op_subsample(ct_backend *be, ct_buf x, ct_buf feats, const ct_subsample_weights *w, const int *len,
                               int B, int T, int M, int C, int d, ct_buf a, ct_buf b, ct_arena *ws);

/* Multiprocessors of the current device (asked once). */
int ct_cuda_sm_count(void);
/* Scale-and-convert a float32 vector into T (bias for cuBLASLt's epilogue). */
ct_status ct_cuda_scale_convert(ct_backend *be, ct_dtype dt, void *dst, const float *src, float alpha, size_t n);
/* In place x[r][c] = act(x[r][c] + bias) over rows × cols (bias may be
 * NULL): bias[c] (per column: the epilogue cuBLASLt lacks, SiLU) or, when
 * per_row, bias[r % bias_n] (the pointwise conv's per-channel bias over
 * (B·Co) rows of P). */
ct_status ct_cuda_bias_act(ct_backend *be, ct_buf x, const float *bias, size_t rows, int cols, int per_row, int bias_n,
                           ct_act act);

/* Elementwise kernels run on a 2-D grid, one block row per matrix row and
 * 256 columns per block: no 64-bit division per element (which cost more
 * than the memory traffic of these passes). */
enum { CT_COLS_PER_BLOCK = 256 };
static inline dim3 ct_grid2(size_t rows, int cols) {
    return dim3((unsigned)rows, (unsigned)((cols + CT_COLS_PER_BLOCK - 1) / CT_COLS_PER_BLOCK));
}

#endif
