/* fuzz_gguf.c — libFuzzer target for the GGUF reader. The input is a whole
 * file image; on success every tensor's bytes and every metadata value are
 * touched (ASan sees any escape from the buffer), names are looked up, the
 * Cohere name mapping runs on every tensor name, and the vocabulary is read
 * back as a tokenizer.json (embedded or made from the token arrays) and
 * loaded by the tokenizer. A Q8_0 tensor must hold whole 34-byte blocks of
 * 32-element rows and is dequantised (ct_st_tensor_to_f32). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/convert_internal.h"
#include "model/gguf.h"
#include "model/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void touch(const ct_gguf_value *v, volatile uint8_t *sink) {
    if (v->type == CT_GGUF_STRING) {
        for (size_t i = 0; i < v->str.len; i++) *sink ^= (uint8_t)v->str.s[i];
        if (v->str.s[v->str.len] != '\0') abort();
    } else if (v->type == CT_GGUF_ARRAY) {
        if (v->arr.items) {
            for (uint64_t i = 0; i < v->arr.n; i++) touch(&v->arr.items[i], sink);
        } else {
            for (uint64_t i = 0; i < v->arr.n; i++) *sink ^= (uint8_t)ct_gguf_array_num(v, i);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ct_gguf *g;
    if (ct_gguf_open_buffer(data, size, "fuzz", &g) != CT_OK) return 0;
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < ct_gguf_kv_count(g); i++) {
        touch(ct_gguf_kv_value(g, i), &sink);
        if (ct_gguf_find(g, ct_gguf_kv_key(g, i)) != ct_gguf_kv_value(g, i)) abort();
    }
    for (size_t i = 0; i < ct_gguf_tensor_count(g); i++) {
        const ct_st_tensor *t = ct_gguf_tensor_at(g, i);
        const uint8_t *p = t->data;
        for (size_t k = 0; k < t->nbytes; k++) sink ^= p[k];
        if (ct_gguf_find_tensor(g, t->name) != t) abort();
        char out[256];
        (void)ct_gguf_name_to_nemo(t->name, out, sizeof out);
        if (t->dtype == CT_DTYPE_Q8_0) {
            if (t->shape[t->ndim - 1] % CT_Q8_0_BLOCK || t->nbytes != (size_t)t->numel / 32 * 34) abort();
            if (t->numel <= (1 << 20)) {
                float *f = malloc(sizeof(float) * (size_t)(t->numel ? t->numel : 1));
                if (f && ct_st_tensor_to_f32(t, f, (size_t)t->numel) != CT_OK) abort();
                free(f);
            }
        }
    }
    int64_t v;
    (void)ct_gguf_get_int(g, "general.alignment", 0, 1 << 20, &v);
    char *text;
    size_t len;
    if (ct_convert_gguf_tokenizer_text(g, "fuzz", &text, &len) == CT_OK) {
        if (strlen(text) != len) abort();
        ct_tokenizer *tok;
        if (ct_tokenizer_load_buffer(text, len, "fuzz", &tok) == CT_OK) ct_tokenizer_free(tok);
        free(text);
    }
    ct_gguf_free(g);
    (void)sink;
    return 0;
}
