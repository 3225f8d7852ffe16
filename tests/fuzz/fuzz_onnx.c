/* fuzz_onnx.c — libFuzzer target for the ONNX reader (vad/onnx.c) and the
 * Silero weight lookup on top of it. Every tensor's data is read end to end
 * so that a wrong length would show up under ASan.
 * Seeds: tests/fuzz/seeds/onnx (tools/reference/make_onnx_seeds.py).
 */
#include <stddef.h>
#include <stdint.h>

#include "vad/onnx.h"
#include "vad/silero.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ct_onnx_model *m;
    if (ct_onnx_parse(data, size, &m) != CT_OK) return 0;
    volatile unsigned sum = 0;
    for (int i = 0; i < ct_onnx_count(m); i++) {
        const ct_onnx_tensor *t = ct_onnx_at(m, i);
        for (const char *c = t->name; *c; c++) sum += (unsigned char)*c;
        for (const char *c = t->graph; *c; c++) sum += (unsigned char)*c;
        for (size_t j = 0; t->data && j < t->nbytes; j++) sum += t->data[j];
    }
    (void)sum; /* the reads are the point; volatile keeps them */
    (void)ct_onnx_find(m, "w");
    ct_silero *s;
    if (ct_silero_from_onnx(m, &s) == CT_OK) ct_silero_free(s);
    ct_onnx_free(m);
    return 0;
}
