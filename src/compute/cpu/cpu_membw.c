/* cpu_membw.c — streaming read bandwidth (see cpu_membw.h). */
#include "compute/cpu/cpu_membw.h"

#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"

#define CHUNK 512 /* bytes per loop step: 8 zmm loads, one per accumulator */

/* Eight independent sums so the loads, not the add latency, set the pace. */
__attribute__((target("avx512f"))) static float sum_avx512(const float *p, size_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < n; i += CHUNK / sizeof(float)) {
        a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
        a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
        a4 = _mm512_add_ps(a4, _mm512_load_ps(p + i + 64));
        a5 = _mm512_add_ps(a5, _mm512_load_ps(p + i + 80));
        a6 = _mm512_add_ps(a6, _mm512_load_ps(p + i + 96));
        a7 = _mm512_add_ps(a7, _mm512_load_ps(p + i + 112));
    }
    a0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                       _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    return _mm512_reduce_add_ps(a0);
}

__attribute__((target("avx2"))) static float sum_avx2(const float *p, size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < n; i += 64) { /* 256 bytes, half a CHUNK: n is a multiple of 128 floats */
        a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
        a4 = _mm256_add_ps(a4, _mm256_load_ps(p + i + 32));
        a5 = _mm256_add_ps(a5, _mm256_load_ps(p + i + 40));
        a6 = _mm256_add_ps(a6, _mm256_load_ps(p + i + 48));
        a7 = _mm256_add_ps(a7, _mm256_load_ps(p + i + 56));
    }
    a0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                       _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    float t[8];
    _mm256_storeu_ps(t, a0);
    return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}

static float sum_plain(const float *p, size_t n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (size_t i = 0; i < n; i++) s += p[i];
    return s;
}

static float sum_part(const float *p, size_t n, ct_cpu_isa isa) {
    switch (isa) {
    case CT_CPU_ISA_AVX512: return sum_avx512(p, n);
    case CT_CPU_ISA_AVX2: return sum_avx2(p, n);
    default: return sum_plain(p, n);
    }
}

double ct_cpu_read_bandwidth(size_t bytes, int threads, int reps, ct_cpu_isa isa, double *per_cpu) {
    if (threads < 1) threads = 1;
    if (reps < 1) reps = 1;
    /* every part is a whole number of CHUNKs */
    size_t per = bytes / ((size_t)threads * CHUNK) * CHUNK;
    if (per == 0) return -1.0;
    bytes = per * (size_t)threads;
    float *buf = NULL;
    if (posix_memalign((void **)&buf, 64, bytes) != 0) return -1.0;
    const size_t nper = per / sizeof(float);
    /* each thread writes the parts it will read (first touch); a team
     * smaller than asked for still covers every part */
#pragma omp parallel num_threads(threads)
    for (int part = omp_get_thread_num(); part < threads; part += omp_get_num_threads()) {
        float *p = buf + nper * (size_t)part;
        for (size_t i = 0; i < nper; i++) p[i] = (float)(i & 1023) * 1e-3f;
    }
    double best = 1e30, best_cpu = 1e30;
    volatile float sink = 0.0f; /* keeps the sums, so the loads are not removed */
    for (int r = 0; r < reps; r++) {
        float total = 0.0f;
        double t = ct_now(), tc = ct_cpu_now();
#pragma omp parallel num_threads(threads) reduction(+ : total)
        for (int part = omp_get_thread_num(); part < threads; part += omp_get_num_threads())
            total += sum_part(buf + nper * (size_t)part, nper, isa);
        t = ct_now() - t;
        tc = ct_cpu_now() - tc;
        sink = sink + total;
        if (t < best) best = t;
        if (tc < best_cpu) best_cpu = tc;
    }
    (void)sink;
    free(buf);
    if (per_cpu) *per_cpu = best_cpu > 0 ? (double)bytes * threads / best_cpu / 1e9 : 0.0;
    return (double)bytes / best / 1e9;
}
