/* cpu_features.c — cpuid leaves 1 and 7 (subleaves 0 and 1) plus XCR0, so
 * that a feature counts only when the OS also saves its registers (a VM can
 * expose AVX-512 in cpuid and still not enable the ZMM state). x86 only;
 * elsewhere every feature reads as absent and the dispatch stays baseline. */
#include "compute/cpu/cpu_features.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static void detect(ct_cpu_features *f) {
    unsigned a, b, c, d;
    memset(f, 0, sizeof *f);
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    const int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx) return;
    const unsigned long long xcr0 = xgetbv0();
    const int ymm_ok = (xcr0 & 0x6) == 0x6;     /* SSE + AVX state */
    const int zmm_ok = (xcr0 & 0xe6) == 0xe6;   /* + opmask, ZMM_Hi256, Hi16_ZMM */
    const int amx_ok = (xcr0 & 0x60000) == 0x60000; /* XTILECFG + XTILEDATA */
    if (!ymm_ok || __get_cpuid_max(0, NULL) < 7) return;
    __cpuid_count(7, 0, a, b, c, d);
    const unsigned b7 = b, c7 = c, d7 = d;
    __cpuid_count(7, 1, a, b, c, d);
    const unsigned a71 = a;
    f->fma = fma;
    f->f16c = f16c;
    f->avx2 = (b7 >> 5) & 1;
    f->avx_vnni = f->avx2 && ((a71 >> 4) & 1);
    if (zmm_ok) {
        const int avx512f = (b7 >> 16) & 1, dq = (b7 >> 17) & 1, bw = (b7 >> 30) & 1, vl = (b7 >> 31) & 1;
        f->avx512 = avx512f && dq && bw && vl;
        f->avx512_vnni = f->avx512 && ((c7 >> 11) & 1);
        f->avx512_bf16 = f->avx512 && ((a71 >> 5) & 1);
    }
    if (amx_ok) {
        f->amx_bf16 = (d7 >> 22) & 1;
        f->amx_int8 = (d7 >> 25) & 1;
    }
}
#else
static void detect(ct_cpu_features *f) { memset(f, 0, sizeof *f); }
#endif

static ct_cpu_features g_features;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static void init_once(void) { detect(&g_features); }

const ct_cpu_features *ct_cpu_features_get(void) {
    pthread_once(&g_once, init_once);
    return &g_features;
}

int ct_cpu_isa_level(const ct_cpu_features *f) {
    if (f->avx512_bf16 || f->amx_bf16) return CT_ISA_BF16;
    if (f->avx512_vnni || f->avx_vnni) return CT_ISA_VNNI;
    return CT_ISA_BASELINE;
}

const char *ct_cpu_level_name(int level) {
    switch (level) {
    case CT_ISA_ALL: return "all";
    case CT_ISA_BASELINE: return "baseline";
    case CT_ISA_VNNI: return "vnni";
    case CT_ISA_BF16: return "bf16";
    default: return "?";
    }
}

void ct_cpu_features_describe(const ct_cpu_features *f, char *buf, int cap) {
    if (cap <= 0) return;
    snprintf(buf, (size_t)cap, "%s%s%s%s%s%s%s%s%s", f->avx2 ? "avx2 " : "", f->fma ? "fma " : "", f->f16c ? "f16c " : "",
             f->avx512 ? "avx512 " : "", f->avx512_vnni ? "avx512_vnni " : "", f->avx_vnni ? "avx_vnni " : "",
             f->avx512_bf16 ? "avx512_bf16 " : "", f->amx_bf16 ? "amx_bf16 " : "", f->amx_int8 ? "amx_int8 " : "");
    size_t n = strlen(buf);
    if (n > 0 && buf[n - 1] == ' ') buf[n - 1] = '\0';
    if (!*buf) snprintf(buf, (size_t)cap, "none of avx2/avx512/vnni/bf16");
}
