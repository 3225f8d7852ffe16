/* onnx.h — a small reader of ONNX model files (protobuf), enough to take
 * weights out of them: graph initializers and the tensors of Constant nodes,
 * at any depth of subgraphs (If/Loop branches). It does not interpret the
 * graph; callers pick tensors by name and shape.
 *
 * Every length, varint and wire type is checked against the buffer; a
 * malformed file gives CT_ERR_FORMAT with the byte offset, never a crash.
 */
#ifndef CT_VAD_ONNX_H
#define CT_VAD_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

/* ONNX TensorProto.DataType values used here. */
enum {
    CT_ONNX_FLOAT = 1,
    CT_ONNX_UINT8 = 2,
    CT_ONNX_INT8 = 3,
    CT_ONNX_INT32 = 6,
    CT_ONNX_INT64 = 7,
    CT_ONNX_BOOL = 9,
    CT_ONNX_FLOAT16 = 10,
    CT_ONNX_DOUBLE = 11,
    CT_ONNX_BFLOAT16 = 16
};

#define CT_ONNX_MAX_DIMS 8

typedef struct ct_onnx_tensor {
    const char *name;  /* initializer name, or the Constant node's output name */
    const char *graph; /* name of the GraphProto holding it ("" if unnamed) */
    int data_type;     /* TensorProto.DataType */
    int ndim;
    int64_t dims[CT_ONNX_MAX_DIMS];
    int64_t numel;
    /* Element bytes, little-endian, numel * element size long; NULL when the
     * type's size is not known here (strings, complex) or the data lives in
     * an external file (external == 1). Not aligned: copy out with memcpy. */
    const uint8_t *data;
    size_t nbytes;
    int external;
} ct_onnx_tensor;

typedef struct ct_onnx_model ct_onnx_model;

/* Parse a model held in memory. The model keeps its own copy of what it
 * needs; buf may be freed afterwards. */
CT_NODISCARD ct_status ct_onnx_parse(const void *buf, size_t len, ct_onnx_model **out);

/* Read and parse a file (at most max_bytes; 0 means 1 GiB). Errors name the path. */
CT_NODISCARD ct_status ct_onnx_open(const char *path, size_t max_bytes, ct_onnx_model **out);

void ct_onnx_free(ct_onnx_model *m);

int ct_onnx_count(const ct_onnx_model *m);
const ct_onnx_tensor *ct_onnx_at(const ct_onnx_model *m, int i);

/* First tensor whose name equals `name`, or NULL. */
const ct_onnx_tensor *ct_onnx_find(const ct_onnx_model *m, const char *name);

/* Size in bytes of one element of an ONNX data type, 0 if not supported. */
size_t ct_onnx_elem_size(int data_type);

#endif
