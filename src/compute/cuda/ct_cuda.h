/* ct_cuda.h — the CUDA backend's C interface: device context, device memory,
 * pinned host buffers, cuBLASLt GEMMs and the kernels the cuda op table
 * (cuda_backend.cu, cuda_ops*.cu) shares.
 *
 * Everything here works on device pointers and runs asynchronously on the
 * context's stream; ct_cuda_sync() waits and reports any failure. Shapes are
 * row-major. bf16 values travel as uint16_t. Only compiled when CT_HAVE_CUDA
 * is defined (the CPU build never sees CUDA headers); callers check
 * ct_cuda_available() first, which says whether a usable device exists.
 */
#ifndef CT_COMPUTE_CUDA_H
#define CT_COMPUTE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "cohere_transcribe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_cuda ct_cuda;

/* 1 when the driver finds at least one device we can run on (sm_90 code or
 * PTX it can JIT); 0 otherwise, with the reason in *why (static text). */
int ct_cuda_available(const char **why);

/* A context: device 0, one non-blocking stream, a cuBLASLt handle with a
 * workspace. The allocation fault-injection limit is read here from
 * CT_CUDA_FAIL_ALLOC_ABOVE (bytes; single allocations above it fail with
 * CT_ERR_OOM as if the device were full). */
ct_status ct_cuda_create(ct_cuda **out);
/* The same on a given device ordinal (ct_cuda_create: device 0). */
ct_status ct_cuda_create_device(int device, ct_cuda **out);
void ct_cuda_free(ct_cuda *c);
ct_status ct_cuda_sync(ct_cuda *c);
void *ct_cuda_stream(ct_cuda *c); /* cudaStream_t */
/* Device name and memory (bytes) for logs and the batch controller. */
ct_status ct_cuda_info(ct_cuda *c, char *name, size_t name_cap, size_t *total, size_t *free_bytes);
/* Override the injected allocation limit (0 = none). */
void ct_cuda_set_fail_alloc_above(ct_cuda *c, size_t bytes);
/* 1: a new GEMM shape of ≥ 4e9 multiply-adds (beta 0) times cuBLASLt's
 * heuristic candidates on its first call and keeps the fastest; 0 (default):
 * the heuristic's first choice. */
void ct_cuda_set_gemm_tune(ct_cuda *c, int on);

/* Device memory: *p is NULL when n == 0. */
ct_status ct_cuda_malloc(ct_cuda *c, void **p, size_t n);
void ct_cuda_dfree(ct_cuda *c, void *p);
ct_status ct_cuda_host_alloc(void **p, size_t n); /* pinned */
void ct_cuda_host_free(void *p);
ct_status ct_cuda_h2d(ct_cuda *c, void *dst, const void *src, size_t n);
ct_status ct_cuda_d2h(ct_cuda *c, void *dst, const void *src, size_t n);
ct_status ct_cuda_memset(ct_cuda *c, void *p, int v, size_t n);

/* ---- GEMM --------------------------------------------------------------
 * D(M,N) = act(alpha · A(M,K) · W(N,K)ᵀ + bias(N)) + beta · C(M,N)
 * A, W bf16 (W in the PyTorch Linear layout), fp32 accumulation. D (and C,
 * which may alias D) is fp32 or bf16 as d_f32 says; bias has D's type (or is
 * NULL). Row strides lda/ldd are in elements. */
typedef enum ct_cuda_act { CT_CUDA_ACT_NONE = 0, CT_CUDA_ACT_RELU = 1, CT_CUDA_ACT_GELU = 2 } ct_cuda_act;
typedef struct ct_cuda_gemm_args {
    int M, N, K;
    const uint16_t *A; int lda;
    const uint16_t *W; int ldw;
    const void *bias;
    void *D; int ldd; int d_f32;
    float alpha, beta; /* beta != 0 reads D as C (in-place residual add) */
    ct_cuda_act act;
    int f16; /* A, W (and a 16-bit D, bias) are fp16 instead of bf16 */
    int bias_f32; /* the bias is fp32 whatever D's type (cuBLASLt's BIAS_DATA_TYPE) */
} ct_cuda_gemm_args;
ct_status ct_cuda_gemm(ct_cuda *c, const ct_cuda_gemm_args *g);

/* Strided batched: for b < batch, D_b(M,N) = alpha · A_b(M,K) · op(B_b) with
 * op(B) = Bᵀ when b_trans (B_b stored (N,K)) else B (stored (K,N)). D fp32 or
 * bf16. Strides in elements; ld* are row strides. */
typedef struct ct_cuda_bgemm_args {
    int M, N, K, batch;
    const uint16_t *A; int lda; long long sa;
    const uint16_t *B; int ldb; long long sb; int b_trans;
    void *D; int ldd; long long sd; int d_f32;
    float alpha;
    int f16; /* A, B (and a 16-bit D) are fp16 instead of bf16 */
} ct_cuda_bgemm_args;
ct_status ct_cuda_bgemm(ct_cuda *c, const ct_cuda_bgemm_args *g);
/* The same with D = alpha·A_b·op(B_b) + beta·D_b (beta != 0 reads D: the
 * aligner's conv taps accumulate into their output). */
ct_status ct_cuda_bgemm_beta(ct_cuda *c, const ct_cuda_bgemm_args *g, float beta);

/* fp32 GEMM (mel DFT and filterbank): D(M,N) = A(M,K) · B(K,N), all fp32,
 * true fp32 arithmetic (no TF32). */
ct_status ct_cuda_sgemm(ct_cuda *c, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                        float *D, int ldd);

/* ---- kernels -------------------------------------------------------------
 * Encoder attention pieces (cuda_attention.cu: the simple path; the fused
 * kernel). */
/* The u/v bias terms without materialising q+u, q+v: since (q+u)·k = q·k + u·k,
 * uk (H,B,T) fp32 = u[h]·k[b,t,h] with k read from qkv (B,T,3·H·Dh) bf16,
 * and vr (H,2T−1) fp32 = v[h]·p[r,h] with p (2T−1, H·Dh) bf16. */
/* uk may be NULL (u folded into the q bias, v − u passed for v). */
ct_status ct_cuda_relattn_uv(ct_cuda *c, float *uk, float *vr, const uint16_t *qkv, const uint16_t *p,
                             const float *u, const float *vb, int B, int T, int H, int Dh);
/* P (H,B,T,T) bf16 = softmax over j of scale·(ac[h,b,i,j] + uk[h,b,j] +
 * bd[h,b,i,r] + vr[h,r]), r = T−1−i+j, with ac (H,B,T,T) and bd (H,B·T,ldbd)
 * fp32 made by GEMMs on plain q (uk NULL counts as 0: u folded into q); keys
 * j ≥ len[b] masked, rows i ≥ len[b] all zero. */
ct_status ct_cuda_relattn_softmax_uv(ct_cuda *c, uint16_t *P, const float *ac, const float *bd, size_t ldbd,
                                     const float *uk, const float *vr, const int *len, int B, int T, int H,
                                     float scale); /* bd fp32 rows of ldbd ≥ 2T−1 */
/* The whole encoder attention in one kernel (cuda_relattn_fused.cu), as the
 * cuda ops lay it out: qkv (B,T,3·H·Dh) bf16 with u already folded into q,
 * rp (2T−1, H·Dh) bf16 the projected position rows, vr (H,2T−1) fp32 the
 * (v−u)·rp terms (ct_cuda_relattn_uv with uk NULL). o (B,T,H·Dh) bf16 =
 * softmax_j(scale·(q_i·k_j + q_i·rp[T−1−i+j] + vr[h,T−1−i+j]))·V over keys
 * j < len[b]; rows i ≥ len[b] zero. No score leaves the chip. Head sizes for
 * which ct_cuda_relattn_fused_supports() is 0 get CT_ERR_UNSUPPORTED. */
int ct_cuda_relattn_fused_supports(int Dh);
ct_status ct_cuda_relattn_fused(ct_cuda *c, uint16_t *o, const uint16_t *qkv, const uint16_t *rp, const float *vr,
                                const int *len, int B, int T, int H, int Dh, float scale);
/* Relative position table (2T−1, d) bf16: row r is position p = T−1−r,
 * [sin(p f0), cos(p f0), sin(p f1), ...], f_i = 10000^(−2i/d), fp32 math. */
ct_status ct_cuda_relpos_table(ct_cuda *c, uint16_t *pe, int T, int d);

/* Mel frontend. frames (rows = B·T, 400) fp32 from pcm (B, ns) fp32 with
 * per-row lengths n[b]: pre-emphasis 0.97, zero past n[b], centre padding
 * 256, hop 160, symmetric Hann 400 centred in the 512-point frame. */
ct_status ct_cuda_mel_frames(ct_cuda *c, float *frames, const float *pcm, const int *n, int B, int ns, int T,
                             const float *window);
/* p (rows, 257) = re² + im² from spec (rows, 514) [re | im]. */
ct_status ct_cuda_mel_power(ct_cuda *c, float *p, const float *spec, size_t rows);
/* feats (B,T,M) fp32: log(mel + 2^-24), normalised per (b, bin) over the
 * valid frames L[b] (variance divisor L−1), frames ≥ L[b] zero; in place. */
ct_status ct_cuda_mel_normalize(ct_cuda *c, float *feats, const int *L, int B, int T, int M);

#ifdef __cplusplus
}
#endif
#endif
