/* cuda_blas_dl.cu — cuBLAS and cuBLASLt loaded on first use with dlopen
 * instead of linked: the two libraries map about 880 MB of address space at
 * start-up, which made every CPU-only run of a CUDA build fail (or spin in
 * OpenBLAS) under `ulimit -v`. The functions the backend calls are defined
 * here with the headers' own prototypes and forward to the library's symbol;
 * until a GPU is used nothing is mapped. Not found: CUBLAS_STATUS_NOT_INITIALIZED,
 * and ct_cuda_blas_load() says why (ct_cuda_create reports it). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "compute/cuda/cuda_internal.h"

#ifndef CT_CUDA_LIBDIR
#define CT_CUDA_LIBDIR ""
#endif

static void *g_lt, *g_blas;
static char g_error[768];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* lib<base>.so.<major>: the library search path first (LD_LIBRARY_PATH,
 * ld.so.cache, as a linked library would be found), then the toolkit's
 * library folder the build saw. */
static void *open_one(const char *base, int major) {
    char name[512];
    snprintf(name, sizeof name, "lib%s.so.%d", base, major);
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
    char first[256];
    snprintf(first, sizeof first, "%s", dlerror());
    if (CT_CUDA_LIBDIR[0]) {
        snprintf(name, sizeof name, "%s/lib%s.so.%d", CT_CUDA_LIBDIR, base, major);
        if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL))) return h;
    }
    if (!g_error[0]) snprintf(g_error, sizeof g_error, "cannot load lib%s.so.%d: %s", base, major, first);
    return NULL;
}

static void load_once(void) {
    g_lt = open_one("cublasLt", CUBLAS_VER_MAJOR);
    g_blas = open_one("cublas", CUBLAS_VER_MAJOR);
}

extern "C" const char *ct_cuda_blas_load(void) {
    pthread_once(&g_once, load_once);
    return g_lt && g_blas ? NULL : g_error;
}

static void *sym(void *lib, const char *name) {
    if (ct_cuda_blas_load()) return NULL;
    return dlsym(lib, name);
}

#define CT_STR_(x) #x
#define CT_STR(x) CT_STR_(x) /* expands cublas_v2.h's renames: cublasCreate -> "cublasCreate_v2" */

/* One forwarder: the symbol is looked up once (racing threads find the same
 * pointer, so the plain static is benign); absent: NOT_INITIALIZED. */
#define CT_FWD(lib, fn, params, args)                                                      \
    cublasStatus_t CUBLASWINAPI fn params {                                               \
        typedef cublasStatus_t (*fn_t) params;                                            \
        static fn_t f;                                                                     \
        if (!f) f = (fn_t)sym(lib == 0 ? g_lt : g_blas, CT_STR(fn));                       \
        if (!f) return CUBLAS_STATUS_NOT_INITIALIZED;                                      \
        return f args;                                                                     \
    }

CT_FWD(0, cublasLtCreate, (cublasLtHandle_t * h), (h))
CT_FWD(0, cublasLtDestroy, (cublasLtHandle_t h), (h))
CT_FWD(0, cublasLtMatmul,
       (cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha, const void *A, cublasLtMatrixLayout_t Ad,
        const void *B, cublasLtMatrixLayout_t Bd, const void *beta, const void *C, cublasLtMatrixLayout_t Cd, void *D,
        cublasLtMatrixLayout_t Dd, const cublasLtMatmulAlgo_t *algo, void *ws, size_t wsb, cudaStream_t st),
       (h, d, alpha, A, Ad, B, Bd, beta, C, Cd, D, Dd, algo, ws, wsb, st))
CT_FWD(0, cublasLtMatmulAlgoGetHeuristic,
       (cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t Ad, cublasLtMatrixLayout_t Bd,
        cublasLtMatrixLayout_t Cd, cublasLtMatrixLayout_t Dd, cublasLtMatmulPreference_t p, int req,
        cublasLtMatmulHeuristicResult_t res[], int *got),
       (h, d, Ad, Bd, Cd, Dd, p, req, res, got))
CT_FWD(0, cublasLtMatmulDescCreate, (cublasLtMatmulDesc_t * d, cublasComputeType_t c, cudaDataType_t s), (d, c, s))
CT_FWD(0, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t d), (d))
CT_FWD(0, cublasLtMatmulDescSetAttribute,
       (cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *buf, size_t n), (d, a, buf, n))
CT_FWD(0, cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * p), (p))
CT_FWD(0, cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t p), (p))
CT_FWD(0, cublasLtMatmulPreferenceSetAttribute,
       (cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, const void *buf, size_t n),
       (p, a, buf, n))
CT_FWD(0, cublasLtMatrixLayoutCreate, (cublasLtMatrixLayout_t * l, cudaDataType t, uint64_t r, uint64_t c, int64_t ld),
       (l, t, r, c, ld))
CT_FWD(0, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t l), (l))
CT_FWD(0, cublasLtMatrixLayoutSetAttribute,
       (cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a, const void *buf, size_t n), (l, a, buf, n))
CT_FWD(1, cublasCreate, (cublasHandle_t * h), (h))
CT_FWD(1, cublasDestroy, (cublasHandle_t h), (h))
CT_FWD(1, cublasSetStream, (cublasHandle_t h, cudaStream_t s), (h, s))
CT_FWD(1, cublasSetWorkspace, (cublasHandle_t h, void *ws, size_t n), (h, ws, n))
CT_FWD(1, cublasGemmEx,
       (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *alpha,
        const void *A, cudaDataType At, int lda, const void *B, cudaDataType Bt, int ldb, const void *beta, void *C,
        cudaDataType Ct, int ldc, cublasComputeType_t ct, cublasGemmAlgo_t algo),
       (h, ta, tb, m, n, k, alpha, A, At, lda, B, Bt, ldb, beta, C, Ct, ldc, ct, algo))
CT_FWD(1, cublasGemmStridedBatchedEx,
       (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *alpha,
        const void *A, cudaDataType At, int lda, long long int sA, const void *B, cudaDataType Bt, int ldb,
        long long int sB, const void *beta, void *C, cudaDataType Ct, int ldc, long long int sC, int batch,
        cublasComputeType_t ct, cublasGemmAlgo_t algo),
       (h, ta, tb, m, n, k, alpha, A, At, lda, sA, B, Bt, ldb, sB, beta, C, Ct, ldc, sC, batch, ct, algo))
