/* align.h — word alignment of one file, the entry point the pipeline calls
 * for `--alignment word` (PRODUCT-DETAILS §9.6–9.7): emissions of the whole
 * file through the wav2vec2 aligner, then for each ASR segment the CTC forced
 * alignment of its romanised words, or the uniform fallback, into
 * ct_rec_word records (output/record.h) with timing_source "ctc" or
 * "uniform_fallback" and the fallback count for the provenance. */
#ifndef CT_ALIGN_ALIGN_H
#define CT_ALIGN_ALIGN_H

#include <stddef.h>

#include "align/text.h"
#include "align/wav2vec2.h"
#include "output/record.h"

typedef struct ct_align_segment {
    double start, end; /* seconds */
    const char *text;  /* the segment's ASR text (UTF-8) */
} ct_align_segment;

typedef struct ct_align_options {
    int batch_size;       /* emission windows per forward call (--align-batch-size; ≥ 1) */
    const char *language; /* ASR language code ("ar", "en"): selects uroman's language rules */
} ct_align_options;
ct_align_options ct_align_default_options(void); /* batch 16 (the twin's default), language NULL */

typedef struct ct_aligner ct_aligner;

/* dir: config.json, model.safetensors, vocab.json (the Hub snapshot of
 * MahmoudAshraf/mms-300m-1130-forced-aligner, or the tiny test aligner);
 * be outlives the aligner. The vocabulary comes from vocab.json (keys
 * lowercased, blank "<blank>" else "<pad>"), the <star> column after it. */
ct_status ct_aligner_open(const char *dir, ct_backend *be, const ct_w2v2_options *opts, ct_aligner **out);
void ct_aligner_free(ct_aligner *a);
/* dir/vocab.json ({token: id}, ids 0..n_model−1) as the twin's vocabulary. */
ct_status ct_align_vocab_load(const char *dir, int n_model, ct_align_vocab *v);
const ct_align_vocab *ct_aligner_vocab(const ct_aligner *a);
ct_w2v2 *ct_aligner_model(ct_aligner *a);

/* Words of one file. pcm: mono float32 16 kHz, n > 0 samples. segs[i] has
 * segment_index i; segments whose stripped text is empty give no words and
 * are not counted. *words (malloc'd array, texts malloc'd; free with
 * ct_align_words_free) in segment order; *fallback = segments that fell back
 * to uniform timing. Model failures (OOM at batch 1 included) fail the call:
 * the twin fails the file there. */
ct_status ct_align_file(ct_aligner *a, const float *pcm, size_t n, const ct_align_segment *segs, size_t n_segs,
                        const ct_align_options *opts, ct_rec_word **words, size_t *n_words, int *fallback);

/* The per-segment part over ready emissions (frames, classes) with the
 * <star> column last; for tests and for the CUDA path later. */
ct_status ct_align_words(const float *emissions, int frames, int classes, double stride_ms, const ct_align_vocab *v,
                         ct_align_lang lang, const ct_align_segment *segs, size_t n_segs, ct_rec_word **words,
                         size_t *n_words, int *fallback);

/* Uniform timing of one segment's words over [start, end] (PRODUCT-DETAILS §6),
 * appended to *words with the given source. */
ct_status ct_align_uniform(const char *text, double start, double end, int segment_index, ct_timing_source src,
                           ct_rec_word **words, size_t *n_words, size_t *cap);

void ct_align_words_free(ct_rec_word *words, size_t n);

/* The doctor's word-mode smokes (PRODUCT-DETAILS §11 check 5): the CTC
 * Viterbi on emissions [[4,0],[0,4]] with target [1], blank 0, must give the
 * path [0,1], and "مرحبا بكم في العالم" must romanise to m r h b a / b k m /
 * f y / a l ' a l m. CT_OK, or CT_ERR_INTERNAL naming what differed. */
ct_status ct_align_smoke(void);

#endif
