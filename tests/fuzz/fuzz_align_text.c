/* fuzz_align_text.c — libFuzzer target: arbitrary bytes as a segment's ASR
 * text through the aligner's text side (normalize, romanize, words →
 * targets) and, with a few frames of flat emissions, the CTC alignment and
 * spans. Invalid UTF-8 must come back as an error, never a crash. */
#include <stdlib.h>
#include <string.h>

#include "align/viterbi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    char *out = NULL;
    if (ct_align_normalize(text, size, &out) == CT_OK) free(out);
    if (ct_align_romanize(text, size, CT_ALIGN_LANG_ARA, &out) == CT_OK) free(out);
    static ct_align_vocab v;
    static int init;
    if (!init) {
        ct_align_vocab_default(&v);
        init = 1;
    }
    ct_align_text t;
    if (ct_align_text_prepare(text, CT_ALIGN_LANG_ENG, &v, &t) == CT_OK) {
        const int T = 64;
        float *em = calloc((size_t)T * v.n_classes, sizeof *em);
        double *rs = calloc(t.n_words + 1, sizeof *rs), *re = calloc(t.n_words + 1, sizeof *re);
        if (em && rs && re) {
            for (int i = 0; i < T * v.n_classes; i++) em[i] = -(float)((i * 7919) % 13);
            int ok;
            const char *why;
            (void)ct_ctc_align_segment(em, T, v.n_classes, &t, &v, 20.0, rs, re, &ok, &why);
        }
        free(em);
        free(rs);
        free(re);
        ct_align_text_free(&t);
    }
    free(text);
    return 0;
}
