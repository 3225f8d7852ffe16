/* fuzz_checkpoint.c — libFuzzer target for the checkpoint loader's size
 * derivation and verification (checkpoint.c) on hostile shapes and configs.
 * The input is config.json text, a NUL byte, then a safetensors image; both
 * are parsed from memory and fed to the same build/finish steps that
 * ct_checkpoint_open uses. On success every size must be positive and every
 * verified tensor present. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/checkpoint_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    if (!nul) return 0;
    size_t clen = (size_t)(nul - data);
    ct_safetensors *st;
    if (ct_st_open_buffer(nul + 1, size - clen - 1, "fuzz.safetensors", &st) != CT_OK) return 0;
    ct_checkpoint *ck;
    if (ct_checkpoint_new("fuzz", &ck) != CT_OK) {
        ct_st_free(st);
        return 0;
    }
    ct_status s = ct_config_parse((const char *)data, clen, "fuzz-config", NULL, 0, NULL, ct_checkpoint_config_mut(ck));
    size_t n = ct_st_count(st);
    const ct_st_tensor **src = malloc((n ? n : 1) * sizeof *src);
    for (size_t i = 0; src && i < n; i++) src[i] = ct_st_at(st, i);
    if (s == CT_OK && src) s = ct_checkpoint_build(ck, src, n, 1);
    if (s == CT_OK) s = ct_checkpoint_finish(ck);
    if (s == CT_OK) {
        const ct_model_config *c = ct_checkpoint_config(ck);
        const int v[] = {c->enc_layers, c->enc_d_model, c->enc_heads, c->enc_ff, c->enc_conv_kernel,
                         c->subsampling_channels, c->dec_layers, c->dec_d_model, c->dec_heads, c->dec_ff,
                         c->dec_max_positions, c->vocab_size, c->n_mels};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
            if (v[i] <= 0) abort();
        if (!ct_checkpoint_tensor(ck, "log_softmax.mlp.layer0.weight")) abort();
    }
    free(src);
    ct_checkpoint_free(ck);
    ct_st_free(st);
    return 0;
}
