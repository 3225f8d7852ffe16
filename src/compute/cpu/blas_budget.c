/* blas_budget.c — see blas_budget.h. The OpenBLAS pool calls
 * (blas_memory_alloc/free) are exported by every OpenBLAS build though not
 * in cblas.h; they are what its level-3 routines use, so buffers taken and
 * given back here are the ones later calls find free. */
#include "compute/cpu/blas_budget.h"

#include <fcntl.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

void *blas_memory_alloc(int procpos);
void blas_memory_free(void *buffer);

/* Room kept for the program itself beside the start-up buffers (libraries'
 * heaps, the model, audio): the start-up threads take at most half of what
 * is left, and never this last part. */
#define PROGRAM_RESERVE ((size_t)64 << 20)

/* VmSize from /proc/self/statm (first field, pages), read with plain
 * syscalls so that it works in a preinit hook. 0 when unreadable. */
static size_t vm_size(void) {
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    size_t pages = 0;
    for (const char *p = buf; *p >= '0' && *p <= '9'; p++) pages = pages * 10 + (size_t)(*p - '0');
    long ps = sysconf(_SC_PAGESIZE);
    return pages * (size_t)(ps > 0 ? ps : 4096);
}

size_t ct_blas_address_space_left(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return SIZE_MAX;
    size_t used = vm_size();
    if (used == 0) return SIZE_MAX;
    return (size_t)rl.rlim_cur > used ? (size_t)rl.rlim_cur - used : 0;
}

static int env_threads(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    int n = atoi(v); /* OpenBLAS and libgomp read the leading number too */
    return n > 0 ? n : 0;
}

int ct_blas_startup_threads(char *why, size_t cap) {
    if (why && cap) why[0] = 0;
    size_t left = ct_blas_address_space_left();
    /* What OpenBLAS will start: its own variables first, then OpenMP's, else
     * one thread per online CPU. */
    int want = env_threads("OPENBLAS_NUM_THREADS");
    if (!want) want = env_threads("GOTO_NUM_THREADS");
    if (!want) want = env_threads("OMP_NUM_THREADS");
    if (!want) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        want = c > 0 ? (int)c : 1;
    }
    if (left == SIZE_MAX) return want;
    size_t usable = left > PROGRAM_RESERVE ? (left - PROGRAM_RESERVE) / 2 : 0;
    size_t fit = usable / CT_BLAS_BUFFER_BYTES;
    if (fit >= (size_t)want) return want;
    if (fit == 0) {
        struct rlimit rl;
        getrlimit(RLIMIT_AS, &rl);
        /* a start-up buffer per thread, then one per concurrent caller
         * (ct_blas_reserve), and one more for the calling thread */
        size_t need_mb = (vm_size() + PROGRAM_RESERVE + (2 * (size_t)want + 1) * CT_BLAS_BUFFER_BYTES) >> 20;
        if (why && cap)
            snprintf(why, cap,
                     "the address-space limit (ulimit -v) of %zu MiB leaves %zu MiB after loading the libraries; "
                     "OpenBLAS needs %zu MiB per thread: raise the limit to at least %zu MiB",
                     (size_t)rl.rlim_cur >> 20, left >> 20, CT_BLAS_BUFFER_BYTES >> 20, need_mb);
        return 0;
    }
    char v[16];
    snprintf(v, sizeof v, "%zu", fit);
    setenv("OPENBLAS_NUM_THREADS", v, 1);
    setenv("OMP_NUM_THREADS", v, 1); /* so OpenMP does not grow OpenBLAS's pool back at the first call */
    return (int)fit;
}

ct_status ct_blas_reserve(int callers) {
    /* Without a limit a mapping does not fail for want of address space:
     * nothing to do (and nothing taken from OpenBLAS's table of buffers,
     * which is finite: 2 x its thread limit). */
    if (ct_blas_address_space_left() == SIZE_MAX) return CT_OK;
    if (callers < 1) callers = 1;
    if (callers > 64) callers = 64;
    void *held[64];
    int n = 0;
    ct_status s = CT_OK;
    for (; n < callers; n++) {
        /* A free buffer is reused without a mapping; a new one needs room.
         * Checked before every call: OpenBLAS would spin if it lacked it. */
        size_t left = ct_blas_address_space_left();
        if (left != SIZE_MAX && left < CT_BLAS_BUFFER_BYTES + PROGRAM_RESERVE) {
            struct rlimit rl;
            getrlimit(RLIMIT_AS, &rl);
            s = ct_fail(CT_ERR_OOM,
                        "address-space limit (ulimit -v) of %zu MiB: %zu MiB left, but OpenBLAS needs %zu MiB for each "
                        "of %d concurrent callers (%d fit): raise the limit or use fewer threads",
                        (size_t)rl.rlim_cur >> 20, left >> 20, CT_BLAS_BUFFER_BYTES >> 20, callers, n);
            break;
        }
        held[n] = blas_memory_alloc(0);
        if (!held[n]) {
            s = ct_fail(CT_ERR_OOM, "OpenBLAS: no buffer for %d concurrent callers", callers);
            break;
        }
    }
    for (int i = 0; i < n; i++) blas_memory_free(held[i]);
    return s;
}
