/* cues.c — grouping words into subtitle cues and fixing their bounds
 * (cues.h, PRODUCT-DETAILS §5.1–5.2), in the original's order of checks.
 */
#include "output/cues.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "output/pytext.h"

int ct_cue_sentence_end(uint32_t c) {
    return c == '.' || c == '!' || c == '?' || c == 0x061F || c == 0x060C || c == 0x061B || c == 0x2026;
}

ct_cue_limits ct_cue_limits_from(const ct_transcriber_options *o, double media_duration) {
    ct_cue_limits l = {o->max_chars, o->max_cue_dur, o->max_gap, CT_MIN_CUE_DURATION, media_duration};
    return l;
}

static void free_cues(ct_rec_cue *c, size_t n) {
    for (size_t i = 0; i < n; i++) free(c[i].text);
    free(c);
}

/* Joined texts of words[a..b) by single spaces, then Python-stripped. */
static char *join_words(const ct_rec_word *w, size_t a, size_t b) {
    size_t len = 0;
    for (size_t i = a; i < b; i++) len += strlen(w[i].text) + 1;
    char *s = malloc(len + 1), *p = s;
    if (!s) return NULL;
    for (size_t i = a; i < b; i++) {
        if (i > a) *p++ = ' ';
        size_t k = strlen(w[i].text);
        memcpy(p, w[i].text, k);
        p += k;
    }
    *p = '\0';
    size_t off, sl;
    ct_py_strip_range(s, (size_t)(p - s), &off, &sl);
    memmove(s, s + off, sl);
    s[sl] = '\0';
    return s;
}

ct_status ct_cues_build(const ct_rec_word *words, size_t n, const ct_cue_limits *lim, ct_rec_cue **out,
                        size_t *count) {
    *out = NULL;
    *count = 0;
    if (!n) return CT_OK;
    /* Group bounds: group g is words[first[g] .. first[g+1]). */
    size_t *first = malloc((n + 1) * sizeof *first);
    ct_rec_cue *cues = calloc(n, sizeof *cues);
    if (!first || !cues) {
        free(first);
        free(cues);
        return ct_fail(CT_ERR_OOM, "cues: out of memory");
    }
    size_t ng = 0, gstart = 0, glen = 0; /* current group: words[gstart..gstart+glen) */
    size_t chars = 0;                    /* code points of the current group's joined text */
    for (size_t i = 0; i < n; i++) {
        const ct_rec_word *w = &words[i];
        size_t wlen = ct_py_len(w->text, strlen(w->text));
        if (glen) {
            size_t cand = chars + 1 + wlen;
            double gap = w->start - words[gstart + glen - 1].end;
            double dur = w->end - words[gstart].start;
            if (cand > (size_t)(lim->max_chars < 0 ? 0 : lim->max_chars) || dur > lim->max_duration ||
                gap > lim->max_gap) {
                first[ng++] = gstart;
                glen = 0;
            }
        }
        if (!glen) gstart = i, chars = wlen;
        else chars += 1 + wlen;
        glen++;
        if (ct_cue_sentence_end(ct_py_last_char(w->text, strlen(w->text)))) {
            first[ng++] = gstart;
            glen = 0;
        }
    }
    if (glen) first[ng++] = gstart;
    first[ng] = n;
    /* Groups are contiguous and cover every word, so first[g+1] ends g. */
    for (size_t g = 0; g < ng; g++) {
        const ct_rec_word *a = &words[first[g]], *b = &words[first[g + 1] - 1];
        cues[g].start = fmax(0.0, a->start);
        cues[g].end = fmax(a->start, b->end);
        cues[g].text = join_words(words, first[g], first[g + 1]);
        if (!cues[g].text) {
            free(first);
            free_cues(cues, ng);
            return ct_fail(CT_ERR_OOM, "cues: out of memory");
        }
    }
    free(first);
    int media = isfinite(lim->media_duration) && lim->media_duration >= 0;
    double m = media ? lim->media_duration : INFINITY;
    for (size_t g = 0; g < ng; g++) {
        /* next_start is the next cue's start before its own clamp (the
         * original updates cues in order and reads cue i+1 unmodified). */
        double next_start = g + 1 < ng ? cues[g + 1].start : INFINITY;
        if (media) {
            cues[g].start = fmin(cues[g].start, m);
            cues[g].end = fmin(fmax(cues[g].start, cues[g].end), m);
        }
        double upper = fmin(next_start, m);
        double desired = fmax(cues[g].end, cues[g].start + lim->min_duration);
        cues[g].end = fmax(cues[g].start, fmin(desired, upper));
    }
    *out = cues;
    *count = ng;
    return CT_OK;
}

ct_status ct_cues_build_record(ct_file_record *r, const ct_transcriber_options *o) {
    ct_rec_cue *c = NULL;
    size_t n = 0;
    int none = o->alignment == CT_ALIGN_NONE || o->text_only;
    if (!none) {
        ct_cue_limits lim = ct_cue_limits_from(o, r->duration);
        CT_TRY(ct_cues_build(r->words, r->n_words, &lim, &c, &n));
    }
    free_cues(r->cues, r->n_cues);
    r->cues = c;
    r->n_cues = n;
    return CT_OK;
}
