/* checkpoint_internal.h — what a checkpoint source (safetensors directory,
 * GGUF file) uses to fill a ct_checkpoint; not for the engine. */
#ifndef CT_MODEL_CHECKPOINT_INTERNAL_H
#define CT_MODEL_CHECKPOINT_INTERNAL_H

#include "model/checkpoint.h"

ct_status ct_checkpoint_new(const char *dir, ct_checkpoint **out);
ct_model_config *ct_checkpoint_config_mut(ct_checkpoint *ck);
/* The source's handle, freed with the checkpoint (keeps the mapping alive). */
void ct_checkpoint_set_source(ct_checkpoint *ck, void *source, void (*source_free)(void *));
/* Tensor data lives in read-only file mappings (enables ct_checkpoint_release). */
void ct_checkpoint_set_file_backed(ct_checkpoint *ck);
/* Copy the tensors (names normalised: "model." stripped when asked). */
ct_status ct_checkpoint_build(ct_checkpoint *ck, const ct_st_tensor *const *src, size_t n, int strip_model_prefix);
/* Derive sizes, cross-check the config, verify every tensor. */
ct_status ct_checkpoint_finish(ct_checkpoint *ck);

/* gguf_checkpoint.c */
ct_status ct_checkpoint_open_gguf(const char *path, ct_checkpoint **out);

#endif
