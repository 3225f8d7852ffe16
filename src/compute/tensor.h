/* tensor.h — a typed, shaped block of backend memory.
 *
 * A ct_tensor names memory that lives on one backend (host memory for the CPU
 * backend, device memory for CUDA): element type per tensor (f32, f16, bf16,
 * i32, i64, Q8: int8 weight rows with their scales, or Q8_0: ggml blocks,
 * compute/quant.h, host
 * backends only), up to 4 dimensions, and whether it owns its buffer. Weights are
 * ct_tensors converted once at load (ct_tensor_upload); activations are plain
 * float pointers carved from a per-batch arena over backend memory, because
 * the ops below take raw pointers with explicit sizes (llm.c style).
 */
#ifndef CT_COMPUTE_TENSOR_H
#define CT_COMPUTE_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"

#define CT_TENSOR_MAX_DIMS 4

struct ct_backend;

typedef struct ct_tensor {
    ct_dtype dtype;
    int ndim;
    int64_t shape[CT_TENSOR_MAX_DIMS];
    void *data;              /* backend memory; NULL for an empty tensor */
    size_t nbytes;
    struct ct_backend *owner; /* set when this tensor owns data (freed by ct_tensor_release) */
    /* a view (owner NULL) of a read-only file mapping (a borrowed checkpoint
     * tensor): its pages may be handed back to the page cache and re-read */
    int file_backed;
} ct_tensor;

/* Elements (product of the shape; 1 for ndim 0). */
int64_t ct_tensor_numel(const ct_tensor *t);

/* Allocate an uninitialised tensor on a backend. */
ct_status ct_tensor_alloc(struct ct_backend *be, ct_dtype dtype, int ndim, const int64_t *shape,
                          ct_tensor *out);

/* Convert host data of type src_dtype (f32/f16/bf16) to dtype (f32/f16/bf16)
 * and place it on the backend; for the conversion done once at load. */
ct_status ct_tensor_upload(struct ct_backend *be, ct_dtype dtype, const void *src, ct_dtype src_dtype,
                           int ndim, const int64_t *shape, ct_tensor *out);

/* ct_tensor_upload that also finds, in the same pass over src, the first
 * NaN or infinity: *bad_at is its element index, or -1 (bad_at may be
 * NULL). Conversion runs in parallel (OpenMP) over blocks; the result does
 * not depend on the thread count. */
ct_status ct_tensor_upload_checked(struct ct_backend *be, ct_dtype dtype, const void *src, ct_dtype src_dtype,
                                   int ndim, const int64_t *shape, int64_t *bad_at, ct_tensor *out);

/* ct_tensor_upload_checked for a source that stays valid and unchanged
 * until the backend's next synchronize (a checkpoint's mapping): where the
 * device takes src as it is (same dtype), the copy goes through
 * to_device_async (backend.h version 7) and may still be on its way when
 * this returns; *out must not be read by an op before that synchronize.
 * Converted tensors, host backends and tables without the entry upload
 * as ct_tensor_upload_checked does. */
ct_status ct_tensor_upload_deferred(struct ct_backend *be, ct_dtype dtype, const void *src, ct_dtype src_dtype,
                                    int ndim, const int64_t *shape, int64_t *bad_at, ct_tensor *out);

/* Zero-copy: when the backend computes on host memory, dtype == src_dtype
 * and src is element-aligned, make *out a view of src (not owned; src must
 * outlive it) and return 1; otherwise return 0 and leave *out untouched
 * (the caller uploads a copy). */
int ct_tensor_borrow(struct ct_backend *be, ct_dtype dtype, const void *src, ct_dtype src_dtype, int ndim,
                     const int64_t *shape, ct_tensor *out);

/* Index of the first NaN or infinity among n f32/f16/bf16 elements, or -1
 * (parallel, deterministic). */
int64_t ct_first_non_finite(const void *src, ct_dtype dtype, size_t n);
/* The plain-loop definition of the scan, on one thread (the fast scan takes
 * AVX-512 where the CPU has it; tests compare the two). */
int64_t ct_scan_non_finite_ref(const void *src, ct_dtype dtype, size_t n);

/* Free an owned tensor's memory and clear it; no-op on NULL or a view. */
void ct_tensor_release(ct_tensor *t);

/* Convert n elements of f32/f16/bf16 to float32 (host memory). */
ct_status ct_convert_to_f32(float *dst, const void *src, ct_dtype src_dtype, size_t n);

#endif
