/* bench_decoder — time per decoded token on a checkpoint, against the
 * machine's memory bandwidth measured in the same run, with the time of every
 * backend op of a step (timers around each op through a wrapped op table).
 *
 *   bench_decoder --model DIR [--dtype fp32|bf16|fp16|int8|q8_0] [--batch B] [--frames T]
 *                 [--tokens N] [--threads N] [--bw-mb MB] [--profile 0|1] [--kv-bf16-check 0|1]
 *
 * The encoder is not run: B rows of random encoder output with T frames
 * (default 376, a 30 s clip) go through the decoder's preparation (projection
 * and cross K/V), a 10-token prompt step, then N − 1 single-token steps fed
 * with a fixed token (decoding cost does not depend on the ids). Reports the
 * mean and median wall and CPU time of the single-token steps, and the bound
 * (decoder weight bytes, plus the cross K/V a step reads, ÷ bandwidth).
 * --kv-bf16-check 1 also reruns the prompt step with the cross K/V rounded
 * to bf16 (still stored as float32) and prints the relative L2 change of its
 * logits: what keeping the cross K/V in bf16 would cost in accuracy.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/asr.h"
#include "asr/decoder.h"
#include "compute/cpu/cpu_membw.h"
#include "bench_cpu_wait.h"
#include "core/fs.h"
#include "bench_util.h"

/* ---- the op table with timers ------------------------------------------- */
enum { P_MATMUL_DD, P_MATMUL_FF, P_MATMUL_HEAD, P_LN, P_ATTN_SELF, P_ATTN_CROSS, P_KV, P_EMBED, P_ARGMAX, P_OTHER, P_N };
static const char *const pnames[P_N] = {"matmul d x d", "matmul FFN", "matmul head", "layer_norm", "attn self",
                                        "attn cross", "kv_write", "embed", "argmax", "copy"};
static double prof[P_N];
static long pcalls[P_N];
static int vocab_n;
static const ct_backend_ops *real;

#define TIMED(slot, call)                  \
    do {                                   \
        double t_ = ct_now();              \
        ct_status s_ = (call);             \
        prof[slot] += ct_now() - t_;       \
        pcalls[slot]++;                    \
        return s_;                         \
    } while (0)

static ct_status t_matmul(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                          const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    int slot = N == vocab_n ? P_MATMUL_HEAD : N == K ? P_MATMUL_DD : P_MATMUL_FF;
    TIMED(slot, real->matmul(be, y, x, w, b, residual, alpha, act, M, N, K, ws));
}
static ct_status t_ln(ct_backend *be, float *y, const float *x, const float *g, const float *b, int M, int D,
                      float eps) {
    TIMED(P_LN, real->layer_norm(be, y, x, g, b, M, D, eps));
}
static ct_status t_kv(ct_backend *be, float *cache, const float *src, const int *slot, int n, int S, int pos0,
                      int Smax, int D) {
    TIMED(P_KV, real->kv_write(be, cache, src, slot, n, S, pos0, Smax, D));
}
static ct_status t_causal(ct_backend *be, float *out, const float *q, const float *kc, const float *vc,
                          const int *slot, int n, int S, int pos0, int Smax, int H, int Dh, ct_arena *ws) {
    TIMED(P_ATTN_SELF, real->attn_causal(be, out, q, kc, vc, slot, n, S, pos0, Smax, H, Dh, ws));
}
static ct_status t_cross(ct_backend *be, float *out, const float *q, const float *ek, const float *ev,
                         const int *slot, const int *enc_len, int n, int S, int Tenc, int H, int Dh, ct_arena *ws) {
    TIMED(P_ATTN_CROSS, real->attn_cross(be, out, q, ek, ev, slot, enc_len, n, S, Tenc, H, Dh, ws));
}
static ct_status t_embed(ct_backend *be, float *y, const int32_t *ids, const int32_t *positions, int n,
                         const ct_tensor *tok, const ct_tensor *pos, int D) {
    TIMED(P_EMBED, real->embed(be, y, ids, positions, n, tok, pos, D));
}
static ct_status t_argmax(ct_backend *be, int32_t *ids, const float *x, int n, int N) {
    TIMED(P_ARGMAX, real->argmax(be, ids, x, n, N));
}
static ct_status t_copy(ct_backend *be, void *dst, const void *src, size_t bytes) {
    TIMED(P_OTHER, real->copy(be, dst, src, bytes));
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    const char *model = NULL, *dtype = "fp32";
    int batch = 1, frames = 376, tokens = 100, threads = 0, profile = 1, kv_check = 0;
    size_t bw_mb = 1024;
    const char *cpu_wait = "passive";
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "bench_decoder: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--dtype")) dtype = v;
        else if (!strcmp(a, "--batch")) batch = atoi(v);
        else if (!strcmp(a, "--frames")) frames = atoi(v);
        else if (!strcmp(a, "--tokens")) tokens = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--cpu-wait")) cpu_wait = v;
        else if (!strcmp(a, "--bw-mb")) bw_mb = (size_t)atol(v);
        else if (!strcmp(a, "--profile")) profile = atoi(v);
        else if (!strcmp(a, "--kv-bf16-check")) kv_check = atoi(v);
        else {
            fprintf(stderr, "bench_decoder: unknown option %s\n", a);
            return 2;
        }
    }
    if (bench_cpu_wait("bench_decoder", cpu_wait, argv)) return 2;
    const int P = 10; /* the prompt's length */
    if (!model || batch < 1 || frames < 1 || tokens < 2 || threads < 0 || bw_mb < 64 ||
        (strcmp(dtype, "fp32") && strcmp(dtype, "bf16") && strcmp(dtype, "fp16") && strcmp(dtype, "int8") &&
         strcmp(dtype, "q8_0"))) {
        fprintf(stderr, "usage: bench_decoder --model DIR [--dtype fp32|bf16|fp16|int8|q8_0] [--batch B] [--frames T] "
                        "[--tokens N>=2] [--threads N] [--bw-mb MB>=64] [--profile 0|1] [--kv-bf16-check 0|1]\n");
        return 2;
    }
    ct_asr_options o = ct_asr_default_options();
    o.threads = threads;
    o.weight_dtype = bench_weight_dtype(dtype);
    ct_asr *asr;
    if (ct_asr_open(model, &o, &asr) != CT_OK) {
        fprintf(stderr, "bench_decoder: %s\n", ct_last_error());
        return 1;
    }
    ct_backend *be = ct_asr_backend(asr);
    const ct_asr_weights *w = ct_asr_model_weights(asr);
    if (!be) {
        fprintf(stderr, "bench_decoder: needs a per-op backend (cpu)\n");
        return 1;
    }
    const ct_asr_hparams *hp = &w->hp;
    int nth = threads > 0 ? threads : omp_get_max_threads();
    if (P + tokens > hp->max_pos) tokens = hp->max_pos - P;

    /* bytes one single-token step reads from memory: the weights it
     * multiplies by, and every row's cross K/V (fp32) */
    size_t wbytes = ct_decoder_weight_bytes(w);
    size_t kvbytes = (size_t)2 * hp->dec_layers * batch * frames * hp->d_dec * sizeof(float);

    double bw1c, bwnc;
    double bw1 = ct_cpu_read_bandwidth(bw_mb << 20, 1, 3, ct_cpu_isa_best(), &bw1c);
    double bwn = nth > 1 ? ct_cpu_read_bandwidth(bw_mb << 20, nth, 3, ct_cpu_isa_best(), &bwnc) : (bwnc = bw1c, bw1);
    if (bw1 < 0 || bwn < 0) {
        fprintf(stderr, "bench_decoder: cannot allocate the bandwidth buffer\n");
        return 1;
    }

    int Smax = P + tokens;
    ct_arena act, ws;
    size_t act_bytes = ct_decoder_state_bytes(hp, batch, frames, Smax) + (size_t)batch * frames * hp->d_dec * 4 * 2 +
                       (size_t)batch * frames * hp->d_enc * 4 + (1u << 20);
    size_t ws_bytes = ct_decoder_step_bytes(hp, batch, P, frames, Smax, nth) + (size_t)batch * hp->vocab * 4 +
                      (size_t)nth * 64 * (hp->dec_ff > hp->d_enc ? hp->dec_ff : hp->d_enc) * 4 + (8u << 20);
    if (ct_backend_arena_create(be, act_bytes, &act) != CT_OK || ct_backend_arena_create(be, ws_bytes, &ws) != CT_OK) {
        fprintf(stderr, "bench_decoder: %s\n", ct_last_error());
        return 1;
    }
    float *enc = ct_arena_alloc(&act, sizeof(float) * (size_t)batch * frames * hp->d_enc);
    float *logits = ct_arena_alloc(&act, sizeof(float) * (size_t)batch * hp->vocab);
    int *enc_len = malloc(sizeof(int) * batch), *slot = malloc(sizeof(int) * batch);
    int32_t *ids = malloc(sizeof(int32_t) * batch * P), *next = malloc(sizeof(int32_t) * batch);
    double *step_t = malloc(sizeof(double) * tokens), *step_c = malloc(sizeof(double) * tokens);
    if (!enc || !logits || !enc_len || !slot || !ids || !next || !step_t || !step_c) {
        fprintf(stderr, "bench_decoder: out of memory\n");
        return 1;
    }
    uint64_t s = 0x853c49e6748fea9bull;
    for (size_t i = 0; i < (size_t)batch * frames * hp->d_enc; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        enc[i] = (float)((s >> 40) / (double)(1u << 24)) * 2.0f - 1.0f;
    }
    for (int b = 0; b < batch; b++) enc_len[b] = frames, slot[b] = b;
    for (int i = 0; i < batch * P; i++) ids[i] = 7 + i % 5;

    ct_backend_ops timed = *be->ops;
    real = be->ops;
    vocab_n = hp->vocab;
    if (profile) {
        timed.matmul = t_matmul, timed.layer_norm = t_ln, timed.kv_write = t_kv, timed.attn_causal = t_causal;
        timed.attn_cross = t_cross, timed.embed = t_embed, timed.argmax = t_argmax, timed.copy = t_copy;
    }
    ct_backend tb = *be;
    tb.ops = &timed;

    ct_decoder_state st;
    double t_prep = ct_now();
    if (ct_decoder_prepare(w, &tb, &act, &ws, enc, enc_len, batch, frames, Smax, &st) != CT_OK) {
        fprintf(stderr, "bench_decoder: %s\n", ct_last_error());
        return 1;
    }
    t_prep = ct_now() - t_prep;
    double t_prompt = 0;
    for (int t = 0; t < tokens; t++) {
        int S = t == 0 ? P : 1, pos0 = t == 0 ? 0 : P + t - 1;
        if (t == 1) memset(prof, 0, sizeof prof), memset(pcalls, 0, sizeof pcalls); /* steady steps only */
        double t0 = ct_now(), c0 = ct_cpu_now();
        ct_status rc = ct_decoder_step(w, &tb, &st, &ws, ids, slot, batch, S, pos0, logits);
        if (rc == CT_OK) rc = tb.ops->argmax(&tb, next, logits, batch, hp->vocab);
        if (rc != CT_OK) {
            fprintf(stderr, "bench_decoder: step %d: %s\n", t, ct_last_error());
            return 1;
        }
        step_t[t] = ct_now() - t0, step_c[t] = ct_cpu_now() - c0;
        if (t == 0) t_prompt = step_t[0];
        for (int b = 0; b < batch; b++) ids[b] = 7 + (t + b) % 5; /* fed back: one token per row */
    }
    double kv_err = -1.0;
    if (kv_check) { /* the prompt step again, exact cross K/V then rounded to bf16 */
        size_t nl = (size_t)batch * hp->vocab, nkv = (size_t)batch * frames * hp->d_dec;
        float *ref = malloc(sizeof(float) * nl);
        for (int i = 0; i < batch * P; i++) ids[i] = 7 + i % 5;
        if (!ref || ct_decoder_step(w, be, &st, &ws, ids, slot, batch, P, 0, logits) != CT_OK) {
            fprintf(stderr, "bench_decoder: kv check: %s\n", ct_last_error());
            return 1;
        }
        memcpy(ref, logits, sizeof(float) * nl);
        for (int l = 0; l < hp->dec_layers; l++) { /* CPU caches are float32 (st.act) */
            float *ck = st.ck[l], *cv = st.cv[l];
            for (size_t i = 0; i < nkv; i++) {
                ck[i] = ct_bf16_to_f32(ct_f32_to_bf16(ck[i]));
                cv[i] = ct_bf16_to_f32(ct_f32_to_bf16(cv[i]));
            }
        }
        if (ct_decoder_step(w, be, &st, &ws, ids, slot, batch, P, 0, logits) != CT_OK) {
            fprintf(stderr, "bench_decoder: kv check: %s\n", ct_last_error());
            return 1;
        }
        double num = 0, den = 0;
        for (size_t i = 0; i < nl; i++) {
            double d = (double)logits[i] - ref[i];
            num += d * d, den += (double)ref[i] * ref[i];
        }
        kv_err = den > 0 ? sqrt(num / den) : sqrt(num);
        free(ref);
    }
    int n1 = tokens - 1;
    double mean = 0, mean_c = 0;
    for (int t = 1; t < tokens; t++) mean += step_t[t], mean_c += step_c[t];
    mean /= n1, mean_c /= n1;
    qsort(step_t + 1, (size_t)n1, sizeof(double), cmp_double);
    qsort(step_c + 1, (size_t)n1, sizeof(double), cmp_double);
    /* the fastest tenth: steps that had the cores to themselves on a loaded machine */
    double med = step_t[1 + n1 / 2], med_c = step_c[1 + n1 / 2], p10 = step_t[1 + n1 / 10];
    double bound_w = wbytes / (bwn * 1e9), bound_all = (wbytes + kvbytes) / (bwn * 1e9);
    double cbound_w = wbytes / (bwnc * 1e9), cbound_all = (wbytes + kvbytes) / (bwnc * 1e9);

    printf("model %s, weights %s, threads %d, batch %d, %d encoder frames, isa %s\n", model, dtype, nth, batch, frames,
           ct_cpu_isa_name(ct_cpu_isa_best()));
    printf("read bandwidth (%zu MB), wall / per CPU-second x threads: 1 thread %.2f / %.2f GB/s, %d threads %.2f / %.2f "
           "GB/s\n", bw_mb, bw1, bw1c, nth, bwn, bwnc);
    printf("a step reads %.1f MB of weights + %.1f MB of cross K/V\n", wbytes / 1e6, kvbytes / 1e6);
    printf("prepare (projection + cross K/V) %.3f s; prompt step (%d tokens) %.1f ms\n", t_prep, P, t_prompt * 1e3);
    printf("single-token steps (%d): mean %.2f ms, median %.2f ms, 10th percentile %.2f ms; CPU mean %.2f ms, median "
           "%.2f ms (÷ threads %.2f)\n",
           n1, mean * 1e3, med * 1e3, p10 * 1e3, mean_c * 1e3, med_c * 1e3, med_c / nth * 1e3);
    printf("bound (wall bandwidth): weights %.2f ms, + cross K/V %.2f ms; median step at %.2fx / %.2fx\n",
           bound_w * 1e3, bound_all * 1e3, med / bound_w, med / bound_all);
    printf("bound (per-CPU bandwidth): weights %.2f ms, + cross K/V %.2f ms; median CPU/threads at %.2fx / %.2fx\n",
           cbound_w * 1e3, cbound_all * 1e3, med_c / nth / cbound_w, med_c / nth / cbound_all);
    printf("audio s per s of decoding (30 s clips, %d tokens): %.1f\n", tokens,
           batch * 30.0 / (t_prep + t_prompt + mean * n1));
    if (kv_check)
        printf("prompt-step logits with the cross K/V rounded to bf16: relative L2 change %.3g\n", kv_err);
    if (profile) {
        double tot = 0;
        for (int i = 0; i < P_N; i++) tot += prof[i];
        printf("per single-token step, by op (wall, timers around each call):\n");
        for (int i = 0; i < P_N; i++)
            if (pcalls[i])
                printf("  %-14s %8.3f ms  %5.1f %%  %6.1f calls\n", pnames[i], prof[i] / n1 * 1e3,
                       100.0 * prof[i] / (mean * n1), (double)pcalls[i] / n1);
        printf("  %-14s %8.3f ms  %5.1f %%\n", "outside ops", (mean * n1 - tot) / n1 * 1e3,
               100.0 * (mean * n1 - tot) / (mean * n1));
    }
    printf("{\"dtype\":\"%s\",\"threads\":%d,\"batch\":%d,\"frames\":%d,\"tokens\":%d,\"bw1_gbs\":%.2f,\"bw_gbs\":%.2f,"
           "\"bw_cpu_gbs\":%.2f,\"weight_mb\":%.1f,\"crosskv_mb\":%.1f,\"prepare_s\":%.4f,\"prompt_ms\":%.2f,"
           "\"step_mean_ms\":%.3f,\"step_median_ms\":%.3f,\"step_p10_ms\":%.3f,\"step_cpu_median_ms\":%.3f,\"bound_ms\":%.3f,"
           "\"bound_kv_ms\":%.3f,\"cpu_bound_kv_ms\":%.3f}\n",
           dtype, nth, batch, frames, tokens, bw1, bwn, bwnc, wbytes / 1e6, kvbytes / 1e6, t_prep, t_prompt * 1e3,
           mean * 1e3, med * 1e3, p10 * 1e3, med_c * 1e3, bound_w * 1e3, bound_all * 1e3, cbound_all * 1e3);
    ct_decoder_state_free(&st);
    ct_backend_arena_free(be, &ws);
    ct_backend_arena_free(be, &act);
    free(enc_len), free(slot), free(ids), free(next), free(step_t), free(step_c);
    ct_asr_free(asr);
    return 0;
}
