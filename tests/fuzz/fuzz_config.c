/* fuzz_config.c — libFuzzer target for the config.json and
 * generation_config.json readers. The input is config text, optionally
 * followed by a NUL byte and generation-config text. On success the parsed
 * sizes must be -1 (unknown) or positive. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *cfg = (const char *)data;
    const char *nul = memchr(data, 0, size);
    size_t clen = nul ? (size_t)(nul - cfg) : size;
    const char *gen = nul ? nul + 1 : NULL;
    size_t glen = nul ? size - clen - 1 : 0;
    ct_model_config c;
    if (ct_config_parse(cfg, clen, "fuzz", gen, glen, "fuzz-gen", &c) != CT_OK) return 0;
    const int v[] = {c.enc_layers, c.enc_d_model, c.enc_heads, c.enc_ff, c.dec_layers, c.dec_d_model,
                     c.dec_heads, c.dec_ff, c.vocab_size};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (v[i] == 0 || v[i] < -1) abort();
    if (c.n_languages < 0 || c.n_languages > CT_CONFIG_MAX_LANGS) abort();
    for (int i = 0; i < c.n_languages; i++)
        if (strlen(c.languages[i]) == 0) abort();
    return 0;
}
