/* cpu_features.h — what this CPU can run, read once with cpuid/xgetbv, and
 * the dispatch level the CPU backend's matrix products may use (capped by
 * ct_backend_options.isa_limit, so tests can force today's path on any
 * machine). Only features the OS saves state for count (XCR0). */
#ifndef CT_COMPUTE_CPU_FEATURES_H
#define CT_COMPUTE_CPU_FEATURES_H

typedef struct ct_cpu_features {
    int avx2, fma, f16c;
    int avx512; /* F + BW + VL + DQ, the set oneDNN's avx512_core needs */
    int avx512_vnni, avx_vnni;
    int avx512_bf16, amx_bf16, amx_int8;
} ct_cpu_features;

/* The host's features (cached after the first call; thread-safe). */
const ct_cpu_features *ct_cpu_features_get(void);

/* Dispatch levels, lowest first (the values of ct_backend_options.isa_limit). */
enum {
    CT_ISA_ALL = 0,      /* no cap: whatever the CPU has */
    CT_ISA_BASELINE = 1, /* today's path: OpenBLAS sgemm, bf16/int8 weights widened to f32 */
    CT_ISA_VNNI = 2,     /* + int8 products on VNNI (AVX512-VNNI or AVX-VNNI) */
    CT_ISA_BF16 = 3      /* + native bf16 products (AVX512-BF16 or AMX-BF16) */
};

/* The highest level the CPU reaches (CT_ISA_BASELINE..CT_ISA_BF16). */
int ct_cpu_isa_level(const ct_cpu_features *f);
/* "baseline", "vnni", "bf16" (and "all" for 0). */
const char *ct_cpu_level_name(int level);
/* One line naming the features found, e.g. "avx2 fma avx512 avx512_vnni". */
void ct_cpu_features_describe(const ct_cpu_features *f, char *buf, int cap);

#endif
