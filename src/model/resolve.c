/* resolve.c — --model (and VAD weight) specs to folders/files on disk. Decides
 * local vs Hub like the original, knows which files a checkpoint needs, and
 * refuses quantized checkpoints and adapters before the large downloads. The
 * transfer itself is hub.c's. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"
#include "model/digest.h"
#include "model/resolve.h"
#include "vad/silero.h"

#define CT_JSON_MAX (64u << 20)

void ct_model_ref_clear(ct_model_ref *r) {
    if (!r) return;
    free(r->id);
    free(r->revision);
    free(r->dir);
    memset(r, 0, sizeof *r);
}

/* "~" or "~/..." with $HOME put in, else a copy (malloc'd; NULL on OOM). */
static char *expand_home(const char *p) {
    const char *home = getenv("HOME");
    if (p[0] != '~' || (p[1] && p[1] != '/') || !home || !*home) return strdup(p);
    size_t n = strlen(home) + strlen(p);
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s", home, p + 1);
    return s;
}

static int path_exists(const char *p) {
    char *e = expand_home(p);
    struct stat s;
    int ok = e && stat(e, &s) == 0;
    free(e);
    return ok;
}

ct_status ct_model_spec_kind(const char *spec, int *is_local) {
    *is_local = 0;
    if (!spec || !*spec)
        return ct_fail(CT_ERR_INVALID_ARG,
                       "--model must be a non-empty Hugging Face repository ID or local directory");
    size_t n = strlen(spec);
    if (spec[0] == ' ' || spec[0] == '\t' || spec[0] == '\n' || spec[n - 1] == ' ' ||
        spec[n - 1] == '\t' || spec[n - 1] == '\n' || spec[n - 1] == '\r')
        return ct_fail(CT_ERR_INVALID_ARG, "--model must not have leading or trailing whitespace");
    if (path_exists(spec)) {
        *is_local = 1;
        return CT_OK;
    }
    int slashes = 0;
    for (const char *p = spec; *p; p++) slashes += *p == '/';
    if (spec[0] == '/' || spec[0] == '~' || !strncmp(spec, "./", 2) || !strncmp(spec, "../", 3) ||
        !strcmp(spec, ".") || !strcmp(spec, "..") || slashes > 1)
        return ct_fail(CT_ERR_NOT_FOUND, "--model %s: no such local model directory", spec);
    if (ct_hub_validate_repo_id(spec) != CT_OK)
        return ct_fail_wrap(CT_ERR_INVALID_ARG,
                            "--model must be a valid Hugging Face repository ID or local directory");
    return CT_OK;
}

/* ---- checkpoint contents ------------------------------------------------- */

static ct_status load_json(const char *path, json_t **out) {
    char *buf;
    size_t n;
    CT_TRY(ct_fs_read_all(path, CT_JSON_MAX, &buf, &n));
    json_error_t je;
    json_t *j = json_loadb(buf, n, JSON_REJECT_DUPLICATES, &je); /* as config.c reads it */
    free(buf);
    if (!j) return ct_fail(CT_ERR_FORMAT, "%s: not valid JSON (line %d: %s)", path, je.line, je.text);
    *out = j;
    return CT_OK;
}

/* Refuse what the original refuses, from config.json alone. */
static ct_status check_config(const char *path) {
    json_t *cfg;
    CT_TRY(load_json(path, &cfg));
    ct_status st = CT_OK;
    if (!json_is_object(cfg)) {
        st = ct_fail(CT_ERR_FORMAT, "%s: not a JSON object", path);
    } else {
        json_t *q = json_object_get(cfg, "quantization_config");
        if (q && !json_is_null(q))
            st = ct_fail(CT_ERR_UNSUPPORTED,
                         "%s: the checkpoint is quantized (quantization_config); only dense "
                         "checkpoints are supported",
                         path);
    }
    json_decref(cfg);
    return st;
}

/* The shard names of a model.safetensors.index.json (unique, in order). */
ct_status ct_model_index_shards_parse(const char *json, size_t len, const char *path,
                                      char ***names, int *n) {
    *names = NULL;
    *n = 0;
    json_error_t je;
    /* duplicate names refused as the index reader (safetensors.c) refuses
     * them, so a bad index fails before any shard is downloaded */
    json_t *idx = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
    if (!idx) return ct_fail(CT_ERR_FORMAT, "%s: not valid JSON (line %d: %s)", path, je.line, je.text);
    json_t *wm = json_object_get(idx, "weight_map");
    if (!json_is_object(wm) || json_object_size(wm) == 0) {
        json_decref(idx);
        return ct_fail(CT_ERR_FORMAT, "%s: no 'weight_map' object", path);
    }
    size_t cap = json_object_size(wm);
    char **v = calloc(cap, sizeof *v);
    if (!v) {
        json_decref(idx);
        return ct_fail(CT_ERR_OOM, "out of memory");
    }
    int k = 0;
    const char *key;
    json_t *val;
    ct_status st = CT_OK;
    json_object_foreach(wm, key, val) {
        const char *s = json_string_value(val);
        if (!s) {
            st = ct_fail(CT_ERR_FORMAT, "%s: weight_map[%s] is not a file name", path, key);
            break;
        }
        if (ct_hub_validate_filename(s) != CT_OK) {
            st = ct_fail_wrap(CT_ERR_FORMAT, "%s: weight_map[%s]", path, key);
            break;
        }
        int dup = 0;
        for (int i = 0; i < k && !dup; i++) dup = !strcmp(v[i], s);
        if (dup) continue;
        if (k == 10000) {
            st = ct_fail(CT_ERR_LIMIT, "%s: more than 10000 shard files", path);
            break;
        }
        if (!(v[k] = strdup(s))) {
            st = ct_fail(CT_ERR_OOM, "out of memory");
            break;
        }
        k++;
    }
    json_decref(idx);
    if (st != CT_OK) {
        for (int i = 0; i < k; i++) free(v[i]);
        free(v);
        return st;
    }
    *names = v;
    *n = k;
    return CT_OK;
}

static ct_status index_shards(const char *path, char ***names, int *n) {
    char *buf;
    size_t len;
    CT_TRY(ct_fs_read_all(path, CT_JSON_MAX, &buf, &len));
    ct_status st = ct_model_index_shards_parse(buf, len, path, names, n);
    free(buf);
    return st;
}

static void free_names(char **v, int n) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

static ct_status need_file(const char *dir, const char *name) {
    char p[PATH_MAX];
    CT_TRY(ct_path_join(p, sizeof p, dir, name));
    if (!ct_fs_exists(p)) return ct_fail(CT_ERR_NOT_FOUND, "%s: missing %s", dir, name);
    return ct_fs_check_input(p); /* there, but a FIFO, device or directory: say so */
}

static ct_status check_weights(const char *dir);

ct_status ct_model_check_dir(const char *dir) {
    char p[PATH_MAX];
    CT_TRY(ct_path_join(p, sizeof p, dir, "adapter_config.json"));
    int adapter = ct_fs_is_file(p);
    CT_TRY(ct_path_join(p, sizeof p, dir, "config.json"));
    if (adapter && !ct_fs_is_file(p))
        return ct_fail(CT_ERR_UNSUPPORTED,
                       "%s: PEFT/LoRA adapters are not supported (adapter_config.json)", dir);
    CT_TRY(need_file(dir, "config.json"));
    CT_TRY(check_config(p));
    if (adapter)
        return ct_fail(CT_ERR_UNSUPPORTED,
                       "%s: PEFT/LoRA adapters are not supported (adapter_config.json)", dir);
    CT_TRY(need_file(dir, "tokenizer.json"));
    return check_weights(dir);
}

/* model.safetensors, or an index and every shard it names. */
static ct_status check_weights(const char *dir) {
    char p[PATH_MAX];
    CT_TRY(ct_path_join(p, sizeof p, dir, "model.safetensors"));
    if (ct_fs_exists(p)) return ct_fs_check_input(p);
    CT_TRY(ct_path_join(p, sizeof p, dir, "model.safetensors.index.json"));
    if (!ct_fs_exists(p))
        return ct_fail(CT_ERR_NOT_FOUND, "%s: missing model.safetensors (or model.safetensors.index.json)",
                       dir);
    char **shards;
    int n;
    CT_TRY(index_shards(p, &shards, &n));
    ct_status st = CT_OK;
    for (int i = 0; i < n && st == CT_OK; i++) st = need_file(dir, shards[i]);
    free_names(shards, n);
    return st;
}

/* ---- Hub ----------------------------------------------------------------- */

static ct_status fetch_one(ct_hub *h, const char *repo, const ct_hub_revision *rev,
                           const char *file, char **path) {
    int64_t size = -1;
    ct_hub_revision_has(rev, file, &size);
    return ct_hub_fetch(h, repo, rev->commit, file, size, path);
}

static ct_status fetch_weights(ct_hub *h, const char *repo, const ct_hub_revision *rev);

static ct_status fetch_model(ct_hub *h, const char *repo, const ct_hub_revision *rev) {
    int listed = rev->n_files > 0;
    char *p = NULL;
    if (listed && ct_hub_revision_has(rev, "adapter_config.json", NULL) &&
        !ct_hub_revision_has(rev, "config.json", NULL))
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: PEFT/LoRA adapters are not supported", repo);
    if (listed && !ct_hub_revision_has(rev, "config.json", NULL))
        return ct_fail(CT_ERR_NOT_FOUND, "%s@%s: the repository has no config.json", repo,
                       rev->commit);
    CT_TRY(fetch_one(h, repo, rev, "config.json", &p));
    ct_status st = check_config(p);
    free(p);
    CT_TRY(st);
    if (listed && ct_hub_revision_has(rev, "adapter_config.json", NULL))
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: PEFT/LoRA adapters are not supported", repo);
    /* small optional files the loader and doctor read */
    static const char *const optional[] = {"generation_config.json", "preprocessor_config.json"};
    for (size_t i = 0; i < sizeof optional / sizeof *optional; i++) {
        if (listed && !ct_hub_revision_has(rev, optional[i], NULL)) continue;
        st = fetch_one(h, repo, rev, optional[i], &p);
        free(p);
        p = NULL;
        if (st == CT_ERR_NOT_FOUND && !listed) {
            ct_error_clear();
            continue;
        }
        CT_TRY(st);
    }
    CT_TRY(fetch_one(h, repo, rev, "tokenizer.json", &p));
    free(p);
    return fetch_weights(h, repo, rev);
}

/* model.safetensors, or its index and every shard. */
static ct_status fetch_weights(ct_hub *h, const char *repo, const ct_hub_revision *rev) {
    int listed = rev->n_files > 0;
    char *p = NULL;
    ct_status st;
    int single = listed ? ct_hub_revision_has(rev, "model.safetensors", NULL) : 1;
    if (single) {
        st = fetch_one(h, repo, rev, "model.safetensors", &p);
        free(p);
        p = NULL;
        if (st == CT_OK) return CT_OK;
        if (listed || st != CT_ERR_NOT_FOUND) return st;
        ct_error_clear();
    }
    if (listed && !ct_hub_revision_has(rev, "model.safetensors.index.json", NULL))
        return ct_fail(CT_ERR_NOT_FOUND,
                       "%s@%s: the repository has neither model.safetensors nor "
                       "model.safetensors.index.json",
                       repo, rev->commit);
    CT_TRY(fetch_one(h, repo, rev, "model.safetensors.index.json", &p));
    char **shards;
    int n;
    st = index_shards(p, &shards, &n);
    free(p);
    CT_TRY(st);
    for (int i = 0; i < n && st == CT_OK; i++) {
        st = fetch_one(h, repo, rev, shards[i], &p);
        free(p);
        p = NULL;
    }
    free_names(shards, n);
    return st;
}

/* What a kind of repository must hold (the ASR model, the word aligner):
 * the check of a complete snapshot folder and the fetch of its files. */
typedef struct repo_kind {
    ct_status (*check)(const char *dir);
    ct_status (*fetch)(ct_hub *h, const char *repo, const ct_hub_revision *rev);
} repo_kind;

static ct_status resolve_hub(const char *repo, const char *revision, const ct_hub_options *opts,
                             const repo_kind *kind, ct_model_ref *out) {
    ct_hub *h;
    CT_TRY(ct_hub_create(opts, &h));
    ct_status st = CT_OK;
    ct_hub_revision *rev = NULL;
    char *snap = NULL;
    /* a commit whose snapshot is complete needs no network (and no token) */
    if (ct_hub_is_commit(revision)) {
        st = ct_hub_snapshot_path(h, repo, revision, &snap);
        if (st == CT_OK && ct_fs_is_dir(snap) && kind->check(snap) == CT_OK) {
            out->from_cache = 1;
            goto found;
        }
        ct_error_clear();
        free(snap);
        snap = NULL;
    }
    st = ct_hub_resolve_revision(h, repo, revision, &rev);
    if (st != CT_OK) goto done;
    st = ct_hub_snapshot_path(h, repo, rev->commit, &snap);
    if (st != CT_OK) goto done;
    if (rev->from_cache) {
        out->from_cache = 1;
        st = kind->check(snap);
        if (st != CT_OK) {
            ct_fail_wrap(st, "%s@%s: the cached snapshot is incomplete and the Hub is %s", repo,
                         rev->commit, ct_hub_is_offline(h) ? "offline (HF_HUB_OFFLINE)" : "unreachable");
            goto done;
        }
    } else {
        st = kind->fetch(h, repo, rev);
        if (st != CT_OK) goto done;
        st = kind->check(snap);
        if (st != CT_OK) goto done;
    }
found:
    out->is_local = 0;
    out->id = strdup(repo);
    out->revision = strdup(rev ? rev->commit : revision);
    out->dir = snap;
    snap = NULL;
    if (!out->id || !out->revision) st = ct_fail(CT_ERR_OOM, "out of memory");
done:
    free(snap);
    ct_hub_revision_free(rev);
    ct_hub_free(h);
    return st;
}

/* A local folder (or file) spec: its realpath, checked when a folder. */
static ct_status resolve_local(const char *spec, ct_status (*check)(const char *dir), ct_model_ref *out) {
    char *exp = expand_home(spec);
    char *real = exp ? realpath(exp, NULL) : NULL;
    free(exp);
    if (!real) return ct_fail(CT_ERR_IO, "%s: %s", spec, strerror(errno));
    if (ct_fs_is_dir(real)) {
        ct_status st = check(real);
        if (st != CT_OK) {
            free(real);
            return st;
        }
    }
    out->is_local = 1;
    out->id = strdup(spec);
    out->dir = real;
    return out->id ? CT_OK : ct_fail(CT_ERR_OOM, "out of memory");
}

static const repo_kind k_model = {ct_model_check_dir, fetch_model};

ct_status ct_model_resolve_ref(const char *spec, const char *revision, const ct_hub_options *opts,
                               ct_model_ref *out) {
    memset(out, 0, sizeof *out);
    if (!spec) spec = CT_DEFAULT_MODEL;
    int local;
    CT_TRY(ct_model_spec_kind(spec, &local));
    if (revision && !*revision) revision = NULL;
    if (local) {
        if (revision)
            return ct_fail(CT_ERR_INVALID_ARG,
                           "--model-revision cannot be used with a local model directory");
        return resolve_local(spec, ct_model_check_dir, out);
    }
    if (!revision) revision = strcmp(spec, CT_DEFAULT_MODEL) == 0 ? CT_DEFAULT_MODEL_COMMIT : "main";
    ct_status st = resolve_hub(spec, revision, opts, &k_model, out);
    if (st != CT_OK) ct_model_ref_clear(out);
    return st;
}

ct_status ct_model_resolve(const char *spec, const char *revision, const ct_hub_options *opts,
                           char **dir_out) {
    *dir_out = NULL;
    ct_model_ref r;
    CT_TRY(ct_model_resolve_ref(spec, revision, opts, &r));
    *dir_out = r.dir;
    r.dir = NULL;
    ct_model_ref_clear(&r);
    return CT_OK;
}

/* ---- VAD weights --------------------------------------------------------- */

static ct_status check_vad_file(const char *path) {
    char hex[65];
    CT_TRY(ct_file_sha256(path, hex));
    if (strcmp(hex, CT_SILERO_SHA256_V62) != 0)
        return ct_fail(CT_ERR_FORMAT,
                       "%s: sha256 %s is not that of silero_vad.onnx v6.2 (%s)", path, hex,
                       CT_SILERO_SHA256_V62);
    return CT_OK;
}

ct_status ct_vad_weights_resolve(const char *spec, const ct_hub_options *opts, char **path_out) {
    *path_out = NULL;
    const char *from = "option";
    if (!spec || !*spec) {
        spec = getenv(CT_SILERO_WEIGHTS_ENV);
        from = CT_SILERO_WEIGHTS_ENV;
    }
    if (!spec || !*spec) {
        spec = getenv(CT_SILERO_WEIGHTS_ENV_ALT); /* the name cohere-transcribe-vad reads */
        from = CT_SILERO_WEIGHTS_ENV_ALT;
    }
    if (!spec || !*spec)
        return ct_fail(CT_ERR_NOT_FOUND,
                       "no Silero VAD weights: set %s (or %s, or the option) to silero_vad.onnx "
                       "v6.2, a folder holding it, or a Hub repo hosting it",
                       CT_SILERO_WEIGHTS_ENV, CT_SILERO_WEIGHTS_ENV_ALT);
    char p[PATH_MAX];
    if (ct_fs_is_dir(spec)) {
        CT_TRY(ct_path_join(p, sizeof p, spec, CT_SILERO_WEIGHTS_FILE));
        if (!ct_fs_is_file(p))
            return ct_fail(CT_ERR_NOT_FOUND, "%s (%s): no %s in this folder", spec, from,
                           CT_SILERO_WEIGHTS_FILE);
    } else if (ct_fs_exists(spec)) { /* a FIFO or device is refused when it is read, by kind */
        snprintf(p, sizeof p, "%s", spec);
    } else {
        /* owner/name[@revision] on the Hub */
        char repo[256];
        const char *at = strchr(spec, '@');
        size_t rl = at ? (size_t)(at - spec) : strlen(spec);
        if (rl >= sizeof repo || spec[0] == '/' || spec[0] == '.' || spec[0] == '~' ||
            ct_hub_validate_repo_id((snprintf(repo, sizeof repo, "%.*s", (int)rl, spec), repo)) !=
                CT_OK)
            return ct_fail(CT_ERR_NOT_FOUND, "%s (%s): no such file, and not a Hub repo id", spec,
                           from);
        ct_hub *h;
        CT_TRY(ct_hub_create(opts, &h));
        ct_hub_revision *rev = NULL;
        char *path = NULL;
        ct_status st = ct_hub_resolve_revision(h, repo, at ? at + 1 : "main", &rev);
        if (st == CT_OK) {
            int64_t size = -1;
            if (rev->n_files && !ct_hub_revision_has(rev, CT_SILERO_WEIGHTS_FILE, &size) &&
                !rev->from_cache)
                st = ct_fail(CT_ERR_NOT_FOUND, "%s: the repository has no %s", repo,
                             CT_SILERO_WEIGHTS_FILE);
            else
                st = ct_hub_fetch(h, repo, rev->commit, CT_SILERO_WEIGHTS_FILE, size, &path);
        }
        ct_hub_revision_free(rev);
        ct_hub_free(h);
        CT_TRY(st);
        st = check_vad_file(path);
        if (st != CT_OK) {
            free(path);
            return st;
        }
        *path_out = path;
        return CT_OK;
    }
    CT_TRY(check_vad_file(p));
    *path_out = realpath(p, NULL);
    return *path_out ? CT_OK : ct_fail(CT_ERR_IO, "%s: %s", p, strerror(errno));
}

/* ---- the installed Silero weights ----------------------------------------- */

#ifndef CT_INSTALL_DATADIR
#define CT_INSTALL_DATADIR "/usr/local/share" /* CMake's default prefix + share */
#endif

/* The folder holding the running executable (no trailing '/'); 0 when
 * /proc/self/exe cannot be read. */
static int exe_dir(char *buf, size_t cap) {
    char p[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", p, sizeof p - 1);
    if (n <= 0) return 0;
    p[n] = 0;
    char *slash = strrchr(p, '/');
    if (!slash) return 0;
    *slash = 0;
    if ((size_t)snprintf(buf, cap, "%s", p[0] ? p : "/") >= cap) return 0;
    return 1;
}

/* The folder of the object holding this code: the shared library when a
 * program links libcohere_transcribe.so, else the executable itself. */
static int code_dir(char *buf, size_t cap) {
    Dl_info info;
    if (!dladdr((void *)&code_dir, &info) || !info.dli_fname || !strchr(info.dli_fname, '/')) return 0;
    char *real = realpath(info.dli_fname, NULL);
    if (!real) return 0;
    char *slash = strrchr(real, '/');
    *slash = 0;
    int ok = (size_t)snprintf(buf, cap, "%s", real[0] ? real : "/") < cap;
    free(real);
    return ok;
}

ct_status ct_silero_default_path(char *buf, size_t cap) {
    if (!buf || cap == 0) return ct_fail(CT_ERR_INVALID_ARG, "ct_silero_default_path: no buffer");
    buf[0] = 0;
    char cand[4][PATH_MAX];
    int n = 0;
    char dir[PATH_MAX], lib[PATH_MAX];
    int have_exe = exe_dir(dir, sizeof dir);
    /* a program using the installed library: <prefix>/lib/../share/cohere-transcribe/ */
    if (code_dir(lib, sizeof lib) && (!have_exe || strcmp(lib, dir) != 0))
        snprintf(cand[n++], PATH_MAX, "%s/../share/cohere-transcribe/%s", lib, CT_SILERO_WEIGHTS_FILE);
    /* an installed binary: <prefix>/bin/../share/cohere-transcribe/ (a moved prefix still works) */
    if (have_exe)
        snprintf(cand[n++], PATH_MAX, "%s/../share/cohere-transcribe/%s", dir, CT_SILERO_WEIGHTS_FILE);
    /* the prefix this build was configured for */
    snprintf(cand[n++], PATH_MAX, "%s/cohere-transcribe/%s", CT_INSTALL_DATADIR, CT_SILERO_WEIGHTS_FILE);
    /* a build tree: build/bin/../testdata/silero/ (made by the setup test) */
    if (have_exe)
        snprintf(cand[n++], PATH_MAX, "%s/../testdata/silero/%s", dir, CT_SILERO_WEIGHTS_FILE);
    for (int i = 0; i < n; i++) {
        if (!ct_fs_is_file(cand[i])) continue;
        char *real = realpath(cand[i], NULL);
        int fits = (size_t)snprintf(buf, cap, "%s", real ? real : cand[i]) < cap;
        free(real);
        if (!fits) return ct_fail(CT_ERR_LIMIT, "%s: path longer than the buffer", cand[i]);
        return CT_OK;
    }
    snprintf(buf, cap, "%s", cand[0]);
    char list[4 * PATH_MAX + 16];
    size_t w = 0;
    for (int i = 0; i < n; i++)
        w += (size_t)snprintf(list + w, sizeof list - w, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", cand[i]);
    return ct_fail(CT_ERR_NOT_FOUND, "no %s at %s", CT_SILERO_WEIGHTS_FILE, list);
}

/* ---- the word aligner ------------------------------------------------------ */

static ct_status aligner_check_dir(const char *dir) {
    CT_TRY(need_file(dir, "config.json"));
    CT_TRY(need_file(dir, "vocab.json"));
    return check_weights(dir);
}

static ct_status fetch_aligner(ct_hub *h, const char *repo, const ct_hub_revision *rev) {
    static const char *const files[] = {"config.json", "vocab.json"};
    for (size_t i = 0; i < 2; i++) {
        char *p = NULL;
        ct_status st = fetch_one(h, repo, rev, files[i], &p);
        free(p);
        CT_TRY(st);
    }
    return fetch_weights(h, repo, rev);
}

static const repo_kind k_aligner = {aligner_check_dir, fetch_aligner};

ct_status ct_aligner_resolve_ref(const char *spec, const char *revision, const ct_hub_options *opts,
                                 ct_model_ref *out) {
    memset(out, 0, sizeof *out);
    if (!spec) spec = CT_DEFAULT_ALIGNER;
    int local;
    CT_TRY(ct_model_spec_kind(spec, &local));
    if (revision && !*revision) revision = NULL;
    if (local) {
        if (revision) return ct_fail(CT_ERR_INVALID_ARG, "an aligner revision cannot be used with a local directory");
        return resolve_local(spec, aligner_check_dir, out);
    }
    if (!revision) revision = strcmp(spec, CT_DEFAULT_ALIGNER) == 0 ? CT_DEFAULT_ALIGNER_COMMIT : "main";
    ct_status st = resolve_hub(spec, revision, opts, &k_aligner, out);
    if (st != CT_OK) {
        ct_fail_wrap(st, "word aligner %s@%s", spec, revision);
        ct_model_ref_clear(out);
    }
    return st;
}
