/* cuda_runtime.cu — the CUDA context (device, stream, cuBLAS handles,
 * workspace), device/pinned memory with the allocation fault-injection
 * switch, error mapping, and the cuBLASLt/cuBLAS GEMM wrappers. Kernels live
 * in cuda_kernels.cu; the op table over them in cuda_backend.cu and cuda_ops*.cu.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/cuda/cuda_internal.h"

ct_status ct_cuda_status_(cudaError_t e, const char *what, const char *file, int line) {
    ct_status s = (e == cudaErrorMemoryAllocation) ? CT_ERR_OOM : CT_ERR_DEVICE;
    cudaGetLastError(); /* clear a non-sticky error so later calls can run */
    return ct_fail(s, "CUDA: %s: %s (%s:%d)", what, cudaGetErrorString(e), file, line);
}

ct_status ct_cublas_status_(cublasStatus_t e, const char *what, const char *file, int line) {
    ct_status s = (e == CUBLAS_STATUS_ALLOC_FAILED) ? CT_ERR_OOM : CT_ERR_DEVICE;
    return ct_fail(s, "cuBLAS: %s: status %d (%s:%d)", what, (int)e, file, line);
}

extern "C" int ct_cuda_available(const char **why) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        cudaGetLastError();
        if (why) *why = e == cudaSuccess ? "no CUDA device" : "no usable CUDA driver/device";
        return 0;
    }
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess || p.major < 9) {
        if (why) *why = "device 0 is older than compute capability 9.0 (this build has sm_90 code and PTX)";
        return 0;
    }
    if (why) *why = "";
    return 1;
}

extern "C" ct_status ct_cuda_create(ct_cuda **out) { return ct_cuda_create_device(0, out); }

extern "C" ct_status ct_cuda_create_device(int device, ct_cuda **out) {
    *out = NULL;
    const char *why;
    if (!ct_cuda_available(&why)) return ct_fail(CT_ERR_UNSUPPORTED, "CUDA: %s", why);
    int count = 0;
    CT_CUDA_TRY(cudaGetDeviceCount(&count));
    if (device < 0 || device >= count)
        return ct_fail(CT_ERR_INVALID_ARG, "CUDA: device %d does not exist (%d found)", device, count);
    cudaDeviceProp prop;
    CT_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
    if (prop.major < 9)
        return ct_fail(CT_ERR_UNSUPPORTED, "CUDA: device %d is older than compute capability 9.0", device);
    ct_cuda *c = (ct_cuda *)calloc(1, sizeof *c);
    if (!c) return ct_fail(CT_ERR_OOM, "CUDA: context");
    *out = c;
    const char *env = getenv("CT_CUDA_FAIL_ALLOC_ABOVE");
    if (env && *env) c->fail_alloc_above = (size_t)strtoull(env, NULL, 10);
    c->device = device;
    CT_CUDA_TRY(cudaSetDevice(device));
    CT_CUDA_TRY(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    const char *blas_why = ct_cuda_blas_load(); /* cuBLAS is loaded on first use (cuda_blas_dl.cu) */
    if (blas_why) return ct_fail(CT_ERR_DEVICE, "CUDA: cuBLAS: %s", blas_why);
    CT_CUBLAS_TRY(cublasLtCreate(&c->lt));
    CT_CUBLAS_TRY(cublasCreate(&c->blas));
    CT_CUBLAS_TRY(cublasSetStream(c->blas, c->stream));
    c->workspace_size = 64u << 20;
    CT_TRY(ct_cuda_malloc(c, &c->workspace, c->workspace_size));
    CT_CUBLAS_TRY(cublasSetWorkspace(c->blas, c->workspace, c->workspace_size));
    return CT_OK;
}

struct ct_cuda_bplan { /* batched GEMM descriptors, cached per shape */
    struct ct_cuda_bplan *next;
    long long key[16];
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
};

struct ct_cuda_plan {
    struct ct_cuda_plan *next;
    int key[12];
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
    cublasLtMatmulAlgo_t cand[8]; /* heuristic candidates, timed once for large shapes */
    int n_cand, tuned;
};

extern "C" void ct_cuda_free(ct_cuda *c) {
    if (!c) return;
    if (c->stream) cudaStreamSynchronize(c->stream);
    for (ct_cuda_plan *p = c->plans, *n; p; p = n) {
        n = p->next;
        cublasLtMatmulDescDestroy(p->op);
        cublasLtMatrixLayoutDestroy(p->la);
        cublasLtMatrixLayoutDestroy(p->lb);
        cublasLtMatrixLayoutDestroy(p->lc);
        free(p);
    }
    for (struct ct_cuda_bplan *p = c->bplans, *nx; p; p = nx) {
        nx = p->next;
        cublasLtMatmulDescDestroy(p->op);
        cublasLtMatrixLayoutDestroy(p->la);
        cublasLtMatrixLayoutDestroy(p->lb);
        cublasLtMatrixLayoutDestroy(p->lc);
        free(p);
    }
    if (c->workspace) cudaFree(c->workspace);
    if (c->blas) cublasDestroy(c->blas);
    if (c->lt) cublasLtDestroy(c->lt);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
}

extern "C" ct_status ct_cuda_sync(ct_cuda *c) {
    CT_CUDA_TRY(cudaStreamSynchronize(c->stream));
    CT_CUDA_TRY(cudaGetLastError());
    return CT_OK;
}

extern "C" void *ct_cuda_stream(ct_cuda *c) { return (void *)c->stream; }

extern "C" void ct_cuda_set_fail_alloc_above(ct_cuda *c, size_t bytes) { c->fail_alloc_above = bytes; }

extern "C" void ct_cuda_set_gemm_tune(ct_cuda *c, int on) { c->gemm_tune = on != 0; }

extern "C" ct_status ct_cuda_info(ct_cuda *c, char *name, size_t cap, size_t *total, size_t *free_bytes) {
    cudaDeviceProp p;
    CT_CUDA_TRY(cudaGetDeviceProperties(&p, c->device));
    if (name && cap) snprintf(name, cap, "%s (sm_%d%d, %d SMs)", p.name, p.major, p.minor, p.multiProcessorCount);
    size_t f = 0, t = 0;
    CT_CUDA_TRY(cudaMemGetInfo(&f, &t));
    if (total) *total = t;
    if (free_bytes) *free_bytes = f;
    return CT_OK;
}

extern "C" ct_status ct_cuda_malloc(ct_cuda *c, void **p, size_t n) {
    *p = NULL;
    if (n == 0) return CT_OK;
    if (c->fail_alloc_above && n > c->fail_alloc_above)
        return ct_fail(CT_ERR_OOM, "CUDA: device allocation of %zu bytes refused (injected limit %zu, "
                       "CT_CUDA_FAIL_ALLOC_ABOVE)", n, c->fail_alloc_above);
    CT_CUDA_TRY(cudaMalloc(p, n));
    return CT_OK;
}

extern "C" void ct_cuda_dfree(ct_cuda *c, void *p) {
    (void)c;
    if (p) cudaFree(p);
}

extern "C" ct_status ct_cuda_host_alloc(void **p, size_t n) {
    *p = NULL;
    if (n == 0) return CT_OK;
    CT_CUDA_TRY(cudaMallocHost(p, n));
    return CT_OK;
}

extern "C" void ct_cuda_host_free(void *p) {
    if (p) cudaFreeHost(p);
}

extern "C" ct_status ct_cuda_h2d(ct_cuda *c, void *dst, const void *src, size_t n) {
    if (n) CT_CUDA_TRY(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, c->stream));
    return CT_OK;
}

extern "C" ct_status ct_cuda_d2h(ct_cuda *c, void *dst, const void *src, size_t n) {
    if (n) CT_CUDA_TRY(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, c->stream));
    return ct_cuda_sync(c);
}

extern "C" ct_status ct_cuda_memset(ct_cuda *c, void *p, int v, size_t n) {
    if (n) CT_CUDA_TRY(cudaMemsetAsync(p, v, n, c->stream));
    return CT_OK;
}

/* ---- GEMMs ---------------------------------------------------------------
 * Row-major D(M,N) = A(M,K)·W(N,K)ᵀ is column-major Dᵀ(N,M) = W·Aᵀ, so cuBLAS
 * sees m = N, n = M with W transposed; the bias runs along cuBLAS's m. */
static ct_status plan_get(ct_cuda *c, const ct_cuda_gemm_args *g, ct_cuda_plan **out) {
    int key[12] = {g->M, g->N, g->K, g->lda, g->ldw, g->ldd, g->d_f32, g->bias != NULL, (int)g->act,
                   g->beta != 0.f, g->f16, g->bias_f32};
    for (ct_cuda_plan *p = c->plans; p; p = p->next)
        if (!memcmp(p->key, key, sizeof key)) {
            /* a shape whose heuristic found nothing stays refused (its algo is unset) */
            if (p->n_cand <= 0)
                return ct_fail(CT_ERR_DEVICE, "cuBLASLt: no algorithm for GEMM M=%d N=%d K=%d", g->M, g->N, g->K);
            *out = p;
            return CT_OK;
        }
    ct_cuda_plan *p = (ct_cuda_plan *)calloc(1, sizeof *p);
    if (!p) return ct_fail(CT_ERR_OOM, "GEMM plan");
    memcpy(p->key, key, sizeof key);
    p->next = c->plans;
    c->plans = p;
    cudaDataType_t it = g->f16 ? CUDA_R_16F : CUDA_R_16BF;
    cudaDataType_t dt = g->d_f32 ? CUDA_R_32F : it;
    CT_CUBLAS_TRY(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    cublasLtEpilogue_t ep = CUBLASLT_EPILOGUE_DEFAULT;
    if (g->bias) {
        ep = g->act == CT_CUDA_ACT_RELU ? CUBLASLT_EPILOGUE_RELU_BIAS
           : g->act == CT_CUDA_ACT_GELU ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
        cudaDataType_t bt = g->bias_f32 ? CUDA_R_32F : dt;
        CT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
    } else if (g->act == CT_CUDA_ACT_RELU) {
        ep = CUBLASLT_EPILOGUE_RELU;
    } else if (g->act == CT_CUDA_ACT_GELU) {
        ep = CUBLASLT_EPILOGUE_GELU;
    }
    CT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep, sizeof ep));
    CT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->la, it, g->K, g->N, g->ldw));
    CT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->lb, it, g->K, g->M, g->lda));
    CT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->lc, dt, g->N, g->M, g->ldd));
    cublasLtMatmulPreference_t pref;
    CT_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &c->workspace_size,
                                         sizeof c->workspace_size);
    cublasLtMatmulHeuristicResult_t res[8];
    int n = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(c->lt, p->op, p->la, p->lb, p->lc, p->lc, pref, 8, res, &n);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || n == 0)
        return ct_fail(CT_ERR_DEVICE, "cuBLASLt: no algorithm for GEMM M=%d N=%d K=%d (status %d)", g->M, g->N,
                       g->K, (int)st);
    p->algo = res[0].algo;
    p->n_cand = n;
    for (int i = 0; i < n; i++) p->cand[i] = res[i].algo;
    /* only outputs that do not read themselves can be re-run for timing */
    /* opt-in (ct_backend_options.gemm_tune): every new batch shape would pay
     * the timing, and the heuristic's first choice already runs the encoder
     * GEMMs near peak */
    p->tuned = !(g->beta == 0.f && (double)g->M * g->N * g->K >= 4e9 && n > 1 && c->gemm_tune);
    *out = p;
    return CT_OK;
}

extern "C" ct_status ct_cuda_gemm(ct_cuda *c, const ct_cuda_gemm_args *g) {
    if (g->M <= 0 || g->N <= 0 || g->K <= 0) return ct_fail(CT_ERR_INVALID_ARG, "GEMM: empty shape");
    ct_cuda_plan *p = NULL;
    CT_TRY(plan_get(c, g, &p));
    if (g->bias)
        CT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->bias,
                                                     sizeof g->bias));
    float alpha = g->alpha, beta = g->beta;
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (!p->tuned && cudaStreamIsCapturing(c->stream, &cap) == cudaSuccess && cap == cudaStreamCaptureStatusNone) {
        /* time each candidate twice on the real operands (beta = 0: re-running is harmless), keep the fastest */
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        float best = 1e30f;
        for (int i = 0; i < p->n_cand; i++) {
            float ms = 0, t;
            int ok = 1;
            for (int r = 0; r < 3 && ok; r++) {
                cudaEventRecord(e0, c->stream);
                ok = cublasLtMatmul(c->lt, p->op, &alpha, g->W, p->la, g->A, p->lb, &beta, g->D, p->lc, g->D, p->lc,
                                    &p->cand[i], c->workspace, c->workspace_size, c->stream) == CUBLAS_STATUS_SUCCESS;
                cudaEventRecord(e1, c->stream);
                cudaEventSynchronize(e1);
                cudaEventElapsedTime(&t, e0, e1);
                if (r > 0) ms += t;
            }
            if (ok && ms < best) best = ms, p->algo = p->cand[i];
        }
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        cudaGetLastError();
        p->tuned = 1;
    }
    CT_CUBLAS_TRY(cublasLtMatmul(c->lt, p->op, &alpha, g->W, p->la, g->A, p->lb, &beta, g->D, p->lc, g->D, p->lc,
                                 &p->algo, c->workspace, c->workspace_size, c->stream));
    return CT_OK;
}

/* Strided batched GEMMs through cuBLASLt (its heuristic picks far better
 * kernels than cublasGemmStridedBatchedEx for the attention shapes: huge M,
 * K = Dh, a few large batches). Same row-major → column-major mapping as
 * ct_cuda_gemm; descriptors cached per shape. */

static ct_status bplan_get(ct_cuda *c, const ct_cuda_bgemm_args *g, int accumulate, struct ct_cuda_bplan **out) {
    long long key[16] = {g->M, g->N, g->K, g->batch, g->lda, g->sa, g->ldb, g->sb, g->b_trans, g->ldd, g->sd,
                         g->d_f32, g->f16, accumulate, 0, 0};
    for (struct ct_cuda_bplan *p = c->bplans; p; p = p->next)
        if (!memcmp(p->key, key, sizeof key)) {
            *out = p;
            return CT_OK;
        }
    struct ct_cuda_bplan *p = (struct ct_cuda_bplan *)calloc(1, sizeof *p);
    if (!p) return ct_fail(CT_ERR_OOM, "GEMM plan");
    memcpy(p->key, key, sizeof key);
    p->next = c->bplans;
    c->bplans = p;
    cudaDataType_t it = g->f16 ? CUDA_R_16F : CUDA_R_16BF;
    cudaDataType_t dt = g->d_f32 ? CUDA_R_32F : it;
    CT_CUBLAS_TRY(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = g->b_trans ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    CT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CT_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    /* cuBLAS A = our B: (K × N) when transposed-stored (N,K), else (N × K) */
    if (g->b_trans) CT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->la, it, g->K, g->N, g->ldb));
    else CT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->la, it, g->N, g->K, g->ldb));
    CT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->lb, it, g->K, g->M, g->lda));
    CT_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&p->lc, dt, g->N, g->M, g->ldd));
    int32_t bc = g->batch;
    int64_t sa = g->sb, sb = g->sa, sc = g->sd;
    CT_CUBLAS_TRY(cublasLtMatrixLayoutSetAttribute(p->la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
    CT_CUBLAS_TRY(cublasLtMatrixLayoutSetAttribute(p->lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
    CT_CUBLAS_TRY(cublasLtMatrixLayoutSetAttribute(p->lc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
    CT_CUBLAS_TRY(cublasLtMatrixLayoutSetAttribute(p->la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa, sizeof sa));
    CT_CUBLAS_TRY(cublasLtMatrixLayoutSetAttribute(p->lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sb, sizeof sb));
    CT_CUBLAS_TRY(cublasLtMatrixLayoutSetAttribute(p->lc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sc, sizeof sc));
    cublasLtMatmulPreference_t pref;
    CT_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &c->workspace_size,
                                         sizeof c->workspace_size);
    cublasLtMatmulHeuristicResult_t res;
    int n = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(c->lt, p->op, p->la, p->lb, p->lc, p->lc, pref, 1, &res, &n);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || n == 0)
        return ct_fail(CT_ERR_DEVICE, "cuBLASLt: no algorithm for batched GEMM M=%d N=%d K=%d ×%d (status %d)", g->M,
                       g->N, g->K, g->batch, (int)st);
    p->algo = res.algo;
    *out = p;
    return CT_OK;
}

extern "C" ct_status ct_cuda_bgemm(ct_cuda *c, const ct_cuda_bgemm_args *g) { return ct_cuda_bgemm_beta(c, g, 0.f); }

extern "C" ct_status ct_cuda_bgemm_beta(ct_cuda *c, const ct_cuda_bgemm_args *g, float beta_in) {
    if (g->M <= 0 || g->N <= 0 || g->K <= 0 || g->batch <= 0) return ct_fail(CT_ERR_INVALID_ARG, "GEMM: empty shape");
    struct ct_cuda_bplan *p = NULL;
    CT_TRY(bplan_get(c, g, beta_in != 0.f, &p));
    float alpha = g->alpha, beta = beta_in;
    CT_CUBLAS_TRY(cublasLtMatmul(c->lt, p->op, &alpha, g->B, p->la, g->A, p->lb, &beta, g->D, p->lc, g->D, p->lc,
                                 &p->algo, c->workspace, c->workspace_size, c->stream));
    return CT_OK;
}

extern "C" ct_status ct_cuda_sgemm(ct_cuda *c, int M, int N, int K, const float *A, int lda, const float *B,
                                   int ldb, float *D, int ldd) {
    float alpha = 1.f, beta = 0.f;
    CT_CUBLAS_TRY(cublasGemmEx(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_32F, ldb, A,
                               CUDA_R_32F, lda, &beta, D, CUDA_R_32F, ldd, CUBLAS_COMPUTE_32F_PEDANTIC,
                               CUBLAS_GEMM_DEFAULT));
    return CT_OK;
}
