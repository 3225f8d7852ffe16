/* cuda_internal.h — shared by the backend's .cu files only: the context
 * struct, CT_CUDA_TRY (maps CUDA/cuBLAS failures to CT_ERR_OOM/CT_ERR_DEVICE
 * with file:line) and small device helpers (bf16 loads, warp reductions).
 */
#ifndef CT_CUDA_INTERNAL_H
#define CT_CUDA_INTERNAL_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

extern "C" {
#include "core/error.h"
}
#include "compute/cuda/ct_cuda.h"

struct ct_cuda {
    int device;
    cudaStream_t stream;
    cublasLtHandle_t lt;
    cublasHandle_t blas;
    void *workspace;
    size_t workspace_size;
    size_t fail_alloc_above; /* 0: no injection */
    int gemm_tune; /* ct_backend_options.gemm_tune: time cuBLASLt's candidates for large new shapes */
    struct ct_cuda_plan *plans; /* cached cuBLASLt descriptors + algorithms */
    struct ct_cuda_bplan *bplans; /* the same for strided batched GEMMs */
};

ct_status ct_cuda_status_(cudaError_t e, const char *what, const char *file, int line);
ct_status ct_cublas_status_(cublasStatus_t e, const char *what, const char *file, int line);

/* Return the mapped status from the enclosing function when a CUDA runtime
 * call fails. */
#define CT_CUDA_TRY(expr)                                                        \
    do {                                                                         \
        cudaError_t ct_cu_e_ = (expr);                                           \
        if (ct_cu_e_ != cudaSuccess) return ct_cuda_status_(ct_cu_e_, #expr, __FILE__, __LINE__); \
    } while (0)
/* NULL once cuBLAS and cuBLASLt are loaded (cuda_blas_dl.cu, on first call),
 * else why not (static text). */
extern "C" const char *ct_cuda_blas_load(void);
#define CT_CUBLAS_TRY(expr)                                                      \
    do {                                                                         \
        cublasStatus_t ct_cb_e_ = (expr);                                        \
        if (ct_cb_e_ != CUBLAS_STATUS_SUCCESS) return ct_cublas_status_(ct_cb_e_, #expr, __FILE__, __LINE__); \
    } while (0)
/* After a kernel launch: configuration errors surface here, faults at sync. */
#define CT_CUDA_LAUNCHED(name) CT_CUDA_TRY(cudaGetLastError())

__device__ __forceinline__ float ct_bf(uint16_t h) { return __uint_as_float((unsigned)h << 16); }
__device__ __forceinline__ uint16_t ct_to_bf(float f) {
    __nv_bfloat16 b = __float2bfloat16_rn(f);
    return *reinterpret_cast<uint16_t *>(&b);
}
__device__ __forceinline__ float ct_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float ct_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
/* Block-wide sum for blockDim.x a multiple of 32 (≤ 1024); sh has 32 floats. */
__device__ __forceinline__ float ct_block_sum(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    v = ct_warp_sum(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    int nw = blockDim.x >> 5;
    v = lane < nw ? sh[lane] : 0.f;
    return ct_warp_sum(v);
}
__device__ __forceinline__ float ct_block_max(float v, float *sh) {
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    v = ct_warp_max(v);
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    int nw = blockDim.x >> 5;
    v = lane < nw ? sh[lane] : -INFINITY;
    return ct_warp_max(v);
}

#endif
