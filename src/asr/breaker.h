/* breaker.h — the circuit breaker of PRODUCT.md §5: after a fatal device
 * error the breaker opens, and every later batch fails fast with a clear
 * error naming the original cause, until the session that owns the device is
 * rebuilt (ct_breaker_reset). Out-of-memory is not fatal and never trips it.
 */
#ifndef CT_ASR_BREAKER_H
#define CT_ASR_BREAKER_H

#include "core/error.h"

typedef struct ct_breaker {
    int open;
    ct_status cause;
    char message[512];
    int trips;       /* times it opened since creation */
    int fast_fails;  /* calls refused while open */
} ct_breaker;

void ct_breaker_init(ct_breaker *b);
/* Whether a failure status is fatal for the device session. */
int ct_breaker_is_fatal(ct_status s);
/* Record a failure; opens the breaker when it is fatal. Returns s. */
ct_status ct_breaker_record(ct_breaker *b, ct_status s, const char *message);
/* CT_OK while closed; else CT_ERR_DEVICE with "device session disabled ...". */
ct_status ct_breaker_check(ct_breaker *b);
void ct_breaker_reset(ct_breaker *b);

#endif
