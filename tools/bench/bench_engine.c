/* bench_engine — times mel / encoder / decoder of the engine on a checkpoint
 * directory for a batch of white-noise clips with a forced decode length
 * (EOS ignored), and measures OpenBLAS sgemm (and oneDNN's f32, bf16 and
 * u8·s8 products) in the same run so the encoder's achieved GFLOP/s can be
 * compared with what the machine's GEMM reaches.
 *
 *   bench_engine --model DIR [--dtype fp32|bf16|fp16|int8] [--batch 1] [--seconds 30]
 *                [--tokens 100] [--runs 1] [--threads 0] [--device cpu] [--q8-all 0|1]
 *
 * --q8-all 1: int8 with every dense layer quantised instead of the default
 * precision plan (asr/weights.h), for A/B runs of the two.
 *
 * --device: cpu, cpu-ref or cuda (the same model code over the cuda
 * backend table); --loop picks the greedy loop (auto: on cuda the device
 * loop with a CUDA graph).
 *
 * Prints one human-readable report and one JSON line (for docs/PERFORMANCE.md).
 */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_dnnl_pack.h"
#include "asr/asr.h"
#include "asr/decoder.h"
#include "asr/encoder.h"
#include "compute/cpu/cpu_membw.h"
#include "compute/cpu/cpu_dnnl.h"
#include "compute/cpu/cpu_state.h"
#include "bench_cpu_wait.h"
#include "core/fs.h"
#include "bench_util.h"

static double peak_rss_gb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / (1024.0 * 1024.0); /* KiB → GiB */
}

static int s2(int L) { return L <= 0 ? 0 : (L - 1) / 2 + 1; }

/* Multiply-adds ×2 of one encoder pass over B rows of T mel frames whose
 * valid lengths are all L (the attention only runs over valid frames). */
static double encoder_flops(const ct_asr_hparams *hp, int B, int T, int L) {
    double C = hp->sub_channels, d = hp->d_enc, ff = hp->enc_ff, K = hp->conv_kernel;
    int T1 = s2(T), T2 = s2(T1), T3 = s2(T2), F1 = s2(hp->n_mels), F2 = s2(F1), F3 = s2(F2);
    double sub = 2.0 * C * T1 * F1 * 9 + 2.0 * C * T2 * F2 * 9 + 2.0 * C * C * T2 * F2 + 2.0 * C * T3 * F3 * 9 +
                 2.0 * C * C * T3 * F3 + 2.0 * T3 * C * F3 * d;
    double M = (double)B * T3, Le = ct_encoder_frames(L);
    double layer = 8.0 * M * d * ff          /* two macaron FFs */
                   + 8.0 * M * d * d          /* q, k, v, out */
                   + 2.0 * (2 * T3 - 1) * d * d /* linear_pos */
                   + (double)B * 10.0 * Le * Le * d /* (q+u)kᵀ, (q+v)pᵀ over 2L−1, softmax·v */
                   + 6.0 * M * d * d          /* pointwise convs */
                   + 2.0 * M * d * K;         /* depthwise */
    return (double)B * sub + hp->enc_layers * layer;
}

/* Best of reps: wall GFLOP/s; *per_cpu_s gets GFLOP per CPU-second (all threads). */
static double sgemm_gflops(int M, int N, int K, int reps, double *per_cpu_s) {
    float *a = malloc(sizeof(float) * (size_t)M * K), *b = malloc(sizeof(float) * (size_t)N * K),
          *c = malloc(sizeof(float) * (size_t)M * N);
    for (size_t i = 0; i < (size_t)M * K; i++) a[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    for (size_t i = 0; i < (size_t)N * K; i++) b[i] = (float)((i * 40503u) % 1000) * 1e-3f - 0.5f;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K, 0.0f, c, N); /* warm-up */
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = ct_now(), tc = ct_cpu_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K, 0.0f, c, N);
        t = ct_now() - t;
        tc = ct_cpu_now() - tc;
        if (t < best) best = t;
        if (tc < best_cpu) best_cpu = tc;
    }
    *per_cpu_s = 2.0 * M * N * K / best_cpu / 1e9;
    free(a), free(b), free(c);
    return 2.0 * M * N * K / best / 1e9;
}

/* oneDNN's peak for the same shape: f32 (brgemm), bf16 (AVX512-BF16/AMX
 * where the CPU has it, emulated elsewhere) or u8·s8 (VNNI), best of reps,
 * wall GFLOP/s (0 without oneDNN); *per_cpu_s gets GFLOP per process
 * CPU-second (all threads) of the best run, robust to other load. */
static double dnnl_gflops(ct_dnnl_kind kind, int M, int N, int K, int reps, double *per_cpu_s) {
    *per_cpu_s = 0;
    ct_dnnl *d;
    if (!ct_dnnl_built() || ct_dnnl_create(&d) != CT_OK) return 0;
    const size_t es = kind == CT_DNNL_F32 ? 4 : kind == CT_DNNL_BF16 ? 2 : 1;
    unsigned char *a = calloc((size_t)M * K, es), *b = calloc((size_t)N * K, es);
    float *c = malloc(sizeof(float) * (size_t)M * N);
    for (size_t i = 0; i < (size_t)M * K * es; i++) a[i] = (unsigned char)(i * 7);
    for (size_t i = 0; i < (size_t)N * K * es; i++) b[i] = (unsigned char)(i * 13);
    if (kind == CT_DNNL_F32) /* small finite floats rather than random bit patterns */
        for (size_t i = 0; i < (size_t)M * K; i++) ((float *)(void *)a)[i] = (float)(i % 7) * 0.1f;
    if (kind == CT_DNNL_F32)
        for (size_t i = 0; i < (size_t)N * K; i++) ((float *)(void *)b)[i] = (float)(i % 5) * 0.1f;
    if (kind == CT_DNNL_BF16) /* bf16 of small finite floats */
        for (size_t i = 0; i < (size_t)M * K; i++) ((uint16_t *)(void *)a)[i] = ct_f32_to_bf16((float)(i % 7) * 0.1f);
    if (kind == CT_DNNL_BF16)
        for (size_t i = 0; i < (size_t)N * K; i++) ((uint16_t *)(void *)b)[i] = ct_f32_to_bf16((float)(i % 5) * 0.1f);
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r <= reps; r++) { /* the first makes the primitive */
        double t = ct_now(), tc = ct_cpu_now();
        if (ct_dnnl_matmul(d, kind, c, a, b, M, N, K) != CT_OK) break;
        t = ct_now() - t, tc = ct_cpu_now() - tc;
        if (r > 0 && t < best) best = t;
        if (r > 0 && tc < best_cpu) best_cpu = tc;
    }
    if (best_cpu < 1e30 && best_cpu > 0) *per_cpu_s = 2.0 * M * N * K / best_cpu / 1e9;
    free(a), free(b), free(c);
    ct_dnnl_free(d);
    return best < 1e30 ? 2.0 * M * N * K / best / 1e9 : 0;
}

int main(int argc, char **argv) {
    const char *model = NULL, *dtype = "fp32", *device = "cpu";
    const char *cpu_wait = "passive";
    int batch = 1, tokens = 100, runs = 1, threads = 0, loop = 0, q8_all = 0, pack = 0;
    double seconds = 30.0;
    for (int i = 1; i < argc; i += 2) { /* every option takes a value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "bench_engine: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--dtype")) dtype = v;
        else if (!strcmp(a, "--batch")) batch = atoi(v);
        else if (!strcmp(a, "--seconds")) seconds = atof(v);
        else if (!strcmp(a, "--tokens")) tokens = atoi(v);
        else if (!strcmp(a, "--runs")) runs = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--cpu-wait")) cpu_wait = v;
        else if (!strcmp(a, "--device")) device = v;
        else if (!strcmp(a, "--loop")) /* the greedy loop (asr/generate.h): auto, host, device, eager */
            loop = !strcmp(v, "host") ? 1 : !strcmp(v, "device") ? 2 : !strcmp(v, "eager") ? 3 : 0;
        else if (!strcmp(a, "--q8-all")) q8_all = atoi(v);
        else if (!strcmp(a, "--dnnl-pack")) pack = bench_dnnl_pack(v);
        else {
            fprintf(stderr, "bench_engine: unknown option %s\n", a);
            return 2;
        }
    }
    if (bench_cpu_wait("bench_engine", cpu_wait, argv)) return 2;
    if (!model || batch <= 0 || tokens <= 0 || runs <= 0 || seconds <= 0 || seconds > 35 || pack < -1) {
        fprintf(stderr, "usage: bench_engine --model DIR [--dtype fp32|bf16|fp16|int8] [--batch B] [--seconds S<=35] "
                        "[--tokens N] [--runs R] [--threads N] [--cpu-wait passive|active] [--device cpu|cpu-ref|cuda] "
                        "[--loop auto|host|device|eager] [--dnnl-pack off|auto|always]\n");
        return 2;
    }
    ct_asr_options o = ct_asr_default_options();
    o.dnnl_pack = pack;
    o.threads = threads;
    o.device = device;
    o.weight_dtype = bench_weight_dtype(dtype);
    if (q8_all) o.q8.all = CT_Q8_PLAN_SET; /* every dense layer int8 (the pre-plan behaviour) */
    double t_load = ct_now(), c_load = ct_cpu_now();
    ct_asr *asr;
    if (ct_asr_open(model, &o, &asr) != CT_OK) {
        fprintf(stderr, "bench_engine: %s\n", ct_last_error());
        return 1;
    }
    t_load = ct_now() - t_load, c_load = ct_cpu_now() - c_load;
    double rss_after_load = peak_rss_gb();
    const ct_asr_weights *w = ct_asr_model_weights(asr);
    size_t n = (size_t)(seconds * 16000.0);
    float **clips = malloc(sizeof(float *) * batch);
    size_t *ns = malloc(sizeof(size_t) * batch);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int b = 0; b < batch; b++) {
        clips[b] = malloc(sizeof(float) * n);
        ns[b] = n;
        for (size_t i = 0; i < n; i++) { /* white noise, deterministic */
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            clips[b][i] = (float)((double)(x >> 40) / (double)(1u << 24) - 0.5) * 0.2f;
        }
    }
    ct_asr_request rq = ct_asr_default_request();
    rq.max_new_tokens = tokens;
    rq.ignore_eos = 1;
    rq.decode_loop = loop;
    double best_total = 1e30, mel = 0, enc = 0, dec = 0, enc_cpu = 0, dec_cpu = 0;
    /* sgemm before and after the model run: the machine's load may change */
    const int Te0 = ct_encoder_frames(1 + (int)(n / 160));
    /* the CPU probes only where the model ran on the CPU (a GPU run's
     * numbers do not depend on them; at batch 128 they took ~20 s) */
    const int on_cpu = !strncmp(device, "cpu", 3);
    double gemm_cpu0 = 1e-30, gemm0 = on_cpu ? sgemm_gflops(batch * Te0, w->hp.enc_ff, w->hp.d_enc, 3, &gemm_cpu0) : 1e-30;
    size_t arena = 0;
    for (int r = 0; r < runs; r++) {
        ct_asr_result res;
        if (ct_asr_transcribe(asr, (const float *const *)clips, ns, batch, &rq, &res) != CT_OK) {
            fprintf(stderr, "bench_engine: %s\n", ct_last_error());
            return 1;
        }
        for (int b = 0; b < batch; b++)
            if (res.clips[b].n_tokens != tokens) {
                fprintf(stderr, "bench_engine: row %d made %d tokens, not %d\n", b, res.clips[b].n_tokens, tokens);
                return 1;
            }
        double total = res.seconds_mel + res.seconds_encoder + res.seconds_decoder;
        if (total < best_total) {
            best_total = total;
            mel = res.seconds_mel, enc = res.seconds_encoder, dec = res.seconds_decoder;
            enc_cpu = res.cpu_encoder, dec_cpu = res.cpu_decoder;
        }
        arena = res.arena_bytes;
        ct_asr_result_free(&res);
    }
    int T = 1 + (int)(n / 160);
    double flops = encoder_flops(&w->hp, batch, T, (int)(n / 160));
    int Te = ct_encoder_frames(T);
    double gemm_cpu1 = 1e-30, gemm1 = on_cpu ? sgemm_gflops(batch * Te, w->hp.enc_ff, w->hp.d_enc, 3, &gemm_cpu1) : 1e-30;
    double gemm = gemm0 > gemm1 ? gemm0 : gemm1, gemm_cpu = gemm_cpu0 > gemm_cpu1 ? gemm_cpu0 : gemm_cpu1;
    double audio = seconds * batch;
    /* the decoder's floor: one step reads its weights once (1 GB buffer,
     * far above the last-level cache), measured with the run's threads;
     * after the peak RSS of the model run is taken, which it would raise */
    const double peak_rss = peak_rss_gb();
    const int nth = threads > 0 ? threads : omp_get_max_threads();
    double bw_cpu = 1e-30, bw = on_cpu ? ct_cpu_read_bandwidth((size_t)1 << 30, nth, 3, ct_cpu_isa_best(), &bw_cpu) : 1e-30;
    double dec_bound = (double)ct_decoder_weight_bytes(w) / (bw * 1e9);
    /* oneDNN's peaks on the encoder's FF shape (0 without oneDNN); the
     * dispatch plan only where the CPU backend ran */
    double pc_i8 = 0, pc_f32 = 0, pc_bf16 = 0;
    const double peak_i8 = on_cpu ? dnnl_gflops(CT_DNNL_U8S8, batch * Te, w->hp.enc_ff, w->hp.d_enc, 3, &pc_i8) : 0;
    const double peak_f32 = on_cpu ? dnnl_gflops(CT_DNNL_F32, batch * Te, w->hp.enc_ff, w->hp.d_enc, 3, &pc_f32) : 0;
    const double peak_bf16 = on_cpu ? dnnl_gflops(CT_DNNL_BF16, batch * Te, w->hp.enc_ff, w->hp.d_enc, 3, &pc_bf16) : 0;
    /* the encoder against the peak of the product its dtype runs on */
    const int is_q8 = w->wdtype == CT_DTYPE_Q8, is_bf16 = w->wdtype == CT_DTYPE_BF16 && ct_asr_backend(asr) &&
                                                         on_cpu && ct_cpu_state_of(ct_asr_backend(asr)) &&
                                                         ct_cpu_state_of(ct_asr_backend(asr))->dnnl_bf16;
    const double peak_own = is_q8 ? peak_i8 : is_bf16 ? peak_bf16 : peak_f32;
    const double pc_own = is_q8 ? pc_i8 : is_bf16 ? pc_bf16 : pc_f32;
    char disp[400] = "(not the cpu backend)";
    if (on_cpu) ct_cpu_dispatch_describe(ct_asr_backend(asr), disp, sizeof disp);
    printf("model %s, weights %s (%.2f GB resident), threads %d, batch %d x %.1f s, %d forced tokens\n", model,
           dtype, (double)w->bytes / 1e9, threads > 0 ? threads : omp_get_max_threads(), batch, seconds, tokens);
    printf("load %.2f s (%.2f CPU s); mel %.3f s, encoder %.3f s, decoder %.3f s, total %.3f s; RTFx %.2f\n", t_load, c_load, mel, enc, dec,
           best_total, audio / best_total);
    printf("encoder %.1f GFLOP at %.1f GFLOP/s; OpenBLAS sgemm (%d x %d x %d) %.1f GFLOP/s: encoder at %.0f%%\n",
           flops / 1e9, flops / enc / 1e9, batch * Te, w->hp.enc_ff, w->hp.d_enc, gemm, 100.0 * flops / enc / 1e9 / gemm);
    printf("sgemm before/after the run %.1f / %.1f GFLOP/s; per CPU-second: encoder %.1f, sgemm %.1f GFLOP "
           "(encoder at %.0f%%; robust to other load); CPU s: encoder %.1f, decoder %.1f\n",
           gemm0, gemm1, flops / enc_cpu / 1e9, gemm_cpu, 100.0 * flops / enc_cpu / 1e9 / gemm_cpu, enc_cpu, dec_cpu);
    printf("decoder weights %.1f MB per step; read bandwidth %.2f GB/s (per CPU-second x threads %.2f): bound %.2f "
           "ms/token; decoder %.2fx the bound (its time includes the prompt step and the cross K/V)\n",
           ct_decoder_weight_bytes(w) / 1e6, bw, bw_cpu, dec_bound * 1e3, dec / tokens / dec_bound);
    printf("decoder %.1f ms/token; arenas %.1f MB; peak RSS %.2f GiB (after load %.2f GiB)\n", 1e3 * dec / tokens,
           arena / 1e6, peak_rss, rss_after_load);
    if (!strncmp(device, "cpu", 3) && ct_cpu_state_of(ct_asr_backend(asr))->dnnl) { /* what --dnnl-pack did */
        int packs = 0;
        size_t pbytes = 0;
        ct_dnnl_pack_stats(ct_cpu_state_of(ct_asr_backend(asr))->dnnl, &packs, &pbytes);
        printf("oneDNN packed weights: %d (%.1f MB)\n", packs, pbytes / 1e6);
    }
    printf("oneDNN peaks on the same shape after the run: u8s8 %.1f, bf16 %.1f, f32 %.1f GFLOP/s; encoder at %.0f%% "
           "of the %s peak\ndispatch: %s\n",
           peak_i8, peak_bf16, peak_f32, 100.0 * flops / enc / 1e9 / peak_own, is_q8 ? "int8" : is_bf16 ? "bf16" : "f32",
           disp);
    printf("per CPU-second: oneDNN u8s8 %.1f, bf16 %.1f, f32 %.1f GFLOP; encoder %.1f GFLOP per CPU-s, at %.0f%% of "
           "its peak per CPU-s\n",
           pc_i8, pc_bf16, pc_f32, flops / enc_cpu / 1e9, 100.0 * flops / enc_cpu / 1e9 / pc_own);
    printf("{\"device\":\"%s\",\"dtype\":\"%s\",\"batch\":%d,\"seconds\":%.1f,\"tokens\":%d,\"mel_s\":%.4f,\"encoder_s\":%.4f,"
           "\"decoder_s\":%.4f,\"rtfx\":%.3f,\"encoder_gflops\":%.2f,\"sgemm_gflops\":%.2f,\"encoder_cpu_s\":%.2f,"
           "\"decoder_cpu_s\":%.2f,\"encoder_gflop_per_cpu_s\":%.2f,\"sgemm_gflop_per_cpu_s\":%.2f,\"peak_rss_gib\":%.3f,"
           "\"read_gbs\":%.2f,\"read_gbs_per_cpu\":%.2f,\"decoder_bound_ms\":%.3f,\"dnnl_u8s8_gflops\":%.2f,"
           "\"dnnl_f32_gflops\":%.2f,\"dnnl_bf16_gflops\":%.2f,\"decoder_ms_per_token\":%.3f,"
           "\"dnnl_u8s8_gflop_per_cpu_s\":%.2f,\"dnnl_bf16_gflop_per_cpu_s\":%.2f,\"dnnl_f32_gflop_per_cpu_s\":%.2f}\n",
           device, dtype, batch, seconds, tokens, mel, enc, dec, audio / best_total, flops / enc / 1e9, gemm, enc_cpu, dec_cpu,
           flops / enc_cpu / 1e9, gemm_cpu, peak_rss, bw, bw_cpu, dec_bound * 1e3, peak_i8, peak_f32, peak_bf16,
           1e3 * dec / tokens, pc_i8, pc_bf16, pc_f32);
    for (int b = 0; b < batch; b++) free(clips[b]);
    free(clips), free(ns);
    ct_asr_free(asr);
    return 0;
}
