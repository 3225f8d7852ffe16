/* tensor.c — allocation, upload with dtype conversion, release. */
#include "compute/tensor.h"

#include <stdlib.h>
#include <string.h>

#include "compute/backend.h"

int64_t ct_tensor_numel(const ct_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

static ct_status describe(ct_dtype dtype, int ndim, const int64_t *shape, ct_tensor *out) {
    memset(out, 0, sizeof *out);
    if (ndim < 0 || ndim > CT_TENSOR_MAX_DIMS) return ct_fail(CT_ERR_INVALID_ARG, "tensor: %d dimensions", ndim);
    if (ct_dtype_size(dtype) == 0) return ct_fail(CT_ERR_INVALID_ARG, "tensor: bad dtype %d", (int)dtype);
    out->dtype = dtype;
    out->ndim = ndim;
    size_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || (shape[i] > 0 && n > SIZE_MAX / 16 / (size_t)shape[i]))
            return ct_fail(CT_ERR_INVALID_ARG, "tensor: bad dimension %lld", (long long)shape[i]);
        out->shape[i] = shape[i];
        n *= (size_t)shape[i];
    }
    out->nbytes = n * ct_dtype_size(dtype);
    return CT_OK;
}

ct_status ct_tensor_alloc(ct_backend *be, ct_dtype dtype, int ndim, const int64_t *shape, ct_tensor *out) {
    CT_TRY(describe(dtype, ndim, shape, out));
    if (out->nbytes == 0) return CT_OK;
    CT_TRY(be->ops->alloc(be, out->nbytes, &out->data));
    out->owner = be;
    return CT_OK;
}

ct_status ct_convert_to_f32(float *dst, const void *src, ct_dtype src_dtype, size_t n) {
    /* src may be unaligned (mmapped safetensors): load halves with memcpy */
    const unsigned char *h = src;
    uint16_t v;
    switch (src_dtype) {
    case CT_DTYPE_F32: memcpy(dst, src, n * 4); return CT_OK;
    case CT_DTYPE_BF16:
        for (size_t i = 0; i < n; i++) {
            memcpy(&v, h + 2 * i, 2);
            dst[i] = ct_bf16_to_f32(v);
        }
        return CT_OK;
    case CT_DTYPE_F16:
        for (size_t i = 0; i < n; i++) {
            memcpy(&v, h + 2 * i, 2);
            dst[i] = ct_f16_to_f32(v);
        }
        return CT_OK;
    default: return ct_fail(CT_ERR_UNSUPPORTED, "convert: dtype %s is not a float type", ct_dtype_name(src_dtype));
    }
}

/* dst (n, dtype) from src (n, float dtype); src and dst do not overlap. */
static ct_status convert(void *dst, ct_dtype dtype, const void *src, ct_dtype src_dtype, size_t n) {
    if (dtype == src_dtype) {
        memcpy(dst, src, n * ct_dtype_size(dtype));
        return CT_OK;
    }
    if (dtype == CT_DTYPE_F32) return ct_convert_to_f32(dst, src, src_dtype, n);
    if (dtype != CT_DTYPE_BF16 && dtype != CT_DTYPE_F16)
        return ct_fail(CT_ERR_UNSUPPORTED, "convert: to %s", ct_dtype_name(dtype));
    uint16_t *o = dst;
    for (size_t i = 0; i < n; i++) {
        float f;
        if (ct_convert_to_f32(&f, (const unsigned char *)src + i * ct_dtype_size(src_dtype), src_dtype, 1) != CT_OK)
            return CT_ERR_UNSUPPORTED;
        o[i] = dtype == CT_DTYPE_BF16 ? ct_f32_to_bf16(f) : ct_f32_to_f16(f);
    }
    return CT_OK;
}

ct_status ct_tensor_upload(ct_backend *be, ct_dtype dtype, const void *src, ct_dtype src_dtype, int ndim,
                           const int64_t *shape, ct_tensor *out) {
    CT_TRY(ct_tensor_alloc(be, dtype, ndim, shape, out));
    if (out->nbytes == 0) return CT_OK;
    size_t n = out->nbytes / ct_dtype_size(dtype);
    ct_status st;
    if (be->ops->stream(be) == NULL) { /* host memory: convert in place */
        st = convert(out->data, dtype, src, src_dtype, n);
    } else {
        void *tmp = malloc(out->nbytes);
        if (!tmp) {
            ct_tensor_release(out);
            return ct_fail(CT_ERR_OOM, "tensor: %zu bytes for conversion", out->nbytes);
        }
        st = convert(tmp, dtype, src, src_dtype, n);
        if (st == CT_OK) st = be->ops->to_device(be, out->data, tmp, out->nbytes);
        free(tmp);
    }
    if (st != CT_OK) ct_tensor_release(out);
    return st;
}

void ct_tensor_release(ct_tensor *t) {
    if (!t) return;
    if (t->owner && t->data) t->owner->ops->free(t->owner, t->data);
    memset(t, 0, sizeof *t);
}
