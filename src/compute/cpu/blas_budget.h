/* blas_budget.h — keeping OpenBLAS inside an address-space limit
 * (`ulimit -v`, RLIMIT_AS). OpenBLAS takes a 128 MiB buffer per thread when
 * it starts and one per concurrent caller later, and when the mapping fails
 * it retries forever: the process spins at 100 % CPU instead of failing.
 * Two guards keep that from happening:
 *  - at start-up, before OpenBLAS's constructor (the binaries call
 *    ct_blas_startup_threads from a .preinit_array hook, src/cli/blas_preinit.h),
 *    the thread count is lowered to what the limit holds (OPENBLAS_NUM_THREADS
 *    and OMP_NUM_THREADS), or the binary stops with a message when not even
 *    one buffer fits;
 *  - before the engine or the VAD runs, ct_blas_reserve makes OpenBLAS map
 *    the buffers its concurrent callers will take while there is room, and
 *    fails with CT_ERR_OOM naming the limit when there is not.
 * Without a limit both are no-ops (buffers are virtual until touched). */
#ifndef CT_COMPUTE_CPU_BLAS_BUDGET_H
#define CT_COMPUTE_CPU_BLAS_BUDGET_H

#include <stddef.h>

#include "core/error.h"

/* Bytes of address space one OpenBLAS buffer takes (BUFFER_SIZE, 128 MiB on
 * x86-64 builds, plus its guard pages and allocator slack). */
#define CT_BLAS_BUFFER_BYTES (((size_t)128 << 20) + ((size_t)1 << 20))

/* Address space left under RLIMIT_AS (soft) now, or SIZE_MAX without a
 * limit (or when it cannot be read). */
size_t ct_blas_address_space_left(void);

/* For the start-up hook: the number of OpenBLAS threads the limit holds. When
 * it is below what OpenBLAS would start, sets OPENBLAS_NUM_THREADS and
 * OMP_NUM_THREADS to it. 0: not even one buffer fits, *why says so (limit,
 * left, needed). Only getenv/setenv/getrlimit/read: safe before main. */
int ct_blas_startup_threads(char *why, size_t cap);

/* Make sure `callers` threads can call cblas at once without OpenBLAS
 * mapping anything new: takes that many buffers (mapping those missing,
 * each only after checking it fits) and gives them back to OpenBLAS's pool.
 * CT_ERR_OOM "address-space limit (ulimit -v) ..." when they do not fit.
 * A no-op without a limit; at most 64 callers are reserved for. */
ct_status ct_blas_reserve(int callers);

#endif
