/* convert_internal.h — what convert.c and convert_tokenizer.c share: the
 * vocabulary of a model directory, validated as the engine validates it and
 * ready to be embedded in a GGUF. Not for the engine. */
#ifndef CT_MODEL_CONVERT_INTERNAL_H
#define CT_MODEL_CONVERT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "model/config.h"
#include "model/gguf.h"
#include "model/tokenizer.h"

typedef struct ct_convert_vocab {
    ct_tokenizer *tok;
    const char **piece; /* (n) owned by tok */
    float *score;       /* (n) Unigram scores, else 0 */
    int32_t *type;      /* (n) llama.cpp token types: 1 normal, 3 control, 6 byte */
    int n;
    char *json; /* the tokenizer.json bytes, NUL-terminated */
    size_t json_len;
} ct_convert_vocab;

/* dir/tokenizer.json, refused unless the engine would run it with a model of
 * config c (ct_tokenizer_load + ct_tokenizer_check_model). */
ct_status ct_convert_vocab_read(const char *dir, const ct_model_config *c, ct_convert_vocab *v);
void ct_convert_vocab_free(ct_convert_vocab *v);
/* tokenizer.ggml.{model,tokens,scores,token_type,unknown_token_id} and
 * tokenizer.huggingface.json. */
ct_status ct_convert_vocab_put(ct_gguf_writer *w, const ct_convert_vocab *v);

/* tokenizer.json text (malloc'd, NUL-terminated) for an open GGUF: the
 * embedded file (refused when it does not match tokenizer.ggml.tokens), else
 * one made from the token arrays (CrispASR's files). CT_ERR_NOT_FOUND when
 * there is neither. Not checked against a model. */
ct_status ct_convert_gguf_tokenizer_text(const ct_gguf *g, const char *label, char **text, size_t *len);

/* The tokenizer.json text for a GGUF (the embedded file, else one made from
 * tokenizer.ggml.*), refused unless the engine would run it with a model of
 * config c. CT_ERR_NOT_FOUND when the GGUF carries no vocabulary. */
ct_status ct_convert_gguf_vocab_text(const char *gguf, const ct_model_config *c, char **text, size_t *len);

#endif
