/* mel_fast.c — the fast frontend: one frame per SIMD lane (mel_kernel.inc,
 * built for AVX-512, AVX2 and baseline x86-64 and chosen at run time), and
 * the batch driver that spreads (clip, group of CT_MEL_VW frames) work items
 * over OpenMP threads. The plain
 * path it is tested against is ct_mel_compute_reference (mel.c).
 */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "asr/mel_internal.h"

/* The kernels' vector helpers are inlined into each per-ISA kernel, so the
 * ABI of passing vectors by value never matters. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define KW 8
#define KNAME frames_avx512
#define KTARGET __attribute__((target("avx512f")))
#define KSQRT(v) ((kvf)_mm256_sqrt_ps((__m256)(v)))
#include "asr/mel_kernel.inc"
#undef KW
#undef KNAME
#undef KTARGET
#undef KSQRT

#define KW 4
#define KNAME frames_avx2
#define KTARGET __attribute__((target("avx2")))
#define KSQRT(v) ((kvf)_mm_sqrt_ps((__m128)(v)))
#include "asr/mel_kernel.inc"
#undef KNAME
#undef KTARGET

#define KNAME frames_base
#define KTARGET
#include "asr/mel_kernel.inc"
#undef KW
#undef KNAME
#undef KTARGET
#undef KSQRT
#define CT_MEL_X86 1
#else
#define KW 4
#define KNAME frames_base
#define KTARGET
#define KSQRT(v) ({ kvf r_; for (int j_ = 0; j_ < KW; j_++) r_[j_] = sqrtf((v)[j_]); r_; })
#include "asr/mel_kernel.inc"
#undef KW
#undef KNAME
#undef KTARGET
#undef KSQRT
#endif

/* Which kernel runs: the widest the CPU has, unless a test asked for a
 * narrower one (ct_mel__set_isa). */
static int isa_forced = -1;

static int cpu_isa(void) {
#ifdef CT_MEL_X86
    static int isa = -1;
    if (isa < 0) {
        __builtin_cpu_init();
        isa = __builtin_cpu_supports("avx512f") ? 2 : __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return isa;
#else
    return 0;
#endif
}

int ct_mel__isa(void) {
    int have = cpu_isa();
    return isa_forced >= 0 && isa_forced < have ? isa_forced : have;
}

void ct_mel__set_isa(int isa) { isa_forced = isa; }

typedef void (*kernel_fn)(const ct_mel *, const float *, int, float *, void *, void *, void *);

/* Frames t0 .. t0 + nfr - 1 (nfr <= CT_MEL_VW) through the widest kernel the
 * CPU runs. scratch holds 3 * half + 1 vectors of 64 bytes. */
static void frames_group(const ct_mel *m, const float *sig, int nfr, float *out, void *scratch) {
    const size_t M = (size_t)m->half;
    const int hop = m->o.hop_length, nm = m->o.n_mels;
    unsigned char *sc = scratch;
    int lanes = 4;
    kernel_fn run = frames_base;
#ifdef CT_MEL_X86
    int isa = ct_mel__isa();
    if (isa == 2) {
        lanes = 8;
        run = frames_avx512;
    } else if (isa == 1) {
        run = frames_avx2;
    }
#endif
    size_t vb = (size_t)lanes * 8; /* bytes of one double vector */
    for (int s = 0; s < nfr; s += lanes) {
        int k = nfr - s < lanes ? nfr - s : lanes;
        run(m, sig + (size_t)s * hop, k, out + (size_t)s * nm, sc, sc + M * vb, sc + 2 * M * vb);
    }
}

/* One clip's frame group as a work item. */
typedef struct {
    int clip;
    size_t t0;
} work_item;

ct_status ct_mel__run_batch(ct_mel *m, const float *const *clips, const size_t *n, int batch,
                            int dither, float *out, size_t T_max, int *valid_frames) {
    const int nm = m->o.n_mels, hop = m->o.hop_length;
    const size_t row = T_max * (size_t)nm;
    size_t *off = malloc(sizeof(size_t) * ((size_t)batch + 1));
    size_t n_items = 0;
    if (!off) return ct_fail(CT_ERR_OOM, "mel: out of memory");
    off[0] = 0;
    for (int b = 0; b < batch; b++) {
        size_t L = ct_mel_valid_frames(m, n[b]);
        if (valid_frames) valid_frames[b] = (int)L;
        off[b + 1] = off[b] + ct_mel__padded_len(m, n[b]);
        if (L >= 2) n_items += (L + CT_MEL_VW - 1) / CT_MEL_VW;
    }
    float *sig = malloc(sizeof(float) * off[batch]);
    work_item *items = malloc(sizeof(work_item) * (n_items ? n_items : 1));
    if (!sig || !items) {
        free(off);
        free(sig);
        free(items);
        return ct_fail(CT_ERR_OOM, "mel: out of memory for %d clips", batch);
    }
    size_t k = 0;
    for (int b = 0; b < batch; b++) {
        size_t L = ct_mel_valid_frames(m, n[b]);
        if (L < 2) continue;
        for (size_t t0 = 0; t0 < L; t0 += CT_MEL_VW) items[k++] = (work_item){b, t0};
    }

    int nt = m->o.threads > 0 ? m->o.threads : omp_get_max_threads();
    int failed = 0;

    /* 1. dither + pre-emphasis into each clip's padded buffer; zero rows >= L */
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) reduction(| : failed)
    for (int b = 0; b < batch; b++) {
        size_t L = ct_mel_valid_frames(m, n[b]);
        size_t first_zero = L >= 2 ? L : 0;
        float *o = out + (size_t)b * row;
        memset(o + first_zero * nm, 0, sizeof(float) * (T_max - first_zero) * nm);
        if (L >= 2 && ct_mel__signal(m, clips[b], n[b], dither, sig + off[b],
                                     off[b + 1] - off[b], 0) != CT_OK)
            failed |= 1;
    }

    /* 2. frames */
#pragma omp parallel num_threads(nt) reduction(| : failed)
    {
        size_t M = (size_t)m->half;
        void *scratch = aligned_alloc(64, 64 * (3 * M + 1));
        if (!scratch) failed |= 1;
#pragma omp for schedule(dynamic, 4)
        for (size_t i = 0; i < n_items; i++) {
            if (!scratch) continue;
            const work_item *it = &items[i];
            size_t L = ct_mel_valid_frames(m, n[it->clip]);
            int nfr = (int)(L - it->t0 < CT_MEL_VW ? L - it->t0 : CT_MEL_VW);
            frames_group(m, sig + off[it->clip] + it->t0 * (size_t)hop, nfr,
                         out + (size_t)it->clip * row + it->t0 * (size_t)nm, scratch);
        }
        free(scratch);
    }

    /* 3. per-row normalisation over its own valid frames, with the sums
     * ordered as the reference orders them for a batch padded to the
     * longest clip */
    size_t T_ref = 0;
    for (int b = 0; b < batch; b++)
        if (ct_mel_frames(m, n[b]) > T_ref) T_ref = ct_mel_frames(m, n[b]);
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) reduction(| : failed)
    for (int b = 0; b < batch; b++) {
        size_t L = ct_mel_valid_frames(m, n[b]);
        if (L >= 2 && ct_mel__normalize(out + (size_t)b * row, L, T_ref, nm) != 0) failed |= 1;
    }
    free(off);
    free(sig);
    free(items);
    if (failed) return ct_fail(CT_ERR_OOM, "mel: out of memory in a worker thread");
    return CT_OK;
}
