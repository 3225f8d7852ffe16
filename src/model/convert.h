/* convert.h — checkpoint conversion between a safetensors model directory and
 * a GGUF file with CrispASR's Cohere Transcribe names and metadata keys
 * (docs/GGUF.md). Both directions validate the source fully (ct_checkpoint_open)
 * first, stream one tensor at a time, and write atomically.
 */
#ifndef CT_MODEL_CONVERT_H
#define CT_MODEL_CONVERT_H

#include "core/dtype.h"
#include "core/error.h"

/* Sentinel for "keep each tensor's stored dtype". */
#define CT_CONVERT_KEEP_DTYPE (-1)

/* dir (either layout) → out .gguf. dtype: CT_CONVERT_KEEP_DTYPE or a float
 * dtype every float tensor is converted to. The tokenizer.json beside the
 * weights, when present, is embedded (tokenizer.ggml.tokens/scores/token_type). */
ct_status ct_convert_to_gguf(const char *dir, const char *out, int dtype);

/* .gguf → outdir in the layout save_pretrained writes (config.json,
 * generation_config.json, model.safetensors, tokenizer.json when the GGUF has
 * tokens). dtype: a float dtype, or keep: the token embedding's dtype. */
ct_status ct_convert_from_gguf(const char *gguf, const char *outdir, int dtype);

/* Write the vocabulary a GGUF carries (tokenizer.ggml.tokens/scores/
 * token_type) as a tokenizer.json at path, for the tokenizer module.
 * CT_ERR_NOT_FOUND when the GGUF has no token list. */
ct_status ct_convert_gguf_tokenizer(const char *gguf, const char *path);

#endif
