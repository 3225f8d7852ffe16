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

/* The policy the OpenMP runtime of this process read at start: passive or
 * active from OMP_WAIT_POLICY, or -1 when it was unset or not one of them
 * (libgomp's default: spin a while, then sleep). */
int ct_cpu_wait_current(void);

#endif
