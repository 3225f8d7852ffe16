/* checkpoint.h — a Cohere ASR model directory opened as config + named tensors.
 *
 * ct_checkpoint_open accepts a directory in either layout of MODEL.md
 * (save_pretrained or Hub release; single or sharded safetensors). Tensor
 * names are normalised to the Hub's NeMo names without the `model.` prefix
 * that save_pretrained adds ("encoder.layers.0.self_attn.linear_q.weight",
 * "log_softmax.mlp.layer0.weight"). Every size is derived from the tensors
 * themselves (layer counts, widths, heads from pos_bias_u, kernel, vocab,
 * positions), cross-checked against the config, and every tensor the model
 * uses is checked for presence, shape and a float dtype at open time, so the
 * engine can rely on ct_checkpoint_config() and the shapes without re-checking.
 * Tensor bytes stay in the file mapping (f32, f16 or bf16 as stored).
 */
#ifndef CT_MODEL_CHECKPOINT_H
#define CT_MODEL_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "model/config.h"
#include "model/safetensors.h"

typedef struct ct_checkpoint ct_checkpoint;

/* path: a model directory (config.json + safetensors) or a .gguf file. */
ct_status ct_checkpoint_open(const char *path, ct_checkpoint **out);
void ct_checkpoint_free(ct_checkpoint *ck);

/* As ct_checkpoint_open, without the pass over every weight that refuses
 * NaN and infinity: for a loader that reads each tensor the model uses once
 * anyway and refuses non-finite values in that same pass (the ASR weight
 * loader does, asr/weights.c), so that the file is not read twice. */
ct_status ct_checkpoint_open_unchecked(const char *path, ct_checkpoint **out);

/* 1 when the NaN/infinity check ran at open (ct_checkpoint_open). */
int ct_checkpoint_finite_checked(const ct_checkpoint *ck);

/* 1 when tensor data lives in read-only file mappings (safetensors, GGUF):
 * it stays valid, unchanged, until ct_checkpoint_free, so a loader may use
 * it in place. */
int ct_checkpoint_file_backed(const ct_checkpoint *ck);

/* Complete config: after open, no size field is -1 (ids may be). */
const ct_model_config *ct_checkpoint_config(const ct_checkpoint *ck);

/* The directory the model came from (where tokenizer.json lives); for a
 * GGUF, the file's path (its vocabulary: ct_convert_gguf_tokenizer). */
const char *ct_checkpoint_dir(const ct_checkpoint *ck);

/* Tensor by normalised name, NULL if absent. */
const ct_st_tensor *ct_checkpoint_tensor(const ct_checkpoint *ck, const char *name);

/* Tensor by name with the given shape; fails (CT_ERR_NOT_FOUND or
 * CT_ERR_FORMAT) naming the tensor, the expected and the actual shape. */
ct_status ct_checkpoint_expect(const ct_checkpoint *ck, const char *name, int ndim, const int64_t *shape,
                               const ct_st_tensor **out);

/* Drop the tensor's pages from memory (madvise DONTNEED on the read-only
 * file mapping) once its data has been converted or copied: the bytes stay
 * readable (they fault back in from the file), but resident memory no
 * longer holds both the file image and the converted weights. */
void ct_checkpoint_release(const ct_checkpoint *ck, const ct_st_tensor *t);

/* All tensors, ordered by normalised name (for converters and tests). */
size_t ct_checkpoint_count(const ct_checkpoint *ck);
const ct_st_tensor *ct_checkpoint_at(const ct_checkpoint *ck, size_t i);

/* Number of parameters the model uses (the counters excluded). */
int64_t ct_checkpoint_param_count(const ct_checkpoint *ck);

#endif
