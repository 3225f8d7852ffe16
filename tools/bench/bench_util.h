/* bench_util.h — what several benchmark tools share: the weight type a
 * `--dtype` word names. Header-only; the tools check the word against
 * their own usage first. */
#ifndef CT_BENCH_UTIL_H
#define CT_BENCH_UTIL_H

#include <string.h>

#include "core/dtype.h"

/* "bf16", "fp16", "int8" (the Q8 weights of --dtype int8), "q8_0" (ggml's
 * per-block int8); anything else fp32. */
static inline ct_dtype bench_weight_dtype(const char *name) {
    return !strcmp(name, "bf16")   ? CT_DTYPE_BF16
           : !strcmp(name, "fp16") ? CT_DTYPE_F16
           : !strcmp(name, "int8") ? CT_DTYPE_Q8
           : !strcmp(name, "q8_0") ? CT_DTYPE_Q8_0
                                   : CT_DTYPE_F32;
}

#endif
