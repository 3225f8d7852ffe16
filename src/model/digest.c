/* digest.c — see digest.h. */
#include "model/digest.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"

static void to_hex(const unsigned char *md, unsigned n, char *hex) {
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < n; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[2 * n] = '\0';
}

ct_status ct_file_digest(const char *path, ct_digest_kind kind, char hex[65]) {
    hex[0] = '\0';
    int fd;
    struct stat s;
    CT_TRY(ct_fs_open_input(path, &fd, &s)); /* a FIFO or device must not block or stream forever */
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || !EVP_DigestInit_ex(ctx, kind == CT_DIGEST_SHA256 ? EVP_sha256() : EVP_sha1(), NULL)) {
        EVP_MD_CTX_free(ctx);
        close(fd);
        return ct_fail(CT_ERR_INTERNAL, "cannot start a digest");
    }
    if (kind == CT_DIGEST_GIT_SHA1) {
        char head[64];
        int hl = snprintf(head, sizeof head, "blob %lld", (long long)s.st_size);
        EVP_DigestUpdate(ctx, head, (size_t)hl + 1); /* with the NUL */
    }
    static __thread unsigned char buf[1 << 16];
    ct_status st = CT_OK;
    for (;;) {
        ssize_t r = read(fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            st = ct_fail(CT_ERR_IO, "%s: read failed: %s", path, strerror(errno));
            break;
        }
        if (r == 0) break;
        EVP_DigestUpdate(ctx, buf, (size_t)r);
    }
    close(fd);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_DigestFinal_ex(ctx, md, &mdlen);
    EVP_MD_CTX_free(ctx);
    if (st != CT_OK) return st;
    to_hex(md, mdlen, hex);
    return CT_OK;
}

ct_status ct_file_sha256(const char *path, char hex[65]) { return ct_file_digest(path, CT_DIGEST_SHA256, hex); }

ct_status ct_sha256_hex(const void *data, size_t n, char hex[65]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    hex[0] = '\0';
    if (!EVP_Digest(data, n, md, &mdlen, EVP_sha256(), NULL)) return ct_fail(CT_ERR_INTERNAL, "cannot compute a sha256");
    to_hex(md, mdlen, hex);
    return CT_OK;
}
