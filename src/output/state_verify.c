/* state_verify.c — skip verification of a published output set
 * (PRODUCT-DETAILS §3.7): the manifest's kind, contracts, source,
 * generation id and format set, then every requested output re-opened
 * relative to the bound directory and re-hashed; the first failing rule
 * gives the reason.
 */
#include "output/state.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output/render.h"
#include "output/state_internal.h"

/* sha256 hex of an open file; 0 on a read failure (errno kept). */
static int fd_sha256(int fd, char hex[65]) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
        EVP_MD_CTX_free(ctx);
        errno = ENOMEM;
        return 0;
    }
    static __thread unsigned char buf[1 << 16];
    int good = 1;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            good = 0;
            break;
        }
        if (r == 0) break;
        EVP_DigestUpdate(ctx, buf, (size_t)r);
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx, md, &n);
    EVP_MD_CTX_free(ctx);
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < n; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[2 * n] = '\0';
    return good;
}

static int str_is(const json_t *v, const char *want) {
    return json_is_string(v) && want && strcmp(json_string_value(v), want) == 0;
}

ct_status ct_manifest_verify_payload(int dirfd, const json_t *p, const ct_verify_request *req, int *ok,
                                     char reason[CT_REASON_MAX], char **generation_id) {
    *ok = 0;
    reason[0] = '\0';
    if (generation_id) *generation_id = NULL;
    const json_t *kind = json_object_get(p, "kind");
    if (!str_is(kind, "published")) {
        char *k = kind ? json_dumps(kind, JSON_ENCODE_ANY) : NULL;
        ct_state_reason(ok, reason, "state is %s, not published", k ? k : "nil");
        free(k);
        return CT_OK;
    }
    if (!str_is(json_object_get(p, "asr_contract_key"), req->asr_key)) {
        ct_state_reason(ok, reason, "state marker ASR contract does not match");
        return CT_OK;
    }
    if (!str_is(json_object_get(p, "render_contract_key"), req->render_key)) {
        ct_state_reason(ok, reason, "state marker render contract does not match");
        return CT_OK;
    }
    /* the file's identity, not the path it was reached by (ct_source_matches) */
    int same = ct_source_matches(json_object_get(p, "source"), req->source);
    if (!same) {
        ct_state_reason(ok, reason, "state marker source snapshot does not match");
        return CT_OK;
    }
    const json_t *gid = json_object_get(p, "generation_id");
    if (!json_is_string(gid) || json_string_length(gid) == 0) {
        ct_state_reason(ok, reason, "state marker generation ID is invalid");
        return CT_OK;
    }
    const json_t *outs = json_object_get(p, "outputs");
    int formats_ok = json_is_object(outs) && json_object_size(outs) == req->n;
    for (size_t i = 0; formats_ok && i < req->n; i++)
        formats_ok = json_object_get(outs, ct_format_name(req->formats[i])) != NULL;
    if (!formats_ok) {
        ct_state_reason(ok, reason, "state marker output formats do not match");
        return CT_OK;
    }
    for (size_t i = 0; i < req->n; i++) {
        const char *fmt = ct_format_name(req->formats[i]);
        const json_t *rec = json_object_get(outs, fmt);
        if (!json_is_object(rec) || !str_is(json_object_get(rec, "name"), req->names[i])) {
            ct_state_reason(ok, reason, "state marker path for %s does not match", fmt);
            return CT_OK;
        }
        int fd = openat(dirfd, req->names[i], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat s;
        if (fd < 0 || fstat(fd, &s) != 0 || !S_ISREG(s.st_mode)) {
            if (fd >= 0) close(fd);
            ct_state_reason(ok, reason, "%s output is missing or not regular", fmt);
            return CT_OK;
        }
        const json_t *size = json_object_get(rec, "size");
        int match = json_is_integer(size) && json_integer_value(size) == (json_int_t)s.st_size;
        if (match) {
            char hex[65];
            if (!fd_sha256(fd, hex)) {
                int e = errno;
                close(fd);
                ct_state_reason(ok, reason, "cannot verify output generation (Errno::EIO: %s)", strerror(e));
                return CT_OK;
            }
            match = str_is(json_object_get(rec, "sha256"), hex);
        }
        close(fd);
        if (!match) {
            ct_state_reason(ok, reason, "%s output does not match its state marker", fmt);
            return CT_OK;
        }
    }
    if (generation_id) {
        *generation_id = strdup(json_string_value(gid));
        if (!*generation_id) return ct_fail(CT_ERR_OOM, "manifest: out of memory");
    }
    *ok = 1;
    return CT_OK;
}

ct_status ct_manifest_verify(int dirfd, const char *manifest_name, const ct_verify_request *req, int *ok,
                             char reason[CT_REASON_MAX], char **generation_id) {
    if (generation_id) *generation_id = NULL;
    json_t *p;
    CT_TRY(ct_state_read(dirfd, manifest_name, &p, ok, reason));
    if (!*ok) return CT_OK;
    ct_status st = ct_manifest_verify_payload(dirfd, p, req, ok, reason, generation_id);
    json_decref(p);
    return st;
}
