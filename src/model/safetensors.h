/* safetensors.h — read and write safetensors checkpoints.
 *
 * Reader: a .safetensors file is mmapped read-only and its JSON header is
 * checked strictly (length, JSON, dtype, shape, shape × item size = byte span,
 * spans inside the data area, no overlaps, no duplicate names) before any
 * tensor is handed out; a malformed file is a CT_ERR_FORMAT naming the file and
 * the tensor, never a crash. A sharded checkpoint (model.safetensors.index.json
 * with a weight_map) opens every shard once and checks the map against the
 * shards. Shard names are relative paths under the index's directory and may
 * name subfolders ("part1/model-00001.safetensors"), by the rule the Hub
 * client downloads them by (ct_path_rel_problem: no absolute path, no empty,
 * "." or ".." segment, no control character). Tensor data stays in the mapping: `data` may be unaligned when a
 * writer did not pad the header, so read it with memcpy (ct_st_tensor_to_f32).
 *
 * Writer: declare every tensor first (name, dtype, shape), then stream the
 * bytes of each in declaration order; the header is padded to 8 bytes as the
 * reference writer does, and finish renames a temp file into place atomically.
 */
#ifndef CT_MODEL_SAFETENSORS_H
#define CT_MODEL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"

#define CT_ST_MAX_DIMS 8
/* The reference implementation's cap on the JSON header (100 MB). */
#define CT_ST_MAX_HEADER ((uint64_t)100000000)

typedef struct ct_st_tensor {
    const char *name;
    ct_dtype dtype;
    int ndim;
    int64_t shape[CT_ST_MAX_DIMS];
    const void *data; /* inside the mapping; possibly unaligned */
    size_t nbytes;
    int64_t numel;
} ct_st_tensor;

typedef struct ct_safetensors ct_safetensors;

/* path: a .safetensors file, a *.safetensors.index.json, or a directory that
 * holds model.safetensors.index.json or model.safetensors (index first). */
ct_status ct_st_open(const char *path, ct_safetensors **out);

/* Parse a safetensors image already in memory (tests, fuzzing). The buffer
 * must outlive the result; label names it in messages. */
ct_status ct_st_open_buffer(const void *buf, size_t len, const char *label, ct_safetensors **out);

/* Parse index JSON text as if read from `path` (shards are opened from
 * path's directory). For fuzzing; ct_st_open reads the file itself. */
ct_status ct_st_open_index_buffer(const char *text, size_t len, const char *path, ct_safetensors **out);

void ct_st_free(ct_safetensors *st);

/* Tensors are ordered by name. */
size_t ct_st_count(const ct_safetensors *st);
const ct_st_tensor *ct_st_at(const ct_safetensors *st, size_t i);
const ct_st_tensor *ct_st_find(const ct_safetensors *st, const char *name); /* NULL if absent */

/* `__metadata__` (string → string) of the file, or of the shards in index
 * order for a sharded checkpoint (first hit wins). NULL if absent. */
const char *ct_st_metadata(const ct_safetensors *st, const char *key);
size_t ct_st_metadata_count(const ct_safetensors *st);
void ct_st_metadata_at(const ct_safetensors *st, size_t i, const char **key, const char **value);

/* Parse a safetensors dtype name ("F32", "BF16", ...). */
ct_status ct_st_parse_dtype(const char *s, ct_dtype *out);

/* Convert a float tensor (F32/F16/BF16) to float32; n must equal t->numel. */
ct_status ct_st_tensor_to_f32(const ct_st_tensor *t, float *out, size_t n);

/* ---- writer ------------------------------------------------------------ */

typedef struct ct_st_writer ct_st_writer;

ct_status ct_st_writer_create(const char *path, ct_st_writer **out);
/* Declare the next tensor. All declarations precede the first write. */
ct_status ct_st_writer_add(ct_st_writer *w, const char *name, ct_dtype dtype, int ndim,
                           const int64_t *shape);
ct_status ct_st_writer_set_metadata(ct_st_writer *w, const char *key, const char *value);
/* The whole byte image of the next declared tensor: one call per declared
 * tensor, zero-length ones included (data is not read for those), so a
 * caller writing tensor by tensor never gets out of step. */
ct_status ct_st_writer_write(ct_st_writer *w, const void *data);
/* Part of the current tensor's bytes; tensors may be fed in any number of
 * chunks, crossing tensor boundaries is an error. A chunk stream passes
 * over zero-length tensors (it cannot address them); finish passes over
 * trailing ones. */
ct_status ct_st_writer_write_chunk(ct_st_writer *w, const void *data, size_t n);
/* Check everything was written, fsync, rename into place (core/fs.h says
 * what a failure leaves at path). After any failed write the writer is
 * failed for good: later writes and finish return CT_ERR_MISUSE, so a
 * partial file is never published; free removes it. */
ct_status ct_st_writer_finish(ct_st_writer *w);
/* Frees; an unfinished file's temp is removed. */
void ct_st_writer_free(ct_st_writer *w);

#endif
