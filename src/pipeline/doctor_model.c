/* doctor_model.c — check 7 of cohere-transcribe-doctor: the selected model
 * resolved (a local folder or .gguf as the product resolves it; a Hub repo
 * through the shared cache, fetching only the small metadata files unless the
 * snapshot is already complete), then config.json, preprocessor_config.json,
 * tokenizer.json and, when the weights are on disk, the checkpoint's tensors
 * opened (mapped and shape-checked, never loaded into an engine). */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fs.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/convert.h"
#include "model/resolve.h"
#include "model/tokenizer.h"
#include "pipeline/doctor.h"
#include "pipeline/doctor_internal.h"

#define SAY ct_doctor_say
#define JSON_MAX (64u << 20)
#define MAX_TOKEN_ID (1 << 24) /* far above any real vocabulary; bounds the id table */

/* ---- tokenizer.json ---------------------------------------------------------- */

typedef struct tok_entry {
    const char *s;
    size_t len;
    long long id;
    int from_list; /* a list-form (Unigram) model vocabulary entry */
} tok_entry;

static int entry_cmp(const void *a, const void *b) {
    const tok_entry *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->s, y->s, n);
    if (c) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int has_token(const tok_entry *sorted, size_t n, const char *s) {
    tok_entry key = {s, strlen(s), LLONG_MIN, 0};
    size_t lo = 0, hi = n; /* first entry >= key */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (entry_cmp(&sorted[mid], &key) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && sorted[lo].len == key.len && memcmp(sorted[lo].s, s, key.len) == 0;
}

/* id < 0 marks a missing or non-integer id. */
static ct_status add_entry(tok_entry *v, size_t *n, const char *label, const char *s, size_t len, long long id,
                           int from_list, const char *what) {
    if (!s || id < 0) return ct_fail(CT_ERR_FORMAT, "%s contains an invalid %s", label, what);
    if (id >= MAX_TOKEN_ID) return ct_fail(CT_ERR_FORMAT, "%s: token ID %lld is out of range", label, id);
    v[(*n)++] = (tok_entry){s, len, id, from_list};
    return CT_OK;
}

static long long id_of(json_t *id) { return json_is_integer(id) ? (long long)json_integer_value(id) : -1; }

/* The checks on a parsed tokenizer.json (root), entries collected into v. */
static ct_status tokenizer_checks(json_t *root, const char *label, int vocab_size, const char (*langs)[16],
                                  int n_langs, tok_entry **vout) {
    json_t *model = json_is_object(root) ? json_object_get(root, "model") : NULL;
    json_t *vocab = json_object_get(model, "vocab");
    size_t nv = json_is_object(vocab) ? json_object_size(vocab) : json_is_array(vocab) ? json_array_size(vocab) : 0;
    if (nv == 0) return ct_fail(CT_ERR_FORMAT, "%s has no model vocabulary", label);
    json_t *added = json_object_get(root, "added_tokens");
    if (added && !json_is_null(added) && !json_is_array(added))
        return ct_fail(CT_ERR_FORMAT, "%s added_tokens must be an array", label);
    size_t na = json_array_size(added);
    tok_entry *v = malloc((nv + na) * sizeof *v);
    if (!v) return ct_fail(CT_ERR_OOM, "%s: out of memory", label);
    *vout = v;
    size_t n = 0;
    if (json_is_object(vocab)) {
        const char *k;
        json_t *id;
        json_object_foreach(vocab, k, id) CT_TRY(add_entry(v, &n, label, k, strlen(k), id_of(id), 0, "token/id entry"));
    } else {
        for (size_t i = 0; i < nv; i++) { /* Unigram: [piece, score], id = position */
            json_t *e = json_array_get(vocab, i);
            json_t *piece = json_is_array(e) ? json_array_get(e, 0) : e;
            CT_TRY(add_entry(v, &n, label, json_string_value(piece), json_string_length(piece), (long long)i, 1,
                             "token/id entry"));
        }
    }
    for (size_t i = 0; i < na; i++) {
        json_t *a = json_array_get(added, i);
        if (!json_is_object(a)) return ct_fail(CT_ERR_FORMAT, "%s contains an invalid added token", label);
        json_t *c = json_object_get(a, "content");
        CT_TRY(add_entry(v, &n, label, json_string_value(c), json_string_length(c), id_of(json_object_get(a, "id")), 0,
                         "added token"));
    }

    /* id -> token: one token per id */
    long long max_id = 0;
    for (size_t i = 0; i < n; i++) max_id = v[i].id > max_id ? v[i].id : max_id;
    const tok_entry **by_id = calloc((size_t)max_id + 1, sizeof *by_id);
    if (!by_id) return ct_fail(CT_ERR_OOM, "%s: out of memory", label);
    ct_status st = CT_OK;
    for (size_t i = 0; i < n && st == CT_OK; i++) {
        const tok_entry *p = by_id[v[i].id];
        if (p && (p->len != v[i].len || memcmp(p->s, v[i].s, p->len)))
            st = ct_fail(CT_ERR_FORMAT, "%s assigns ID %lld to both \"%s\" and \"%s\"", label, v[i].id, p->s, v[i].s);
        by_id[v[i].id] = &v[i];
    }
    if (st == CT_OK && vocab_size > 0) {
        char missing[256] = "";
        int nm = 0;
        for (long long i = 0; i < vocab_size && nm < 8; i++) {
            if (i <= max_id && by_id[i]) continue;
            size_t l = strlen(missing);
            snprintf(missing + l, sizeof missing - l, "%s%lld", nm ? ", " : "", i);
            nm++;
        }
        if (nm) st = ct_fail(CT_ERR_FORMAT, "%s vocabulary has missing token IDs: [%s]", label, missing);
        else if (max_id >= vocab_size) {
            long long lo = vocab_size; /* the smallest id past the end */
            while (lo <= max_id && !by_id[lo]) lo++;
            st = ct_fail(CT_ERR_FORMAT, "%s token ID %lld is outside the checkpoint vocabulary size %d", label, lo,
                         vocab_size);
        }
    }
    free(by_id);
    CT_TRY(st);

    /* token -> id: one id per token (a list vocabulary may repeat a piece:
     * tokenizers keeps the last, as our loader does) */
    qsort(v, n, sizeof *v, entry_cmp);
    for (size_t i = 1; i < n; i++)
        if (v[i].len == v[i - 1].len && !memcmp(v[i].s, v[i - 1].s, v[i].len) && v[i].id != v[i - 1].id &&
            !(v[i].from_list && v[i - 1].from_list))
            return ct_fail(CT_ERR_FORMAT, "%s assigns token \"%s\" to IDs %lld and %lld", label, v[i].s, v[i - 1].id,
                           v[i].id);

    static const char *const head[] = {"▁", "<|startofcontext|>", "<|startoftranscript|>", "<|emo:undefined|>"};
    static const char *const tail[] = {"<|pnc|>", "<|nopnc|>", "<|noitn|>", "<|notimestamp|>", "<|nodiarize|>",
                                       "<|endoftext|>"};
    static const char defaults[2][16] = {"ar", "en"};
    if (n_langs <= 0) langs = defaults, n_langs = 2;
    char missing[1024] = "";
    int nm = 0;
    for (int i = 0; i < 4 + n_langs + 6; i++) {
        char lt[32];
        const char *t = i < 4 ? head[i] : i < 4 + n_langs ? (snprintf(lt, sizeof lt, "<|%s|>", langs[i - 4]), lt)
                                                        : tail[i - 4 - n_langs];
        if (has_token(v, n, t)) continue;
        size_t l = strlen(missing);
        snprintf(missing + l, sizeof missing - l, "%s%s", nm++ ? ", " : "", t);
    }
    if (nm) return ct_fail(CT_ERR_FORMAT, "%s is missing Cohere prompt tokens: %s", label, missing);
    return CT_OK;
}

ct_status ct_doctor_tokenizer_check(const char *text, size_t len, const char *label, int vocab_size,
                                    const char (*langs)[16], int n_langs) {
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) return ct_fail(CT_ERR_FORMAT, "%s: not valid JSON (line %d: %s)", label, je.line, je.text);
    tok_entry *v = NULL;
    ct_status st = tokenizer_checks(root, label, vocab_size, langs, n_langs, &v);
    free(v);
    json_decref(root);
    return st;
}

/* ---- the model's files -------------------------------------------------------- */

typedef struct model_files {
    char *dir;     /* folder with the files (GGUF: the file) */
    char *commit;  /* Hub: the resolved commit; local: NULL */
    int complete;  /* the weights are on disk: open the checkpoint */
    int gguf;
} model_files;

static void model_files_clear(model_files *m) {
    free(m->dir);
    free(m->commit);
    memset(m, 0, sizeof *m);
}

static ct_status fetch_meta(ct_hub *h, const char *repo, const ct_hub_revision *rev, const char *file, int optional) {
    int64_t size = -1;
    int listed = rev->n_files > 0;
    if (listed && !ct_hub_revision_has(rev, file, &size)) {
        if (optional) return CT_OK;
        return ct_fail(CT_ERR_NOT_FOUND, "%s@%s: the repository has no %s", repo, rev->commit, file);
    }
    char *p = NULL;
    ct_status st = ct_hub_fetch(h, repo, rev->commit, file, size, &p);
    free(p);
    if (st == CT_ERR_NOT_FOUND && optional && !listed) {
        ct_error_clear();
        return CT_OK;
    }
    return st;
}

/* A Hub model: the small files into the cache, the weights only looked for. */
static ct_status resolve_hub(const ct_doctor_options *o, const char *repo, model_files *m) {
    const char *revision = o->model_revision && *o->model_revision ? o->model_revision
                           : strcmp(repo, CT_DEFAULT_MODEL) == 0   ? CT_DEFAULT_MODEL_COMMIT
                                                                   : "main";
    ct_hub *h;
    CT_TRY(ct_hub_create(o->hub, &h));
    ct_hub_revision *rev = NULL;
    char *snap = NULL;
    ct_status st = CT_OK;
    /* as the product resolves it: a commit whose snapshot is complete needs no network */
    if (ct_hub_is_commit(revision) && ct_hub_snapshot_path(h, repo, revision, &snap) == CT_OK && ct_fs_is_dir(snap) &&
        ct_model_check_dir(snap) == CT_OK) {
        m->complete = 1;
        m->commit = strdup(revision);
        goto found;
    }
    ct_error_clear();
    free(snap);
    snap = NULL;
    st = ct_hub_resolve_revision(h, repo, revision, &rev);
    if (st == CT_OK) st = ct_hub_snapshot_path(h, repo, rev->commit, &snap);
    if (st != CT_OK) goto done;
    if (rev->from_cache) {
        /* offline or unreachable: what the cached snapshot has must do */
        static const char *const need[] = {"config.json", "tokenizer.json"};
        for (size_t i = 0; i < 2 && st == CT_OK; i++) {
            char p[PATH_MAX];
            st = ct_path_join(p, sizeof p, snap, need[i]);
            if (st == CT_OK && !ct_fs_is_file(p))
                st = ct_fail(CT_ERR_NOT_FOUND, "%s@%s: the cached snapshot has no %s and the Hub is %s", repo,
                             rev->commit, need[i], ct_hub_is_offline(h) ? "offline (HF_HUB_OFFLINE)" : "unreachable");
        }
    } else {
        st = fetch_meta(h, repo, rev, "config.json", 0);
        if (st == CT_OK) st = fetch_meta(h, repo, rev, "generation_config.json", 1);
        if (st == CT_OK) st = fetch_meta(h, repo, rev, "preprocessor_config.json", 1);
        if (st == CT_OK) st = fetch_meta(h, repo, rev, "tokenizer.json", 0);
    }
    if (st != CT_OK) goto done;
    m->complete = ct_model_check_dir(snap) == CT_OK;
    ct_error_clear();
    m->commit = strdup(rev->commit);
found:
    m->dir = snap;
    snap = NULL;
    if (!m->commit) st = ct_fail(CT_ERR_OOM, "out of memory");
done:
    free(snap);
    ct_hub_revision_free(rev);
    ct_hub_free(h);
    return st;
}

static ct_status resolve_model(const ct_doctor_options *o, const char *model, model_files *m) {
    memset(m, 0, sizeof *m);
    int local;
    CT_TRY(ct_model_spec_kind(model, &local));
    if (!local) return resolve_hub(o, model, m);
    ct_model_ref ref;
    CT_TRY(ct_model_resolve_ref(model, o->model_revision, o->hub, &ref)); /* checks the folder's files */
    m->dir = ref.dir;
    ref.dir = NULL;
    ct_model_ref_clear(&ref);
    m->complete = 1;
    m->gguf = !ct_fs_is_dir(m->dir);
    return CT_OK;
}

static ct_status read_json(const char *path, json_t **out) {
    char *buf;
    size_t n;
    CT_TRY(ct_fs_read_all(path, JSON_MAX, &buf, &n));
    json_error_t je;
    *out = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &je);
    free(buf);
    if (!*out || !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return ct_fail(CT_ERR_FORMAT, "%s: not a JSON object (line %d: %s)", path, je.line, je.text);
    }
    return CT_OK;
}

static void json_brief(json_t *v, char *buf, size_t cap) {
    char *s = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    snprintf(buf, cap, "%s", s ? s : "null");
    free(s);
}

/* config.json's model_type and our loader (either layout). */
static ct_status check_config(const char *dir, ct_model_config *cfg) {
    char p[PATH_MAX];
    CT_TRY(ct_path_join(p, sizeof p, dir, "config.json"));
    json_t *j;
    CT_TRY(read_json(p, &j));
    json_t *mt = json_object_get(j, "model_type");
    ct_status st = CT_OK;
    if (!json_is_string(mt) || strcmp(json_string_value(mt), "cohere_asr") != 0) {
        char got[128];
        json_brief(mt, got, sizeof got);
        st = ct_fail(CT_ERR_FORMAT, "%s declares model_type=%s; expected cohere_asr", p, got);
    }
    json_decref(j);
    CT_TRY(st);
    return ct_config_load(dir, cfg);
}

/* preprocessor_config.json when present; the one-row limit into *max_s. */
static ct_status check_preprocessor(const char *dir, const ct_model_config *cfg, double *max_s) {
    *max_s = cfg->max_audio_clip_s > 0 ? cfg->max_audio_clip_s : 35.0;
    char p[PATH_MAX];
    CT_TRY(ct_path_join(p, sizeof p, dir, "preprocessor_config.json"));
    if (!ct_fs_is_file(p)) return CT_OK;
    json_t *j;
    CT_TRY(read_json(p, &j));
    ct_status st = CT_OK;
    char got[128];
    json_t *pc = json_object_get(j, "processor_class"), *fe = json_object_get(j, "feature_extractor_type");
    json_t *mx = json_object_get(j, "max_audio_clip_s");
    if (pc && !(json_is_string(pc) && !strcmp(json_string_value(pc), "CohereAsrProcessor"))) {
        json_brief(pc, got, sizeof got);
        st = ct_fail(CT_ERR_FORMAT, "%s declares processor_class=%s; expected CohereAsrProcessor", p, got);
    } else if (fe && !(json_is_string(fe) && !strcmp(json_string_value(fe), "CohereAsrFeatureExtractor"))) {
        json_brief(fe, got, sizeof got);
        st = ct_fail(CT_ERR_FORMAT, "%s declares feature_extractor_type=%s; expected CohereAsrFeatureExtractor", p, got);
    } else if (mx) {
        double v = json_is_number(mx) ? json_number_value(mx) : NAN;
        if (!(isfinite(v) && v > 0)) {
            json_brief(mx, got, sizeof got);
            st = ct_fail(CT_ERR_FORMAT, "%s: the Cohere processor has an invalid max_audio_clip_s: %s", p, got);
        } else {
            *max_s = v;
        }
    }
    json_decref(j);
    return st;
}

/* tokenizer.json: the doctor's checks (every problem named), then our loader. */
static ct_status check_tokenizer(const char *path, const ct_model_config *cfg, int *n_ids) {
    char *buf;
    size_t n;
    CT_TRY(ct_fs_read_all(path, CT_TOKENIZER_MAX_BYTES, &buf, &n));
    ct_status st = ct_doctor_tokenizer_check(buf, n, path, cfg->vocab_size, cfg->languages, cfg->n_languages);
    ct_tokenizer *t = NULL;
    if (st == CT_OK) st = ct_tokenizer_load_buffer(buf, n, path, &t);
    free(buf);
    if (t) *n_ids = ct_tokenizer_vocab_size(t);
    ct_tokenizer_free(t);
    return st;
}

/* A GGUF's vocabulary, written out as tokenizer.json to check it the same way. */
static ct_status check_gguf_tokenizer(const char *gguf, const ct_model_config *cfg, int *n_ids) {
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], p[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/ct-doctor.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return ct_fail(CT_ERR_IO, "%s: cannot make a temporary folder", dir);
    ct_status st = ct_path_join(p, sizeof p, dir, "tokenizer.json");
    if (st == CT_OK) st = ct_convert_gguf_tokenizer(gguf, p);
    if (st == CT_OK) st = check_tokenizer(p, cfg, n_ids);
    unlink(p);
    rmdir(dir);
    return st;
}

static void fmt_seconds(double v, char *buf, size_t cap) {
    /* as Ruby prints a Float: shortest round trip, always with a '.' */
    snprintf(buf, cap, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, cap, "%.17g", v);
    if (!strpbrk(buf, ".eni")) strncat(buf, ".0", cap - strlen(buf) - 1);
}

static void fail_with(ct_doctor_report_fn fn, void *user, const char *model, ct_status st) {
    if (st == CT_ERR_AUTH)
        SAY(fn, user, CT_DOCTOR_FAIL, "Cannot access the gated ASR model %s. Accept its terms, then set HF_TOKEN. (%s: %s)",
            model, ct_status_str(st), ct_last_error());
    else
        SAY(fn, user, CT_DOCTOR_FAIL, "ASR model or adapter validation: %s: %s", ct_status_str(st), ct_last_error());
}

void ct_doctor_check_model(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user) {
    const char *model = o->model ? o->model : CT_DEFAULT_MODEL;
    if (o->adapter_revision && !o->adapter) {
        fail_with(fn, user, model, ct_fail(CT_ERR_INVALID_ARG, "--adapter-revision requires --adapter"));
        return;
    }
    model_files m;
    ct_status st = resolve_model(o, model, &m);
    if (st != CT_OK) {
        fail_with(fn, user, model, st);
        return;
    }
    ct_model_config cfg;
    ct_checkpoint *ck = NULL;
    double max_s = 35.0;
    int n_ids = 0;
    if (m.gguf) { /* config and vocabulary live inside the file */
        st = ct_checkpoint_open(m.dir, &ck);
        if (st == CT_OK) {
            cfg = *ct_checkpoint_config(ck);
            if (cfg.max_audio_clip_s > 0) max_s = cfg.max_audio_clip_s;
            st = check_gguf_tokenizer(m.dir, &cfg, &n_ids);
        }
    } else {
        char tp[PATH_MAX];
        st = check_config(m.dir, &cfg);
        if (st == CT_OK) st = check_preprocessor(m.dir, &cfg, &max_s);
        if (st == CT_OK) st = ct_path_join(tp, sizeof tp, m.dir, "tokenizer.json");
        if (st == CT_OK) st = check_tokenizer(tp, &cfg, &n_ids);
    }
    if (st != CT_OK) {
        fail_with(fn, user, model, st);
        ct_checkpoint_free(ck);
        model_files_clear(&m);
        return;
    }
    char lim[48], langs[CT_CONFIG_MAX_LANGS * 4 + 8] = "";
    fmt_seconds(max_s, lim, sizeof lim);
    SAY(fn, user, CT_DOCTOR_OK, "ASR configuration %s%s%s (%s) accessible; CohereAsrProcessor one-row limit is %ss",
        model, m.commit ? "@" : "", m.commit ? m.commit : "", m.gguf ? "gguf" : "dense", lim);
    for (int i = 0; i < cfg.n_languages; i++) {
        size_t l = strlen(langs);
        snprintf(langs + l, sizeof langs - l, "%s%s", i ? ", " : "", cfg.languages[i]);
    }
    SAY(fn, user, CT_DOCTOR_OK, "ASR tokenizer: %d ids; every prompt token present for %s, with and without punctuation",
        n_ids, cfg.n_languages ? langs : "ar, en");
    if (o->adapter)
        SAY(fn, user, CT_DOCTOR_FAIL, "adapter %s%s%s: PEFT/LoRA adapters are not supported by this runtime", o->adapter,
            o->adapter_revision ? "@" : "", o->adapter_revision ? o->adapter_revision : "");
    if (!m.complete) {
        SAY(fn, user, CT_DOCTOR_WARN,
            "ASR checkpoint weights of %s@%s are not in the cache yet (the first transcription downloads them); "
            "tensors not checked",
            model, m.commit);
    } else {
        if (!ck) st = ct_checkpoint_open(m.dir, &ck);
        if (st != CT_OK) {
            SAY(fn, user, CT_DOCTOR_FAIL, "ASR checkpoint: %s: %s", ct_status_str(st), ct_last_error());
        } else {
            const ct_st_tensor *emb = ct_checkpoint_tensor(ck, "transf_decoder._embedding.token_embedding.weight");
            SAY(fn, user, CT_DOCTOR_OK, "ASR checkpoint: %zu tensors, %lld parameters%s%s%s; opened without loading weights",
                ct_checkpoint_count(ck), (long long)ct_checkpoint_param_count(ck), emb ? " (" : "",
                emb ? ct_dtype_name(emb->dtype) : "", emb ? ")" : "");
        }
    }
    ct_checkpoint_free(ck);
    model_files_clear(&m);
}
