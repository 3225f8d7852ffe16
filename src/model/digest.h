/* digest.h — content hashes of files as lower-case hex (OpenSSL): sha256,
 * and git's blob sha1 (the Hub's etag of a file not stored in LFS). For the
 * Hub cache's blob check and the VAD weights check. Not in src/core: core is
 * built on machines without the OpenSSL headers. */
#ifndef CT_MODEL_DIGEST_H
#define CT_MODEL_DIGEST_H

#include "core/error.h"

typedef enum ct_digest_kind {
    CT_DIGEST_SHA256,   /* 64 hex characters */
    CT_DIGEST_GIT_SHA1, /* sha1 of "blob <size>\0" + content: 40 hex characters */
} ct_digest_kind;

/* The digest of a whole file, read in blocks, into hex + NUL. */
ct_status ct_file_digest(const char *path, ct_digest_kind kind, char hex[65]);

/* sha256 of a file as 64 lower-case hex characters + NUL. */
ct_status ct_file_sha256(const char *path, char hex[65]);

/* sha256 of n bytes in memory, as 64 lower-case hex characters + NUL. */
ct_status ct_sha256_hex(const void *data, size_t n, char hex[65]);

#endif
