/* hub_fetch.c — one repo file into the cache: HEAD the resolve URL for the
 * blob's etag and size, take the blob's lock, download (resuming a
 * <blob>.incomplete left by an earlier attempt or a killed process) with
 * retries, check size and content hash, rename into blobs/, link the
 * snapshot. The partial file's name carries the etag, i.e. the content hash,
 * so a resumed prefix can only belong to this blob; the final hash check
 * catches anything else. (huggingface_hub >= 1.x writes process-unique
 * <etag>.<random>.incomplete names and never resumes them; the two never
 * touch each other's partial files, and both take the same lock.) */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"
#include "model/hub_internal.h"

/* An etag becomes a file name: allow only what the Hub uses (hex, maybe
 * '-' in some CDNs), never a path. */
static int safe_etag(const char *e) {
    if (!*e || e[0] == '.' || strlen(e) > 128) return 0;
    for (const char *p = e; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              *p == '-' || *p == '_' || *p == '.'))
            return 0;
    return 1;
}

static int64_t file_size(const char *path) {
    struct stat s;
    return stat(path, &s) == 0 ? (int64_t)s.st_size : -1;
}

/* A final non-2xx answer for a file as the message the user reads (the
 * revision API's counterpart is in hub.c). */
static ct_status file_http_error(const ct_hub *h, const ct_http_result *r, const char *repo,
                                 const char *commit, const char *file) {
    const char *code = r->error_code;
    long s = r->status;
    if (!strcmp(code, "GatedRepo") || ((s == 401 || s == 403) && strcmp(code, "RepoNotFound") != 0))
        return ct_fail(CT_ERR_AUTH,
                       "%s: the model is gated: accept its terms on the Hub and set HF_TOKEN "
                       "(HTTP %ld on %s, %s)",
                       repo, s, file, h->token ? "the token was refused" : "no token was found");
    if (!strcmp(code, "RepoNotFound"))
        return ct_fail(CT_ERR_NOT_FOUND,
                       "%s: repository not found on the Hub %s (check the id; a private repo needs "
                       "HF_TOKEN)",
                       repo, h->endpoint);
    if (!strcmp(code, "RevisionNotFound"))
        return ct_fail(CT_ERR_NOT_FOUND, "%s: revision %s not found on the Hub", repo, commit);
    if (s == 404 || !strcmp(code, "EntryNotFound"))
        return ct_fail(CT_ERR_NOT_FOUND, "%s: file '%s' not found at revision %s on the Hub", repo,
                       file, commit);
    return ct_fail(CT_ERR_NETWORK, "%s: the Hub answered HTTP %ld for %s", repo, s, file);
}

typedef struct blob_meta {
    char etag[160];
    int64_t size; /* -1 unknown */
} blob_meta;

/* HEAD {endpoint}/{repo}/resolve/{commit}/{file}, same-origin redirects only
 * (as huggingface_hub): the Hub's answer carries X-Linked-Etag/-Size for LFS
 * files on the redirect, ETag/Content-Length for small files. */
static ct_status head_file(ct_hub *h, const char *url, const char *repo, const char *commit,
                           const char *file, blob_meta *m) {
    ct_http_request req = {.method = "HEAD", .url = url, .cross_origin = 0};
    ct_http_result res = {0};
    ct_status st = CT_OK;
    for (int attempt = 0; attempt < h->o.max_attempts; attempt++) {
        if (attempt > 0) {
            st = ct_hub_backoff(h, attempt - 1);
            if (st != CT_OK) break;
        }
        st = ct_hub_http(h, &req, &res);
        if (st == CT_ERR_NETWORK && res.net_error) {
            CT_LOGW("hub: %s (attempt %d of %d)", ct_last_error(), attempt + 1, h->o.max_attempts);
            if (res.net_error == CT_NET_REFUSED && attempt >= 1) break; /* refused twice: nothing listens */
            continue;
        }
        if (st == CT_OK && ct_hub_status_retryable(res.status)) {
            st = ct_fail(CT_ERR_NETWORK, "%s: HTTP %ld", url, res.status);
            CT_LOGW("hub: %s (attempt %d of %d)", ct_last_error(), attempt + 1, h->o.max_attempts);
            continue;
        }
        break;
    }
    if (st == CT_ERR_NETWORK)
        st = ct_fail_wrap(CT_ERR_NETWORK, "%s: cannot download %s: the Hub (%s) could not be reached",
                          repo, file, h->endpoint);
    if (st != CT_OK) goto out;
    int redirected = res.location[0] != '\0';
    if (!(res.status == 200 || redirected)) {
        st = file_http_error(h, &res, repo, commit, file);
        goto out;
    }
    if (res.repo_commit[0] && strcmp(res.repo_commit, commit) != 0) {
        st = ct_fail(CT_ERR_FORMAT, "%s: asked for %s at commit %s, the Hub answered for %s", repo,
                     file, commit, res.repo_commit);
        goto out;
    }
    const char *etag = res.linked_etag[0] ? res.linked_etag : res.etag;
    if (!etag[0] || !safe_etag(etag)) {
        st = ct_fail(CT_ERR_FORMAT, "%s: the Hub sent no usable ETag for %s ('%s')", repo, file, etag);
        goto out;
    }
    snprintf(m->etag, sizeof m->etag, "%s", etag);
    m->size = res.linked_size >= 0 ? res.linked_size : (redirected ? -1 : res.content_length);
out:
    ct_http_result_clear(&res);
    return st;
}

/* Download url into incomplete (resuming), under the caller's lock, until
 * it holds size bytes (or a complete response when size is unknown). */
static ct_status download_blob(ct_hub *h, const char *url, const char *repo, const char *commit,
                               const char *file, const char *incomplete, const blob_meta *m) {
    int failures = 0, total_tries = 0;
    ct_status st = CT_OK;
    for (;;) {
        CT_TRY(ct_hub_check_cancel(h));
        int64_t have = file_size(incomplete);
        if (have < 0) have = 0;
        if (m->size >= 0 && have > m->size) {
            CT_LOGW("hub: %s: partial file is larger than the blob; starting over", incomplete);
            if (truncate(incomplete, 0) != 0)
                return ct_fail(CT_ERR_IO, "%s: cannot truncate: %s", incomplete, strerror(errno));
            have = 0;
        }
        if (m->size >= 0 && have == m->size) return CT_OK;
        if (have > 0) CT_LOGI("hub: resuming %s at byte %" PRId64, file, have);
        FILE *f = fopen(incomplete, "ab");
        if (!f) return ct_fail(CT_ERR_IO, "%s: cannot open: %s", incomplete, strerror(errno));
        ct_http_request req = {.method = "GET", .url = url, .cross_origin = 1, .sink = f,
                               .range_from = have, .display = file, .repo = repo,
                               .progress_total = m->size > 0 ? (uint64_t)m->size : 0};
        ct_http_result res = {0};
        st = ct_hub_http(h, &req, &res);
        /* all three run, whichever fails */
        int flush_bad = fflush(f) != 0;
        int sync_bad = fsync(fileno(f)) != 0;
        int close_bad = fclose(f) != 0;
        close_bad |= flush_bad | sync_bad;
        if (st == CT_OK && close_bad)
            st = ct_fail(CT_ERR_IO, "%s: cannot write: %s", incomplete, strerror(errno));
        int64_t now = file_size(incomplete);
        int progressed = now > have;
        int retry = 0;
        if (st == CT_ERR_NETWORK && res.net_error) {
            retry = 1;
            if (res.net_error == CT_NET_REFUSED && failures >= 1 && !progressed) {
                ct_http_result_clear(&res); /* refused twice: nothing listens */
                return ct_fail_wrap(CT_ERR_NETWORK, "%s: download failed after %d attempts", file, total_tries + 1);
            }
        } else if (st != CT_OK) {
            ct_http_result_clear(&res);
            return st;
        } else if (res.status == 416) {
            /* our partial file does not fit the blob any more: start over */
            if (truncate(incomplete, 0) != 0) {
                ct_http_result_clear(&res);
                return ct_fail(CT_ERR_IO, "%s: cannot truncate: %s", incomplete, strerror(errno));
            }
            st = ct_fail(CT_ERR_NETWORK, "%s: range not satisfiable", url);
            retry = 1;
        } else if (ct_hub_status_retryable(res.status)) {
            st = ct_fail(CT_ERR_NETWORK, "%s: HTTP %ld", res.url, res.status);
            retry = 1;
        } else if (res.status != 200 && res.status != 206) {
            st = file_http_error(h, &res, repo, commit, file);
            ct_http_result_clear(&res);
            return st;
        } else if (m->size >= 0 && now != m->size) {
            if (now > m->size) {
                if (truncate(incomplete, 0) != 0) {
                    ct_http_result_clear(&res);
                    return ct_fail(CT_ERR_IO, "%s: cannot truncate", incomplete);
                }
                progressed = 0;
            }
            st = ct_fail(CT_ERR_NETWORK,
                         "%s: size mismatch: got %" PRId64 " bytes, the Hub says %" PRId64
                         " (Content-Length %" PRId64 ")",
                         file, now, m->size, res.content_length);
            retry = 1;
        } else {
            ct_http_result_clear(&res);
            return CT_OK; /* size unknown: curl checked Content-Length; the hash decides */
        }
        ct_http_result_clear(&res);
        if (retry) {
            total_tries++;
            failures = progressed ? 1 : failures + 1;
            if (failures >= h->o.max_attempts || total_tries >= 4 * h->o.max_attempts)
                return ct_fail_wrap(CT_ERR_NETWORK, "%s: download failed after %d attempts", file,
                                    total_tries);
            CT_LOGW("hub: %s (attempt %d, retrying)", ct_last_error(), total_tries);
            CT_TRY(ct_hub_backoff(h, progressed ? 0 : failures - 1));
        }
    }
}

ct_status ct_hub_fetch(ct_hub *h, const char *repo, const char *commit, const char *file,
                       int64_t expected_size, char **path_out) {
    *path_out = NULL;
    CT_TRY(ct_hub_validate_repo_id(repo));
    CT_TRY(ct_hub_validate_filename(file));
    if (!ct_hub_is_commit(commit))
        return ct_fail(CT_ERR_INVALID_ARG, "%s: '%s' is not a commit id", repo, commit);
    char storage[CT_HUB_PATH_MAX], pointer[CT_HUB_PATH_MAX];
    CT_TRY(ct_hub_storage_dir(h, repo, storage, sizeof storage));
    if (snprintf(pointer, sizeof pointer, "%s/snapshots/%s/%s", storage, commit, file) >=
        (int)sizeof pointer)
        return ct_fail(CT_ERR_LIMIT, "%s: path too long", file);
    if (ct_fs_is_file(pointer)) {
        *path_out = strdup(pointer);
        return *path_out ? CT_OK : ct_fail(CT_ERR_OOM, "out of memory");
    }
    if (h->offline)
        return ct_fail(CT_ERR_NOT_FOUND,
                       "%s: '%s' is missing from the cached snapshot %s/snapshots/%s and the Hub is "
                       "offline (HF_HUB_OFFLINE)",
                       repo, file, storage, commit);

    char qrepo[512], qfile[3200], url[4096];
    CT_TRY(ct_hub_url_quote(repo, 1, qrepo, sizeof qrepo));
    CT_TRY(ct_hub_url_quote(file, 1, qfile, sizeof qfile));
    if (snprintf(url, sizeof url, "%s/%s/resolve/%s/%s", h->endpoint, qrepo, commit, qfile) >=
        (int)sizeof url)
        return ct_fail(CT_ERR_LIMIT, "%s: URL too long", file);

    blob_meta m;
    CT_TRY(head_file(h, url, repo, commit, file, &m));
    if (expected_size >= 0 && m.size >= 0 && expected_size != m.size)
        return ct_fail(CT_ERR_FORMAT, "%s: %s is %" PRId64 " bytes by the API but %" PRId64 " by the file server",
                       repo, file, expected_size, m.size);
    if (m.size < 0) m.size = expected_size;

    char blob[CT_HUB_PATH_MAX], incomplete[CT_HUB_PATH_MAX + 16], lock[CT_HUB_PATH_MAX],
        folder[256];
    CT_TRY(ct_hub_repo_folder(repo, folder, sizeof folder));
    if (snprintf(blob, sizeof blob, "%s/blobs/%s", storage, m.etag) >= (int)sizeof blob ||
        snprintf(lock, sizeof lock, "%s/.locks/%s/%s.lock", h->cache_dir, folder, m.etag) >=
            (int)sizeof lock)
        return ct_fail(CT_ERR_LIMIT, "%s: path too long", file);
    snprintf(incomplete, sizeof incomplete, "%s.incomplete", blob);
    char blobdir[CT_HUB_PATH_MAX];
    snprintf(blobdir, sizeof blobdir, "%s/blobs", storage);
    CT_TRY(ct_fs_mkdirs(blobdir));
    ct_hub_write_cachedir_tag(h);

    int fd;
    CT_TRY(ct_hub_lock(h, lock, &fd));
    ct_status st = CT_OK;
    if (!ct_fs_is_file(blob)) {
        st = download_blob(h, url, repo, commit, file, incomplete, &m);
        if (st == CT_OK) {
            st = ct_hub_verify_blob(incomplete, m.etag);
            if (st != CT_OK) {
                unlink(incomplete); /* a wrong prefix must not be resumed again */
                ct_fail_wrap(st, "%s: download corrupt (removed; run again to retry)", file);
            }
        }
        if (st == CT_OK && rename(incomplete, blob) != 0)
            st = ct_fail(CT_ERR_IO, "%s: cannot rename into place: %s", blob, strerror(errno));
        if (st == CT_OK && h->o.progress) {
            int64_t sz = file_size(blob);
            h->o.progress(repo, file, (uint64_t)sz, (uint64_t)sz, h->o.progress_user);
        }
    }
    if (st == CT_OK) st = ct_hub_link_snapshot(storage, commit, file, m.etag);
    ct_hub_unlock(fd);
    if (st != CT_OK) return st;
    *path_out = strdup(pointer);
    return *path_out ? CT_OK : ct_fail(CT_ERR_OOM, "out of memory");
}
