/* gguf.h — read and write GGUF (v2/v3) files with f32/f16/bf16 and Q8_0
 * tensors.
 *
 * Reader: the file is mmapped; header, key/value metadata (every GGUF value
 * type, arrays included), tensor infos and `general.alignment` are checked
 * strictly (counts against the bytes left, string lengths, dims, known
 * tensor types, offsets aligned and inside the data area, no overlaps, no
 * duplicate keys or names) before anything is handed out. Of the quantized
 * types only Q8_0 is read (ct_dtype CT_DTYPE_Q8_0, rows a multiple of 32;
 * the CPU multiplies it natively); the others are refused. Tensors are exposed as ct_st_tensor with
 * torch's dimension order (GGUF stores ne[0] innermost; the shape here is
 * reversed so [out, in] stays [out, in]).
 *
 * Writer: set metadata, declare tensors, then stream each tensor's bytes in
 * declaration order; finish renames a temp file into place.
 *
 * Name mapping between the Hub's NeMo names and CrispASR's GGUF names for
 * Cohere Transcribe (docs/GGUF.md): ct_gguf_name_from_nemo / _to_nemo.
 */
#ifndef CT_MODEL_GGUF_H
#define CT_MODEL_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"
#include "model/safetensors.h"

#define CT_GGUF_DEFAULT_ALIGNMENT 32
#define CT_GGUF_MAX_DIMS 4

typedef enum ct_gguf_type {
    CT_GGUF_U8 = 0,
    CT_GGUF_I8 = 1,
    CT_GGUF_U16 = 2,
    CT_GGUF_I16 = 3,
    CT_GGUF_U32 = 4,
    CT_GGUF_I32 = 5,
    CT_GGUF_F32 = 6,
    CT_GGUF_BOOL = 7,
    CT_GGUF_STRING = 8,
    CT_GGUF_ARRAY = 9,
    CT_GGUF_U64 = 10,
    CT_GGUF_I64 = 11,
    CT_GGUF_F64 = 12,
    CT_GGUF_TYPE_COUNT
} ct_gguf_type;

typedef struct ct_gguf_value ct_gguf_value;
struct ct_gguf_value {
    ct_gguf_type type;
    union {
        uint64_t u;  /* U8, U16, U32, U64, BOOL */
        int64_t i;   /* I8, I16, I32, I64 */
        double f;    /* F32, F64 */
        struct {
            const char *s; /* NUL-terminated copy (may hold NULs within len) */
            size_t len;
        } str;
        struct {
            ct_gguf_type elem;
            uint64_t n;
            const uint8_t *raw;   /* numeric elements, little-endian, unaligned */
            ct_gguf_value *items; /* string / array elements (NULL otherwise) */
        } arr;
    };
};

typedef struct ct_gguf ct_gguf;

ct_status ct_gguf_open(const char *path, ct_gguf **out);
/* Parse an image in memory (tests, fuzzing); buf must outlive the result. */
ct_status ct_gguf_open_buffer(const void *buf, size_t len, const char *label, ct_gguf **out);
void ct_gguf_free(ct_gguf *g);

uint32_t ct_gguf_version(const ct_gguf *g);
size_t ct_gguf_alignment(const ct_gguf *g);

size_t ct_gguf_kv_count(const ct_gguf *g);
const char *ct_gguf_kv_key(const ct_gguf *g, size_t i);
const ct_gguf_value *ct_gguf_kv_value(const ct_gguf *g, size_t i);
const ct_gguf_value *ct_gguf_find(const ct_gguf *g, const char *key); /* NULL if absent */

/* Typed getters: NOT_FOUND when absent, FORMAT when of another kind. Any
 * integer type converts to an int in range; F32/F64 to double. */
ct_status ct_gguf_get_int(const ct_gguf *g, const char *key, int64_t lo, int64_t hi, int64_t *out);
ct_status ct_gguf_get_float(const ct_gguf *g, const char *key, double *out);
ct_status ct_gguf_get_str(const ct_gguf *g, const char *key, const char **out);
/* Element i of a numeric array as double. */
double ct_gguf_array_num(const ct_gguf_value *v, uint64_t i);

/* Tensors in file order; find by name. */
size_t ct_gguf_tensor_count(const ct_gguf *g);
const ct_st_tensor *ct_gguf_tensor_at(const ct_gguf *g, size_t i);
const ct_st_tensor *ct_gguf_find_tensor(const ct_gguf *g, const char *name);

/* ---- writer ------------------------------------------------------------ */

typedef struct ct_gguf_writer ct_gguf_writer;

ct_status ct_gguf_writer_create(const char *path, ct_gguf_writer **out);
ct_status ct_gguf_writer_set_u32(ct_gguf_writer *w, const char *key, uint32_t v);
ct_status ct_gguf_writer_set_f32(ct_gguf_writer *w, const char *key, float v);
ct_status ct_gguf_writer_set_bool(ct_gguf_writer *w, const char *key, int v);
ct_status ct_gguf_writer_set_str(ct_gguf_writer *w, const char *key, const char *v);
ct_status ct_gguf_writer_set_str_array(ct_gguf_writer *w, const char *key, const char *const *v, size_t n);
ct_status ct_gguf_writer_set_f32_array(ct_gguf_writer *w, const char *key, const float *v, size_t n);
ct_status ct_gguf_writer_set_i32_array(ct_gguf_writer *w, const char *key, const int32_t *v, size_t n);
/* shape in torch order (reversed into ne on disk); dtype F32, F16, BF16 or
 * Q8_0 (the innermost dimension a multiple of 32; the bytes are ggml's
 * blocks), also I32/I8 for completeness. */
ct_status ct_gguf_writer_add_tensor(ct_gguf_writer *w, const char *name, ct_dtype dtype, int ndim,
                                    const int64_t *shape);
ct_status ct_gguf_writer_write(ct_gguf_writer *w, const void *data);
/* As for the safetensors writer: after any failed write, later writes and
 * finish return CT_ERR_MISUSE and free removes the temp file. */
ct_status ct_gguf_writer_finish(ct_gguf_writer *w);
void ct_gguf_writer_free(ct_gguf_writer *w);

/* ---- Cohere Transcribe names (CrispASR convention) --------------------- */

/* NeMo name ("encoder.layers.3.self_attn.linear_q.weight") → GGUF name
 * ("enc.blk.3.attn.q.weight"). CT_ERR_NOT_FOUND when the tensor has no
 * GGUF counterpart (the BatchNorm counters). */
ct_status ct_gguf_name_from_nemo(const char *nemo, char *out, size_t cap);
ct_status ct_gguf_name_to_nemo(const char *gguf, char *out, size_t cap);

#endif
