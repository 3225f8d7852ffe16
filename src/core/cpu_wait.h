/* cpu_wait.h — OpenMP's wait policy for this process (--cpu-wait, the
 * cpu_wait option): the parse of its value and what the runtime got. The
 * re-exec that sets it, ct_cpu_wait_exec, and the report,
 * ct_cpu_wait_describe, are public (cohere_transcribe.h). */
#ifndef CT_CORE_CPU_WAIT_H
#define CT_CORE_CPU_WAIT_H

#include "cohere_transcribe.h"

/* "passive" / "active" → the policy, anything else (NULL too) → -1. */
int ct_cpu_wait_parse(const char *s);
const char *ct_cpu_wait_name(ct_cpu_wait w);

#endif
