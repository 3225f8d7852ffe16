/* bench_encoder — where the encoder's time goes: one encoder pass over B
 * rows of random log-mel features (T frames, default 3001 = a 30 s clip),
 * with wall and process-CPU timers around every backend op (a wrapped op
 * table, as bench_decoder does for a decoding step). The matrix products
 * are split by role (feed-forward in/out, d×d, linear_pos, pointwise-1,
 * subsampling) from their shapes.
 *
 *   bench_encoder --model DIR [--dtype fp32|bf16|fp16] [--batch B] [--frames T]
 *                 [--threads N] [--runs R]
 *
 * The first run warms up (primitives, page faults); the best of the other R
 * runs (by wall time) is reported. CPU time is the whole process's: with a
 * loaded machine it includes OpenMP threads spinning in barriers.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_dnnl_pack.h"
#include "asr/asr.h"
#include "asr/encoder.h"
#include "bench_cpu_wait.h"
#include "core/fs.h"
#include "bench_util.h"

enum { P_FF_IN, P_FF_OUT, P_DD, P_POS, P_PW1, P_SUBLIN, P_ATTN, P_LN, P_GLU, P_DW, P_SUBCONV, P_MASK, P_OTHER, P_N };
static const char *const pnames[P_N] = {"matmul FF in (d->ff, SiLU)", "matmul FF out (ff->d, +res)",
                                        "matmul d x d (q,k,v,o,pw2)", "matmul linear_pos",
                                        "matmul pointwise-1 (d->2d)", "matmul subsampling out",
                                        "attention (rel. pos.)",      "layer_norm",
                                        "glu",                        "depthwise conv1d (+SiLU)",
                                        "subsampling convs",          "mask_time",
                                        "other (pos table, flatten)"};
static double pwall[P_N], pcpu[P_N];
static long pcalls[P_N];
static int g_d, g_ff, g_T3;
static const ct_backend_ops *real;

#define TIMED(slot, call)                                   \
    do {                                                    \
        double t_ = ct_now(), c_ = ct_cpu_now();            \
        ct_status s_ = (call);                              \
        pwall[slot] += ct_now() - t_;                       \
        pcpu[slot] += ct_cpu_now() - c_;                    \
        pcalls[slot]++;                                     \
        return s_;                                          \
    } while (0)

static ct_status t_matmul(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                          const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    int slot = N == g_ff ? P_FF_IN
               : K == g_ff ? P_FF_OUT
               : N == 2 * g_d ? P_PW1
               : K != g_d ? P_SUBLIN
               : M == 2 * g_T3 - 1 ? P_POS
                                   : P_DD;
    TIMED(slot, real->matmul(be, y, x, w, b, residual, alpha, act, M, N, K, ws));
}
static ct_status t_ln(ct_backend *be, float *y, const float *x, const float *g, const float *b, int M, int D,
                      float eps) {
    TIMED(P_LN, real->layer_norm(be, y, x, g, b, M, D, eps));
}
static ct_status t_attn(ct_backend *be, float *out, const float *q, const float *k, const float *v, const float *p,
                        const float *u, const float *vb, const int *len, int B, int T, int H, int Dh, ct_arena *ws) {
    TIMED(P_ATTN, real->attn_relpos(be, out, q, k, v, p, u, vb, len, B, T, H, Dh, ws));
}
static ct_status t_glu(ct_backend *be, float *y, const float *x, int M, int D) {
    TIMED(P_GLU, real->glu(be, y, x, M, D));
}
static ct_status t_dw(ct_backend *be, float *y, const float *x, const float *w, const float *b, int B, int T, int C,
                      int K, ct_act act) {
    TIMED(P_DW, real->dwconv1d(be, y, x, w, b, B, T, C, K, act));
}
static ct_status t_c2(ct_backend *be, float *y, const float *x, const float *w, const float *b, int B, int C, int T,
                      int F, ct_act act) {
    TIMED(P_SUBCONV, real->conv2d_s2(be, y, x, w, b, B, C, T, F, act));
}
static ct_status t_dw2(ct_backend *be, float *y, const float *x, const float *w, const float *b, int B, int C, int T,
                       int F, ct_act act) {
    TIMED(P_SUBCONV, real->dwconv2d_s2(be, y, x, w, b, B, C, T, F, act));
}
static ct_status t_pw(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b, int B, int Ci,
                      int Co, int P, ct_act act, ct_arena *ws) {
    TIMED(P_SUBCONV, real->conv_pointwise(be, y, x, w, b, B, Ci, Co, P, act, ws));
}
static ct_status t_mask(ct_backend *be, float *x, const int *len, int B, int C, int T, int F) {
    TIMED(P_MASK, real->mask_time(be, x, len, B, C, T, F));
}
static ct_status t_flat(ct_backend *be, float *y, const float *x, int B, int C, int T, int F) {
    TIMED(P_OTHER, real->flatten_ct(be, y, x, B, C, T, F));
}
static ct_status t_pos(ct_backend *be, float *p, int T, int D) { TIMED(P_OTHER, real->pos_relative(be, p, T, D)); }

int main(int argc, char **argv) {
    const char *model = NULL, *dtype = "fp32";
    int batch = 1, frames = 3001, threads = 0, runs = 1, pack = 0;
    const char *cpu_wait = "passive";
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "bench_encoder: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--dtype")) dtype = v;
        else if (!strcmp(a, "--batch")) batch = atoi(v);
        else if (!strcmp(a, "--frames")) frames = atoi(v);
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--cpu-wait")) cpu_wait = v;
        else if (!strcmp(a, "--runs")) runs = atoi(v);
        else if (!strcmp(a, "--dnnl-pack")) pack = bench_dnnl_pack(v);
        else {
            fprintf(stderr, "bench_encoder: unknown option %s\n", a);
            return 2;
        }
    }
    if (bench_cpu_wait("bench_encoder", cpu_wait, argv)) return 2;
    if (!model || batch < 1 || frames < 8 || threads < 0 || runs < 1 || pack < -1 ||
        (strcmp(dtype, "fp32") && strcmp(dtype, "bf16") && strcmp(dtype, "fp16"))) {
        fprintf(stderr, "usage: bench_encoder --model DIR [--dtype fp32|bf16|fp16] [--batch B] [--frames T>=8] "
                        "[--threads N] [--runs R] [--cpu-wait passive|active] [--dnnl-pack off|auto|always]\n");
        return 2;
    }
    ct_asr_options o = ct_asr_default_options();
    o.threads = threads;
    o.dnnl_pack = pack;
    o.weight_dtype = bench_weight_dtype(dtype);
    ct_asr *asr;
    if (ct_asr_open(model, &o, &asr) != CT_OK) {
        fprintf(stderr, "bench_encoder: %s\n", ct_last_error());
        return 1;
    }
    ct_backend *be = ct_asr_backend(asr);
    const ct_asr_weights *w = ct_asr_model_weights(asr);
    if (!be) {
        fprintf(stderr, "bench_encoder: needs a per-op backend (cpu)\n");
        return 1;
    }
    const ct_asr_hparams *hp = &w->hp;
    const int nth = threads > 0 ? threads : omp_get_max_threads();
    g_d = hp->d_enc, g_ff = hp->enc_ff, g_T3 = ct_encoder_frames(frames);

    ct_arena act, ws;
    size_t feat_n = (size_t)batch * frames * hp->n_mels;
    if (ct_backend_arena_create(be, ct_encoder_act_bytes(hp, batch, frames) + sizeof(float) * feat_n + (1u << 20),
                                &act) != CT_OK ||
        ct_backend_arena_create(be, ct_encoder_ws_bytes(hp, batch, frames, nth), &ws) != CT_OK) {
        fprintf(stderr, "bench_encoder: %s\n", ct_last_error());
        return 1;
    }
    float *feats = ct_arena_alloc(&act, sizeof(float) * feat_n);
    int *len = malloc(sizeof(int) * batch), *enc_len = malloc(sizeof(int) * batch);
    if (!feats || !len || !enc_len) {
        fprintf(stderr, "bench_encoder: out of memory\n");
        return 1;
    }
    uint64_t s = 0x853c49e6748fea9bull;
    for (size_t i = 0; i < feat_n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        feats[i] = (float)((s >> 40) / (double)(1u << 24)) * 2.0f - 1.0f;
    }
    for (int b = 0; b < batch; b++) len[b] = frames;

    ct_backend_ops timed = *be->ops;
    real = be->ops;
    timed.matmul = t_matmul, timed.layer_norm = t_ln, timed.attn_relpos = t_attn, timed.glu = t_glu;
    timed.dwconv1d = t_dw, timed.conv2d_s2 = t_c2, timed.dwconv2d_s2 = t_dw2, timed.conv_pointwise = t_pw;
    timed.mask_time = t_mask, timed.flatten_ct = t_flat, timed.pos_relative = t_pos;
    ct_backend tb = *be;
    tb.ops = &timed;

    double best = 1e30, best_cpu = 0, bw[P_N], bc[P_N];
    long bn[P_N];
    const size_t mark = ct_arena_mark(&act);
    for (int r = 0; r <= runs; r++) {
        memset(pwall, 0, sizeof pwall), memset(pcpu, 0, sizeof pcpu), memset(pcalls, 0, sizeof pcalls);
        ct_arena_rewind(&act, mark);
        float *y;
        int Te;
        double t0 = ct_now(), c0 = ct_cpu_now();
        if (ct_encoder_forward(w, &tb, &act, &ws, feats, len, batch, frames, &y, enc_len, &Te) != CT_OK) {
            fprintf(stderr, "bench_encoder: %s\n", ct_last_error());
            return 1;
        }
        double t = ct_now() - t0, c = ct_cpu_now() - c0;
        if (r > 0 && t < best) {
            best = t, best_cpu = c;
            memcpy(bw, pwall, sizeof bw), memcpy(bc, pcpu, sizeof bc), memcpy(bn, pcalls, sizeof bn);
        }
    }
    printf("encoder, %s weights, batch %d x %d frames (%d after subsampling), %d threads: %.3f s wall, %.2f CPU s\n",
           dtype, batch, frames, g_T3, nth, best, best_cpu);
    printf("%-30s %6s %9s %7s %9s %7s\n", "op", "calls", "wall s", "wall %", "CPU s", "CPU %");
    double sw = 0, sc = 0;
    for (int i = 0; i < P_N; i++) {
        if (!bn[i]) continue;
        printf("%-30s %6ld %9.3f %6.1f%% %9.3f %6.1f%%\n", pnames[i], bn[i], bw[i], 100 * bw[i] / best, bc[i],
               100 * bc[i] / best_cpu);
        sw += bw[i], sc += bc[i];
    }
    printf("%-30s %6s %9.3f %6.1f%% %9.3f %6.1f%%\n", "outside the ops", "", best - sw, 100 * (best - sw) / best,
           best_cpu - sc, 100 * (best_cpu - sc) / best_cpu);
    free(len), free(enc_len);
    ct_backend_arena_free(be, &act);
    ct_backend_arena_free(be, &ws);
    ct_asr_free(asr);
    return 0;
}
