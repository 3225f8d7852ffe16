/* bench_gemv — the decoder's weight reads against the machine's memory
 * bandwidth, measured in the same run.
 *
 *   bench_gemv [--threads N] [--isa plain|avx2|avx512] [--dtype f32|bf16|f16|all]
 *              [--rows 1..4|all] [--reps R] [--bw-mb MB] [--layers L] [--d D] [--ff F] [--vocab V]
 *
 * 1. Read bandwidth: a buffer of --bw-mb MB (default 1024, far above the
 *    48 MB L3 seen here) streamed with 1 thread and with N threads.
 * 2. One token's decoder products: for each layer the self-attention q, k,
 *    v, o and cross q, o (d × d), the FFN (ff × d, d × ff), then the
 *    vocabulary projection (V × d); distinct weight buffers, so every pass
 *    streams all the bytes (defaults: the full-size model, 8 layers, d 1024,
 *    ff 4096, V 16384: 129 M weights). Best of --reps passes, as ms per
 *    token, GB/s of weights and the ratio to the bound weight bytes ÷
 *    bandwidth.
 * Prints a human-readable table and one JSON line per configuration.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/cpu/cpu_gemv.h"
#include "compute/cpu/cpu_membw.h"
#include "core/fs.h"

typedef struct shape {
    int N, K;
    ct_act act;
    int residual;
} shape;

static void fill_half(uint16_t *p, size_t n, int bf16) {
    uint64_t s = 0x2545f4914f6cdd1dull;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        float v = (float)((s >> 40) / (double)(1u << 24)) * 0.1f - 0.05f;
        p[i] = bf16 ? ct_f32_to_bf16(v) : ct_f32_to_f16(v);
    }
}

int main(int argc, char **argv) {
    int threads = omp_get_max_threads(), reps = 5, layers = 8, d = 1024, ff = 4096, vocab = 16384, rows = 0;
    size_t bw_mb = 1024;
    ct_cpu_isa isa = ct_cpu_isa_best();
    const char *dtype = "all";
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "bench_gemv: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--isa")) {
            if (ct_cpu_isa_parse(v, &isa) != 0 || isa > ct_cpu_isa_best()) {
                fprintf(stderr, "bench_gemv: --isa %s: not one of plain|avx2|avx512 this CPU runs (best %s)\n", v,
                        ct_cpu_isa_name(ct_cpu_isa_best()));
                return 2;
            }
        } else if (!strcmp(a, "--dtype")) dtype = v;
        else if (!strcmp(a, "--rows")) rows = !strcmp(v, "all") ? 0 : atoi(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--bw-mb")) bw_mb = (size_t)atol(v);
        else if (!strcmp(a, "--layers")) layers = atoi(v);
        else if (!strcmp(a, "--d")) d = atoi(v);
        else if (!strcmp(a, "--ff")) ff = atoi(v);
        else if (!strcmp(a, "--vocab")) vocab = atoi(v);
        else {
            fprintf(stderr, "bench_gemv: unknown option %s\n", a);
            return 2;
        }
    }
    int want[3] = {!strcmp(dtype, "all") || !strcmp(dtype, "f32"), !strcmp(dtype, "all") || !strcmp(dtype, "bf16"),
                   !strcmp(dtype, "all") || !strcmp(dtype, "f16")};
    if (threads < 1 || reps < 1 || layers < 1 || d < 1 || ff < 1 || vocab < 1 || rows < 0 ||
        rows > CT_GEMV_MAX_M || bw_mb < 64 || !(want[0] || want[1] || want[2])) {
        fprintf(stderr, "usage: bench_gemv [--threads N] [--isa plain|avx2|avx512] [--dtype f32|bf16|f16|all] "
                        "[--rows 1..4|all] [--reps R] [--bw-mb MB>=64] [--layers L] [--d D] [--ff F] [--vocab V]\n");
        return 2;
    }
    omp_set_num_threads(threads);

    /* the products of one token, in the decoder's order */
    int ns = 0;
    shape *sh = malloc(sizeof(shape) * (size_t)(layers * 8 + 1));
    for (int l = 0; l < layers; l++) {
        sh[ns++] = (shape){d, d, CT_ACT_NONE, 0}; /* self q, k, v */
        sh[ns++] = (shape){d, d, CT_ACT_NONE, 0};
        sh[ns++] = (shape){d, d, CT_ACT_NONE, 0};
        sh[ns++] = (shape){d, d, CT_ACT_NONE, 1}; /* self out, into the residual */
        sh[ns++] = (shape){d, d, CT_ACT_NONE, 0}; /* cross q */
        sh[ns++] = (shape){d, d, CT_ACT_NONE, 1}; /* cross out */
        sh[ns++] = (shape){ff, d, CT_ACT_RELU, 0};
        sh[ns++] = (shape){d, ff, CT_ACT_NONE, 1};
    }
    sh[ns++] = (shape){vocab, d, CT_ACT_NONE, 0};
    size_t nw = 0;
    for (int i = 0; i < ns; i++) nw += (size_t)sh[i].N * sh[i].K;
    int maxnk = ff > vocab ? ff : vocab;
    if (d > maxnk) maxnk = d;
    float *x = malloc(sizeof(float) * CT_GEMV_MAX_M * (size_t)maxnk);
    float *y = malloc(sizeof(float) * CT_GEMV_MAX_M * (size_t)maxnk);
    float *bias = calloc((size_t)maxnk, sizeof(float));
    if (!sh || !x || !y || !bias) {
        fprintf(stderr, "bench_gemv: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < CT_GEMV_MAX_M * (size_t)maxnk; i++) x[i] = y[i] = (float)(i % 97) * 0.01f - 0.5f;

    double bw1c, bwnc;
    double bw1 = ct_cpu_read_bandwidth(bw_mb << 20, 1, 3, isa, &bw1c);
    double bwn = threads > 1 ? ct_cpu_read_bandwidth(bw_mb << 20, threads, 3, isa, &bwnc) : (bwnc = bw1c, bw1);
    if (bw1 < 0 || bwn < 0) {
        fprintf(stderr, "bench_gemv: cannot allocate %zu MB for the bandwidth test\n", bw_mb);
        return 1;
    }
    printf("isa %s, threads %d; read bandwidth (%zu MB buffer), wall / per CPU-second x threads: 1 thread %.2f / "
           "%.2f GB/s, %d threads %.2f / %.2f GB/s\n",
           ct_cpu_isa_name(isa), threads, bw_mb, bw1, bw1c, threads, bwn, bwnc);
    printf("one token's decoder products: %d layers, d %d, ff %d, vocab %d: %.1f M weights\n", layers, d, ff, vocab,
           nw / 1e6);
    /* "cpu": CPU ms ÷ threads against the bound from the per-CPU bandwidth,
     * both measured in this process, so other load cancels out in the ratio */
    printf("%-5s %4s %10s %10s %8s %8s %10s %10s %8s\n", "dtype", "rows", "ms/token", "bound ms", "GB/s", "x bound",
           "cpu ms/th", "cpu bound", "x bound");

    const ct_dtype dts[3] = {CT_DTYPE_F32, CT_DTYPE_BF16, CT_DTYPE_F16};
    const char *dnames[3] = {"f32", "bf16", "f16"};
    for (int di = 0; di < 3; di++) {
        if (!want[di]) continue;
        size_t es = ct_dtype_size(dts[di]), bytes = nw * es;
        void *wbuf = NULL;
        if (posix_memalign(&wbuf, 64, bytes) != 0) {
            fprintf(stderr, "bench_gemv: cannot allocate %.0f MB of %s weights\n", bytes / 1e6, dnames[di]);
            return 1;
        }
        if (dts[di] == CT_DTYPE_F32) {
            float *f = wbuf;
            for (size_t i = 0; i < nw; i++) f[i] = (float)(i % 89) * 1e-3f - 0.04f;
        } else {
            fill_half(wbuf, nw, dts[di] == CT_DTYPE_BF16);
        }
        for (int M = rows ? rows : 1; M <= (rows ? rows : CT_GEMV_MAX_M); M++) {
            double best = 1e30, best_cpu = 1e30;
            for (int r = 0; r <= reps; r++) { /* pass 0 warms up (page faults, frequency) */
                double t = ct_now(), tc = ct_cpu_now();
                const char *wp = wbuf;
                for (int i = 0; i < ns; i++) {
                    ct_tensor wt = {.dtype = dts[di], .ndim = 2, .shape = {sh[i].N, sh[i].K}, .data = (void *)wp};
                    wt.nbytes = (size_t)sh[i].N * sh[i].K * es;
                    ct_status s = ct_gemv(isa, threads, y, x, &wt, bias, sh[i].residual ? y : NULL, 1.0f, sh[i].act, M,
                                          sh[i].N, sh[i].K);
                    if (s != CT_OK) {
                        fprintf(stderr, "bench_gemv: %s\n", ct_last_error());
                        return 1;
                    }
                    wp += wt.nbytes;
                }
                t = ct_now() - t;
                tc = ct_cpu_now() - tc;
                if (r > 0 && t < best) best = t, best_cpu = tc;
            }
            double bound = bytes / (bwn * 1e9), cpu_t = best_cpu / threads, cpu_bound = bytes / (bwnc * 1e9);
            printf("%-5s %4d %10.2f %10.2f %8.2f %8.2f %10.2f %10.2f %8.2f\n", dnames[di], M, best * 1e3, bound * 1e3,
                   bytes / best / 1e9, best / bound, cpu_t * 1e3, cpu_bound * 1e3, cpu_t / cpu_bound);
            printf("{\"isa\":\"%s\",\"threads\":%d,\"dtype\":\"%s\",\"rows\":%d,\"weights\":%zu,\"ms_per_token\":%.3f,"
                   "\"cpu_ms\":%.3f,\"bw1_gbs\":%.2f,\"bw_gbs\":%.2f,\"bw_cpu_gbs\":%.2f,\"bound_ms\":%.3f,"
                   "\"ratio\":%.3f,\"cpu_ratio\":%.3f}\n",
                   ct_cpu_isa_name(isa), threads, dnames[di], M, nw, best * 1e3, best_cpu * 1e3, bw1, bwn, bwnc,
                   bound * 1e3, best / bound, cpu_t / cpu_bound);
        }
        free(wbuf);
    }
    free(sh), free(x), free(y), free(bias);
    return 0;
}
