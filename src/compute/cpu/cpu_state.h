/* cpu_state.h — what a "cpu"/"cpu-ref" backend decided when it was made:
 * the dispatch level of its matrix products (the CPU's features capped by
 * ct_backend_options.isa_limit) and its oneDNN context. Kept in
 * ct_backend.impl; a backend made without one (impl NULL) takes today's
 * OpenBLAS path. */
#ifndef CT_COMPUTE_CPU_STATE_H
#define CT_COMPUTE_CPU_STATE_H

#include "compute/backend.h"
#include "compute/cpu/cpu_dnnl.h"
#include "compute/cpu/cpu_features.h"

typedef struct ct_cpu_state {
    int level;       /* CT_ISA_BASELINE..CT_ISA_BF16 in use */
    int vnni512;     /* int8 GEMV on AVX512-VNNI (level ≥ VNNI and the CPU has it) */
    int vnni256;     /* int8 GEMV on AVX-VNNI (no AVX-512) */
    int dnnl_bf16;   /* bf16 weights through oneDNN bf16 */
    int dnnl_f32;    /* f32 weights through oneDNN f32 instead of OpenBLAS */
    int dnnl_u8s8;   /* int8 rows > 4 through oneDNN u8·s8 (VNNI) */
    int dnnl_wanted; /* the plan asked for a oneDNN context */
    ct_dnnl *dnnl;   /* NULL: no oneDNN (build without it, or level BASELINE) */
} ct_cpu_state;

static inline const ct_cpu_state *ct_cpu_state_of(const ct_backend *be) {
    return (const ct_cpu_state *)be->impl;
}

/* A weight tensor as ct_dnnl_matmul_w takes it (values: the plain (N,K)
 * matrix inside w). Only weights the backend owns or borrowed from a file
 * mapping are fixed for their lifetime, so only those may be packed. */
static inline ct_dnnl_weight ct_cpu_dnnl_weight(const ct_tensor *w, const void *values) {
    ct_dnnl_weight d = {.data = values, .key = w->owner || w->file_backed ? w->data : NULL,
                        .file_backed = w->file_backed};
    return d;
}

/* One line for doctor/benchmarks: level, features, oneDNN use, as the
 * backend has it, or (plan) as a default "cpu" backend would. */
void ct_cpu_dispatch_describe(const ct_backend *be, char *buf, int cap);
void ct_cpu_dispatch_plan(char *buf, int cap);

/* What --dtype auto picks for the CPU here (F32 or BF16) and why, from the
 * same plan: native bf16 through oneDNN where the CPU has it, else fp32
 * (docs/PERFORMANCE.md, "--dtype auto on the CPU"). */
ct_dtype ct_cpu_auto_dtype(const char **why);

/* What --dtype int8 makes of the dense weights on this CPU, and why: on
 * VNNI (AVX512-VNNI, or AVX-VNNI with oneDNN's u8·s8) the per-row Q8
 * weights and their integer products; elsewhere ggml's per-block Q8_0 on
 * the AVX2 kernel (compute/cpu/cpu_q80.h), whose smaller rounding error
 * lets more layers be int8 within the 3e-2 bound (docs/PERFORMANCE.md,
 * "Q8_0"). */
ct_dtype ct_cpu_int8_dtype(const char **why);

#endif
