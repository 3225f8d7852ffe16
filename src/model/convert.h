/* convert.h — checkpoint conversion between a safetensors model directory and
 * a GGUF file with CrispASR's Cohere Transcribe names and metadata keys
 * (docs/GGUF.md). Both directions validate the source fully (ct_checkpoint_open)
 * first, stream one tensor at a time, and write atomically.
 */
#ifndef CT_MODEL_CONVERT_H
#define CT_MODEL_CONVERT_H

#include "core/dtype.h"
#include "core/error.h"
#include "model/tokenizer.h"

/* Sentinel for "keep each tensor's stored dtype". */
#define CT_CONVERT_KEEP_DTYPE (-1)

/* dir (either layout) → out .gguf, a file CrispASR runs unmodified
 * (docs/GGUF.md). dtype: CT_CONVERT_KEEP_DTYPE or the float dtype of the
 * matrices, conv kernels and tables; 1-D tensors and pos_bias_u/v are F32
 * either way. fe.mel_fb / fe.window are computed when the checkpoint has
 * none. The tokenizer.json beside the weights (Unigram or BPE) must pass the
 * engine's checks (ct_tokenizer_check_model); it is embedded as
 * tokenizer.ggml.* and verbatim as tokenizer.huggingface.json. Nothing is
 * written when any check fails. */
ct_status ct_convert_to_gguf(const char *dir, const char *out, int dtype);

/* .gguf → outdir in the layout save_pretrained writes (config.json,
 * generation_config.json, model.safetensors, tokenizer.json). dtype: a float
 * dtype, or keep: the token embedding's dtype. The GGUF's vocabulary must
 * pass the engine's checks before anything is written. */
ct_status ct_convert_from_gguf(const char *gguf, const char *outdir, int dtype);

/* Write the vocabulary a GGUF carries as a tokenizer.json at path: the
 * embedded tokenizer.huggingface.json byte for byte (refused when it does
 * not match tokenizer.ggml.tokens), else one made from tokenizer.ggml.tokens/
 * scores/token_type (CrispASR's files). CT_ERR_NOT_FOUND when the GGUF has
 * neither. */
ct_status ct_convert_gguf_tokenizer(const char *gguf, const char *path);

/* The tokenizer of a model: dir/tokenizer.json for a directory, the embedded
 * vocabulary (as above) for a .gguf file. */
ct_status ct_convert_load_tokenizer(const char *model, ct_tokenizer **out);

#endif
