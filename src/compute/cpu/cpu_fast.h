/* cpu_fast.h — the fast CPU paths (OpenBLAS sgemm/sgemv + OpenMP) that the
 * "cpu" backend table uses in place of the reference ops; each is tested
 * against its ct_ref_* twin in tests/unit/test_compute.c. */
#ifndef CT_COMPUTE_CPU_FAST_H
#define CT_COMPUTE_CPU_FAST_H

#include "compute/backend.h"

/* Work (elements or multiply-adds) below which an op stays on one thread: a
 * parallel region costs microseconds on a quiet machine but can cost a
 * scheduler time slice when other processes hold the cores. */
#define CT_PAR_MIN ((size_t)1 << 16)

ct_status ct_cpu_matmul(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                        const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws);
/* oneDNN's f32/bf16 products (cpu_matmul_dnnl.c): whether the backend
 * routes a weight dtype there, and the op for M > 4 rows. */
int ct_cpu_dnnl_takes(const ct_backend *be, ct_dtype wdtype);
ct_status ct_cpu_matmul_dnnl(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                             const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws);
ct_status ct_cpu_conv_pointwise(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                                int B, int Ci, int Co, int P, ct_act act, ct_arena *ws);
ct_status ct_cpu_attn_relpos(ct_backend *be, float *out, const float *q, const float *k, const float *v,
                             const float *p, const float *u, const float *vb, const int *len, int B, int T,
                             int H, int Dh, ct_arena *ws);
ct_status ct_cpu_attn_causal(ct_backend *be, float *out, const float *q, const float *kc, const float *vc,
                             const int *slot, int n, int S, int pos0, int Smax, int H, int Dh, ct_arena *ws);
ct_status ct_cpu_attn_cross(ct_backend *be, float *out, const float *q, const float *ek, const float *ev,
                            const int *slot, const int *enc_len, int n, int S, int Tenc, int H, int Dh,
                            ct_arena *ws);
ct_status ct_cpu_layer_norm(ct_backend *be, float *y, const float *x, const float *g, const float *b, int M,
                            int D, float eps);
ct_status ct_cpu_activate(ct_backend *be, float *x, size_t n, ct_act act);
ct_status ct_cpu_glu(ct_backend *be, float *y, const float *x, int M, int D);
ct_status ct_cpu_conv2d_s2(ct_backend *be, float *y, const float *x, const float *w, const float *b, int B,
                           int C, int T, int F, ct_act act);
ct_status ct_cpu_dwconv2d_s2(ct_backend *be, float *y, const float *x, const float *w, const float *b,
                             int B, int C, int T, int F, ct_act act);
ct_status ct_cpu_dwconv1d(ct_backend *be, float *y, const float *x, const float *w, const float *b, int B,
                          int T, int C, int K, ct_act act);
/* version 2 (cpu_wav2vec2.c) */
ct_status ct_cpu_conv1d(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *bias, int B, int T,
                        int Ci, int Co, int K, int stride, ct_arena *ws);
ct_status ct_cpu_conv1d_grouped(ct_backend *be, float *y, const float *x, const float *w, const float *bias, int B,
                                int T, int C, int G, int K);
ct_status ct_cpu_gelu(ct_backend *be, float *x, size_t n);
ct_status ct_cpu_add(ct_backend *be, float *y, const float *a, const float *b, size_t n);
ct_status ct_cpu_attn_full(ct_backend *be, float *out, const float *q, const float *k, const float *v, int B, int T,
                           int H, int Dh, ct_dtype prod, ct_arena *ws);

#endif
