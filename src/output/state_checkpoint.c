/* state_checkpoint.c — manifest and ASR checkpoint payloads from a record
 * (PRODUCT-DETAILS §3.4–3.5), and checkpoint restore: the §3.5 rules with
 * the original's reasons, validating everything before touching the record
 * so that a rejected checkpoint leaves nothing behind.
 */
#include "output/state.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/digest.h"
#include "output/render.h"
#include "output/state_internal.h"

static json_t *pair_real(double a, double b, int *ok) {
    json_t *p = json_array();
    ct_japp(p, ct_jreal(a), ok);
    ct_japp(p, ct_jreal(b), ok);
    return p;
}

static json_t *sorted_ints(const int *v, size_t n, int *ok) {
    int *c = n ? malloc(n * sizeof *c) : NULL;
    json_t *a = json_array();
    if (n && !c) {
        *ok = 0;
        return a;
    }
    if (n) memcpy(c, v, n * sizeof *c);
    /* insertion sort: these lists are short */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && c[j - 1] > c[j]; j--) {
            int t = c[j];
            c[j] = c[j - 1];
            c[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++) ct_japp(a, json_integer(c[i]), ok);
    free(c);
    return a;
}

static void head(json_t *p, const char *kind, const ct_file_record *r, const char *asr_key,
                 const ct_source_snapshot *src, int *ok) {
    ct_jset(p, "kind", json_string(kind), ok);
    ct_jset(p, "generation_id", ct_jstr_or_null(r->generation_id), ok);
    ct_jset(p, "asr_contract_key", ct_jstr_or_null(asr_key), ok);
}

ct_status ct_manifest_payload(const ct_file_record *r, const char *asr_key, const char *render_key,
                              const ct_source_snapshot *src, double updated, const ct_output_member *outs,
                              size_t n_outs, json_t **out) {
    *out = NULL;
    if (!r->generation_id || !r->generation_id[0])
        return ct_fail(CT_ERR_INVALID_ARG, "manifest: the record has no generation id");
    int ok = 1;
    json_t *p = json_object();
    head(p, "published", r, asr_key, src, &ok);
    ct_jset(p, "render_contract_key", ct_jstr_or_null(render_key), &ok);
    ct_jset(p, "source", ct_source_snapshot_json(src), &ok);
    ct_jset(p, "updated_unix_seconds", ct_jreal(updated), &ok);
    /* outputs keyed by format name, in sorted key order */
    size_t order[CT_FORMAT_COUNT];
    if (n_outs > CT_FORMAT_COUNT) {
        json_decref(p);
        return ct_fail(CT_ERR_INVALID_ARG, "manifest: %zu outputs (at most one per format)", n_outs);
    }
    size_t n = n_outs;
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(ct_format_name(outs[order[j - 1]].format),
                                           ct_format_name(outs[order[j]].format)) > 0; j--) {
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    json_t *o = json_object();
    ct_status st = CT_OK;
    for (size_t i = 0; i < n && st == CT_OK; i++) {
        const ct_output_member *m = &outs[order[i]];
        char hex[65];
        st = ct_sha256_hex(m->data ? m->data : "", m->len, hex);
        json_t *rec = json_object();
        ct_jset(rec, "name", json_string(m->name), &ok);
        ct_jset(rec, "size", json_integer((json_int_t)m->len), &ok);
        ct_jset(rec, "sha256", json_string(hex), &ok);
        ct_jset(o, ct_format_name(m->format), rec, &ok);
    }
    ct_jset(p, "outputs", o, &ok);
    if (st == CT_OK && !ok) st = ct_fail(CT_ERR_INVALID_ARG, "manifest: a value could not be stored");
    if (st != CT_OK) {
        json_decref(p);
        return st;
    }
    *out = p;
    return CT_OK;
}

ct_status ct_checkpoint_payload(const ct_file_record *r, const char *asr_key, const ct_source_snapshot *src,
                                double updated, json_t **out) {
    *out = NULL;
    if (!r->generation_id || !r->generation_id[0])
        return ct_fail(CT_ERR_INVALID_ARG, "checkpoint: the record has no generation id");
    int ok = 1;
    json_t *p = json_object();
    head(p, "asr_complete", r, asr_key, src, &ok);
    ct_jset(p, "source", ct_source_snapshot_json(src), &ok);
    ct_jset(p, "updated_unix_seconds", ct_jreal(updated), &ok);
    json_t *c = json_object();
    ct_jset(c, "duration", ct_jreal(r->duration), &ok);
    json_t *times = json_array(), *spans = json_array(), *texts = json_array(), *tokens = json_array();
    for (size_t i = 0; i < r->n_segments; i++) {
        const ct_rec_segment *s = &r->segments[i];
        ct_japp(times, pair_real(s->start, s->end, &ok), &ok);
        ct_japp(texts, json_string(s->text ? s->text : ""), &ok);
    }
    for (size_t i = 0; i < r->n_speech_spans; i++)
        ct_japp(spans, pair_real(r->speech_spans[i].start, r->speech_spans[i].end, &ok), &ok);
    /* [index, count] sorted by index; a negative count means "not recorded" */
    size_t *ord = r->n_segments ? malloc(r->n_segments * sizeof *ord) : NULL;
    if (r->n_segments && !ord) ok = 0;
    size_t m = 0;
    for (size_t i = 0; ord && i < r->n_segments; i++)
        if (r->segments[i].generated_tokens >= 0) ord[m++] = i;
    for (size_t i = 1; i < m; i++)
        for (size_t j = i; j > 0 && r->segments[ord[j - 1]].index > r->segments[ord[j]].index; j--) {
            size_t t = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = t;
        }
    for (size_t i = 0; i < m; i++) {
        json_t *row = json_array();
        ct_japp(row, json_integer(r->segments[ord[i]].index), &ok);
        ct_japp(row, json_integer(r->segments[ord[i]].generated_tokens), &ok);
        ct_japp(tokens, row, &ok);
    }
    free(ord);
    ct_jset(c, "segment_times", times, &ok);
    ct_jset(c, "speech_spans", spans, &ok);
    ct_jset(c, "segment_texts", texts, &ok);
    ct_jset(c, "generated_tokens", tokens, &ok);
    ct_jset(c, "repetition_stopped_segments", sorted_ints(r->repetition_stopped, r->n_repetition_stopped, &ok), &ok);
    ct_jset(c, "truncation_retried_segments", sorted_ints(r->truncation_retried, r->n_truncation_retried, &ok), &ok);
    ct_jset(c, "token_limit_segments", sorted_ints(r->token_limit, r->n_token_limit, &ok), &ok);
    ct_jset(c, "decode_backend", ct_jstr_or_null(r->decode_backend), &ok);
    ct_jset(c, "decode_fallback_reason", ct_jstr_or_null(r->decode_fallback_reason), &ok);
    ct_jset(c, "vad_engine_actual", ct_jstr_or_null(r->vad_engine_actual), &ok);
    ct_jset(c, "vad_provider", ct_jstr_or_null(r->vad_provider), &ok);
    ct_jset(c, "vad_provider_options", ct_provider_options_json(r->vad_provider), &ok);
    ct_jset(c, "vad_fallback_reason", ct_jstr_or_null(r->vad_fallback_reason), &ok);
    ct_jset(p, "checkpoint", c, &ok);
    if (!ok) {
        json_decref(p);
        return ct_fail(CT_ERR_INVALID_ARG, "checkpoint: a value could not be stored (NaN or out of memory)");
    }
    *out = p;
    return CT_OK;
}

/* ---- restore ---------------------------------------------------------- */

/* The restored content, built aside and moved into the record at the end. */
typedef struct restored {
    double duration;
    ct_span *times, *spans;
    size_t n_times, n_spans;
    char **texts;
    int *tokens; /* per segment; -1: not recorded */
    int *lists[3];
    size_t n_lists[3];
    char *prov[5];
} restored;

static void restored_free(restored *x) {
    free(x->times);
    free(x->spans);
    for (size_t i = 0; x->texts && i < x->n_times; i++) free(x->texts[i]);
    free(x->texts);
    free(x->tokens);
    for (int i = 0; i < 3; i++) free(x->lists[i]);
    for (int i = 0; i < 5; i++) free(x->prov[i]);
}

static const char *k_lists[3] = {"repetition_stopped_segments", "truncation_retried_segments",
                                 "token_limit_segments"};
static const char *k_prov[5] = {"decode_backend", "decode_fallback_reason", "vad_engine_actual", "vad_provider",
                                "vad_fallback_reason"};

/* Validated [start, end] rows (clamped ends) or a detail message. */
static const char *spans_of(const json_t *v, double duration, const char *name, ct_span **out, size_t *n,
                            char *detail, size_t dn) {
    *out = NULL;
    *n = 0;
    if (!json_is_array(v)) return snprintf(detail, dn, "%s is not a list", name), detail;
    size_t count = json_array_size(v);
    ct_span *s = count ? malloc(count * sizeof *s) : NULL;
    if (count && !s) return snprintf(detail, dn, "out of memory"), detail;
    for (size_t i = 0; i < count; i++) {
        const json_t *row = json_array_get(v, i);
        const char *why = NULL;
        if (!json_is_array(row) || json_array_size(row) != 2) why = "contains an invalid row";
        else if (!json_is_number(json_array_get(row, 0)) || !json_is_number(json_array_get(row, 1)))
            why = "contains a non-numeric row";
        double a = 0, b = 0;
        if (!why) {
            a = json_number_value(json_array_get(row, 0));
            b = json_number_value(json_array_get(row, 1));
            if (!(isfinite(a) && isfinite(b) && 0 <= a && a <= b && b <= duration + 1e-6))
                why = "contains an out-of-range row";
            else if (i > 0 && a < s[i - 1].end)
                why = "contains overlapping or out-of-order rows";
        }
        if (why) {
            free(s);
            return snprintf(detail, dn, "%s %s", name, why), detail;
        }
        s[i] = (ct_span){a, fmin(duration, b)};
    }
    *out = s;
    *n = count;
    return NULL;
}

static const char *index_list(const json_t *c, const char *name, size_t nseg, int **out, size_t *n, char *detail,
                              size_t dn) {
    *out = NULL;
    *n = 0;
    const json_t *v = json_object_get(c, name);
    if (!v) return NULL; /* absent: empty */
    size_t count = json_is_array(v) ? json_array_size(v) : 0;
    int *x = count ? malloc(count * sizeof *x) : NULL;
    int bad = !json_is_array(v) || (count && !x);
    for (size_t i = 0; !bad && i < count; i++) {
        const json_t *e = json_array_get(v, i);
        if (!json_is_integer(e) || json_integer_value(e) < 0 || (size_t)json_integer_value(e) >= nseg) bad = 1;
        else x[i] = (int)json_integer_value(e);
    }
    if (bad) {
        free(x);
        return snprintf(detail, dn, "%s is invalid", name), detail;
    }
    for (size_t i = 1; i < count; i++)
        for (size_t j = i; j > 0 && x[j - 1] > x[j]; j--) {
            int t = x[j];
            x[j] = x[j - 1];
            x[j - 1] = t;
        }
    for (size_t i = 1; i < count; i++)
        if (x[i] == x[i - 1]) {
            free(x);
            return snprintf(detail, dn, "%s contains duplicate indices", name), detail;
        }
    *out = x;
    *n = count;
    return NULL;
}

static const char *validate(const json_t *p, restored *x, char *detail, size_t dn) {
    const json_t *gid = json_object_get(p, "generation_id");
    if (!json_is_string(gid) || json_string_length(gid) == 0) return "generation_id is invalid";
    const json_t *c = json_object_get(p, "checkpoint");
    if (!json_is_object(c)) return "checkpoint is not an object";
    const json_t *d = json_object_get(c, "duration");
    if (!json_is_number(d)) return "duration is not numeric";
    x->duration = json_number_value(d);
    if (!isfinite(x->duration) || x->duration < 0) return "duration is invalid";
    const char *why;
    if ((why = spans_of(json_object_get(c, "segment_times"), x->duration, "segment_times", &x->times, &x->n_times,
                        detail, dn)))
        return why;
    if ((why = spans_of(json_object_get(c, "speech_spans"), x->duration, "speech_spans", &x->spans, &x->n_spans,
                        detail, dn)))
        return why;
    const json_t *texts = json_object_get(c, "segment_texts");
    if (!json_is_array(texts)) return "segment_texts is invalid";
    for (size_t i = 0; i < json_array_size(texts); i++)
        if (!json_is_string(json_array_get(texts, i))) return "segment_texts is invalid";
    if (json_array_size(texts) != x->n_times) return "segment text/time counts differ";
    size_t nseg = x->n_times;
    x->texts = calloc(nseg ? nseg : 1, sizeof *x->texts);
    x->tokens = malloc((nseg ? nseg : 1) * sizeof *x->tokens);
    if (!x->texts || !x->tokens) return "out of memory";
    for (size_t i = 0; i < nseg; i++) {
        x->tokens[i] = -1;
        x->texts[i] = strdup(json_string_value(json_array_get(texts, i)));
        if (!x->texts[i]) return "out of memory";
    }
    const json_t *gt = json_object_get(c, "generated_tokens");
    if (gt && !json_is_array(gt)) return "generated_tokens is invalid";
    for (size_t i = 0; gt && i < json_array_size(gt); i++) {
        const json_t *row = json_array_get(gt, i);
        if (!json_is_array(row) || json_array_size(row) != 2 || !json_is_integer(json_array_get(row, 0)) ||
            !json_is_integer(json_array_get(row, 1)))
            return "generated_tokens contains an invalid row";
        json_int_t idx = json_integer_value(json_array_get(row, 0)), cnt = json_integer_value(json_array_get(row, 1));
        if (idx < 0 || (size_t)idx >= nseg || cnt < 0 || cnt > 0x7fffffff)
            return "generated_tokens contains an invalid row";
        if (x->tokens[idx] >= 0) return "generated_tokens contains a duplicate segment index";
        x->tokens[idx] = (int)cnt;
    }
    for (int k = 0; k < 5; k++) {
        const json_t *v = json_object_get(c, k_prov[k]);
        if (v && !json_is_null(v) && !json_is_string(v)) return "checkpoint provenance strings are invalid";
    }
    const json_t *po = json_object_get(c, "vad_provider_options");
    if (po && !json_is_null(po) && !json_is_object(po)) return "vad_provider_options is invalid";
    /* the index lists last, as the original checks them */
    for (int k = 0; k < 3; k++)
        if ((why = index_list(c, k_lists[k], nseg, &x->lists[k], &x->n_lists[k], detail, dn))) return why;
    for (int k = 0; k < 5; k++) {
        const json_t *v = json_object_get(c, k_prov[k]);
        if (json_is_string(v) && !(x->prov[k] = strdup(json_string_value(v)))) return "out of memory";
    }
    return NULL;
}

static ct_status move_into(restored *x, const json_t *p, ct_file_record *r) {
    ct_rec_segment *segs = calloc(x->n_times ? x->n_times : 1, sizeof *segs);
    char *gid = strdup(json_string_value(json_object_get(p, "generation_id")));
    if (!segs || !gid) {
        free(segs);
        free(gid);
        return ct_fail(CT_ERR_OOM, "checkpoint: out of memory");
    }
    for (size_t i = 0; i < r->n_segments; i++) free(r->segments[i].text);
    free(r->segments);
    for (size_t i = 0; i < x->n_times; i++) {
        segs[i] = (ct_rec_segment){(int)i, x->times[i].start, x->times[i].end, x->texts[i], x->tokens[i]};
        x->texts[i] = NULL;
    }
    r->segments = segs;
    r->n_segments = x->n_times;
    r->duration = x->duration;
    free(r->speech_spans);
    r->speech_spans = x->spans;
    r->n_speech_spans = x->n_spans;
    x->spans = NULL;
    int **lists[3] = {&r->repetition_stopped, &r->truncation_retried, &r->token_limit};
    size_t *counts[3] = {&r->n_repetition_stopped, &r->n_truncation_retried, &r->n_token_limit};
    for (int k = 0; k < 3; k++) {
        free(*lists[k]);
        *lists[k] = x->lists[k];
        *counts[k] = x->n_lists[k];
        x->lists[k] = NULL;
    }
    char **prov[5] = {&r->decode_backend, &r->decode_fallback_reason, &r->vad_engine_actual, &r->vad_provider,
                      &r->vad_fallback_reason};
    for (int k = 0; k < 5; k++) {
        free(*prov[k]);
        *prov[k] = x->prov[k];
        x->prov[k] = NULL;
    }
    free(r->generation_id);
    r->generation_id = gid;
    r->resumed = 1;
    return CT_OK;
}

ct_status ct_checkpoint_restore_payload(const json_t *p, const char *asr_key, const ct_source_snapshot *fresh,
                                        ct_file_record *r, int *ok, char reason[CT_REASON_MAX]) {
    *ok = 0;
    reason[0] = '\0';
    const json_t *kind = json_object_get(p, "kind");
    if (!json_is_string(kind) || strcmp(json_string_value(kind), "asr_complete") != 0) {
        char *k = kind ? json_dumps(kind, JSON_ENCODE_ANY) : NULL;
        ct_state_reason(ok, reason, "state is %s, not an ASR checkpoint", k ? k : "nil");
        free(k);
        return CT_OK;
    }
    const json_t *key = json_object_get(p, "asr_contract_key");
    if (!json_is_string(key) || !asr_key || strcmp(json_string_value(key), asr_key) != 0) {
        ct_state_reason(ok, reason, "ASR checkpoint contract does not match");
        return CT_OK;
    }
    /* the file's identity, not the path it was reached by (ct_source_matches) */
    int same = ct_source_matches(json_object_get(p, "source"), fresh);
    if (!same) {
        ct_state_reason(ok, reason, "state marker source snapshot does not match");
        return CT_OK;
    }
    restored x = {0};
    char detail[512];
    const char *why = validate(p, &x, detail, sizeof detail);
    ct_status st = CT_OK;
    if (why && strcmp(why, "out of memory") == 0) st = ct_fail(CT_ERR_OOM, "checkpoint: out of memory");
    else if (why) ct_state_reason(ok, reason, "ASR checkpoint is invalid (%s)", why);
    else if ((st = move_into(&x, p, r)) == CT_OK) *ok = 1;
    restored_free(&x);
    return st;
}

ct_status ct_checkpoint_restore(int dirfd, const char *name, const char *asr_key, const ct_source_snapshot *fresh,
                                ct_file_record *r, int *ok, char reason[CT_REASON_MAX]) {
    json_t *p;
    CT_TRY(ct_state_read(dirfd, name, &p, ok, reason));
    if (!*ok) return CT_OK;
    ct_status st = ct_checkpoint_restore_payload(p, asr_key, fresh, r, ok, reason);
    json_decref(p);
    return st;
}
