/* tokjson.h — write a tokenizer.json (Unigram with byte fallback, Metaspace
 * "▁" pre-tokenizer, and the decoder chain Replace ▁→space, ByteFallback,
 * Fuse, Strip) in the conventions of the project's fixtures. Reading
 * tokenizer.json is the tokenizer module's job (tokenizer.h). */
#ifndef CT_MODEL_TOKJSON_H
#define CT_MODEL_TOKJSON_H

#include "core/error.h"

/* pieces[id], scores[id] (NULL: all 0), special[id] (NULL: none): special
 * tokens also go into added_tokens. Written atomically to path. */
ct_status ct_tokjson_write(const char *path, const char *const *pieces, const float *scores,
                           const unsigned char *special, int n);
/* The same text in a malloc'd NUL-terminated buffer (path only names it in
 * messages). */
ct_status ct_tokjson_dump(const char *path, const char *const *pieces, const float *scores,
                          const unsigned char *special, int n, char **out);

/* The same text in memory (*text malloc'd, NUL-terminated); name is used in
 * messages. */
ct_status ct_tokjson_dump(const char *name, const char *const *pieces, const float *scores,
                          const unsigned char *special, int n, char **text);

#endif
