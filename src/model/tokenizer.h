/* tokenizer.h — the Hugging Face tokenizer.json of a Cohere ASR checkpoint:
 * id <-> piece tables, special-token flags, the decoder prompt built from
 * token strings, and ids -> text exactly as the `tokenizers` library's
 * Tokenizer.decode(ids, skip_special_tokens=True) does it (the decoder chain
 * is read from the file: Sequence, Replace, ByteFallback, Fuse, Strip,
 * Metaspace). Encoding text is not needed by the product and not provided.
 */
#ifndef CT_MODEL_TOKENIZER_H
#define CT_MODEL_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct ct_tokenizer ct_tokenizer;

/* Largest tokenizer.json accepted (the release's is about 1 MB). */
#define CT_TOKENIZER_MAX_BYTES (256u << 20)
/* Number of ids in the decoder prompt. */
#define CT_TOKENIZER_PROMPT_LEN 10

/* Load and validate path. Fails with CT_ERR_IO (unreadable), CT_ERR_LIMIT
 * (too large), CT_ERR_FORMAT (bad JSON, unsupported model/decoder, ids not
 * exactly 0..V-1, conflicting ids, a prompt token missing), naming the file. */
ct_status ct_tokenizer_load(const char *path, ct_tokenizer **out);

/* The same from bytes in memory; name is used in messages. */
ct_status ct_tokenizer_load_buffer(const char *data, size_t len, const char *name, ct_tokenizer **out);

/* Whether a model can run with this tokenizer: the one check the engine
 * (ct_asr_open) makes after loading both, and the converter makes before it
 * writes a GGUF, so that it never writes a file the engine refuses. Every id
 * the head can pick (0..model_vocab-1) must have a piece, and the end-of-text
 * id (eos_id from the config when >= 0, else the tokenizer's <|endoftext|>)
 * must be one of them. CT_ERR_FORMAT naming `where`; *eos (may be NULL) gets
 * the end-of-text id. */
ct_status ct_tokenizer_check_model(const ct_tokenizer *tok, int model_vocab, int eos_id, const char *where,
                                   int32_t *eos);
/* The tokenizer of a model wherever ct_checkpoint_open accepts one: a
 * directory (its tokenizer.json) or a .gguf file (the embedded vocabulary,
 * validated exactly as a tokenizer.json; none: CT_ERR_FORMAT). */
ct_status ct_tokenizer_load_model(const char *model, ct_tokenizer **out);

/* A .gguf file's vocabulary as tokenizer.json text (malloc'd), as
 * cohere-transcribe-convert writes it; CT_ERR_NOT_FOUND without one. */
ct_status ct_gguf_vocab_json(const char *gguf, char **text);

void ct_tokenizer_free(ct_tokenizer *tok);

/* Number of ids (model vocabulary plus added tokens past its end). */
int ct_tokenizer_vocab_size(const ct_tokenizer *tok);

/* Id of a piece, or -1. Added tokens win over the model vocabulary, and of
 * duplicate pieces in the model vocabulary the last one wins, as in tokenizers. */
int32_t ct_tokenizer_id(const ct_tokenizer *tok, const char *piece);

/* The piece of an id (NUL-terminated UTF-8), or NULL when out of range. */
const char *ct_tokenizer_piece(const ct_tokenizer *tok, int32_t id);

/* 1 if decode(skip_special_tokens=True) drops this id, else 0 (also for
 * ids out of range). */
int ct_tokenizer_is_special(const ct_tokenizer *tok, int32_t id);

/* The 10-token decoder prompt
 *   ▁ <|startofcontext|> <|startoftranscript|> <|emo:undefined|> <|lang|> <|lang|>
 *   <|pnc|>|<|nopnc|> <|noitn|> <|notimestamp|> <|nodiarize|>
 * into ids[0..9]; *n = 10. An unknown language fails with CT_ERR_NOT_FOUND
 * listing the languages the tokenizer has; cap < 10 is CT_ERR_INVALID_ARG. */
ct_status ct_tokenizer_prompt(const ct_tokenizer *tok, const char *lang, int punctuation, int32_t *ids,
                              int cap, int *n);

/* Comma-separated language codes the tokenizer has tokens <|xx|> for (two
 * lowercase letters), in id order, e.g. "ar,de,en". Truncated to cap. */
void ct_tokenizer_languages(const ct_tokenizer *tok, char *buf, size_t cap);
/* 1 when lang is one of those: <|lang|> exists and is a language token (two
 * lowercase letters), so "pnc", "itn" or "nospeech" are not languages. */
int ct_tokenizer_is_language(const ct_tokenizer *tok, const char *lang);

/* ids -> text (malloc'd, NUL-terminated UTF-8), as tokenizers'
 * decode(ids, skip_special_tokens=True): special tokens dropped first, then
 * the file's decoder chain. No further stripping. An id out of range fails
 * with CT_ERR_INVALID_ARG (tokenizers would silently skip it). */
ct_status ct_tokenizer_decode(const ct_tokenizer *tok, const int32_t *ids, int n, char **text);

/* The same with skip_special_tokens chosen by the caller. */
ct_status ct_tokenizer_decode_ex(const ct_tokenizer *tok, const int32_t *ids, int n, int skip_special,
                                 char **text);

#endif
