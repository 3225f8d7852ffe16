/* cpu_dnnl.h — the CPU backend's door to oneDNN's matrix products: one
 * engine and stream per backend, primitives cached by (kind, M, N, K).
 * Computes c = a · wᵀ with a (M,K) row-major, w (N,K) row-major (a plain
 * weight matrix as the checkpoint stores it, used in place) and c (M,N)
 * row-major; with an optional fused epilogue (bias, activation, scale,
 * accumulate) for f32 results; int8's per-row scales stay the caller's
 * (oneDNN 2.6 cannot apply them). Threads: oneDNN's OpenMP runtime, i.e. the
 * calling thread's omp_get_max_threads(), the pool the backend sized.
 * In a build without oneDNN (CT_DNNL=OFF) ct_dnnl_create fails with
 * CT_ERR_UNSUPPORTED and the backend keeps its OpenBLAS paths. */
#ifndef CT_COMPUTE_CPU_DNNL_H
#define CT_COMPUTE_CPU_DNNL_H

#include "core/error.h"

typedef enum ct_dnnl_kind {
    CT_DNNL_F32 = 0,  /* f32 · f32 → f32 */
    CT_DNNL_BF16 = 1, /* bf16 · bf16 → f32 */
    CT_DNNL_U8S8 = 2, /* u8 · s8 → s32 (VNNI) */
    CT_DNNL_KINDS
} ct_dnnl_kind;

typedef struct ct_dnnl ct_dnnl;

/* 1 when this build links oneDNN. */
int ct_dnnl_built(void);
ct_status ct_dnnl_create(ct_dnnl **out);
void ct_dnnl_free(ct_dnnl *d);

/* c (M,N) = a (M,K) · w (N,K)ᵀ in the kind's types. Serialised per ct_dnnl
 * (the cached primitives' memory objects are reused). */
ct_status ct_dnnl_matmul(ct_dnnl *d, ct_dnnl_kind kind, void *c, const void *a, const void *w, int M, int N, int K);

/* An epilogue oneDNN applies as it stores each tile (f32 results only),
 * instead of a second pass over c:
 *   c = [c_old +] alpha · act(a · wᵀ + bias)
 * bias (N) f32 or NULL; act 0 none, 1 ReLU, 2 SiLU (ct_act's values);
 * accumulate adds the c already in memory (the residual, when the caller
 * wants y = residual + ... with residual in y). */
typedef struct ct_dnnl_epilogue {
    const float *bias;
    int act;
    float alpha;
    int accumulate;
} ct_dnnl_epilogue;

/* ct_dnnl_matmul with the epilogue fused (ep NULL: none). The primitive is
 * cached per (kind, shape, epilogue form); the bias pointer may change
 * between calls. */
ct_status ct_dnnl_matmul_ep(ct_dnnl *d, ct_dnnl_kind kind, void *c, const void *a, const void *w, int M, int N, int K,
                            const ct_dnnl_epilogue *ep);

/* Weights pre-packed into oneDNN's blocked layout. On AMX, oneDNN 2.6's
 * brgemm re-blocks plain (N,K) weights on every call; a copy reordered once
 * into the layout the primitive asks for (format "any") saves that
 * (docs/PERFORMANCE.md, "Pre-packed weights"). ct_dnnl_matmul_w packs a
 * weight on its first call with at least CT_DNNL_PACK_ROWS rows when the
 * policy wants it for (kind, N, K), keeps the copy for the context's life,
 * and runs every later call of that weight on it. */
enum { CT_DNNL_PACK_ROWS = 64 };

typedef enum ct_dnnl_pack_mode {
    CT_DNNL_PACK_OFF = 0,    /* plain weights always (today's path) */
    CT_DNNL_PACK_AUTO = 1,   /* where it measured faster end to end: nowhere yet (cpu_dnnl.c) */
    CT_DNNL_PACK_ALWAYS = 2, /* every kind and shape oneDNN gives a blocked layout (tests) */
} ct_dnnl_pack_mode;

/* What the caller knows about a weight matrix it hands to ct_dnnl_matmul_w. */
typedef struct ct_dnnl_weight {
    const void *data; /* the plain (N,K) values */
    /* identifies the matrix for the packed cache: the owning tensor's data
     * pointer; NULL never packs (a matrix that is not a fixed weight) */
    const void *key;
    /* data is a view of a read-only file mapping: once packed, its whole
     * pages are handed back to the page cache (madvise DONTNEED; re-read if
     * touched), so the copy does not add to the resident set */
    int file_backed;
} ct_dnnl_weight;

void ct_dnnl_set_pack(ct_dnnl *d, ct_dnnl_pack_mode mode);

/* ct_dnnl_matmul_ep on a weight that may be packed (see above). Packed
 * copies of owned (not file-backed) weights are made while their total stays
 * under a budget (CT_DNNL_PACK_OWNED_BYTES); past it they stay plain. */
ct_status ct_dnnl_matmul_w(ct_dnnl *d, ct_dnnl_kind kind, void *c, const void *a, const ct_dnnl_weight *w, int M, int N,
                           int K, const ct_dnnl_epilogue *ep);
#define CT_DNNL_PACK_OWNED_BYTES ((size_t)1536 << 20)

/* Drop the packed copies made for key (the backend calls this when it frees
 * memory, so a new weight at the same address is never mistaken for the old). */
void ct_dnnl_forget(ct_dnnl *d, const void *key);

/* Packed copies held and their bytes (benchmarks, tests). */
void ct_dnnl_pack_stats(ct_dnnl *d, int *count, size_t *bytes);

/* Whether oneDNN has a real (not reference-loop) kernel for the kind on
 * this CPU: CT_OK, or CT_ERR_UNSUPPORTED (no implementation, or only
 * oneDNN's slow reference one). The backend asks once per kind. */
ct_status ct_dnnl_probe(ct_dnnl *d, ct_dnnl_kind kind);

/* The implementation oneDNN picked for the shape (e.g. "brg:avx512_core_vnni"),
 * for benchmarks and doctor; "" when unavailable. */
const char *ct_dnnl_impl(ct_dnnl *d, ct_dnnl_kind kind, int M, int N, int K);

#endif
