/* hub.h — a Hugging Face Hub client that shares its cache with Python's
 * huggingface_hub: revision → commit through the Hub API, files downloaded
 * into the standard cache layout
 *
 *     <cache>/models--owner--name/blobs/<etag>             file contents
 *     <cache>/models--owner--name/snapshots/<commit>/<file> → ../../blobs/<etag>
 *     <cache>/models--owner--name/refs/<revision>           commit (no newline)
 *     <cache>/.locks/models--owner--name/<etag>.lock        flock while writing a blob
 *
 * where <etag> is the sha256 of LFS files and the git blob sha1 of small
 * ones (both verified after download). The cache is $HF_HUB_CACHE, else
 * $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
 * ~/.cache/huggingface/hub. The token ($HF_TOKEN, else the file
 * $HF_TOKEN_PATH or $HF_HOME/token) is sent only to the endpoint's own origin,
 * never to a host a redirect leads to. Model-level logic (which files a
 * checkpoint needs) is in resolve.h; this layer knows repos and files.
 */
#ifndef CT_MODEL_HUB_H
#define CT_MODEL_HUB_H

#include <signal.h>
#include <stdint.h>

#include "core/error.h"

/* Called while a file downloads (done/total bytes; total 0 when unknown) and
 * once more with done == total at the end. Runs on the downloading thread. */
typedef void (*ct_hub_progress_fn)(const char *repo, const char *file, uint64_t done,
                                   uint64_t total, void *user);

typedef struct ct_hub_options {
    const char *endpoint;  /* NULL: $HF_ENDPOINT, else https://huggingface.co */
    const char *cache_dir; /* NULL: from the environment as above */
    const char *token;     /* NULL: from the environment / token file; "" = none */
    int offline;           /* -1: $HF_HUB_OFFLINE (1/true/yes/on); 0 online; 1 cache only */
    int max_attempts;      /* tries per request on network errors and 5xx/429 (default 5,
                              $CT_HUB_ATTEMPTS) */
    double backoff_s;      /* first retry delay, doubled each time, capped at 30 s
                              (default 1.0; $CT_HUB_BACKOFF_MS) */
    long connect_timeout_s; /* default 15 */
    long stall_timeout_s;   /* a transfer that moves no byte for this long fails (default
                               60; $CT_HUB_STALL_S) and is retried */
    ct_hub_progress_fn progress; /* NULL: no progress reports */
    void *progress_user;
    const volatile sig_atomic_t *cancel; /* nonzero → the current call ends with
                                            CT_ERR_ABORTED (partial downloads are kept
                                            for resuming) */
} ct_hub_options;

void ct_hub_default_options(ct_hub_options *o);

typedef struct ct_hub ct_hub;

/* Resolve the endpoint, cache folder and token once. Does no network I/O. */
ct_status ct_hub_create(const ct_hub_options *opts, ct_hub **out);
void ct_hub_free(ct_hub *h);

const char *ct_hub_cache_dir(const ct_hub *h);
const char *ct_hub_endpoint(const ct_hub *h);
int ct_hub_is_offline(const ct_hub *h);
int ct_hub_has_token(const ct_hub *h);

/* What a revision names: its commit and, online, the repo's file list. */
typedef struct ct_hub_revision {
    char commit[41];
    int from_cache; /* 1: resolved without the network (offline or unreachable) */
    int n_files;
    char **files;    /* repo-relative names ("siblings"); offline: the snapshot's files */
    int64_t *sizes;  /* bytes, -1 when the API did not say */
} ct_hub_revision;

/* revision: a branch, tag or commit; NULL means "main". Online this asks
 * GET {endpoint}/api/models/{repo}/revision/{rev} and records
 * refs/<revision> when it is not the commit itself. With the network
 * unreachable (after retries), or offline, it falls back to the cache (a
 * 40-hex revision with its snapshot folder, or refs/<revision>). */
ct_status ct_hub_resolve_revision(ct_hub *h, const char *repo, const char *revision,
                                  ct_hub_revision **out);
void ct_hub_revision_free(ct_hub_revision *r);
/* 1 if the revision lists file (its size into *size when not NULL). */
int ct_hub_revision_has(const ct_hub_revision *r, const char *file, int64_t *size);

/* Make repo@commit's file present in the cache and return its snapshot path
 * (malloc'd) in *path_out. expected_size (-1: unknown) cross-checks the
 * server. A file already in the snapshot is returned without the network;
 * offline, a missing one fails with CT_ERR_NOT_FOUND naming it. */
ct_status ct_hub_fetch(ct_hub *h, const char *repo, const char *commit, const char *file,
                       int64_t expected_size, char **path_out);

/* The snapshot folder of repo@commit (malloc'd; it may not exist). */
ct_status ct_hub_snapshot_path(const ct_hub *h, const char *repo, const char *commit,
                               char **out);

/* huggingface_hub's validate_repo_id (ASCII letters, digits, '-', '_', '.';
 * "name" or "owner/name"; each part starts and ends with a letter, digit or
 * '_'; at most 96 characters; no "--" or ".."; no ".git" suffix). */
ct_status ct_hub_validate_repo_id(const char *id);
/* A repo file name that is safe to place under a folder (relative, no "..",
 * no backslashes or control characters). */
ct_status ct_hub_validate_filename(const char *file);
/* A revision name usable as a refs/ path (no "..", not absolute, no control
 * characters, at most 256 bytes). */
ct_status ct_hub_validate_revision(const char *rev);
/* 1 if s is a full 40-hex lowercase commit id. */
int ct_hub_is_commit(const char *s);

#endif
