/* hub_internal.h — what hub.c, hub_http.c, hub_cache.c and hub_lock.c share:
 * the client object, one HTTP exchange with manual redirects, cache paths,
 * and the per-blob lock. Not for use outside src/model/hub*.c (and tests). */
#ifndef CT_MODEL_HUB_INTERNAL_H
#define CT_MODEL_HUB_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "model/hub.h"

#define CT_HUB_MAX_REDIRECTS 8
#define CT_HUB_PATH_MAX 4096
/* Longest URL requested or followed: signed file-server URLs run past 1 kB. */
#define CT_HUB_URL_MAX 16384

struct ct_hub {
    ct_hub_options o;
    char *endpoint;  /* without trailing '/' */
    char *origin;    /* "scheme://host:port" of the endpoint, lower-case */
    char *cache_dir;
    char *token;     /* NULL: none */
    int offline;
};

/* ---- HTTP (hub_http.c) -------------------------------------------------- */

enum { CT_NET_RETRY = 1, CT_NET_REFUSED = 2 };

typedef struct ct_http_result {
    long status;          /* of the last response (0: no response) */
    char url[2048];       /* the URL that gave the last response, without its query (messages) */
    char location[CT_HUB_URL_MAX]; /* absolute Location of a redirect not followed */
    char etag[160];       /* normalised: no W/ and no quotes */
    char linked_etag[160];
    char repo_commit[64];
    char error_code[64];  /* X-Error-Code (RepoNotFound, GatedRepo, ...) */
    char error_message[256];
    int64_t linked_size;  /* X-Linked-Size, -1 if absent */
    int64_t content_length; /* -1 if absent */
    int64_t range_start;  /* start of Content-Range on a 206, -1 otherwise */
    int64_t range_total;  /* total of Content-Range, -1 otherwise */
    char *body;           /* memory body (API/error responses), NUL-terminated */
    size_t body_len;
    int64_t written;      /* bytes written to the file sink by this exchange */
    int net_error;        /* CT_NET_RETRY: transport failure (retryable); CT_NET_REFUSED: the
                           * connection was refused (retried once: nothing listens there, and
                           * five tries with back-off took 15 s to say so); 0 otherwise */
    char net_message[256];
} ct_http_result;

typedef struct ct_http_request {
    const char *method;   /* "GET" or "HEAD" */
    const char *url;
    int cross_origin;     /* 1: follow redirects to other origins; 0: stop there */
    FILE *sink;           /* GET: 2xx body appended here (NULL: into memory) */
    int64_t range_from;   /* >0: ask for bytes from here (resume) */
    size_t body_cap;      /* memory body limit (default 16 MiB) */
    const char *display;  /* file name for progress reports */
    const char *repo;
    uint64_t progress_total;
} ct_http_request;

/* One request, redirects followed by hand (at most CT_HUB_MAX_REDIRECTS) so
 * that the Authorization header goes only to the endpoint's origin. Returns
 * CT_OK when a final response arrived (any status: the caller judges it),
 * CT_ERR_NETWORK for transport failures (res->net_error set), CT_ERR_ABORTED on
 * cancellation, other codes for local failures. No retries here. */
ct_status ct_hub_http(ct_hub *h, const ct_http_request *req, ct_http_result *res);
void ct_http_result_clear(ct_http_result *res);

/* Fold one raw header line (or status line, which resets the fields) into r. */
void ct_http_parse_header_line(ct_http_result *r, const char *line, size_t len);
/* The revision API's JSON answer into r (commit + siblings). */
ct_status ct_hub_parse_revision_json(const char *body, size_t len, const char *repo,
                                     ct_hub_revision *r);

/* "scheme://host:port" of url, lower-case, default ports filled in. */
/* 1 when url carries a user name or password ("https://u:p@host"). */
int ct_hub_url_has_userinfo(const char *url);
ct_status ct_hub_url_origin(const char *url, char *out, size_t cap);
/* Percent-encode s for a URL path; keep '/' when keep_slash. */
ct_status ct_hub_url_quote(const char *s, int keep_slash, char *out, size_t cap);

/* Sleep for the backoff of attempt k (0-based) unless cancelled. */
ct_status ct_hub_backoff(ct_hub *h, int attempt);
/* 1 when the status is worth retrying (429 and 5xx). */
int ct_hub_status_retryable(long status);
/* CT_ERR_ABORTED if the caller cancelled. */
ct_status ct_hub_check_cancel(const ct_hub *h);

/* ---- cache layout (hub_cache.c) ----------------------------------------- */

/* "models--owner--name" */
ct_status ct_hub_repo_folder(const char *repo, char *out, size_t cap);
/* <cache>/models--owner--name */
ct_status ct_hub_storage_dir(const ct_hub *h, const char *repo, char *out, size_t cap);
/* Read refs/<revision> into commit (41 bytes). CT_ERR_NOT_FOUND if absent. */
ct_status ct_hub_read_ref(const ct_hub *h, const char *repo, const char *revision, char *commit);
/* Write refs/<revision> atomically, without a newline, when it differs. */
ct_status ct_hub_write_ref(const ct_hub *h, const char *repo, const char *revision,
                           const char *commit);
/* snapshots/<commit>/<file> → ../../blobs/<etag> (depth-adjusted), replacing
 * what was there. */
ct_status ct_hub_link_snapshot(const char *storage, const char *commit, const char *file,
                               const char *etag);
/* CACHEDIR.TAG in the cache root, as huggingface_hub writes it (best effort). */
void ct_hub_write_cachedir_tag(const ct_hub *h);
/* List the regular files (following links) under a snapshot folder as
 * repo-relative names. */
ct_status ct_hub_list_snapshot(const char *snapdir, char ***files, int64_t **sizes, int *n);
/* Verify a finished blob against its etag: sha256 (64 hex) or git blob sha1
 * (40 hex); other etags are not content hashes and pass. */
ct_status ct_hub_verify_blob(const char *path, const char *etag);

/* ---- locks (hub_lock.c) -------------------------------------------------- */

/* Take an exclusive flock on path (created 0664 with parents), waiting for
 * other holders while checking cancellation. *fd_out is the open lock. */
ct_status ct_hub_lock(ct_hub *h, const char *path, int *fd_out);
void ct_hub_unlock(int fd);

#endif
