/* transcript_json.c — the schema-8 transcript (transcript_json.h,
 * PRODUCT-DETAILS §1.2) built as a jansson tree in the original's key
 * order, and the implementation artifacts list it and the contracts name.
 */
#include "output/transcript_json.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/digest.h"
#include "output/pytext.h"

/* ---- artifacts -------------------------------------------------------- */

void ct_artifacts_free(ct_artifacts *a) {
    if (!a) return;
    for (size_t i = 0; i < a->n; i++) free(a->v[i].key);
    free(a->v);
    memset(a, 0, sizeof *a);
}

ct_status ct_artifacts_add(ct_artifacts *a, const char *key, const char *hex) {
    ct_artifact *v = realloc(a->v, (a->n + 1) * sizeof *v);
    if (!v) return ct_fail(CT_ERR_OOM, "artifacts: out of memory");
    a->v = v;
    char *k = strdup(key);
    if (!k) return ct_fail(CT_ERR_OOM, "artifacts: out of memory");
    size_t at = a->n;
    while (at > 0 && strcmp(a->v[at - 1].key, k) > 0) at--;
    memmove(&a->v[at + 1], &a->v[at], (a->n - at) * sizeof *v);
    a->v[at].key = k;
    snprintf(a->v[at].sha256, sizeof a->v[at].sha256, "%s", hex);
    a->n++;
    return CT_OK;
}

static ct_status add_file(ct_artifacts *a, const char *prefix, const char *path) {
    char hex[65];
    CT_TRY(ct_file_sha256(path, hex));
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char key[PATH_MAX];
    snprintf(key, sizeof key, "%s/%s", prefix, base);
    return ct_artifacts_add(a, key, hex);
}

ct_status ct_artifacts_compute(const char *vad_weights, ct_artifacts *out) {
    memset(out, 0, sizeof *out);
    char exe[PATH_MAX];
    ct_status st = CT_OK;
    if (!realpath("/proc/self/exe", exe)) return ct_fail(CT_ERR_IO, "artifacts: cannot resolve /proc/self/exe");
    st = add_file(out, "bin", exe);
    /* The library holding this function, when it is a shared object. */
    Dl_info info;
    char lib[PATH_MAX];
    if (st == CT_OK && dladdr((void *)&ct_artifacts_compute, &info) && info.dli_fname &&
        realpath(info.dli_fname, lib) && strcmp(lib, exe) != 0)
        st = add_file(out, "lib", lib);
    if (st == CT_OK && vad_weights) {
        char hex[65];
        st = ct_file_sha256(vad_weights, hex);
        if (st == CT_OK) st = ct_artifacts_add(out, "vad/silero_vad.onnx", hex);
    }
    if (st != CT_OK) ct_artifacts_free(out);
    return st;
}

static pthread_mutex_t g_art_mu = PTHREAD_MUTEX_INITIALIZER;
static ct_artifacts g_art;
static int g_art_done;

ct_status ct_artifacts_process(const char *vad_weights, const ct_artifacts **out) {
    ct_status st = CT_OK;
    pthread_mutex_lock(&g_art_mu);
    if (!g_art_done) {
        st = ct_artifacts_compute(vad_weights, &g_art);
        if (st == CT_OK) g_art_done = 1;
    }
    pthread_mutex_unlock(&g_art_mu);
    *out = st == CT_OK ? &g_art : NULL;
    return st;
}

/* ---- names ------------------------------------------------------------ */

const char *ct_vad_mode_name(ct_vad_policy v) {
    return v == CT_VAD_MODE_AUDITOK ? "auditok" : v == CT_VAD_MODE_NONE ? "none" : "silero";
}

const char *ct_vad_engine_name(ct_vad_engine e) {
    switch (e) {
    case CT_VAD_ENGINE_TORCH: return "torch";
    case CT_VAD_ENGINE_ONNX: return "onnx";
    case CT_VAD_ENGINE_JIT: return "jit";
    default: return "auto";
    }
}

const char *ct_alignment_name(ct_alignment a) {
    return a == CT_ALIGN_WORD ? "word" : a == CT_ALIGN_NONE ? "none" : "segment";
}

ct_alignment ct_timing_mode(const ct_transcriber_options *o) { return o->text_only ? CT_ALIGN_NONE : o->alignment; }

/* ---- the document ----------------------------------------------------- */

json_t *ct_implementation_json(const ct_output_context *ctx) {
    int ok = 1;
    json_t *impl = json_object(), *map = json_object();
    if (!impl || !map) ok = 0;
    for (size_t i = 0; ok && ctx->artifacts && i < ctx->artifacts->n; i++)
        ct_jset(map, ctx->artifacts->v[i].key, json_string(ctx->artifacts->v[i].sha256), &ok);
    if (impl) {
        ct_jset(impl, "package_version", json_string(ctx->package_version ? ctx->package_version : ""), &ok);
        ct_jset(impl, "artifacts_sha256", map, &ok);
        map = NULL;
    }
    json_decref(map);
    if (!ok) {
        json_decref(impl);
        return NULL;
    }
    return impl;
}

json_t *ct_provider_options_json(const char *provider) {
    if (!provider) return json_null();
    json_t *o = json_object();
    if (!o) return NULL;
    const char *p = provider;
    int ok = 1;
    while (*p) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n) {
            char name[256];
            if (n >= sizeof name) n = sizeof name - 1;
            memcpy(name, p, n);
            name[n] = '\0';
            ct_jset(o, name, json_object(), &ok);
        }
        p += n + (c ? 1 : 0);
        if (!c) break;
    }
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *span_obj(double s, double e) {
    json_t *o = json_object();
    int ok = 1;
    ct_jset(o, "start", ct_jreal(s), &ok);
    ct_jset(o, "end", ct_jreal(e), &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static json_t *parameters(const ct_transcriber_options *o, int *ok) {
    json_t *p = json_object();
    ct_jset(p, "max_duration_seconds", ct_jreal(o->max_dur), ok);
    if (o->vad == CT_VAD_MODE_SILERO) {
        ct_jset(p, "min_duration_seconds", ct_jreal(o->min_dur), ok);
        ct_jset(p, "threshold", ct_jreal(o->vad_threshold), ok);
        ct_jset(p, "min_silence_ms", json_integer(o->min_silence_ms), ok);
        ct_jset(p, "speech_pad_ms", json_integer(o->speech_pad_ms), ok);
    } else if (o->vad == CT_VAD_MODE_AUDITOK) {
        ct_jset(p, "min_duration_seconds", ct_jreal(o->min_dur), ok);
        ct_jset(p, "max_silence_seconds", ct_jreal(o->max_silence), ok);
        ct_jset(p, "energy_threshold", ct_jreal(o->energy_threshold), ok);
    }
    return p;
}

static json_t *segmentation_details(const ct_file_record *r, const ct_transcriber_options *o, int *ok) {
    json_t *d = json_object();
    int silero = o->vad == CT_VAD_MODE_SILERO;
    ct_jset(d, "mode", json_string(ct_vad_mode_name(o->vad)), ok);
    ct_jset(d, "requested_engine", silero ? json_string(ct_vad_engine_name(o->vad_engine)) : json_null(), ok);
    ct_jset(d, "actual_engine", ct_jstr_or_null(r->vad_engine_actual), ok);
    ct_jset(d, "provider", ct_jstr_or_null(r->vad_provider), ok);
    ct_jset(d, "provider_options", ct_provider_options_json(r->vad_provider), ok);
    ct_jset(d, "fallback_reason", ct_jstr_or_null(r->vad_fallback_reason), ok);
    ct_jset(d, "merge", json_boolean(o->vad_merge), ok);
    ct_jset(d, "parameters", parameters(o, ok), ok);
    json_t *spans = json_array();
    if (r->n_speech_spans)
        for (size_t i = 0; i < r->n_speech_spans; i++)
            ct_japp(spans, span_obj(r->speech_spans[i].start, r->speech_spans[i].end), ok);
    else
        for (size_t i = 0; i < r->n_segments; i++)
            ct_japp(spans, span_obj(r->segments[i].start, r->segments[i].end), ok);
    ct_jset(d, "speech_spans", spans, ok);
    return d;
}

json_t *ct_aligner_model_json(const char *ver) {
    int ok = 1;
    json_t *a = json_object(), *k = json_object(), *u = json_object(), *ro = json_object();
    ct_jset(a, "id", json_string("MahmoudAshraf/mms-300m-1130-forced-aligner"), &ok);
    ct_jset(a, "revision", json_string("49402e9577b1158620820667c218cd494cc44486"), &ok);
    ct_jset(k, "distribution", json_string("cohere-transcribe"), &ok);
    ct_jset(k, "operation", json_string("Cohere::Transcribe::Alignment::CTC.forced_align"), &ok);
    ct_jset(k, "version", json_string(ver ? ver : ""), &ok);
    ct_jset(a, "kernel", k, &ok);
    ct_jset(u, "distribution", json_string("cohere-transcribe"), &ok);
    ct_jset(u, "location", json_string("cohere/transcribe/alignment"), &ok);
    ct_jset(u, "repository", json_string("https://github.com/MahmoudAshraf97/ctc-forced-aligner.git"), &ok);
    ct_jset(u, "revision", json_string("11855d1de76af2b490dd2e8e2db2661805ae90a0"), &ok);
    ct_jset(a, "utility_package", u, &ok);
    ct_jset(ro, "distribution", json_string("cohere-transcribe"), &ok);
    ct_jset(ro, "version", json_string("1.3.1.1-compatible-ruby-port"), &ok);
    ct_jset(a, "romanizer", ro, &ok);
    if (!ok) {
        json_decref(a);
        return NULL;
    }
    return a;
}

json_t *ct_asr_model_json(const char *id, const ct_output_context *ctx, int *ok) {
    json_t *asr = json_object();
    ct_jset(asr, "id", ct_jstr_or_null(id), ok);
    ct_jset(asr, "revision", ct_jstr_or_null(ctx->model_revision), ok);
    ct_jset(asr, "format", json_string("dense"), ok);
    ct_jset(asr, "quantization", json_null(), ok);
    if (ctx->adapter_id) {
        json_t *ad = json_object();
        ct_jset(ad, "id", json_string(ctx->adapter_id), ok);
        ct_jset(ad, "revision", ct_jstr_or_null(ctx->adapter_revision), ok);
        ct_jset(asr, "adapter", ad, ok);
    } else {
        ct_jset(asr, "adapter", json_null(), ok);
    }
    return asr;
}

static json_t *models(const ct_file_record *r, const ct_transcriber_options *o, const ct_output_context *ctx,
                      int *ok) {
    const char *ver = ctx->package_version ? ctx->package_version : "";
    json_t *m = json_object();
    ct_jset(m, "asr", ct_asr_model_json(ctx->model_id, ctx, ok), ok);
    if (o->vad == CT_VAD_MODE_SILERO) {
        json_t *v = json_object();
        ct_jset(v, "source", json_string("silero-vad"), ok);
        ct_jset(v, "source_version", json_string(CT_SILERO_SOURCE_VERSION), ok);
        ct_jset(v, "distribution", json_string("cohere-transcribe"), ok);
        ct_jset(v, "version", json_string(ver), ok);
        ct_jset(v, "weight_asset", json_string("cohere/transcribe/vad/silero_vad_v6.onnx"), ok);
        int onnx = r->vad_engine_actual && strncmp(r->vad_engine_actual, "onnx", 4) == 0;
        ct_jset(v, "implementation", onnx ? json_string("sequence-onnx") : json_null(), ok);
        ct_jset(m, "vad", v, ok);
    } else {
        ct_jset(m, "vad", json_null(), ok);
    }
    ct_jset(m, "aligner", ct_timing_mode(o) == CT_ALIGN_WORD ? ct_aligner_model_json(ver) : json_null(), ok);
    return m;
}

static json_t *int_array(const int *v, size_t n, int *ok) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) ct_japp(a, json_integer(v[i]), ok);
    return a;
}

/* The stripped text of a segment as a new JSON string, or NULL when empty. */
static json_t *stripped(const char *t, int *ok) {
    t = t ? t : "";
    size_t off, len;
    ct_py_strip_range(t, strlen(t), &off, &len);
    if (!len) return NULL;
    json_t *s = json_stringn(t + off, len);
    if (!s) *ok = 0;
    return s;
}

ct_status ct_transcript_json_tree(const ct_file_record *r, const ct_transcriber_options *o,
                                  const ct_output_context *ctx, json_t **out) {
    *out = NULL;
    int ok = 1;
    json_t *doc = json_object();
    if (!doc) return ct_fail(CT_ERR_OOM, "transcript json: out of memory");
    ct_jset(doc, "schema_version", json_integer(CT_OUTPUT_SCHEMA_VERSION), &ok);
    ct_jset(doc, "implementation", ct_implementation_json(ctx), &ok);
    json_t *src = json_object();
    ct_jset(src, "path", ct_jstr_or_null(r->source_path), &ok);
    ct_jset(src, "duration_seconds", ct_jreal(r->duration), &ok);
    ct_jset(src, "sample_rate", json_integer(16000), &ok);
    ct_jset(src, "decode_backend", ct_jstr_or_null(r->decode_backend), &ok);
    ct_jset(src, "decode_fallback_reason", ct_jstr_or_null(r->decode_fallback_reason), &ok);
    ct_jset(doc, "source", src, &ok);
    ct_jset(doc, "language", ct_jstr_or_null(o->language), &ok);
    ct_jset(doc, "segmentation", json_string(ct_vad_mode_name(o->vad)), &ok);
    ct_jset(doc, "segmentation_details", segmentation_details(r, o, &ok), &ok);
    ct_alignment timing = ct_timing_mode(o);
    ct_jset(doc, "timing", json_string(ct_alignment_name(timing)), &ok);
    ct_jset(doc, "models", models(r, o, ctx, &ok), &ok);
    ct_jset(doc, "fallback_alignment_segments", json_integer(r->fallback_alignment_segments), &ok);
    ct_jset(doc, "repetition_detector_version", json_integer(CT_REPETITION_DETECTOR_VERSION), &ok);
    ct_jset(doc, "repetition_stopped_segments", int_array(r->repetition_stopped, r->n_repetition_stopped, &ok), &ok);
    ct_jset(doc, "truncation_retried_segments", int_array(r->truncation_retried, r->n_truncation_retried, &ok), &ok);
    ct_jset(doc, "token_limit_segments", int_array(r->token_limit, r->n_token_limit, &ok), &ok);
    json_t *gen = json_array(), *tr = json_array(), *segs = json_array();
    for (size_t i = 0; i < r->n_segments; i++) {
        const ct_rec_segment *s = &r->segments[i];
        if (s->generated_tokens >= 0) { /* < 0: not recorded (a restored checkpoint without it) */
            json_t *g = json_object();
            ct_jset(g, "segment_index", json_integer(s->index), &ok);
            ct_jset(g, "tokens", json_integer(s->generated_tokens), &ok);
            ct_japp(gen, g, &ok);
        }
        json_t *text = stripped(s->text, &ok);
        if (!text) continue;
        ct_japp(tr, json_incref(text), &ok);
        json_t *so = json_object();
        ct_jset(so, "segment_index", json_integer(s->index), &ok);
        ct_jset(so, "start", ct_jreal(s->start), &ok);
        ct_jset(so, "end", ct_jreal(s->end), &ok);
        ct_jset(so, "text", text, &ok);
        ct_japp(segs, so, &ok);
    }
    ct_jset(doc, "generated_tokens_by_segment", gen, &ok);
    ct_jset(doc, "transcript", tr, &ok);
    ct_jset(doc, "segments", segs, &ok);
    json_t *words = json_array();
    for (size_t i = 0; timing != CT_ALIGN_NONE && i < r->n_words; i++) {
        const ct_rec_word *w = &r->words[i];
        json_t *wo = json_object();
        ct_jset(wo, "start", ct_jreal(w->start), &ok);
        ct_jset(wo, "end", ct_jreal(w->end), &ok);
        ct_jset(wo, "text", json_string(w->text ? w->text : ""), &ok);
        ct_jset(wo, "segment_index", json_integer(w->segment_index), &ok);
        ct_jset(wo, "segment_word_index", json_integer(w->segment_word_index), &ok);
        ct_jset(wo, "timing_source", json_string(ct_timing_source_name(w->source)), &ok);
        ct_japp(words, wo, &ok);
    }
    ct_jset(doc, "words", words, &ok);
    json_t *cues = json_array();
    for (size_t i = 0; timing != CT_ALIGN_NONE && i < r->n_cues; i++) {
        json_t *c = span_obj(r->cues[i].start, r->cues[i].end);
        if (c) ct_jset(c, "text", json_string(r->cues[i].text ? r->cues[i].text : ""), &ok);
        ct_japp(cues, c, &ok);
    }
    ct_jset(doc, "cues", cues, &ok);
    if (!ok) {
        json_decref(doc);
        return ct_fail(CT_ERR_INVALID_ARG,
                       "transcript json: a value could not be stored (out of memory, invalid UTF-8 or NaN)");
    }
    *out = doc;
    return CT_OK;
}

ct_status ct_transcript_json(const ct_file_record *r, const ct_transcriber_options *o, const ct_output_context *ctx,
                             ct_jbuf *out) {
    json_t *doc;
    CT_TRY(ct_transcript_json_tree(r, o, ctx, &doc));
    ct_status st = ct_json_dump_pretty(doc, out);
    json_decref(doc);
    return st;
}
