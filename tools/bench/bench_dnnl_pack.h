/* bench_dnnl_pack.h — `--dnnl-pack off|auto|always` for the benchmark
 * tools: whether the cpu backend packs weights into oneDNN's blocked
 * layout (ct_backend_options.dnnl_pack; docs/PERFORMANCE.md, "Pre-packed
 * weights on Sapphire Rapids"). An A/B switch for measurements, not a
 * product option: the product keeps the default (auto, which packs
 * nothing today). */
#ifndef CT_BENCH_DNNL_PACK_H
#define CT_BENCH_DNNL_PACK_H

#include <string.h>

/* -1 off, 0 auto, 1 always; -2 for an unknown value */
static inline int bench_dnnl_pack(const char *v) {
    return !strcmp(v, "off") ? -1 : !strcmp(v, "auto") ? 0 : !strcmp(v, "always") ? 1 : -2;
}

#endif
