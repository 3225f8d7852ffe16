/* cpu_membw.h — the machine's main-memory read bandwidth, measured the way a
 * GEMV reads its weights: each thread streams its own contiguous part of a
 * buffer far larger than the last-level cache with vector loads.
 *
 * Decoding one token reads every decoder weight once, so weight bytes ÷ this
 * bandwidth is the floor of a token's time (docs/PERFORMANCE.md). */
#ifndef CT_COMPUTE_CPU_MEMBW_H
#define CT_COMPUTE_CPU_MEMBW_H

#include <stddef.h>

#include "compute/cpu/cpu_isa.h"

/* Best of `reps` passes over `bytes` (rounded down to a multiple of 512 per
 * thread) with `threads` OpenMP threads (≥ 1), loads of the given level:
 * GB/s (1e9 bytes per second) of wall-clock time, or a negative value when
 * the buffer cannot be allocated. The buffer is written once (page faults)
 * before the first timed pass. When per_cpu is not NULL it gets the rate per
 * CPU-second of the process times `threads` (bytes · threads ÷ CPU seconds of
 * the best pass): what the threads would reach with a core each, which a
 * loaded machine changes far less than the wall-clock rate. */
double ct_cpu_read_bandwidth(size_t bytes, int threads, int reps, ct_cpu_isa isa, double *per_cpu);

#endif
