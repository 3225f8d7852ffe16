/* cpu_isa.h — which vector instruction set the hand-written CPU kernels use,
 * found once by cpuid at run time so that one binary runs everywhere.
 *
 * Kernels take the level as an argument: the backend passes the best this CPU
 * has, tests and benchmarks pass every lower level as well, so each path is
 * exercised on a machine that has the highest one. */
#ifndef CT_COMPUTE_CPU_ISA_H
#define CT_COMPUTE_CPU_ISA_H

typedef enum ct_cpu_isa {
    CT_CPU_ISA_PLAIN = 0,  /* portable C the compiler vectorises for the baseline target */
    CT_CPU_ISA_AVX2 = 1,   /* AVX2 + FMA + F16C (Haswell, Zen and later) */
    CT_CPU_ISA_AVX512 = 2, /* AVX-512 F + BW + VL (Skylake-SP, Ice Lake, Zen 4 and later) */
    CT_CPU_ISA_COUNT
} ct_cpu_isa;

/* The best level this CPU and OS support (the OS must save the wide
 * registers, which the compiler's cpuid check includes). Cached. */
ct_cpu_isa ct_cpu_isa_best(void);

/* "plain", "avx2", "avx512". */
const char *ct_cpu_isa_name(ct_cpu_isa isa);

/* The level named `name`; returns 0 on success, -1 for an unknown name. */
int ct_cpu_isa_parse(const char *name, ct_cpu_isa *out);

#endif
