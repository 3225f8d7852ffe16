/* cpu_isa.c — run-time choice of the CPU kernels' instruction set. */
#include "compute/cpu/cpu_isa.h"

#include <string.h>

#include "compute/cpu/cpu_features.h"

/* From the one cpuid/XCR0 reader (cpu_features.c), so that a CPU whose OS or
 * hypervisor does not save the ymm/zmm state reports the wide levels absent
 * here exactly as it does for the matrix-product dispatch. */
static ct_cpu_isa detect(void) {
    const ct_cpu_features *f = ct_cpu_features_get();
    if (f->avx512) return CT_CPU_ISA_AVX512; /* F + DQ + BW + VL */
    if (f->avx2 && f->fma && f->f16c) return CT_CPU_ISA_AVX2;
    return CT_CPU_ISA_PLAIN;
}

ct_cpu_isa ct_cpu_isa_best(void) {
    /* Threads that race here all compute and store the same value. */
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        v = (int)detect();
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return (ct_cpu_isa)v;
}

static const char *const names[CT_CPU_ISA_COUNT] = {"plain", "avx2", "avx512"};

const char *ct_cpu_isa_name(ct_cpu_isa isa) { return (unsigned)isa < CT_CPU_ISA_COUNT ? names[isa] : "?"; }

int ct_cpu_isa_parse(const char *name, ct_cpu_isa *out) {
    for (int i = 0; i < CT_CPU_ISA_COUNT; i++)
        if (name && !strcmp(name, names[i])) {
            *out = (ct_cpu_isa)i;
            return 0;
        }
    return -1;
}
