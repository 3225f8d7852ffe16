/* cohere_transcribe.h — the public C API of cohere-transcribe.
 *
 * This header is the contract: anything not declared here is internal and may
 * change. Every function that can fail returns a ct_status; on failure a
 * human-readable message describing the cause is available from
 * ct_last_error() on the same thread until that thread's next failing call.
 * The library never calls exit() or abort() on bad input and never prints to
 * stdout; diagnostics go through the log callback (default: stderr).
 *
 * Lifecycles: every object has a constructor that writes the handle through an
 * OUT parameter and returns a status, and a _free() function; _free(NULL) is
 * a no-op.
 *
 * This first wave declares the status codes, version and logging. The
 * transcriber handle (options + defaults, results through accessors, progress
 * callback) is added by the pipeline issue; the engine-level batch entry point
 * lives in src/asr/asr.h until then.
 */
#ifndef COHERE_TRANSCRIBE_H
#define COHERE_TRANSCRIBE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CT_API __attribute__((visibility("default")))
#else
#define CT_API
#endif

#define CT_VERSION_MAJOR 0
#define CT_VERSION_MINOR 1
#define CT_VERSION_PATCH 0
#define CT_VERSION_NUMBER (CT_VERSION_MAJOR * 10000 + CT_VERSION_MINOR * 100 + CT_VERSION_PATCH)

/* Result codes. CT_OK is 0, failures are positive and < 100, non-error
 * outcomes (none yet) would be >= 100. New codes may be added. */
typedef enum ct_status {
    CT_OK = 0,
    CT_ERR_INVALID_ARG = 1, /* a caller passed a bad value (option, size, NULL) */
    CT_ERR_IO = 2,          /* the OS refused a read/write/open/mmap */
    CT_ERR_FORMAT = 3,      /* a file's contents are malformed or inconsistent */
    CT_ERR_OOM = 4,         /* host or device memory could not be had */
    CT_ERR_DEVICE = 5,      /* a GPU call failed (not an allocation) */
    CT_ERR_UNSUPPORTED = 6, /* valid, but not supported by this build/model */
    CT_ERR_ABORTED = 7,     /* cancelled by the caller or a deadline */
    CT_ERR_MISUSE = 8,      /* API used out of order (use after close, ...) */
    CT_ERR_NOT_FOUND = 9,   /* a file, tensor, token or Hub object is missing */
    CT_ERR_NETWORK = 10,    /* a network transfer failed after retries */
    CT_ERR_AUTH = 11,       /* the Hub refused access (gated or bad token) */
    CT_ERR_LIMIT = 12,      /* input exceeds a configured cap (memory, length) */
    CT_ERR_INTERNAL = 13,   /* a broken invariant: a bug in this library */
    CT_ERR_BUSY = 14        /* a lock is held by another process */
} ct_status;

/* Static name of a status ("CT_ERR_FORMAT", ...); never NULL. */
CT_API const char *ct_status_str(ct_status s);

/* The message of this thread's most recent failure ("" when none). The
 * pointer stays valid until the thread's next failing call. */
CT_API const char *ct_last_error(void);

/* Library version string, e.g. "0.1.0", and the number it was built as. */
CT_API const char *ct_version(void);
CT_API int ct_version_number(void);

/* Whether the CUDA backend was compiled in (it may still find no device). */
CT_API int ct_have_cuda(void);

typedef enum ct_log_level {
    CT_LOG_ERROR = 0,
    CT_LOG_WARN = 1,
    CT_LOG_INFO = 2,
    CT_LOG_DEBUG = 3
} ct_log_level;

/* Log sink: receives one message without a trailing newline. */
typedef void (*ct_log_fn)(ct_log_level level, const char *msg, void *user_data);

/* Replace the process-wide log sink (NULL restores the stderr default) and
 * set the most verbose level that is delivered (default CT_LOG_WARN, or the
 * level named by the CT_LOG environment variable: error|warn|info|debug).
 * The sink is called by one thread at a time, whichever thread logs. Once
 * ct_log_set returns, the previous sink is not running on another thread and
 * is never called again, so its user_data may be freed. A sink may call
 * ct_log_set, ct_log_set_level or library functions that log: a message
 * logged from inside the sink goes to stderr, not back into the sink. A sink
 * must not wait for another thread that may log (that thread waits for the
 * sink to return). */
CT_API void ct_log_set(ct_log_fn fn, void *user_data);
CT_API void ct_log_set_level(ct_log_level level);

#ifdef __cplusplus
}
#endif
#endif /* COHERE_TRANSCRIBE_H */
