/* bench_cpu_wait.h — `--cpu-wait auto|passive|active` for the benchmark tools,
 * as cohere-transcribe takes it: the value checked, then the process
 * re-executed once with OMP_WAIT_POLICY set (ct_cpu_wait_exec), before any
 * OpenMP thread. Default passive, unlike the product (auto): the
 * measurements against transformers run both sides passive
 * (docs/PERFORMANCE.md, "Issue 16 on Sapphire Rapids"). */
#ifndef CT_BENCH_CPU_WAIT_H
#define CT_BENCH_CPU_WAIT_H

#include <stdio.h>

#include "core/cpu_wait.h"

/* 0, or 2 (the usage exit code) for a bad value; returns only without a re-exec */
static inline int bench_cpu_wait(const char *prog, const char *value, char **argv) {
    const int w = ct_cpu_wait_parse(value);
    if (w < 0) {
        fprintf(stderr, "%s: --cpu-wait: '%s' (auto, passive or active)\n", prog, value);
        return 2;
    }
    ct_cpu_wait_exec((ct_cpu_wait)w, argv, NULL);
    return 0;
}

#endif
