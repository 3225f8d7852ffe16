/* bench_gemm — the CPU's matrix-product paths on the model's shapes, in one
 * run so they can be compared: OpenBLAS sgemm, oneDNN f32 / bf16 / u8·s8
 * (weights in the checkpoint's (N,K) layout, and also with weights
 * reordered into oneDNN's packed layout), and the backend's matmul op as
 * the engine calls it (f32, bf16 widened, bf16 through oneDNN, int8 with
 * the activation quantisation and epilogue, Q8_0 blocks; f32, bf16 and int8
 * also with the op's own packed copies, ct_dnnl_matmul_w, forced on), plus
 * the decoding rows (M = 1, 4) with their weight-read bandwidth.
 *
 *   bench_gemm [--threads 2] [--reps 5] [--rows 375] [--shapes encoder|aligner]
 *
 * Best of reps: wall clock, and GFLOP per process CPU-second (robust to
 * other load on a shared machine); one line per (path, shape).
 */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/backend.h"
#include "compute/cpu/cpu_dnnl.h"
#include "compute/cpu/cpu_q80.h"
#include "compute/cpu/cpu_state.h"
#include "compute/quant.h"
#include "bench_cpu_wait.h"
#include "core/fs.h"

#ifdef CT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

static int reps = 5;

static float *rnd(size_t n, uint64_t seed) {
    float *p = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        p[i] = (float)((double)(seed >> 40) / (double)(1u << 24) - 0.5);
    }
    return p;
}

typedef void (*run_fn)(void *ctx);
static double last_cpu; /* process CPU seconds of the best_of's best rep (all threads) */
static double best_of(run_fn f, void *ctx) {
    f(ctx); /* warm-up: primitive creation, page faults */
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = ct_now(), c = ct_cpu_now();
        f(ctx);
        t = ct_now() - t, c = ct_cpu_now() - c;
        if (t < best) best = t;
        if (c < best_cpu) best_cpu = c;
    }
    last_cpu = best_cpu;
    return best;
}

typedef struct job {
    int M, N, K;
    float *x, *y, *wf;
    void *xa, *wa, *c;
    ct_dnnl *dnnl;
    ct_dnnl_kind kind;
    ct_backend *be;
    ct_tensor *w;
    ct_arena *ws;
#ifdef CT_HAVE_DNNL
    dnnl_primitive_t prim;
    dnnl_stream_t stream;
    dnnl_memory_t ma, mw, mc;
#endif
} job;

static void run_sgemm(void *p) {
    job *j = p;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->M, j->N, j->K, 1.0f, j->x, j->K, j->wf, j->K, 0.0f, j->y,
                j->N);
}
static void run_dnnl(void *p) {
    job *j = p;
    if (ct_dnnl_matmul(j->dnnl, j->kind, j->c, j->xa, j->wa, j->M, j->N, j->K) != CT_OK) {
        fprintf(stderr, "bench_gemm: %s\n", ct_last_error());
        exit(1);
    }
}
/* the Q8_0 integer product at any M: activations quantised per block, then
 * the AVX2 kernel (what the op does up to 4 rows, without the epilogue) */
static void run_q80int(void *p) {
    job *j = p;
    int8_t *qx = malloc((size_t)j->M * j->K);
    float *dx = malloc(sizeof(float) * (size_t)j->M * (j->K / 32));
    ct_q80_quantize_act(qx, dx, j->x, j->M, j->K);
    ct_q80_gemm(ct_cpu_isa_best(), omp_get_max_threads(), j->y, qx, dx, j->w->data, j->M, j->N, j->K);
    free(qx), free(dx);
}
static void run_op(void *p) {
    job *j = p;
    if (j->be->ops->matmul(j->be, j->y, j->x, j->w, NULL, NULL, 1.0f, CT_ACT_NONE, j->M, j->N, j->K, j->ws) != CT_OK) {
        fprintf(stderr, "bench_gemm: %s\n", ct_last_error());
        exit(1);
    }
}
#ifdef CT_HAVE_DNNL
static void run_packed(void *p) {
    job *j = p;
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, j->ma}, {DNNL_ARG_WEIGHTS, j->mw}, {DNNL_ARG_DST, j->mc}};
    dnnl_primitive_execute(j->prim, j->stream, 3, args);
    dnnl_stream_wait(j->stream);
}

/* u8·s8, bf16 or f32 (j->kind) with the weights reordered once into the layout
 * oneDNN prefers (format "any"), to decide whether the load should keep a
 * packed copy (on AMX the plain (N,K) weights are re-blocked every call). */
static double packed_dnnl(job *j) {
    const int bf = j->kind == CT_DNNL_BF16, f32 = j->kind == CT_DNNL_F32;
    const dnnl_data_type_t ta = f32 ? dnnl_f32 : bf ? dnnl_bf16 : dnnl_u8, tw = f32 ? dnnl_f32 : bf ? dnnl_bf16 : dnnl_s8,
                           tc = f32 || bf ? dnnl_f32 : dnnl_s32;
    dnnl_engine_t eng;
    dnnl_engine_create(&eng, dnnl_cpu, 0);
    dnnl_stream_create(&j->stream, eng, dnnl_stream_default_flags);
    dnnl_memory_desc_t ma, mw, mwp, mc;
    dnnl_dims_t da = {j->M, j->K}, dw = {j->K, j->N}, dc = {j->M, j->N};
    dnnl_memory_desc_init_by_tag(&ma, 2, da, ta, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&mw, 2, dw, tw, dnnl_ba);
    dnnl_memory_desc_init_by_tag(&mwp, 2, dw, tw, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&mc, 2, dc, tc, dnnl_ab);
    dnnl_matmul_desc_t md;
    dnnl_matmul_desc_init(&md, &ma, &mwp, NULL, &mc);
    dnnl_primitive_desc_t pd;
    if (dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL) != dnnl_success) return 0;
    dnnl_primitive_create(&j->prim, pd);
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_t plain;
    dnnl_memory_create(&plain, &mw, eng, j->wa);
    dnnl_memory_create(&j->mw, want, eng, DNNL_MEMORY_ALLOCATE);
    dnnl_memory_create(&j->ma, &ma, eng, j->xa);
    dnnl_memory_create(&j->mc, &mc, eng, j->c);
    dnnl_primitive_desc_t rpd;
    dnnl_reorder_primitive_desc_create(&rpd, &mw, eng, want, eng, NULL);
    dnnl_primitive_t reorder;
    dnnl_primitive_create(&reorder, rpd);
    dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, j->mw}};
    dnnl_primitive_execute(reorder, j->stream, 2, rargs);
    dnnl_stream_wait(j->stream);
    double t = best_of(run_packed, j);
    dnnl_primitive_destroy(reorder), dnnl_primitive_desc_destroy(rpd);
    dnnl_memory_destroy(plain), dnnl_memory_destroy(j->mw), dnnl_memory_destroy(j->ma), dnnl_memory_destroy(j->mc);
    dnnl_primitive_destroy(j->prim), dnnl_primitive_desc_destroy(pd);
    dnnl_stream_destroy(j->stream), dnnl_engine_destroy(eng);
    return t;
}
#endif

static void report(const char *what, const job *j, double t, double wbytes) {
    double gf = 2.0 * j->M * j->N * j->K / t / 1e9;
    printf("%-26s %4d x %5d x %5d  %8.3f ms  %7.1f GFLOP/s  %7.1f GFLOP/CPU-s", what, j->M, j->N, j->K, t * 1e3, gf,
           2.0 * j->M * j->N * j->K / last_cpu / 1e9);
    if (wbytes > 0) printf("  weights %.1f GB/s", wbytes / t / 1e9);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    int threads = 2, rows = 375, aligner = 0;
    const char *cpu_wait = "passive";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--cpu-wait")) cpu_wait = argv[i + 1];
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rows")) rows = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--shapes")) aligner = !strcmp(argv[i + 1], "aligner");
        else {
            fprintf(stderr, "usage: bench_gemm [--threads N] [--reps R] [--rows M] [--shapes encoder|aligner] [--cpu-wait passive|active]\n");
            return 2;
        }
    }
    if (bench_cpu_wait("bench_gemm", cpu_wait, argv)) return 2;
    ct_backend_options bo = ct_backend_default_options(), bo16 = bo;
    bo.threads = threads;
    bo16.threads = threads, bo16.dnnl_bf16 = 1;
    bo.dnnl_pack = -1, bo16.dnnl_pack = -1; /* the "op" lines: plain weights (packed: "op ... packed") */
    ct_backend_options bop = bo, bop16 = bo16;
    bop.dnnl_pack = 1, bop16.dnnl_pack = 1;
    ct_backend *be, *be16, *bep, *bep16;
    ct_dnnl *dnnl = NULL;
    if (ct_backend_create("cpu", &bo, &be) != CT_OK || ct_backend_create("cpu", &bo16, &be16) != CT_OK ||
        ct_backend_create("cpu", &bop, &bep) != CT_OK || ct_backend_create("cpu", &bop16, &bep16) != CT_OK) {
        fprintf(stderr, "bench_gemm: %s\n", ct_last_error());
        return 1;
    }
    char line[400];
    ct_cpu_dispatch_describe(be, line, sizeof line);
    printf("threads %d; dispatch: %s\n", omp_get_max_threads(), line);
    if (ct_dnnl_built() && ct_dnnl_create(&dnnl) != CT_OK) dnnl = NULL;
    ct_arena ws;
    if (ct_backend_arena_create(be, 64u << 20, &ws) != CT_OK) return 1;
    /* encoder shapes (M = rows: 30 s → 375 frames), decoder d×d, ff, head */
    const int shapes[][3] = {{rows, 5120, 1280}, {rows, 1280, 5120}, {rows, 1280, 1280}, {rows, 2560, 1280},
                             {1, 1024, 1024},     {1, 4096, 1024},    {1, 16384, 1024},  {4, 4096, 1024}};
    /* the MMS-300M aligner's encoder layers (d 1024, FF 4096) on one 34 s
     * window: --rows 1700 */
    const int ashapes[][3] = {{rows, 1024, 1024}, {rows, 4096, 1024}, {rows, 1024, 4096}};
    const size_t nshapes = aligner ? sizeof ashapes / sizeof *ashapes : sizeof shapes / sizeof *shapes;
    for (size_t si = 0; si < nshapes; si++) {
        const int *sh = aligner ? ashapes[si] : shapes[si];
        job j = {.M = sh[0], .N = sh[1], .K = sh[2], .dnnl = dnnl, .ws = &ws};
        const size_t MK = (size_t)j.M * j.K, NK = (size_t)j.N * j.K, MN = (size_t)j.M * j.N;
        j.x = rnd(MK, 7), j.wf = rnd(NK, 11), j.y = malloc(sizeof(float) * MN);
        uint16_t *xb = malloc(2 * MK), *wb = malloc(2 * NK);
        uint8_t *xu = malloc(MK);
        int8_t *wq = malloc(NK);
        for (size_t i = 0; i < MK; i++) xb[i] = ct_f32_to_bf16(j.x[i]), xu[i] = (uint8_t)(i * 31);
        for (size_t i = 0; i < NK; i++) wb[i] = ct_f32_to_bf16(j.wf[i]), wq[i] = (int8_t)((i * 17) % 255 - 127);
        const int gemv = j.M <= 4;
        if (!gemv) report("OpenBLAS sgemm f32", &j, best_of(run_sgemm, &j), 0);
        /* only the kinds oneDNN has a kernel for on this CPU (bf16 needs
         * AVX-512: without it the primitive fails) */
        if (dnnl && !gemv && ct_dnnl_probe(dnnl, CT_DNNL_BF16) == CT_OK && ct_dnnl_probe(dnnl, CT_DNNL_U8S8) == CT_OK) {
            j.kind = CT_DNNL_F32, j.xa = j.x, j.wa = j.wf, j.c = j.y;
            report("oneDNN f32", &j, best_of(run_dnnl, &j), 0);
            printf("    [%s]\n", ct_dnnl_impl(dnnl, CT_DNNL_F32, j.M, j.N, j.K));
#ifdef CT_HAVE_DNNL
            double tpf = packed_dnnl(&j);
            if (tpf > 0) report("oneDNN f32 (packed w)", &j, tpf, 0);
#endif
            j.kind = CT_DNNL_BF16, j.xa = xb, j.wa = wb;
            report("oneDNN bf16", &j, best_of(run_dnnl, &j), 0);
            printf("    [%s]\n", ct_dnnl_impl(dnnl, CT_DNNL_BF16, j.M, j.N, j.K));
#ifdef CT_HAVE_DNNL
            double tpb = packed_dnnl(&j);
            if (tpb > 0) report("oneDNN bf16 (packed w)", &j, tpb, 0);
#endif
            j.kind = CT_DNNL_U8S8, j.xa = xu, j.wa = wq;
            report("oneDNN u8s8 (plain w)", &j, best_of(run_dnnl, &j), 0);
            printf("    [%s]\n", ct_dnnl_impl(dnnl, CT_DNNL_U8S8, j.M, j.N, j.K));
#ifdef CT_HAVE_DNNL
            double tp = packed_dnnl(&j);
            if (tp > 0) report("oneDNN u8s8 (packed w)", &j, tp, 0);
#endif
        }
        ct_tensor tf, tb, tq, t0;
        const int64_t shape[2] = {j.N, j.K};
        int64_t bad;
        if (ct_tensor_upload(be, CT_DTYPE_F32, j.wf, CT_DTYPE_F32, 2, shape, &tf) != CT_OK ||
            ct_tensor_upload(be, CT_DTYPE_BF16, j.wf, CT_DTYPE_F32, 2, shape, &tb) != CT_OK ||
            ct_tensor_quantize_q8(be, j.wf, CT_DTYPE_F32, j.N, j.K, &bad, &tq) != CT_OK ||
            ct_tensor_quantize_q80(be, j.wf, CT_DTYPE_F32, j.N, j.K, &bad, &t0) != CT_OK) {
            fprintf(stderr, "bench_gemm: %s\n", ct_last_error());
            return 1;
        }
        j.be = be, j.w = &tf;
        report("op f32", &j, best_of(run_op, &j), gemv ? 4.0 * NK : 0);
        if (!gemv) {
            j.be = bep;
            report("op f32 (packed)", &j, best_of(run_op, &j), 0);
            j.be = be;
        }
        j.w = &tb;
        report("op bf16 (widened)", &j, best_of(run_op, &j), gemv ? 2.0 * NK : 0);
        if (!gemv && ct_cpu_state_of(be16)->dnnl_bf16) {
            j.be = be16;
            report("op bf16 (oneDNN bf16)", &j, best_of(run_op, &j), 0);
            j.be = bep16;
            report("op bf16 (oneDNN, packed)", &j, best_of(run_op, &j), 0);
            j.be = be;
        }
        j.w = &tq;
        report("op int8", &j, best_of(run_op, &j), gemv ? 1.0 * NK : 0);
        if (!gemv) {
            j.be = bep;
            report("op int8 (packed)", &j, best_of(run_op, &j), 0);
            j.be = be;
        }
        j.w = &t0;
        report(gemv ? "op q8_0 (AVX2 blocks)" : "op q8_0 (widened, sgemm)", &j, best_of(run_op, &j),
               gemv ? 34.0 / 32.0 * NK : 0);
        if (!gemv) report("q8_0 integer GEMM (AVX2)", &j, best_of(run_q80int, &j), 0);
        ct_tensor_release(&tf), ct_tensor_release(&tb), ct_tensor_release(&tq), ct_tensor_release(&t0);
        free(j.x), free(j.wf), free(j.y), free(xb), free(wb), free(xu), free(wq);
    }
    ct_backend_arena_free(be, &ws);
    ct_dnnl_free(dnnl);
    ct_backend_free(be16);
    ct_backend_free(be);
    ct_backend_free(bep16);
    ct_backend_free(bep);
    return 0;
}
