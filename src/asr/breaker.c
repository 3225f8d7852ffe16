/* breaker.c — circuit breaker for fatal device errors (see breaker.h). */
#include "asr/breaker.h"

#include <stdio.h>
#include <string.h>

void ct_breaker_init(ct_breaker *b) { memset(b, 0, sizeof *b); }

/* A GPU call that failed for another reason than memory leaves the context
 * in an unknown (often sticky) state: no later batch on it can be trusted. */
int ct_breaker_is_fatal(ct_status s) { return s == CT_ERR_DEVICE || s == CT_ERR_INTERNAL; }

ct_status ct_breaker_record(ct_breaker *b, ct_status s, const char *message) {
    if (ct_breaker_is_fatal(s) && !b->open) {
        b->open = 1;
        b->cause = s;
        b->trips++;
        snprintf(b->message, sizeof b->message, "%s", message ? message : "");
    }
    return s;
}

ct_status ct_breaker_check(ct_breaker *b) {
    if (!b->open) return CT_OK;
    b->fast_fails++;
    return ct_fail(CT_ERR_DEVICE, "device session disabled after a fatal error (%s): %s",
                   ct_status_str(b->cause), b->message);
}

void ct_breaker_reset(ct_breaker *b) {
    int trips = b->trips;
    ct_breaker_init(b);
    b->trips = trips;
}
