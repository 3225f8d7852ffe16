/* backend_cpu.c — the CPU backends: host memory, no stream, and two op
 * tables: "cpu-ref" (every op the plain reference) and "cpu" (fast paths for
 * the heavy ops, reference for the rest); the matrix products' dispatch by
 * CPU features (cpu_state.h) is decided here, once per backend. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compute/cpu/blas_budget.h"
#include "compute/cpu/cpu_fast.h"
#include "compute/cpu/cpu_isa.h"
#include "compute/cpu/cpu_state.h"
#include "compute/ref/ops_ref.h"

/* f32 weights through oneDNN (brgemm) instead of OpenBLAS sgemm for M > 4
 * rows: faster on every encoder shape measured (docs/PERFORMANCE.md,
 * "oneDNN against OpenBLAS"). */
#define CT_DNNL_F32 1

/* Buffers of at least a huge page start on a 2 MiB boundary and ask for
 * transparent huge pages (madvise: the kernel's default "madvise" mode gives
 * them only where asked). The fp32 weights converted from a bf16 checkpoint
 * are 8 GB: in 4 KiB pages that is 2 M page faults at load, more kernel
 * time than the conversion itself (docs/PERFORMANCE.md, "Start-up on
 * Sapphire Rapids"). Where THP is off or unavailable, madvise fails or
 * does nothing and the buffer is an ordinary one; free() is unchanged. */
enum { CPU_HUGE = 2u << 20 };

static ct_status cpu_alloc(ct_backend *be, size_t bytes, void **ptr) {
    *ptr = NULL;
    size_t cap = (bytes + 63) / 64 * 64;
    if (cap == 0) cap = 64;
    const int huge = cap >= CPU_HUGE;
    if (posix_memalign(ptr, huge ? CPU_HUGE : 64, cap) != 0) {
        *ptr = NULL;
        return ct_fail(CT_ERR_OOM, "cpu: cannot allocate %zu bytes", bytes);
    }
#ifdef MADV_HUGEPAGE
    if (huge) (void)madvise(*ptr, cap / CPU_HUGE * CPU_HUGE, MADV_HUGEPAGE);
#endif
    return CT_OK;
}
static void cpu_free(ct_backend *be, void *ptr) {
    /* a packed copy made from this memory must not outlive it */
    const ct_cpu_state *st = ct_cpu_state_of(be);
    if (st && st->dnnl && ptr) ct_dnnl_forget(st->dnnl, ptr);
    free(ptr);
}
static ct_status cpu_copy(ct_backend *be, void *dst, const void *src, size_t bytes) {
    if (bytes) memmove(dst, src, bytes);
    return CT_OK;
}
static ct_status cpu_zero(ct_backend *be, void *dst, size_t bytes) {
    if (bytes) memset(dst, 0, bytes);
    return CT_OK;
}
static ct_status cpu_sync(ct_backend *be) { return CT_OK; }
static void *cpu_stream(ct_backend *be) { return NULL; }
static ct_status cpu_memory_info(ct_backend *be, size_t *free_b, size_t *total_b) {
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (total_b) *total_b = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz : 0;
    if (free_b) *free_b = avail > 0 && psz > 0 ? (size_t)avail * (size_t)psz : 0;
    return CT_OK;
}
static int cpu_supports_weight(ct_backend *be, ct_dtype t) {
    return t == CT_DTYPE_F32 || t == CT_DTYPE_BF16 || t == CT_DTYPE_F16 || t == CT_DTYPE_Q8 ||
           t == CT_DTYPE_Q8_0;
}
static void cpu_destroy(ct_backend *be) {
    ct_cpu_state *st = be->impl;
    if (st) ct_dnnl_free(st->dnnl);
    free(st);
    free(be);
}

#define CT_CPU_COMMON                                                                           \
    .version = CT_BACKEND_VERSION, .alloc = cpu_alloc, .free = cpu_free, .to_device = cpu_copy, \
    .to_host = cpu_copy, .copy = cpu_copy, .zero = cpu_zero, .synchronize = cpu_sync,           \
    .stream = cpu_stream, .memory_info = cpu_memory_info, .supports_weight = cpu_supports_weight, \
    .destroy = cpu_destroy, .softmax = ct_ref_softmax, .kv_write = ct_ref_kv_write,             \
    .mask_time = ct_ref_mask_time, .flatten_ct = ct_ref_flatten_ct,                             \
    .pos_relative = ct_ref_pos_relative, .embed = ct_ref_embed, .argmax = ct_ref_argmax,           \
    .embed_dev = ct_ref_embed_dev, .kv_write_dev = ct_ref_kv_write_dev,                        \
    .attn_causal_dev = ct_ref_attn_causal_dev, .greedy_step = ct_ref_greedy_step

static const ct_backend_ops cpu_ref_ops = {
    CT_CPU_COMMON,
    .name = "cpu-ref",
    .matmul = ct_ref_matmul,
    .layer_norm = ct_ref_layer_norm,
    .activate = ct_ref_activate,
    .glu = ct_ref_glu,
    .attn_relpos = ct_ref_attn_relpos,
    .attn_causal = ct_ref_attn_causal,
    .attn_cross = ct_ref_attn_cross,
    .conv2d_s2 = ct_ref_conv2d_s2,
    .dwconv2d_s2 = ct_ref_dwconv2d_s2,
    .conv_pointwise = ct_ref_conv_pointwise,
    .dwconv1d = ct_ref_dwconv1d,
    .conv1d = ct_ref_conv1d,
    .conv1d_grouped = ct_ref_conv1d_grouped,
    .gelu = ct_ref_gelu,
    .add = ct_ref_add,
    .attn_full = ct_ref_attn_full,
};

static const ct_backend_ops cpu_fast_ops = {
    CT_CPU_COMMON,
    .name = "cpu",
    .matmul = ct_cpu_matmul,
    .layer_norm = ct_cpu_layer_norm,
    .activate = ct_cpu_activate,
    .glu = ct_cpu_glu,
    .attn_relpos = ct_cpu_attn_relpos,
    .attn_causal = ct_cpu_attn_causal,
    .attn_cross = ct_cpu_attn_cross,
    .conv2d_s2 = ct_cpu_conv2d_s2,
    .dwconv2d_s2 = ct_cpu_dwconv2d_s2,
    .conv_pointwise = ct_cpu_conv_pointwise,
    .dwconv1d = ct_cpu_dwconv1d,
    .conv1d = ct_cpu_conv1d,
    .conv1d_grouped = ct_cpu_conv1d_grouped,
    .gelu = ct_cpu_gelu,
    .add = ct_cpu_add,
    .attn_full = ct_cpu_attn_full,
};

const ct_backend_ops *ct_cpu_ref_ops(void) { return &cpu_ref_ops; }
const ct_backend_ops *ct_cpu_fast_ops(void) { return &cpu_fast_ops; }

/* st's decisions in one line (a plan assumes oneDNN has every kernel it
 * asks for; a backend's state says what its probes found). */
static void describe(const ct_cpu_state *st, char *buf, int cap) {
    char feats[160];
    ct_cpu_features_describe(ct_cpu_features_get(), feats, sizeof feats);
    const int u8s8 = st->dnnl_u8s8;
    snprintf(buf, (size_t)cap, "level %s (cpu features: %s); int8: %s; bf16: %s; f32: %s; rows <= 4: %s GEMV",
             ct_cpu_level_name(st->level), feats,
             st->vnni512 ? (u8s8 ? "VNNI GEMV + oneDNN u8s8" : "VNNI GEMV, rows > 4 widened to f32")
             : st->vnni256 && u8s8 ? "oneDNN u8s8 (AVX-VNNI)"
             /* the CPU has no VNNI at all: --dtype int8 takes Q8_0 */
             : ct_cpu_int8_dtype(NULL) == CT_DTYPE_Q8_0
                 ? (ct_cpu_isa_best() >= CT_CPU_ISA_AVX2 ? "Q8_0 blocks on AVX2 (no VNNI)"
                                                         : "Q8_0 blocks, plain loops (no VNNI, no AVX2)")
                 : "widened to f32 (no VNNI)",
             st->dnnl_bf16 ? "oneDNN bf16" : "widened to f32 + OpenBLAS",
             st->dnnl_f32 ? "oneDNN" : "OpenBLAS", ct_cpu_isa_name(ct_cpu_isa_best()));
    /* With a backend: the kernels oneDNN picked for the probe's shape, e.g.
     * brg:avx512_core_amx_bf16 on a CPU with AMX. oneDNN 2.6 asks Linux for
     * the AMX tile state itself (arch_prctl ARCH_REQ_XCOMP_PERM,
     * XFEATURE_XTILEDATA) when it first checks for AMX, and falls back to
     * its AVX-512 kernels when refused; the name says which one it took. */
    if (!st->dnnl || !(st->dnnl_bf16 || st->dnnl_u8s8)) return;
    size_t n = strlen(buf);
    if (n + 1 >= (size_t)cap) return;
    const char *bf = st->dnnl_bf16 ? ct_dnnl_impl(st->dnnl, CT_DNNL_BF16, 32, 64, 64) : NULL;
    const char *i8 = st->dnnl_u8s8 ? ct_dnnl_impl(st->dnnl, CT_DNNL_U8S8, 32, 64, 64) : NULL;
    snprintf(buf + n, (size_t)cap - n, "; oneDNN kernels:%s%s%s%s", bf ? " bf16 " : "", bf ? bf : "",
             bf && i8 ? "," : "", i8 ? " u8s8 " : "");
    n = strlen(buf);
    if (i8 && n + 1 < (size_t)cap) snprintf(buf + n, (size_t)cap - n, "%s", i8);
}

/* The dispatch decisions from the CPU's features and the options, before
 * any oneDNN context exists (doctor describes them without a backend). */
static void plan(const ct_backend_options *opts, ct_cpu_state *st) {
    const ct_cpu_features *f = ct_cpu_features_get();
    st->level = ct_cpu_isa_level(f);
    if (opts->isa_limit > 0 && opts->isa_limit < st->level) st->level = opts->isa_limit;
    st->vnni512 = st->level >= CT_ISA_VNNI && f->avx512_vnni;
    st->vnni256 = st->level >= CT_ISA_VNNI && f->avx_vnni && !f->avx512_vnni;
    /* oneDNN only where it brings something: int8 on VNNI, bf16 natively
     * (or forced), f32 where it measured faster; never at the baseline */
    int bf16 = opts->dnnl_bf16 > 0 || (opts->dnnl_bf16 == 0 && st->level >= CT_ISA_BF16);
    const int base = opts->isa_limit == CT_ISA_BASELINE;
    st->dnnl_wanted = ct_dnnl_built() && !base && (st->level >= CT_ISA_VNNI || bf16 || CT_DNNL_F32);
    st->dnnl_bf16 = st->dnnl_wanted && bf16;
    st->dnnl_f32 = st->dnnl_wanted && CT_DNNL_F32;
    st->dnnl_u8s8 = st->dnnl_wanted && (st->vnni512 || st->vnni256);
}

ct_dtype ct_cpu_auto_dtype(const char **why) {
    ct_backend_options o = ct_backend_default_options();
    ct_cpu_state st = {0};
    plan(&o, &st);
    if (st.dnnl_bf16) {
        *why = "the CPU multiplies bf16 natively (AVX512-BF16/AMX) through oneDNN, within the 1e-2 bf16 bound of fp32";
        return CT_DTYPE_BF16;
    }
    *why = st.level >= CT_ISA_BF16 ? "this build has no oneDNN, so bf16 weights would be widened to fp32 (slower)"
                                   : "no native bf16 on this CPU: bf16 weights would be widened to fp32 (slower than "
                                     "fp32), and int8 is outside the 1e-2 bound (opt in with --dtype int8)";
    return CT_DTYPE_F32;
}

ct_dtype ct_cpu_int8_dtype(const char **why) {
    ct_backend_options o = ct_backend_default_options();
    ct_cpu_state st = {0};
    plan(&o, &st);
    if (st.vnni512 || (st.vnni256 && st.dnnl_u8s8)) {
        if (why) *why = "VNNI: per-row int8 weights, u8·s8 products in hardware";
        return CT_DTYPE_Q8;
    }
    if (why) *why = "no VNNI: per-block int8 (Q8_0) on the AVX2 kernel, more layers int8 within 3e-2";
    return CT_DTYPE_Q8_0;
}

void ct_cpu_dispatch_plan(char *buf, int cap) {
    ct_backend_options o = ct_backend_default_options();
    ct_cpu_state st = {0};
    plan(&o, &st);
    describe(&st, buf, cap);
}

/* ct_backend_options.dnnl_pack (the benchmarks' --dnnl-pack A/B switch). */
static ct_dnnl_pack_mode pack_mode(const ct_backend_options *opts) {
    return opts->dnnl_pack < 0 ? CT_DNNL_PACK_OFF : opts->dnnl_pack > 0 ? CT_DNNL_PACK_ALWAYS : CT_DNNL_PACK_AUTO;
}

ct_status ct_cpu_backend_create(const ct_backend_ops *ops, const ct_backend_options *opts, ct_backend **out);
ct_status ct_cpu_backend_create(const ct_backend_ops *ops, const ct_backend_options *opts, ct_backend **out) {
    ct_backend *be = calloc(1, sizeof *be);
    if (!be) return ct_fail(CT_ERR_OOM, "cpu backend");
    be->ops = ops;
    be->threads = opts->threads;
    ct_cpu_state *st = calloc(1, sizeof *st);
    if (!st) {
        free(be);
        return ct_fail(CT_ERR_OOM, "cpu backend");
    }
    be->impl = st;
    plan(opts, st);
    if (ops == &cpu_fast_ops && st->dnnl_wanted && ct_dnnl_create(&st->dnnl) != CT_OK)
        st->dnnl = NULL; /* keep OpenBLAS */
    /* each product only where oneDNN has a real kernel for it on this CPU
     * (bf16 needs AVX-512; u8·s8 on AVX-VNNI depends on the version) */
    st->dnnl_bf16 = st->dnnl && st->dnnl_bf16 && ct_dnnl_probe(st->dnnl, CT_DNNL_BF16) == CT_OK;
    st->dnnl_f32 = st->dnnl && st->dnnl_f32 && ct_dnnl_probe(st->dnnl, CT_DNNL_F32) == CT_OK;
    st->dnnl_u8s8 = st->dnnl && st->dnnl_u8s8 && ct_dnnl_probe(st->dnnl, CT_DNNL_U8S8) == CT_OK;
    if (st->dnnl) ct_dnnl_set_pack(st->dnnl, pack_mode(opts));
    ct_error_clear();
    /* OpenMP and the OpenMP build of OpenBLAS share one pool sized here. */
    if (opts->threads > 0) omp_set_num_threads(opts->threads);
    /* The fast ops call cblas from every OpenMP thread at once (attention)
     * and from the caller with OpenBLAS's threads: have those buffers mapped
     * now, while the address space is free, so that no call can later make
     * OpenBLAS retry a failed mapping forever under ulimit -v. */
    if (ops == &cpu_fast_ops) {
        ct_status s = ct_blas_reserve(omp_get_max_threads() + 1);
        if (s != CT_OK) {
            cpu_destroy(be);
            return ct_fail_wrap(s, "cpu backend");
        }
    }
    *out = be;
    return CT_OK;
}

void ct_cpu_dispatch_describe(const ct_backend *be, char *buf, int cap) {
    const ct_cpu_state *st = be ? ct_cpu_state_of(be) : NULL;
    if (!st || be->ops != &cpu_fast_ops) {
        char feats[160];
        ct_cpu_features_describe(ct_cpu_features_get(), feats, sizeof feats);
        snprintf(buf, (size_t)cap, "reference loops (cpu features: %s)", feats);
        return;
    }
    describe(st, buf, cap);
}
