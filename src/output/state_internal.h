/* state_internal.h — helpers the state_*.c files share (not API). */
#ifndef CT_OUTPUT_STATE_INTERNAL_H
#define CT_OUTPUT_STATE_INTERNAL_H

#include "output/state.h"

/* *ok = 0 and the formatted reason into reason[CT_REASON_MAX]. */
void ct_state_reason(int *ok, char reason[CT_REASON_MAX], const char *fmt, ...) CT_PRINTF(3, 4);

#endif
