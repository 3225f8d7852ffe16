/* blas_preinit.h — included once by each binary that links OpenBLAS (the
 * engine or the VAD): a .preinit_array hook, which runs before any shared
 * library's constructor, fits OpenBLAS's start-up threads into an
 * address-space limit (ulimit -v) or stops with a message when nothing fits.
 * Without it OpenBLAS's constructor retries a failed 128 MiB mapping forever
 * before main (compute/cpu/blas_budget.h). */
#ifndef CT_CLI_BLAS_PREINIT_H
#define CT_CLI_BLAS_PREINIT_H

#include <string.h>
#include <unistd.h>

#include "compute/cpu/blas_budget.h"

static void ct_blas_preinit(int argc, char **argv, char **envp) {
    (void)envp;
    char why[512];
    if (ct_blas_startup_threads(why, sizeof why) > 0) return;
    /* stdio is not ready this early for every libc: plain writes */
    const char *name = argc > 0 && argv && argv[0] ? argv[0] : "cohere-transcribe";
    const char *slash = strrchr(name, '/');
    if (slash) name = slash + 1;
    if (write(2, name, strlen(name)) < 0 || write(2, ": ", 2) < 0 || write(2, why, strlen(why)) < 0 ||
        write(2, "\n", 1) < 0) {
    }
    _exit(1);
}

__attribute__((section(".preinit_array"), used)) static void (*const ct_blas_preinit_entry)(int, char **,
                                                                                           char **) = ct_blas_preinit;

#endif
