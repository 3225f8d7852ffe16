/* viterbi.c — torchaudio's CPU forced_align (two float32 score rows, int8
 * back-pointers, the first/end windows, its strict-inequality tie-breaking)
 * and the twin's merge_repeats / get_spans / postprocess_results, so the
 * frame-quantised word times equal the Python twin's exactly. */
#include "align/viterbi.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

ct_status ct_ctc_forced_align(int32_t *path, const float *logp, int T, int C, const int32_t *targets, int L,
                              int blank) {
    if (L <= 0) return ct_fail(CT_ERR_INVALID_ARG, "forced align: no targets");
    if (T <= 0) return ct_fail(CT_ERR_INVALID_ARG, "forced align: no frames");
    for (int i = 0; i < L; i++) {
        if (targets[i] == blank)
            return ct_fail(CT_ERR_INVALID_ARG, "forced align: targets contain the blank index (%d)", blank);
        if (targets[i] < 0 || targets[i] >= C)
            return ct_fail(CT_ERR_INVALID_ARG, "forced align: target %d outside the %d classes", targets[i], C);
    }
    int R = 0;
    for (int i = 1; i < L; i++) R += targets[i] == targets[i - 1];
    if (T < L + R)
        return ct_fail(CT_ERR_INVALID_ARG,
                       "forced align: targets length is too long for CTC: %d frames, %d targets, %d repeats", T, L,
                       R);
    const int S = 2 * L + 1;
    float *alpha = malloc(2 * (size_t)S * sizeof *alpha);
    int8_t *bp = malloc((size_t)T * (size_t)S);
    if (!alpha || !bp) {
        free(alpha);
        free(bp);
        return ct_fail(CT_ERR_OOM, "forced align: %d x %d back-pointers", T, S);
    }
    memset(bp, -1, (size_t)T * (size_t)S);
    for (int i = 0; i < 2 * S; i++) alpha[i] = -INFINITY;
#define LABEL(s) (((s) % 2 == 0) ? blank : targets[(s) / 2])
    int start = T - (L + R) > 0 ? 0 : 1;
    int end = S == 1 ? 1 : 2;
    for (int i = start; i < end; i++) alpha[i] = logp[LABEL(i)];
    for (int t = 1; t < T; t++) {
        if (T - t <= L + R) {
            if ((start % 2 == 1) && targets[start / 2] != targets[start / 2 + 1]) start++;
            start++;
        }
        if (t <= L + R) {
            if ((end % 2 == 0) && end < 2 * L && targets[end / 2 - 1] != targets[end / 2]) end++;
            end++;
        }
        float *cur = alpha + (size_t)(t % 2) * S;
        const float *prev = alpha + (size_t)((t - 1) % 2) * S;
        const float *row = logp + (size_t)t * C;
        int8_t *b = bp + (size_t)t * S;
        int loop = start;
        for (int j = 0; j < S; j++) cur[j] = -INFINITY;
        if (start == 0) {
            cur[0] = prev[0] + row[blank];
            b[0] = 0;
            loop++;
        }
        for (int i = loop; i < end; i++) {
            float x0 = prev[i], x1 = prev[i - 1], x2 = -INFINITY;
            if (i % 2 != 0 && i != 1 && targets[i / 2] != targets[i / 2 - 1]) x2 = prev[i - 2];
            float r;
            if (x2 > x1 && x2 > x0) {
                r = x2;
                b[i] = 2;
            } else if (x1 > x0 && x1 > x2) {
                r = x1;
                b[i] = 1;
            } else {
                r = x0;
                b[i] = 0;
            }
            cur[i] = r + row[LABEL(i)];
        }
    }
    const float *last = alpha + (size_t)((T - 1) % 2) * S;
    int s = last[S - 1] > last[S - 2] ? S - 1 : S - 2;
    ct_status st = CT_OK;
    for (int t = T - 1; t >= 0; t--) {
        if (s < 0 || s >= S) {
            st = ct_fail(CT_ERR_INTERNAL, "forced align: back-pointer left the states at frame %d", t);
            break;
        }
        path[t] = LABEL(s);
        int8_t step = bp[(size_t)t * S + s];
        s -= step < 0 ? 0 : step; /* frame 0 keeps -1 like torchaudio's unused pointer */
    }
#undef LABEL
    free(alpha);
    free(bp);
    return st;
}

int ct_ctc_merge_repeats(ct_ctc_seg *segs, const int32_t *path, int T) {
    int n = 0, i1 = 0;
    while (i1 < T) {
        int i2 = i1;
        while (i2 < T && path[i2] == path[i1]) i2++;
        segs[n].label = path[i1];
        segs[n].start = i1;
        segs[n].end = i2 - 1;
        n++;
        i1 = i2;
    }
    return n;
}

/* A token's letters as column ids: <star> is one letter; a letter absent from
 * the vocabulary is -1 and never matches a path label (the twin compares text). */
static int token_letters(const char *tok, int is_star, const ct_align_vocab *v, int *out) {
    if (is_star) {
        out[0] = v->star;
        return 1;
    }
    int n = 0;
    for (const char *q = tok; *q; q++)
        if (*q != ' ') out[n++] = v->letter_id[(unsigned char)*q & 0x7F];
    return n;
}

ct_status ct_ctc_word_times(const ct_ctc_seg *segs, int n_segs, const ct_align_text *t, const ct_align_vocab *v,
                            double stride_ms, double *rel_start, double *rel_end, int *ok, const char **why) {
    *ok = 0;
    *why = NULL;
    const size_t n_tok = 2 * t->n_words;
    size_t max_letters = 1;
    for (size_t w = 0; w < t->n_words; w++) {
        size_t m = strlen(t->tokens[w]);
        if (m + 1 > max_letters) max_letters = m + 1;
    }
    int *iv = malloc(2 * (n_tok + 1) * sizeof *iv);
    int *let = malloc(max_letters * sizeof *let);
    if (!iv || !let) {
        free(iv);
        free(let);
        return ct_fail(CT_ERR_OOM, "align: spans of %zu tokens", n_tok);
    }
    /* get_spans: intervals (first segment, last segment) per token */
    size_t tok = 0, n_iv = 0;
    int ltr = 0, start = 0, n_let = token_letters(t->tokens[0], 1, v, let);
    for (int si = 0; si < n_segs; si++) {
        const ct_ctc_seg *seg = &segs[si];
        if (tok == n_tok) {
            if (si != n_segs - 1 || seg->label != v->blank) {
                *why = "path continues past the last token";
                goto done;
            }
            continue;
        }
        if (seg->label == v->blank) continue;
        if (seg->label != let[ltr]) {
            *why = "path label differs from the token letter";
            goto done;
        }
        if (ltr == 0) start = si;
        if (ltr == n_let - 1) {
            ltr = 0;
            tok++;
            iv[2 * n_iv] = start;
            iv[2 * n_iv + 1] = si;
            n_iv++;
            /* an empty token right after a completed one takes that segment */
            while (tok < n_tok && !(tok % 2 == 0) && t->tokens[tok / 2][0] == 0) {
                iv[2 * n_iv] = si;
                iv[2 * n_iv + 1] = si;
                n_iv++;
                tok++;
            }
            if (tok < n_tok) n_let = token_letters(t->tokens[tok / 2], tok % 2 == 0, v, let);
        } else {
            ltr++;
        }
    }
    if (n_iv < n_tok) {
        *why = "path ended before every token was met";
        goto done;
    }
    /* spans with blank padding, then postprocess_results */
    double prev_end = 0;
    int have_prev = 0;
    for (size_t w = 0; w < t->n_words; w++) {
        if (!strcmp(t->words[w], "<star>")) {
            *why = "a word is literally <star>";
            goto done;
        }
        size_t idx = 2 * w + 1;
        int a = iv[2 * idx], b = iv[2 * idx + 1];
        int s0 = segs[a].start, e0 = segs[b].end;
        if (a > 0 && segs[a - 1].label == v->blank)
            s0 = idx == 0 ? segs[a - 1].start : (segs[a - 1].start + segs[a - 1].end) / 2;
        if (b + 1 < n_segs && segs[b + 1].label == v->blank)
            e0 = idx == n_iv - 1 ? segs[b + 1].end : (segs[b + 1].start + segs[b + 1].end) / 2;
        double ws = (double)s0 * stride_ms / 1000.0;
        double we = (double)(e0 + 1) * stride_ms / 1000.0;
        if (have_prev && ws < prev_end) ws = prev_end;
        rel_start[w] = ws;
        rel_end[w] = we;
        prev_end = we;
        have_prev = 1;
    }
    *ok = 1;
done:
    free(iv);
    free(let);
    return CT_OK;
}

ct_status ct_ctc_align_segment(const float *logp, int T, int C, const ct_align_text *t, const ct_align_vocab *v,
                               double stride_ms, double *rel_start, double *rel_end, int *ok, const char **why) {
    *ok = 0;
    *why = NULL;
    if (t->n_targets == 0) {
        *why = "transcript produced no aligner vocabulary tokens";
        return CT_OK;
    }
    int32_t *path = malloc((size_t)T * sizeof *path);
    ct_ctc_seg *segs = malloc((size_t)T * sizeof *segs);
    if (!path || !segs) {
        free(path);
        free(segs);
        return ct_fail(CT_ERR_OOM, "align: path of %d frames", T);
    }
    ct_status st = ct_ctc_forced_align(path, logp, T, C, t->targets, (int)t->n_targets, v->blank);
    if (st == CT_ERR_INVALID_ARG) {
        *why = "forced alignment refused the segment (too few frames for the targets)";
        st = CT_OK;
    } else if (st == CT_OK) {
        int n = ct_ctc_merge_repeats(segs, path, T);
        st = ct_ctc_word_times(segs, n, t, v, stride_ms, rel_start, rel_end, ok, why);
    }
    free(path);
    free(segs);
    return st;
}
