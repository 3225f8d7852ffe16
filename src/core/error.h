/* error.h — how failures travel inside the library.
 *
 * Every fallible function returns a ct_status. At the point where a failure is
 * detected, the code calls ct_fail(code, fmt, ...), which records a formatted
 * message in thread-local storage and returns the code, so the idiom is
 *
 *     if (n > cap) return ct_fail(CT_ERR_LIMIT, "%s: %zu samples exceed the cap", path, n);
 *
 * Callers that add context wrap the message (ct_fail_wrap) instead of
 * replacing it, so the final text reads outer: inner. CT_TRY propagates.
 * The library never exits; CT_ASSERT is for internal invariants only and
 * reports CT_ERR_INTERNAL rather than aborting.
 */
#ifndef CT_CORE_ERROR_H
#define CT_CORE_ERROR_H

#include "cohere_transcribe.h"

#if defined(__GNUC__)
#define CT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define CT_NODISCARD __attribute__((warn_unused_result))
#else
#define CT_PRINTF(a, b)
#define CT_NODISCARD
#endif

/* Record a message for this thread and return code. */
ct_status ct_fail(ct_status code, const char *fmt, ...) CT_PRINTF(2, 3);

/* Prefix the current message with new context: "<context>: <old message>". */
ct_status ct_fail_wrap(ct_status code, const char *fmt, ...) CT_PRINTF(2, 3);

/* Forget this thread's message (used by tests). */
void ct_error_clear(void);

#define CT_TRY(expr)                         \
    do {                                     \
        ct_status ct_try_s_ = (expr);        \
        if (ct_try_s_ != CT_OK) return ct_try_s_; \
    } while (0)

#define CT_ASSERT(cond)                                                              \
    do {                                                                             \
        if (!(cond))                                                                 \
            return ct_fail(CT_ERR_INTERNAL, "internal error: %s:%d: assertion '%s' failed", \
                           __FILE__, __LINE__, #cond);                               \
    } while (0)

#endif
