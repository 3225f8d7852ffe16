/* fuzz_safetensors.c — libFuzzer target for the safetensors header parser.
 * The input is a whole file image; on success every tensor's bytes are read
 * (so ASan sees any span that escapes the buffer) and float tensors are
 * converted, which checks nbytes/numel agree with the span. */
#include <stdint.h>
#include <stdlib.h>

#include "model/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ct_safetensors *st;
    if (ct_st_open_buffer(data, size, "fuzz", &st) != CT_OK) return 0;
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < ct_st_count(st); i++) {
        const ct_st_tensor *t = ct_st_at(st, i);
        const uint8_t *p = t->data;
        for (size_t k = 0; k < t->nbytes; k++) sink ^= p[k];
        if (ct_st_find(st, t->name) != t) abort();
        if (t->numel <= 4096 && (t->dtype == CT_DTYPE_F32 || t->dtype == CT_DTYPE_F16 || t->dtype == CT_DTYPE_BF16)) {
            float *f = malloc(((size_t)t->numel + 1) * sizeof *f);
            if (f && ct_st_tensor_to_f32(t, f, (size_t)t->numel) != CT_OK) abort();
            free(f);
        }
    }
    for (size_t i = 0; i < ct_st_metadata_count(st); i++) {
        const char *k, *v;
        ct_st_metadata_at(st, i, &k, &v);
        if (ct_st_metadata(st, k) == NULL) abort();
    }
    (void)sink;
    ct_st_free(st);
    return 0;
}
