/* hub.c — the Hub client's logic: where the cache and token are, what a
 * revision points at, and fetching one file into the cache (HEAD for its
 * etag, a lock per blob, a resumable download into <blob>.incomplete, size
 * and hash checks, atomic rename, snapshot link). HTTP mechanics are in
 * hub_http.c, layout details in hub_cache.c, the lock in hub_lock.c. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"
#include "core/str.h"
#include "model/hub_internal.h"

#define CT_HUB_DEFAULT_ENDPOINT "https://huggingface.co"

/* ---- options and environment --------------------------------------------- */

static int env_true(const char *name) {
    const char *v = getenv(name);
    if (!v) return 0;
    return !strcasecmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
           !strcasecmp(v, "on");
}

static long env_long(const char *name, long dflt, long lo, long hi) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < lo || x > hi) return dflt;
    return x;
}

void ct_hub_default_options(ct_hub_options *o) {
    memset(o, 0, sizeof *o);
    o->offline = -1;
    o->max_attempts = (int)env_long("CT_HUB_ATTEMPTS", 5, 1, 100);
    o->backoff_s = (double)env_long("CT_HUB_BACKOFF_MS", 1000, 0, 600000) / 1000.0;
    o->connect_timeout_s = 15;
    o->stall_timeout_s = env_long("CT_HUB_STALL_S", 60, 1, 3600);
}

static const char *home_dir(void) {
    const char *h = getenv("HOME");
    if (h && *h) return h;
    struct passwd *pw = getpwuid(getuid());
    return pw && pw->pw_dir ? pw->pw_dir : "/";
}

/* strdup with a leading "~" or "~/" expanded, as Python's expanduser. */
static char *expand_user(const char *p) {
    if (p[0] == '~' && (p[1] == '\0' || p[1] == '/')) {
        const char *h = home_dir();
        size_t n = strlen(h) + strlen(p);
        char *s = malloc(n + 1);
        if (s) snprintf(s, n + 1, "%s%s", h, p + 1);
        return s;
    }
    return strdup(p);
}

static char *join2(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s/%s", a, b);
    return s;
}

/* $HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface */
static char *hf_home(void) {
    const char *v = getenv("HF_HOME");
    if (v && *v) return expand_user(v);
    const char *x = getenv("XDG_CACHE_HOME");
    if (x && *x) {
        char *b = expand_user(x);
        char *s = b ? join2(b, "huggingface") : NULL;
        free(b);
        return s;
    }
    char *c = join2(home_dir(), ".cache");
    char *s = c ? join2(c, "huggingface") : NULL;
    free(c);
    return s;
}

static char *default_cache_dir(void) {
    const char *v = getenv("HF_HUB_CACHE");
    if (!v || !*v) v = getenv("HUGGINGFACE_HUB_CACHE"); /* legacy name, still honoured */
    if (v && *v) return expand_user(v);
    char *home = hf_home();
    char *s = home ? join2(home, "hub") : NULL;
    free(home);
    return s;
}

/* Token as huggingface_hub: $HF_TOKEN, $HUGGING_FACE_HUB_TOKEN, then the file
 * $HF_TOKEN_PATH or $HF_HOME/token; CR/LF removed, whitespace trimmed, empty
 * means none. */
static char *clean_token(const char *t) {
    size_t n = strlen(t);
    char *s = malloc(n + 1);
    if (!s) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (t[i] != '\r' && t[i] != '\n') s[k++] = t[i];
    s[k] = '\0';
    char *b = s;
    while (*b && isspace((unsigned char)*b)) b++;
    size_t m = strlen(b);
    while (m && isspace((unsigned char)b[m - 1])) b[--m] = '\0';
    if (!m) {
        free(s);
        return NULL;
    }
    memmove(s, b, m + 1);
    return s;
}

static char *find_token(void) {
    const char *v = getenv("HF_TOKEN");
    if (!v || !*v) v = getenv("HUGGING_FACE_HUB_TOKEN");
    if (v && *v) return clean_token(v);
    char *path = NULL;
    const char *tp = getenv("HF_TOKEN_PATH");
    if (tp && *tp) {
        path = expand_user(tp);
    } else {
        char *home = hf_home();
        path = home ? join2(home, "token") : NULL;
        free(home);
    }
    if (!path) return NULL;
    char *buf = NULL;
    size_t n;
    char *tok = NULL;
    if (ct_fs_read_all(path, 64 * 1024, &buf, &n) == CT_OK) tok = clean_token(buf);
    else ct_error_clear();
    free(buf);
    free(path);
    return tok;
}

ct_status ct_hub_create(const ct_hub_options *opts, ct_hub **out) {
    *out = NULL;
    ct_hub *h = calloc(1, sizeof *h);
    if (!h) return ct_fail(CT_ERR_OOM, "cannot allocate the Hub client");
    if (opts) h->o = *opts;
    else ct_hub_default_options(&h->o);
    if (h->o.max_attempts < 1) h->o.max_attempts = 1;
    if (h->o.backoff_s < 0) h->o.backoff_s = 0;
    if (h->o.connect_timeout_s <= 0) h->o.connect_timeout_s = 15;
    if (h->o.stall_timeout_s <= 0) h->o.stall_timeout_s = 60;
    const char *ep = h->o.endpoint;
    if (ep && !*ep) { /* given but empty: not silently huggingface.co */
        ct_hub_free(h);
        return ct_fail(CT_ERR_INVALID_ARG, "Hub endpoint: empty (give an http(s) URL, or leave the option out)");
    }
    if (!ep) ep = getenv("HF_ENDPOINT");
    if (!ep || !*ep) ep = CT_HUB_DEFAULT_ENDPOINT;
    h->endpoint = strdup(ep);
    h->cache_dir = h->o.cache_dir ? expand_user(h->o.cache_dir) : default_cache_dir();
    if (!h->endpoint || !h->cache_dir) {
        ct_hub_free(h);
        return ct_fail(CT_ERR_OOM, "cannot allocate the Hub client");
    }
    size_t n = strlen(h->endpoint);
    while (n && h->endpoint[n - 1] == '/') h->endpoint[--n] = '\0';
    char origin[512];
    ct_status st = ct_hub_url_origin(h->endpoint, origin, sizeof origin);
    if (st != CT_OK) { /* the parser's reason: a bad port number, a bad host, ... */
        ct_hub_free(h);
        return ct_fail_wrap(CT_ERR_INVALID_ARG, "Hub endpoint");
    }
    if (strncmp(origin, "http://", 7) != 0 && strncmp(origin, "https://", 8) != 0) {
        ct_hub_free(h);
        return ct_fail(CT_ERR_INVALID_ARG, "Hub endpoint %s: not an http(s) URL", ep);
    }
    if (ct_hub_url_has_userinfo(h->endpoint)) {
        /* every message and warning names the endpoint and the URLs made from
         * it: a password there would be printed; the token has its own place */
        ct_hub_free(h);
        return ct_fail(CT_ERR_INVALID_ARG,
                       "Hub endpoint: a user name or password in the URL is not supported (it would be shown in "
                       "messages); give the token with HF_TOKEN instead");
    }
    if (!(h->origin = strdup(origin))) { /* ct_hub_http compares every hop's origin with it */
        ct_hub_free(h);
        return ct_fail(CT_ERR_OOM, "cannot allocate the Hub client");
    }
    if (h->o.token) h->token = h->o.token[0] ? clean_token(h->o.token) : NULL;
    else h->token = find_token();
    h->offline = h->o.offline >= 0 ? h->o.offline
                                   : (env_true("HF_HUB_OFFLINE") || env_true("TRANSFORMERS_OFFLINE"));
    h->o.endpoint = h->o.cache_dir = h->o.token = NULL; /* the copies above own them */
    *out = h;
    return CT_OK;
}

void ct_hub_free(ct_hub *h) {
    if (!h) return;
    free(h->endpoint);
    free(h->origin);
    free(h->cache_dir);
    if (h->token) memset(h->token, 0, strlen(h->token));
    free(h->token);
    free(h);
}

const char *ct_hub_cache_dir(const ct_hub *h) { return h->cache_dir; }
const char *ct_hub_endpoint(const ct_hub *h) { return h->endpoint; }
int ct_hub_is_offline(const ct_hub *h) { return h->offline; }
int ct_hub_has_token(const ct_hub *h) { return h->token != NULL; }

/* ---- validation ---------------------------------------------------------- */

int ct_hub_is_commit(const char *s) {
    if (!s || strlen(s) != 40) return 0;
    for (int i = 0; i < 40; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

static int word_char(char c) { return isalnum((unsigned char)c) || c == '_'; }
static int name_char(char c) { return word_char(c) || c == '-' || c == '.'; }

static int valid_part(const char *s, size_t n) {
    if (n < 1 || n > 96) return 0;
    if (!word_char(s[0]) || !word_char(s[n - 1])) return 0;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i]) || (signed char)s[i] < 0) return 0;
    return 1;
}

ct_status ct_hub_validate_repo_id(const char *id) {
    if (!id || !*id) return ct_fail(CT_ERR_INVALID_ARG, "empty Hub repository id");
    size_t n = strlen(id);
    if (n > 96)
        return ct_fail(CT_ERR_INVALID_ARG, "%.100s...: a Hub repository id has at most 96 characters",
                       id);
    const char *slash = strchr(id, '/');
    if (slash && strchr(slash + 1, '/'))
        return ct_fail(CT_ERR_INVALID_ARG, "%s: a Hub repository id is 'name' or 'owner/name'", id);
    int ok = slash ? valid_part(id, (size_t)(slash - id)) && valid_part(slash + 1, strlen(slash + 1))
                   : valid_part(id, n);
    if (!ok)
        return ct_fail(CT_ERR_INVALID_ARG,
                       "%s: a Hub repository id uses letters, digits, '-', '_' or '.', and each part "
                       "starts and ends with a letter, digit or '_'",
                       id);
    if (strstr(id, "--") || strstr(id, ".."))
        return ct_fail(CT_ERR_INVALID_ARG, "%s: a Hub repository id cannot contain '--' or '..'", id);
    if (ct_str_ends_with(id, ".git"))
        return ct_fail(CT_ERR_INVALID_ARG, "%s: a Hub repository id cannot end with '.git'", id);
    return CT_OK;
}

static ct_status validate_rel_path(const char *what, const char *s, size_t maxlen) {
    if (!s || !*s) return ct_fail(CT_ERR_INVALID_ARG, "empty %s", what);
    if (strlen(s) > maxlen) return ct_fail(CT_ERR_INVALID_ARG, "%s %.60s...: too long", what, s);
    /* absolute here, or a drive path where the cache may be read later */
    const char *why = ct_path_rel_problem(s);
    if (why) return ct_fail(CT_ERR_INVALID_ARG, "%s %s: %s", what, s, why);
    return CT_OK;
}

ct_status ct_hub_validate_filename(const char *file) {
    return validate_rel_path("repository file name", file, 1024);
}

ct_status ct_hub_validate_revision(const char *rev) {
    return validate_rel_path("revision", rev, 256);
}

ct_status ct_hub_snapshot_path(const ct_hub *h, const char *repo, const char *commit, char **out) {
    char storage[CT_HUB_PATH_MAX], path[CT_HUB_PATH_MAX];
    CT_TRY(ct_hub_storage_dir(h, repo, storage, sizeof storage));
    if (snprintf(path, sizeof path, "%s/snapshots/%s", storage, commit) >= (int)sizeof path)
        return ct_fail(CT_ERR_LIMIT, "%s: snapshot path too long", repo);
    *out = strdup(path);
    return *out ? CT_OK : ct_fail(CT_ERR_OOM, "out of memory");
}

/* ---- HTTP errors → messages ---------------------------------------------- */

/* A final non-2xx answer of the revision API as the message the user reads. */
static ct_status revision_http_error(const ct_hub *h, const ct_http_result *r, const char *repo,
                                     const char *revision) {
    const char *code = r->error_code;
    long s = r->status;
    if (!strcmp(code, "GatedRepo"))
        return ct_fail(CT_ERR_AUTH,
                       "%s: the model is gated: accept its terms on the Hub and set HF_TOKEN "
                       "(HTTP %ld, %s)",
                       repo, s, h->token ? "the token was refused" : "no token was found");
    /* the Hub's metadata API answers for gated repos without a token, so a
     * bare 401/403 here is a missing, private or refused repo */
    if ((s == 401 || s == 403) && !code[0])
        return ct_fail(CT_ERR_AUTH,
                       "%s: repository not found on the Hub %s, or it is private or gated (HTTP "
                       "%ld, %s): check the id; for a gated model accept its terms on the Hub and "
                       "set HF_TOKEN",
                       repo, h->endpoint, s, h->token ? "the token was refused" : "no token was found");
    if (!strcmp(code, "RepoNotFound"))
        return ct_fail(CT_ERR_NOT_FOUND,
                       "%s: repository not found on the Hub %s (check the id; a private repo needs "
                       "HF_TOKEN)",
                       repo, h->endpoint);
    if (!strcmp(code, "RevisionNotFound"))
        return ct_fail(CT_ERR_NOT_FOUND, "%s: revision '%s' not found on the Hub", repo, revision);
    if (s == 404)
        return ct_fail(CT_ERR_NOT_FOUND,
                       "%s: repository or revision '%s' not found on the Hub %s (a private repo "
                       "needs HF_TOKEN)",
                       repo, revision, h->endpoint);
    return ct_fail(CT_ERR_NETWORK, "%s: the Hub answered HTTP %ld for revision '%s'", repo, s,
                   revision);
}

/* A request with retries on transport errors and 429/5xx. */
static ct_status http_retry(ct_hub *h, const ct_http_request *req, ct_http_result *res) {
    ct_status st = CT_OK;
    int tries = 0;
    for (int attempt = 0; attempt < h->o.max_attempts; attempt++) {
        if (attempt > 0) CT_TRY(ct_hub_backoff(h, attempt - 1));
        st = ct_hub_http(h, req, res);
        tries = attempt + 1;
        if (st == CT_ERR_NETWORK && res->net_error) {
            CT_LOGW("hub: %s (attempt %d of %d)", ct_last_error(), attempt + 1, h->o.max_attempts);
            if (res->net_error == CT_NET_REFUSED && attempt >= 1) break; /* refused twice: nothing listens */
            continue;
        }
        if (st != CT_OK) return st;
        if (ct_hub_status_retryable(res->status)) {
            st = ct_fail(CT_ERR_NETWORK, "%s: HTTP %ld", res->url, res->status);
            CT_LOGW("hub: %s: HTTP %ld (attempt %d of %d)", req->url, res->status, attempt + 1,
                    h->o.max_attempts);
            continue;
        }
        return CT_OK;
    }
    return ct_fail_wrap(CT_ERR_NETWORK, "the Hub (%s) could not be reached after %d attempts",
                        h->endpoint, tries);
}

/* ---- revisions ----------------------------------------------------------- */

void ct_hub_revision_free(ct_hub_revision *r) {
    if (!r) return;
    for (int i = 0; i < r->n_files; i++) free(r->files[i]);
    free(r->files);
    free(r->sizes);
    free(r);
}

int ct_hub_revision_has(const ct_hub_revision *r, const char *file, int64_t *size) {
    for (int i = 0; i < r->n_files; i++)
        if (strcmp(r->files[i], file) == 0) {
            if (size) *size = r->sizes[i];
            return 1;
        }
    return 0;
}

/* The cache's idea of a revision: a commit with a snapshot folder, or a ref. */
static ct_status revision_from_cache(ct_hub *h, const char *repo, const char *rev,
                                     ct_hub_revision *r) {
    if (ct_hub_is_commit(rev)) {
        memcpy(r->commit, rev, 41);
    } else {
        ct_status st = ct_hub_read_ref(h, repo, rev, r->commit);
        if (st == CT_ERR_NOT_FOUND)
            return ct_fail(CT_ERR_NOT_FOUND, "%s: revision '%s' is not in the cache %s", repo, rev,
                           h->cache_dir);
        CT_TRY(st);
    }
    char *snap = NULL;
    CT_TRY(ct_hub_snapshot_path(h, repo, r->commit, &snap));
    if (!ct_fs_is_dir(snap)) {
        ct_status st = ct_fail(CT_ERR_NOT_FOUND, "%s: no snapshot of commit %s in the cache (%s)",
                               repo, r->commit, snap);
        free(snap);
        return st;
    }
    ct_status st = ct_hub_list_snapshot(snap, &r->files, &r->sizes, &r->n_files);
    free(snap);
    r->from_cache = 1;
    return st;
}

ct_status ct_hub_parse_revision_json(const char *body, size_t len, const char *repo,
                                     ct_hub_revision *r) {
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        return ct_fail(CT_ERR_FORMAT, "%s: the Hub's revision answer is not a JSON object (%s)",
                       repo, je.text);
    }
    const char *sha = json_string_value(json_object_get(root, "sha"));
    if (!sha || !ct_hub_is_commit(sha)) {
        json_decref(root);
        return ct_fail(CT_ERR_FORMAT, "%s: the Hub's revision answer has no commit 'sha'", repo);
    }
    memcpy(r->commit, sha, 41);
    json_t *sib = json_object_get(root, "siblings");
    size_t n = json_is_array(sib) ? json_array_size(sib) : 0;
    if (n > 1000000) n = 1000000;
    r->files = calloc(n ? n : 1, sizeof *r->files);
    r->sizes = calloc(n ? n : 1, sizeof *r->sizes);
    if (!r->files || !r->sizes) {
        json_decref(root);
        return ct_fail(CT_ERR_OOM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(sib, i);
        const char *name = json_string_value(json_object_get(e, "rfilename"));
        if (!name || ct_hub_validate_filename(name) != CT_OK) {
            ct_error_clear();
            continue; /* a file we could not place safely is not one we will ask for */
        }
        json_t *sz = json_object_get(e, "size");
        json_t *lfs = json_object_get(e, "lfs");
        if (!json_is_integer(sz) && json_is_object(lfs)) sz = json_object_get(lfs, "size");
        r->files[r->n_files] = strdup(name);
        if (!r->files[r->n_files]) {
            json_decref(root);
            return ct_fail(CT_ERR_OOM, "out of memory");
        }
        r->sizes[r->n_files++] = json_is_integer(sz) ? (int64_t)json_integer_value(sz) : -1;
    }
    json_decref(root);
    return CT_OK;
}

ct_status ct_hub_resolve_revision(ct_hub *h, const char *repo, const char *revision,
                                  ct_hub_revision **out) {
    *out = NULL;
    const char *rev = revision && *revision ? revision : "main";
    CT_TRY(ct_hub_validate_repo_id(repo));
    CT_TRY(ct_hub_validate_revision(rev));
    char qrepo[512], qrev[800], url[2048];
    CT_TRY(ct_hub_url_quote(repo, 1, qrepo, sizeof qrepo));
    CT_TRY(ct_hub_url_quote(rev, 0, qrev, sizeof qrev));
    ct_hub_revision *r = calloc(1, sizeof *r);
    if (!r) return ct_fail(CT_ERR_OOM, "out of memory");
    ct_status st;
    if (h->offline) {
        st = revision_from_cache(h, repo, rev, r);
        if (st != CT_OK) ct_fail_wrap(st, "offline (HF_HUB_OFFLINE)");
        goto done;
    }
    int un = snprintf(url, sizeof url, "%s/api/models/%s/revision/%s", h->endpoint, qrepo, qrev);
    if (un < 0 || (size_t)un >= sizeof url) { /* cut short it would ask for another URL */
        st = ct_fail(CT_ERR_LIMIT, "%s: the revision URL is too long (Hub endpoint %.100s...)", repo, h->endpoint);
        goto done;
    }
    ct_http_request req = {.method = "GET", .url = url, .cross_origin = 0, .body_cap = 64u << 20};
    ct_http_result res = {0};
    st = http_retry(h, &req, &res);
    if (st == CT_ERR_NETWORK) {
        /* unreachable: a cached snapshot of this revision is as good as it gets */
        char why[512];
        snprintf(why, sizeof why, "%s", ct_last_error());
        ct_status cs = revision_from_cache(h, repo, rev, r);
        if (cs == CT_OK) {
            CT_LOGW("hub: %s; using the cached snapshot %s of %s", why, r->commit, repo);
            st = CT_OK;
        } else {
            st = ct_fail(CT_ERR_NETWORK, "%s (and no usable cached copy: %s)", why, ct_last_error());
        }
    } else if (st == CT_OK && res.status != 200) {
        st = revision_http_error(h, &res, repo, rev);
    } else if (st == CT_OK) {
        st = ct_hub_parse_revision_json(res.body ? res.body : "", res.body_len, repo, r);
        if (st == CT_OK && strcmp(rev, r->commit) != 0) {
            ct_status ws = ct_hub_write_ref(h, repo, rev, r->commit);
            if (ws != CT_OK) {
                CT_LOGW("hub: cannot record refs/%s: %s", rev, ct_last_error());
                ct_error_clear();
            }
        }
    }
    ct_http_result_clear(&res);
done:
    if (st != CT_OK) {
        ct_hub_revision_free(r);
        return st;
    }
    *out = r;
    return CT_OK;
}
