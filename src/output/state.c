/* state.c — the state-file envelope and its verifying reader, the source
 * snapshot, state file names and generation ids (state.h, PRODUCT-DETAILS
 * §3.1–3.3). Payloads are in state_checkpoint.c, contracts in
 * state_contract.c, skip verification in state_verify.c.
 */
#include "output/state.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "model/digest.h"
#include "output/state_internal.h"

/* ---- source snapshot -------------------------------------------------- */

json_t *ct_source_snapshot_json(const ct_source_snapshot *s) {
    int ok = 1;
    json_t *o = json_object(), *snap = json_object();
    /* device and inode above 2^63 cannot be JSON integers in jansson; they
     * wrap to negative values, identically on write and re-check. */
    ct_jset(snap, "device", json_integer((json_int_t)s->device), &ok);
    ct_jset(snap, "inode", json_integer((json_int_t)s->inode), &ok);
    ct_jset(snap, "size", json_integer(s->size), &ok);
    ct_jset(snap, "mtime_ns", json_integer(s->mtime_ns), &ok);
    ct_jset(snap, "ctime_ns", json_integer(s->ctime_ns), &ok);
    ct_jset(o, "canonical_path", json_string(s->canonical_path ? s->canonical_path : ""), &ok);
    ct_jset(o, "snapshot", snap, &ok);
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* A recorded source (payload.source) against a fresh snapshot: the same
 * file when inode, size, mtime and ctime agree and either the device or the
 * canonical path does. Not the path alone: through a bind mount one file has
 * two paths (and two processes wrote its set twice, docs/DURABILITY.md §9).
 * Not the device alone: NFS clients number one server's export differently,
 * so a set another machine published would never verify here. */
int ct_source_matches(const json_t *recorded, const ct_source_snapshot *fresh) {
    const json_t *snap = json_object_get(recorded, "snapshot");
    if (!json_is_object(snap)) return 0;
    const json_t *ino = json_object_get(snap, "inode"), *size = json_object_get(snap, "size");
    const json_t *mt = json_object_get(snap, "mtime_ns"), *ct = json_object_get(snap, "ctime_ns");
    const json_t *dev = json_object_get(snap, "device"), *path = json_object_get(recorded, "canonical_path");
    if (!json_is_integer(ino) || !json_is_integer(size) || !json_is_integer(mt) || !json_is_integer(ct)) return 0;
    if (json_integer_value(ino) != (json_int_t)fresh->inode || json_integer_value(size) != fresh->size ||
        json_integer_value(mt) != fresh->mtime_ns || json_integer_value(ct) != fresh->ctime_ns)
        return 0;
    int same_dev = json_is_integer(dev) && json_integer_value(dev) == (json_int_t)fresh->device;
    int same_path = json_is_string(path) && fresh->canonical_path &&
                    strcmp(json_string_value(path), fresh->canonical_path) == 0;
    return same_dev || same_path;
}

/* ---- envelope --------------------------------------------------------- */

ct_status ct_state_envelope(const json_t *payload, ct_jbuf *out) {
    char hex[65];
    CT_TRY(ct_json_fingerprint(payload, hex));
    int ok = 1;
    json_t *env = json_object();
    ct_jset(env, "schema_version", json_integer(CT_STATE_SCHEMA_VERSION), &ok);
    ct_jset(env, "payload_sha256", json_string(hex), &ok);
    ct_jset(env, "payload", json_incref((json_t *)payload), &ok);
    ct_status st = ok ? ct_json_dump_pretty(env, out) : ct_fail(CT_ERR_OOM, "state: out of memory");
    json_decref(env);
    return st;
}

void ct_state_reason(int *ok, char reason[CT_REASON_MAX], const char *fmt, ...) {
    *ok = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, CT_REASON_MAX, fmt, ap);
    va_end(ap);
}

/* Constant-time equality of two strings of the same length. */
static int same_digest(const char *a, size_t alen, const char *b, size_t blen) {
    if (alen != blen) return 0;
    unsigned char d = 0;
    for (size_t i = 0; i < alen; i++) d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

ct_status ct_state_decode(const char *data, size_t len, json_t **payload, int *ok, char reason[CT_REASON_MAX]) {
    *payload = NULL;
    *ok = 0;
    reason[0] = '\0';
    json_t *doc;
    if (ct_json_parse(data, len, &doc) != CT_OK) {
        ct_state_reason(ok, reason, "state marker is unreadable (%s)", ct_last_error());
        return CT_OK;
    }
    json_t *sv, *p, *digest;
    if (!json_is_object(doc)) {
        ct_state_reason(ok, reason, "state marker root is not an object");
    } else if (sv = json_object_get(doc, "schema_version"),
               !(json_is_number(sv) && json_number_value(sv) == CT_STATE_SCHEMA_VERSION)) {
        ct_state_reason(ok, reason, "state marker schema is unsupported");
    } else if (p = json_object_get(doc, "payload"), !json_is_object(p)) {
        ct_state_reason(ok, reason, "state marker payload is not an object");
    } else {
        char hex[65];
        ct_status st = ct_json_fingerprint(p, hex);
        if (st != CT_OK && st != CT_ERR_INVALID_ARG) {
            json_decref(doc);
            return st;
        }
        digest = json_object_get(doc, "payload_sha256");
        if (st != CT_OK || !json_is_string(digest) ||
            !same_digest(json_string_value(digest), json_string_length(digest), hex, 64)) {
            ct_state_reason(ok, reason, "state marker integrity check failed");
        } else {
            *payload = json_incref(p);
            *ok = 1;
        }
    }
    json_decref(doc);
    return CT_OK;
}

ct_status ct_state_read(int dirfd, const char *name, json_t **payload, int *ok, char reason[CT_REASON_MAX]) {
    *payload = NULL;
    *ok = 0;
    struct stat s;
    if (fstatat(dirfd, name, &s, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(s.st_mode)) {
        ct_state_reason(ok, reason, "state marker is missing or not a regular file");
        return CT_OK;
    }
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    char msg[600];
    if (fd < 0) {
        snprintf(msg, sizeof msg, "Errno::%s: %s", errno == ENOENT ? "ENOENT" : "EIO", strerror(errno));
        ct_state_reason(ok, reason, "state marker is unreadable (%s)", msg);
        return CT_OK;
    }
    if (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode)) {
        close(fd);
        ct_state_reason(ok, reason, "state marker is missing or not a regular file");
        return CT_OK;
    }
    /* Read up to the cap + 1 so a file grown since fstat is caught too. */
    size_t cap = CT_STATE_MAX_BYTES, have = 0;
    size_t want = (size_t)s.st_size < cap ? (size_t)s.st_size + 1 : cap + 1;
    char *buf = malloc(want);
    if (!buf) {
        close(fd);
        return ct_fail(CT_ERR_OOM, "state: out of memory reading %s", name);
    }
    int err = 0;
    for (;;) {
        if (have == want) {
            if (want > cap) break;
            size_t nw = want * 2 > cap + 1 ? cap + 1 : want * 2;
            char *nb = realloc(buf, nw);
            if (!nb) {
                free(buf);
                close(fd);
                return ct_fail(CT_ERR_OOM, "state: out of memory reading %s", name);
            }
            buf = nb;
            want = nw;
        }
        ssize_t r = read(fd, buf + have, want - have);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            err = errno;
            break;
        }
        if (r == 0) break;
        have += (size_t)r;
    }
    close(fd);
    ct_status st = CT_OK;
    if (err) {
        snprintf(msg, sizeof msg, "Errno::EIO: %s", strerror(err));
        ct_state_reason(ok, reason, "state marker is unreadable (%s)", msg);
    } else if (have > cap) {
        snprintf(msg, sizeof msg, "RuntimeError: State marker is too large: %s", name);
        ct_state_reason(ok, reason, "state marker is unreadable (%s)", msg);
    } else {
        st = ct_state_decode(buf, have, payload, ok, reason);
    }
    free(buf);
    return st;
}

static ct_status state_name(const char *stem, const char *suffix, char **out) {
    size_t n = strlen(stem) + strlen(suffix) + 2;
    char *s = malloc(n);
    if (!s) return ct_fail(CT_ERR_OOM, "state: out of memory");
    snprintf(s, n, ".%s%s", stem, suffix);
    *out = s;
    return CT_OK;
}

ct_status ct_state_manifest_name(const char *stem, char **out) {
    return state_name(stem, CT_STATE_MANIFEST_SUFFIX, out);
}

ct_status ct_state_checkpoint_name(const char *stem, char **out) {
    return state_name(stem, CT_STATE_CHECKPOINT_SUFFIX, out);
}

/* ---- generation ids, clock ------------------------------------------- */

ct_status ct_generation_id_new(char out[33]) {
    unsigned char b[16];
    size_t have = 0;
    while (have < sizeof b) {
        ssize_t r = getrandom(b + have, sizeof b - have, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return ct_fail(CT_ERR_IO, "generation id: getrandom failed: %s", strerror(errno));
        have += (size_t)r;
    }
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[32] = '\0';
    return CT_OK;
}

ct_status ct_record_ensure_generation_id(ct_file_record *r) {
    if (r->generation_id && r->generation_id[0]) return CT_OK;
    char id[33];
    CT_TRY(ct_generation_id_new(id));
    free(r->generation_id);
    r->generation_id = strdup(id);
    return r->generation_id ? CT_OK : ct_fail(CT_ERR_OOM, "state: out of memory");
}

double ct_unix_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
