/* fuzz_tokenizer.c — libFuzzer target for the tokenizer.json reader. The input
 * is a tokenizer.json, optionally followed by a NUL byte and bytes that
 * become ids; when the JSON loads, those ids are decoded and a prompt is
 * built, so the decoder chain and the tables are exercised too.
 * Seeds: tests/fuzz/seeds/tokenizer/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t jlen = nul ? (size_t)(nul - data) : size;
    ct_tokenizer *t = NULL;
    if (ct_tokenizer_load_buffer((const char *)data, jlen, "fuzz.json", &t) != CT_OK) return 0;
    int v = ct_tokenizer_vocab_size(t);
    int32_t ids[64];
    int n = 0;
    /* ids from the bytes after the NUL, some of them out of range on purpose */
    for (size_t i = jlen + 1; i + 1 < size && n < 64; i += 2)
        ids[n++] = (int32_t)(((data[i] << 8) | data[i + 1]) % (v + 2)) - 1;
    char *text = NULL;
    if (ct_tokenizer_decode(t, ids, n, &text) == CT_OK) free(text);
    for (int k = 0; k < n; k++)
        if (ids[k] < 0 || ids[k] >= v) ids[k] = 0;
    if (ct_tokenizer_decode_ex(t, ids, n, 0, &text) == CT_OK) free(text);
    for (int k = 0; k < v && k < 4096; k++) {
        const char *p = ct_tokenizer_piece(t, k);
        if (!p || ct_tokenizer_id(t, p) < 0) __builtin_trap(); /* every piece must be found again */
        (void)ct_tokenizer_is_special(t, k);
    }
    int32_t prompt[CT_TOKENIZER_PROMPT_LEN];
    int np;
    (void)ct_tokenizer_prompt(t, "en", 1, prompt, CT_TOKENIZER_PROMPT_LEN, &np);
    (void)ct_tokenizer_prompt(t, "zz", 0, prompt, CT_TOKENIZER_PROMPT_LEN, &np);
    char langs[256];
    ct_tokenizer_languages(t, langs, sizeof langs);
    ct_tokenizer_free(t);
    return 0;
}
