/* error.c — thread-local failure messages and status names. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Messages name paths, often several: room for a few PATH_MAX-long ones. */
#define CT_ERRMSG_MAX 4096

static _Thread_local char tl_msg[CT_ERRMSG_MAX];

ct_status ct_fail(ct_status code, const char *fmt, ...) {
    /* formatted aside first: an argument may be ct_last_error() itself, and
     * vsnprintf into the buffer it reads from is undefined (glibc garbles it) */
    char msg[CT_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(tl_msg, msg, sizeof tl_msg);
    return code;
}

ct_status ct_fail_wrap(ct_status code, const char *fmt, ...) {
    char prefix[CT_ERRMSG_MAX];
    char old[CT_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, tl_msg, sizeof old);
    if (old[0])
        snprintf(tl_msg, sizeof tl_msg, "%s: %s", prefix, old);
    else
        snprintf(tl_msg, sizeof tl_msg, "%s", prefix);
    return code;
}

void ct_error_clear(void) { tl_msg[0] = '\0'; }

const char *ct_last_error(void) { return tl_msg; }

const char *ct_status_str(ct_status s) {
    switch (s) {
    case CT_OK: return "CT_OK";
    case CT_ERR_INVALID_ARG: return "CT_ERR_INVALID_ARG";
    case CT_ERR_IO: return "CT_ERR_IO";
    case CT_ERR_FORMAT: return "CT_ERR_FORMAT";
    case CT_ERR_OOM: return "CT_ERR_OOM";
    case CT_ERR_DEVICE: return "CT_ERR_DEVICE";
    case CT_ERR_UNSUPPORTED: return "CT_ERR_UNSUPPORTED";
    case CT_ERR_ABORTED: return "CT_ERR_ABORTED";
    case CT_ERR_MISUSE: return "CT_ERR_MISUSE";
    case CT_ERR_NOT_FOUND: return "CT_ERR_NOT_FOUND";
    case CT_ERR_NETWORK: return "CT_ERR_NETWORK";
    case CT_ERR_AUTH: return "CT_ERR_AUTH";
    case CT_ERR_LIMIT: return "CT_ERR_LIMIT";
    case CT_ERR_INTERNAL: return "CT_ERR_INTERNAL";
    case CT_ERR_BUSY: return "CT_ERR_BUSY";
    }
    return "CT_ERR_UNKNOWN";
}

const char *ct_version(void) { return CT_VERSION; }

int ct_version_number(void) { return CT_VERSION_NUMBER; }

int ct_have_cuda(void) {
#ifdef CT_HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}
