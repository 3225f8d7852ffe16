/* tokenizer_gguf.c — a model's tokenizer wherever the model is: the
 * tokenizer.json beside the weights in a model directory, or the vocabulary
 * embedded in a .gguf file (tokenizer.ggml.tokens/scores/token_type, turned
 * into the same tokenizer.json text the converter writes and loaded from
 * memory). Validation is the tokenizer module's, identical in both cases. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fs.h"
#include "model/convert_internal.h"
#include "model/gguf.h"
#include "model/tokenizer.h"
#include "model/tokjson.h"

/* The converter's reading of a GGUF vocabulary (model/convert_tokenizer.c:
 * the embedded tokenizer.json verbatim when there is one, else one made from
 * the token arrays), so the engine and convert read a GGUF the same way. */
ct_status ct_gguf_vocab_json(const char *gguf, char **text) {
    *text = NULL;
    ct_gguf *g;
    CT_TRY(ct_gguf_open(gguf, &g));
    size_t len;
    ct_status s = ct_convert_gguf_tokenizer_text(g, gguf, text, &len);
    ct_gguf_free(g);
    return s;
}

ct_status ct_tokenizer_load_model(const char *model, ct_tokenizer **out) {
    *out = NULL;
    struct stat st;
    if (stat(model, &st) == 0 && S_ISDIR(st.st_mode)) {
        char p[4096];
        CT_TRY(ct_path_join(p, sizeof p, model, "tokenizer.json"));
        return ct_tokenizer_load(p, out);
    }
    char *text;
    ct_status s = ct_gguf_vocab_json(model, &text);
    if (s == CT_ERR_NOT_FOUND && stat(model, &st) == 0)
        return ct_fail(CT_ERR_FORMAT, "%s: the GGUF carries no vocabulary (tokenizer.ggml.tokens)", model);
    if (s != CT_OK) return s;
    s = ct_tokenizer_load_buffer(text, strlen(text), model, out);
    free(text);
    return s;
}
