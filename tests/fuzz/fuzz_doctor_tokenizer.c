/* fuzz_doctor_tokenizer.c — libFuzzer target for the doctor's tokenizer.json
 * checks (ct_doctor_tokenizer_check). The first input byte picks the
 * declared vocab_size (0: none, else a size near the file's), the second how
 * many of a fixed language list the config "lists"; the rest is the JSON.
 * When both the doctor and the tokenizer loader accept a file, they must
 * agree: the vocabulary size equals the declared one and every prompt token
 * the doctor found is found by the loader. Seeds: tests/fuzz/seeds/tokenizer/
 * with the three bytes in front (tools: see tests/fuzz/make_doctor_seeds.sh). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "model/tokenizer.h"
#include "pipeline/doctor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    static const char langs[4][16] = {"ar", "en", "fr", "de"};
    int vocab = data[0] | data[1] << 8;
    int n_langs = data[2] % 5;
    const char *json = (const char *)data + 3;
    size_t len = size - 3;
    if (ct_doctor_tokenizer_check(json, len, "fuzz.json", vocab, langs, n_langs) != CT_OK) return 0;
    ct_tokenizer *t = NULL;
    if (ct_tokenizer_load_buffer(json, len, "fuzz.json", &t) != CT_OK) return 0;
    if (vocab > 0 && ct_tokenizer_vocab_size(t) != vocab) __builtin_trap();
    static const char *const fixed[] = {"▁", "<|startofcontext|>", "<|startoftranscript|>", "<|emo:undefined|>",
                                        "<|pnc|>", "<|nopnc|>", "<|noitn|>", "<|notimestamp|>", "<|nodiarize|>",
                                        "<|endoftext|>"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (ct_tokenizer_id(t, fixed[i]) < 0) __builtin_trap();
    for (int i = 0; i < (n_langs ? n_langs : 2); i++) {
        char tok[32];
        snprintf(tok, sizeof tok, "<|%s|>", langs[i]);
        if (ct_tokenizer_id(t, tok) < 0) __builtin_trap();
    }
    ct_tokenizer_free(t);
    return 0;
}
