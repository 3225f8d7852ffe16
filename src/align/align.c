/* align.c — one file's word alignment (§9.7): vocabulary from vocab.json,
 * emissions through wav2vec2, then per segment: frame window (round half to
 * even), text → targets, forced alignment, word times clamped into the
 * segment; the uniform fallback wherever the twin's try block would raise.
 * Mirrors cohere_transcribe/alignment/runtime.py align_words. */
#include "align/align.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align/viterbi.h"

struct ct_aligner {
    ct_w2v2 *model;
    ct_align_vocab vocab;
};

ct_align_options ct_align_default_options(void) {
    ct_align_options o = {.batch_size = 16, .language = NULL};
    return o;
}

const ct_align_vocab *ct_aligner_vocab(const ct_aligner *a) { return &a->vocab; }
ct_w2v2 *ct_aligner_model(ct_aligner *a) { return a->model; }

ct_status ct_align_vocab_load(const char *dir, int n_model, ct_align_vocab *v) {
    char path[4096];
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) return ct_fail(CT_ERR_FORMAT, "%s: %s", path, err.text);
    ct_status s = CT_OK;
    const char *toks[CT_ALIGN_MAX_CLASSES] = {0};
    const char *key;
    json_t *val;
    int pad = -1;
    if (!json_is_object(j)) s = ct_fail(CT_ERR_FORMAT, "%s: not a JSON object", path);
    if (s == CT_OK && (int)json_object_size(j) != n_model)
        s = ct_fail(CT_ERR_FORMAT, "%s: %zu tokens, the model has %d classes", path, json_object_size(j), n_model);
    if (s == CT_OK && n_model >= CT_ALIGN_MAX_CLASSES)
        s = ct_fail(CT_ERR_UNSUPPORTED, "%s: %d classes exceed %d", path, n_model, CT_ALIGN_MAX_CLASSES - 1);
    if (s == CT_OK)
        json_object_foreach(j, key, val) {
            json_int_t id = json_integer_value(val);
            if (!json_is_integer(val) || id < 0 || id >= n_model || toks[id]) {
                s = ct_fail(CT_ERR_FORMAT, "%s: token \"%s\" has a bad or repeated id", path, key);
                break;
            }
            toks[id] = key;
            if (!strcmp(key, "<pad>")) pad = (int)id;
        }
    if (s == CT_OK) s = ct_align_vocab_from_tokens(v, toks, n_model, pad);
    json_decref(j);
    return s;
}

ct_status ct_aligner_open(const char *dir, ct_backend *be, const ct_w2v2_options *opts, ct_aligner **out) {
    *out = NULL;
    ct_aligner *a = calloc(1, sizeof *a);
    if (!a) return ct_fail(CT_ERR_OOM, "aligner");
    ct_status s = ct_w2v2_open(dir, be, opts, &a->model);
    if (s == CT_OK) s = ct_align_vocab_load(dir, ct_w2v2_get_config(a->model)->vocab, &a->vocab);
    if (s != CT_OK) {
        ct_aligner_free(a);
        return s;
    }
    *out = a;
    return CT_OK;
}

void ct_aligner_free(ct_aligner *a) {
    if (!a) return;
    ct_w2v2_free(a->model);
    free(a);
}

void ct_align_words_free(ct_rec_word *words, size_t n) {
    if (!words) return;
    for (size_t i = 0; i < n; i++) free(words[i].text);
    free(words);
}

static ct_status push_word(ct_rec_word **words, size_t *n, size_t *cap, double start, double end, const char *text,
                           size_t len, int seg, int idx, ct_timing_source src) {
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 64;
        ct_rec_word *w = realloc(*words, c * sizeof *w);
        if (!w) return ct_fail(CT_ERR_OOM, "align: words");
        *words = w;
        *cap = c;
    }
    char *t = malloc(len + 1);
    if (!t) return ct_fail(CT_ERR_OOM, "align: word text");
    memcpy(t, text, len);
    t[len] = 0;
    (*words)[*n] = (ct_rec_word){.start = start, .end = end, .text = t, .segment_index = seg,
                                 .segment_word_index = idx, .source = src};
    (*n)++;
    return CT_OK;
}

ct_status ct_align_uniform(const char *text, double start, double end, int segment_index, ct_timing_source src,
                           ct_rec_word **words, size_t *n_words, size_t *cap) {
    size_t *st = NULL, *ln = NULL, n = 0;
    CT_TRY(ct_align_split_words(text, strlen(text), &st, &ln, &n));
    ct_status s = CT_OK;
    const double d = fmax(0.0, end - start) / (double)(n ? n : 1);
    for (size_t k = 0; k < n && s == CT_OK; k++)
        s = push_word(words, n_words, cap, start + (double)k * d, start + (double)(k + 1) * d, text + st[k], ln[k],
                      segment_index, (int)k, src);
    free(st);
    free(ln);
    return s;
}

/* Python's round() to an int for the frame bounds: half to even. */
static long long round_half_even(double x) { return (long long)nearbyint(x); }

ct_status ct_align_words(const float *em, int frames, int classes, double stride_ms, const ct_align_vocab *v,
                         ct_align_lang lang, const ct_align_segment *segs, size_t n_segs, ct_rec_word **words,
                         size_t *n_words, int *fallback) {
    *words = NULL;
    *n_words = 0;
    *fallback = 0;
    if (classes != v->n_classes)
        return ct_fail(CT_ERR_INVALID_ARG, "align: emissions have %d classes, the vocabulary %d", classes,
                       v->n_classes);
    size_t cap = 0;
    ct_status s = CT_OK;
    for (size_t i = 0; i < n_segs && s == CT_OK; i++) {
        const ct_align_segment *g = &segs[i];
        size_t *ws = NULL, *wl = NULL, nw = 0;
        s = ct_align_split_words(g->text ? g->text : "", g->text ? strlen(g->text) : 0, &ws, &wl, &nw);
        free(ws);
        free(wl);
        if (s != CT_OK) break;
        if (nw == 0) continue; /* empty after strip: no words, not a fallback */
        long long first = round_half_even(g->start * 1000.0 / stride_ms);
        long long last = round_half_even(g->end * 1000.0 / stride_ms);
        if (first < 0) first = 0;
        if (last > frames) last = frames;
        int ok = 0;
        ct_align_text t = {0};
        double *rs = NULL, *re = NULL;
        if (last - first >= 2) {
            s = ct_align_text_prepare(g->text, lang, v, &t);
            if (s == CT_ERR_INVALID_ARG) s = CT_OK; /* text the twin could not romanise: fallback */
            else if (s == CT_OK) {
                rs = malloc((t.n_words + 1) * sizeof *rs);
                re = malloc((t.n_words + 1) * sizeof *re);
                if (!rs || !re) s = ct_fail(CT_ERR_OOM, "align: word times");
            }
            const char *why = NULL;
            if (s == CT_OK && rs)
                s = ct_ctc_align_segment(em + (size_t)first * classes, (int)(last - first), classes, &t, v, stride_ms,
                                         rs, re, &ok, &why);
        }
        if (s == CT_OK && ok) {
            for (size_t w = 0; w < t.n_words && s == CT_OK; w++) {
                double a0 = fmin(g->end, fmax(g->start, g->start + rs[w]));
                double a1 = fmin(g->end, fmax(a0, g->start + re[w]));
                s = push_word(words, n_words, &cap, a0, a1, t.words[w], strlen(t.words[w]), (int)i, (int)w,
                              CT_TIMING_CTC);
            }
        } else if (s == CT_OK) {
            (*fallback)++;
            s = ct_align_uniform(g->text, g->start, g->end, (int)i, CT_TIMING_UNIFORM_FALLBACK, words, n_words, &cap);
        }
        free(rs);
        free(re);
        ct_align_text_free(&t);
    }
    if (s != CT_OK) {
        ct_align_words_free(*words, *n_words);
        *words = NULL;
        *n_words = 0;
    }
    return s;
}

ct_status ct_align_file(ct_aligner *a, const float *pcm, size_t n, const ct_align_segment *segs, size_t n_segs,
                        const ct_align_options *opts, ct_rec_word **words, size_t *n_words, int *fallback) {
    *words = NULL;
    *n_words = 0;
    *fallback = 0;
    ct_align_options def = ct_align_default_options();
    if (!opts) opts = &def;
    float *em = NULL;
    int frames = 0, classes = 0;
    double stride = 0;
    CT_TRY(ct_w2v2_emissions(a->model, pcm, n, opts->batch_size, &em, &frames, &classes, &stride));
    ct_status s = ct_align_words(em, frames, classes, stride, &a->vocab, ct_align_lang_from_code(opts->language),
                                 segs, n_segs, words, n_words, fallback);
    free(em);
    return s;
}

ct_status ct_align_smoke(void) {
    const float em[4] = {4, 0, 0, 4};
    const int32_t tg[1] = {1};
    int32_t path[2] = {-1, -1};
    CT_TRY(ct_ctc_forced_align(path, em, 2, 2, tg, 1, 0));
    if (path[0] != 0 || path[1] != 1)
        return ct_fail(CT_ERR_INTERNAL, "CTC smoke: path [%d,%d], expected [0,1]", path[0], path[1]);
    static const char *const words[4][2] = {
        {"مرحبا", "m r h b a"}, {"بكم", "b k m"}, {"في", "f y"}, {"العالم", "a l ' a l m"}};
    for (int i = 0; i < 4; i++) {
        char *tok = NULL;
        CT_TRY(ct_align_romanize(words[i][0], strlen(words[i][0]), CT_ALIGN_LANG_ARA, &tok));
        int same = !strcmp(tok, words[i][1]);
        if (!same) {
            ct_status st = ct_fail(CT_ERR_INTERNAL, "romanization smoke: '%s' gave '%s', expected '%s'", words[i][0],
                                   tok, words[i][1]);
            free(tok);
            return st;
        }
        free(tok);
    }
    return CT_OK;
}
