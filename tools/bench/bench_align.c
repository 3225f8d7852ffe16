/* bench_align.c — CPU throughput of the wav2vec2 aligner's emissions
 * (ct_w2v2_emissions: 34 s windows, counting the 30 s each keeps). Writes a
 * random checkpoint of the MMS-300M architecture on request (315 M params,
 * 1.3 GB f32), then times emissions of seeded noise. One JSON line per run.
 *   bench_align --make-random DIR            (config.json + model.safetensors)
 *   bench_align --model DIR [--seconds 120] [--batch 4] [--threads 2] [--backend cpu] [--reps 1]
 *               [--profile-ops] [--save E.f32] [--dtype fp32|bf16] [--clips S1,S2,... --save-pcm P.f32]
 *               [--gemm-tune]
 * --gemm-tune (cuda): cuBLASLt's candidates timed per large new GEMM shape
 * (ct_backend_options.gemm_tune) instead of the heuristic's first choice.
 * --dtype bf16 loads the matrices as bf16 (what --align-dtype bf16 does);
 * --backend cuda needs it (bf16 activations and weights there).
 * --clips: one emission matrix per clip of S1, S2, ... seconds (the noise
 * continues from clip to clip), saved one after the other with --save, their
 * samples with --save-pcm: the parity input of tools/device/tf_align.py.
 * --profile-ops times every backend call of the forward pass, wall and process
 * CPU seconds (the table is
 * wrapped, so the numbers are the ops' own wall time, not counting the
 * emission assembly) and prints one JSON line per op and shape, plus their
 * sum. --save writes the emissions of the last rep as raw float32 (frames x
 * classes), for a parity check against bench_align_transformers.py --save.
 * cpu_s is the process's CPU seconds over the emissions (all threads): on a
 * loaded machine, compare those.
 * Numbers go to docs/PERFORMANCE.md only when measured on a quiet machine,
 * beside Wav2Vec2ForCTC fp32 on the same cores in the same session. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "bench_dnnl_pack.h"
#include "align/wav2vec2.h"
#include "model/safetensors.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float randn(void) {
    double u1, u2;
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    u1 = ((rng >> 11) + 0.5) / 9007199254740992.0;
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    u2 = ((rng >> 11) + 0.5) / 9007199254740992.0;
    return (float)(sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
}

typedef struct spec {
    char name[128];
    int ndim;
    int64_t shape[3];
    int kind; /* 0 weight (normal, variance 1/fan_in), 1 ones (norm gain), 2 zeros (bias) */
} spec;

static int add(spec *s, int n, const char *name, int ndim, int64_t a, int64_t b, int64_t c, int kind) {
    snprintf(s[n].name, sizeof s[n].name, "%s", name);
    s[n].ndim = ndim;
    s[n].shape[0] = a, s[n].shape[1] = b, s[n].shape[2] = c;
    s[n].kind = kind;
    return n + 1;
}

static int make_random(const char *dir) {
    const int conv = 512, H = 1024, L = 24, F = 4096, V = 31, PK = 128, PG = 16;
    const int ker[7] = {10, 3, 3, 3, 3, 2, 2};
    mkdir(dir, 0755);
    char path[4096];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return 1;
    fprintf(f, "{\"model_type\": \"wav2vec2\", \"conv_dim\": [512,512,512,512,512,512,512], "
               "\"conv_kernel\": [10,3,3,3,3,2,2], \"conv_stride\": [5,2,2,2,2,2,2], \"conv_bias\": true, "
               "\"feat_extract_norm\": \"layer\", \"do_stable_layer_norm\": true, \"hidden_act\": \"gelu\", "
               "\"feat_extract_activation\": \"gelu\", \"hidden_size\": %d, \"num_hidden_layers\": %d, "
               "\"num_attention_heads\": 16, \"intermediate_size\": %d, \"vocab_size\": %d, "
               "\"num_conv_pos_embeddings\": %d, \"num_conv_pos_embedding_groups\": %d, \"layer_norm_eps\": 1e-05, "
               "\"adapter_attn_dim\": null, \"add_adapter\": false}\n",
            H, L, F, V, PK, PG);
    fclose(f);
    spec *s = calloc(1024, sizeof *s);
    int n = 0;
    char nm[128];
    for (int i = 0, cin = 1; i < 7; i++, cin = conv) {
        snprintf(nm, sizeof nm, "wav2vec2.feature_extractor.conv_layers.%d.conv.weight", i);
        n = add(s, n, nm, 3, conv, cin, ker[i], 0);
        snprintf(nm, sizeof nm, "wav2vec2.feature_extractor.conv_layers.%d.conv.bias", i);
        n = add(s, n, nm, 1, conv, 0, 0, 2);
        snprintf(nm, sizeof nm, "wav2vec2.feature_extractor.conv_layers.%d.layer_norm.weight", i);
        n = add(s, n, nm, 1, conv, 0, 0, 1);
        snprintf(nm, sizeof nm, "wav2vec2.feature_extractor.conv_layers.%d.layer_norm.bias", i);
        n = add(s, n, nm, 1, conv, 0, 0, 2);
    }
    n = add(s, n, "wav2vec2.feature_projection.layer_norm.weight", 1, conv, 0, 0, 1);
    n = add(s, n, "wav2vec2.feature_projection.layer_norm.bias", 1, conv, 0, 0, 2);
    n = add(s, n, "wav2vec2.feature_projection.projection.weight", 2, H, conv, 0, 0);
    n = add(s, n, "wav2vec2.feature_projection.projection.bias", 1, H, 0, 0, 2);
    n = add(s, n, "wav2vec2.encoder.pos_conv_embed.conv.weight_g", 3, 1, 1, PK, 1);
    n = add(s, n, "wav2vec2.encoder.pos_conv_embed.conv.weight_v", 3, H, H / PG, PK, 0);
    n = add(s, n, "wav2vec2.encoder.pos_conv_embed.conv.bias", 1, H, 0, 0, 2);
    const char *mats[6] = {"attention.q_proj", "attention.k_proj", "attention.v_proj", "attention.out_proj",
                           "feed_forward.intermediate_dense", "feed_forward.output_dense"};
    for (int l = 0; l < L; l++) {
        for (int k = 0; k < 6; k++) {
            int64_t r = k == 4 ? F : H, c = k == 5 ? F : H;
            snprintf(nm, sizeof nm, "wav2vec2.encoder.layers.%d.%s.weight", l, mats[k]);
            n = add(s, n, nm, 2, r, c, 0, 0);
            snprintf(nm, sizeof nm, "wav2vec2.encoder.layers.%d.%s.bias", l, mats[k]);
            n = add(s, n, nm, 1, r, 0, 0, 2);
        }
        const char *lns[2] = {"layer_norm", "final_layer_norm"};
        for (int k = 0; k < 2; k++) {
            snprintf(nm, sizeof nm, "wav2vec2.encoder.layers.%d.%s.weight", l, lns[k]);
            n = add(s, n, nm, 1, H, 0, 0, 1);
            snprintf(nm, sizeof nm, "wav2vec2.encoder.layers.%d.%s.bias", l, lns[k]);
            n = add(s, n, nm, 1, H, 0, 0, 2);
        }
    }
    n = add(s, n, "wav2vec2.encoder.layer_norm.weight", 1, H, 0, 0, 1);
    n = add(s, n, "wav2vec2.encoder.layer_norm.bias", 1, H, 0, 0, 2);
    n = add(s, n, "lm_head.weight", 2, V, H, 0, 0);
    n = add(s, n, "lm_head.bias", 1, V, 0, 0, 2);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    ct_st_writer *w;
    if (ct_st_writer_create(path, &w) != CT_OK) return 1;
    for (int i = 0; i < n; i++)
        if (ct_st_writer_add(w, s[i].name, CT_DTYPE_F32, s[i].ndim, s[i].shape) != CT_OK) return 1;
    for (int i = 0; i < n; i++) {
        size_t cnt = 1, fan = 1;
        for (int d = 0; d < s[i].ndim; d++) cnt *= (size_t)s[i].shape[d];
        for (int d = 1; d < s[i].ndim; d++) fan *= (size_t)s[i].shape[d];
        float *buf = malloc(cnt * sizeof *buf);
        float sd = (float)sqrt(1.0 / (double)fan);
        for (size_t k = 0; k < cnt; k++) buf[k] = s[i].kind == 0 ? sd * randn() : s[i].kind == 1 ? 1.0f : 0.0f;
        ct_status st = ct_st_writer_write(w, buf);
        free(buf);
        if (st != CT_OK) return 1;
    }
    if (ct_st_writer_finish(w) != CT_OK) return 1;
    ct_st_writer_free(w);
    free(s);
    printf("{\"what\":\"random-aligner\",\"dir\":\"%s\",\"tensors\":%d}\n", dir, n);
    return 0;
}

/* ---- --profile-ops: the backend table wrapped with timers ----------------- */

typedef struct prof_row {
    char key[96];
    double seconds, cpu, flop;
    long calls;
} prof_row;

static prof_row prof[64];
static int n_prof;
static const ct_backend_ops *base_ops;
static ct_backend_ops prof_ops;

static double prof_c0; /* process CPU clock at the op's start (ops run one at a time) */

static void prof_add(const char *key, double dt, double flop) {
    const double dc = cpu_now() - prof_c0;
    int i = 0;
    while (i < n_prof && strcmp(prof[i].key, key)) i++;
    if (i == n_prof) {
        if (n_prof == (int)(sizeof prof / sizeof prof[0])) return;
        memset(&prof[n_prof], 0, sizeof prof[0]); /* a row of an earlier rep's table is reused */
        snprintf(prof[n_prof++].key, sizeof prof[0].key, "%s", key);
    }
    prof[i].seconds += dt, prof[i].cpu += dc, prof[i].flop += flop, prof[i].calls++;
}

static ct_status p_matmul(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                          const float *residual, float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    double t0 = now();
    prof_c0 = cpu_now();
    ct_status s = base_ops->matmul(be, y, x, w, b, residual, alpha, act, M, N, K, ws);
    char key[96];
    snprintf(key, sizeof key, "matmul N=%d K=%d", N, K);
    prof_add(key, now() - t0, 2.0 * M * N * K);
    return s;
}

static ct_status p_layer_norm(ct_backend *be, float *y, const float *x, const float *g, const float *b, int M, int D,
                              float eps) {
    double t0 = now();
    prof_c0 = cpu_now();
    ct_status s = base_ops->layer_norm(be, y, x, g, b, M, D, eps);
    char key[96];
    snprintf(key, sizeof key, "layer_norm D=%d", D);
    prof_add(key, now() - t0, 0);
    return s;
}

static ct_status p_conv1d(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *bias, int B,
                          int T, int Ci, int Co, int K, int stride, ct_arena *ws) {
    double t0 = now();
    prof_c0 = cpu_now();
    ct_status s = base_ops->conv1d(be, y, x, w, bias, B, T, Ci, Co, K, stride, ws);
    char key[96];
    snprintf(key, sizeof key, "conv1d Ci=%d K=%d T=%d", Ci, K, T);
    prof_add(key, now() - t0, 2.0 * B * ((T - K) / stride + 1) * (double)Co * Ci * K);
    return s;
}

static ct_status p_conv1d_grouped(ct_backend *be, float *y, const float *x, const float *w, const float *bias, int B,
                                  int T, int C, int G, int K) {
    double t0 = now();
    prof_c0 = cpu_now();
    ct_status s = base_ops->conv1d_grouped(be, y, x, w, bias, B, T, C, G, K);
    char key[96];
    snprintf(key, sizeof key, "conv1d_grouped C=%d G=%d K=%d", C, G, K);
    prof_add(key, now() - t0, 2.0 * B * T * (double)C * (C / G) * K);
    return s;
}

static ct_status p_gelu(ct_backend *be, float *x, size_t n) {
    double t0 = now();
    prof_c0 = cpu_now();
    ct_status s = base_ops->gelu(be, x, n);
    prof_add("gelu", now() - t0, 0);
    return s;
}

static ct_status p_add(ct_backend *be, float *y, const float *a, const float *b, size_t n) {
    double t0 = now();
    prof_c0 = cpu_now();
    ct_status s = base_ops->add(be, y, a, b, n);
    prof_add("add", now() - t0, 0);
    return s;
}

static ct_status p_attn_full(ct_backend *be, float *out, const float *q, const float *k, const float *v, int B, int T,
                             int H, int Dh, ct_dtype prod, ct_arena *ws) {
    double t0 = now();
    prof_c0 = cpu_now();
    ct_status s = base_ops->attn_full(be, out, q, k, v, B, T, H, Dh, prod, ws);
    char key[96];
    snprintf(key, sizeof key, "attn_full T=%d H=%d Dh=%d", T, H, Dh);
    prof_add(key, now() - t0, 4.0 * B * H * (double)T * T * Dh);
    return s;
}

/* The typed entries (a device backend: CUDA), each timed between two
 * synchronisations, so the numbers are the op's device time plus one
 * launch gap (the ops otherwise queue without waiting). */
#define SYNC_T0()                                                                                                      \
    base_ops->synchronize(be);                                                                                         \
    double t0 = now();                                                                                                 \
    prof_c0 = cpu_now()
#define SYNC_DT() (base_ops->synchronize(be), now() - t0)

static ct_status pt_matmul(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *b, ct_buf residual,
                           float alpha, ct_act act, int M, int N, int K, ct_arena *ws) {
    SYNC_T0();
    ct_status s = base_ops->matmul_t(be, y, x, w, b, residual, alpha, act, M, N, K, ws);
    char key[96];
    snprintf(key, sizeof key, "matmul N=%d K=%d", N, K);
    prof_add(key, SYNC_DT(), 2.0 * M * N * K);
    return s;
}
static ct_status pt_layer_norm(ct_backend *be, ct_buf y, ct_buf x, const float *g, const float *b, int M, int D,
                               float eps) {
    SYNC_T0();
    ct_status s = base_ops->layer_norm_t(be, y, x, g, b, M, D, eps);
    char key[96];
    snprintf(key, sizeof key, "layer_norm D=%d %s->%s", D, ct_dtype_name(x.dtype), ct_dtype_name(y.dtype));
    prof_add(key, SYNC_DT(), 0);
    return s;
}
static ct_status pt_convert(ct_backend *be, ct_buf y, ct_buf x, size_t n) {
    SYNC_T0();
    ct_status s = base_ops->convert(be, y, x, n);
    prof_add("convert", SYNC_DT(), 0);
    return s;
}
static ct_status pt_conv1d(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *bias, int B, int T,
                           int Ci, int Co, int K, int stride, ct_arena *ws) {
    SYNC_T0();
    ct_status s = base_ops->conv1d_t(be, y, x, w, bias, B, T, Ci, Co, K, stride, ws);
    char key[96];
    snprintf(key, sizeof key, "conv1d Ci=%d K=%d T=%d", Ci, K, T);
    prof_add(key, SYNC_DT(), 2.0 * B * ((T - K) / stride + 1) * (double)Co * Ci * K);
    return s;
}
static ct_status pt_conv1d_grouped(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *bias, int B, int T,
                                   int C, int G, int K, ct_arena *ws) {
    SYNC_T0();
    ct_status s = base_ops->conv1d_grouped_t(be, y, x, w, bias, B, T, C, G, K, ws);
    char key[96];
    snprintf(key, sizeof key, "conv1d_grouped C=%d G=%d K=%d", C, G, K);
    prof_add(key, SYNC_DT(), 2.0 * B * T * (double)C * (C / G) * K);
    return s;
}
static ct_status pt_gelu(ct_backend *be, ct_buf x, size_t n) {
    SYNC_T0();
    ct_status s = base_ops->gelu_t(be, x, n);
    prof_add("gelu", SYNC_DT(), 0);
    return s;
}
static ct_status pt_add(ct_backend *be, ct_buf y, ct_buf a, ct_buf b, size_t n) {
    SYNC_T0();
    ct_status s = base_ops->add_t(be, y, a, b, n);
    prof_add("add", SYNC_DT(), 0);
    return s;
}
static ct_status pt_attn_full(ct_backend *be, ct_buf out, ct_buf q, ct_buf k, ct_buf v, const int *len, int B, int T,
                              int H, int Dh, ct_dtype prod, ct_arena *ws) {
    SYNC_T0();
    ct_status s = base_ops->attn_full_t(be, out, q, k, v, len, B, T, H, Dh, prod, ws);
    char key[96];
    snprintf(key, sizeof key, "attn_full T=%d H=%d Dh=%d", T, H, Dh);
    prof_add(key, SYNC_DT(), 4.0 * B * H * (double)T * T * Dh);
    return s;
}

static void prof_install(ct_backend *be) {
    base_ops = be->ops;
    prof_ops = *be->ops;
    prof_ops.matmul = p_matmul, prof_ops.layer_norm = p_layer_norm, prof_ops.conv1d = p_conv1d;
    prof_ops.conv1d_grouped = p_conv1d_grouped, prof_ops.gelu = p_gelu, prof_ops.add = p_add;
    prof_ops.attn_full = p_attn_full;
    if (be->ops->version >= 5 && be->ops->attn_full_t) {
        prof_ops.matmul_t = pt_matmul, prof_ops.layer_norm_t = pt_layer_norm, prof_ops.convert = pt_convert;
        prof_ops.conv1d_t = pt_conv1d, prof_ops.conv1d_grouped_t = pt_conv1d_grouped, prof_ops.gelu_t = pt_gelu;
        prof_ops.add_t = pt_add, prof_ops.attn_full_t = pt_attn_full;
    }
    be->ops = &prof_ops;
}

static void prof_print(double wall) {
    double sum = 0, csum = 0;
    for (int i = 0; i < n_prof; i++) sum += prof[i].seconds, csum += prof[i].cpu;
    for (int i = 0; i < n_prof; i++)
        printf("{\"what\":\"op\",\"op\":\"%s\",\"calls\":%ld,\"seconds\":%.3f,\"cpu_s\":%.3f,\"share\":%.3f,"
               "\"cpu_share\":%.3f,\"gflop_s\":%.1f,\"gflop_cpu_s\":%.1f}\n",
               prof[i].key, prof[i].calls, prof[i].seconds, prof[i].cpu, sum > 0 ? prof[i].seconds / sum : 0,
               csum > 0 ? prof[i].cpu / csum : 0, prof[i].seconds > 0 ? prof[i].flop / prof[i].seconds * 1e-9 : 0,
               prof[i].cpu > 0 ? prof[i].flop / prof[i].cpu * 1e-9 : 0);
    printf("{\"what\":\"ops_total\",\"seconds\":%.3f,\"cpu_s\":%.3f,\"wall_s\":%.3f}\n", sum, csum, wall);
}

/* --clips: each clip's emissions in turn, appended to save (and its samples to save_pcm) */
static int run_clips(ct_w2v2 *m, ct_backend *be, const char *list, int batch, const char *save, const char *save_pcm) {
    FILE *fe = save ? fopen(save, "wb") : NULL, *fp = save_pcm ? fopen(save_pcm, "wb") : NULL;
    if ((save && !fe) || (save_pcm && !fp)) {
        fprintf(stderr, "bench_align: cannot write %s\n", save && !fe ? save : save_pcm);
        return 1;
    }
    int rc = 0;
    for (const char *c = list; *c && !rc;) {
        double sec = atof(c);
        size_t n = (size_t)(sec * CT_ALIGN_SR);
        float *pcm = malloc((n ? n : 1) * sizeof *pcm), *em = NULL;
        for (size_t i = 0; i < n; i++) pcm[i] = 0.1f * randn();
        int frames = 0, classes = 0;
        double stride, t0 = now();
        if (ct_w2v2_emissions(m, pcm, n, batch, &em, &frames, &classes, &stride) != CT_OK) {
            fprintf(stderr, "bench_align: %s\n", ct_last_error());
            rc = 1;
        } else {
            printf("{\"what\":\"clip\",\"backend\":\"%s\",\"seconds\":%.2f,\"frames\":%d,\"classes\":%d,"
                   "\"wall_s\":%.3f}\n",
                   be->ops->name, sec, frames, classes, now() - t0);
            if (fe && fwrite(em, sizeof *em, (size_t)frames * classes, fe) != (size_t)frames * classes) rc = 1;
            if (fp && fwrite(pcm, sizeof *pcm, n, fp) != n) rc = 1;
        }
        free(em);
        free(pcm);
        while (*c && *c != ',') c++;
        if (*c == ',') c++;
    }
    if (fe) fclose(fe);
    if (fp) fclose(fp);
    ct_w2v2_free(m);
    ct_backend_free(be);
    return rc;
}

int main(int argc, char **argv) {
    const char *model = NULL, *backend = "cpu";
    double seconds = 120;
    int batch = 4, threads = 2, reps = 1, profile = 0, gemm_tune = 0, pack = 0;
    const char *save = NULL, *dtype = "fp32", *clips = NULL, *save_pcm = NULL, *batches = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--make-random") && i + 1 < argc) return make_random(argv[++i]);
        else if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--backend") && i + 1 < argc) backend = argv[++i];
        else if (!strcmp(argv[i], "--profile-ops")) profile = 1;
        else if (!strcmp(argv[i], "--gemm-tune")) gemm_tune = 1;
        else if (!strcmp(argv[i], "--save") && i + 1 < argc) save = argv[++i];
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) dtype = argv[++i];
        else if (!strcmp(argv[i], "--clips") && i + 1 < argc) clips = argv[++i];
        else if (!strcmp(argv[i], "--save-pcm") && i + 1 < argc) save_pcm = argv[++i];
        else if (!strcmp(argv[i], "--batches") && i + 1 < argc) batches = argv[++i];
        else if (!strcmp(argv[i], "--dnnl-pack") && i + 1 < argc && bench_dnnl_pack(argv[i + 1]) >= -1)
            pack = bench_dnnl_pack(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_align --make-random DIR | --model DIR [--seconds S] [--batch B] "
                            "[--threads N] [--backend cpu|cpu-ref] [--reps R] [--profile-ops] [--save E.f32] "
                            "[--dtype fp32|bf16] [--gemm-tune] [--dnnl-pack off|auto|always]\n");
            return 2;
        }
    }
    if (strcmp(dtype, "fp32") && strcmp(dtype, "bf16")) {
        fprintf(stderr, "bench_align: --dtype must be fp32 or bf16\n");
        return 2;
    }
    if (!model) {
        fprintf(stderr, "bench_align: --model DIR is required\n");
        return 2;
    }
    ct_backend_options bo = ct_backend_default_options();
    bo.threads = threads;
    bo.gemm_tune = gemm_tune;
    bo.dnnl_pack = pack;
    ct_w2v2_options wo = ct_w2v2_default_options();
    wo.weight_dtype = strcmp(dtype, "bf16") ? CT_DTYPE_F32 : CT_DTYPE_BF16;
    ct_backend *be;
    ct_w2v2 *m;
    if (ct_backend_create(backend, &bo, &be) != CT_OK || ct_w2v2_open(model, be, &wo, &m) != CT_OK) {
        fprintf(stderr, "bench_align: %s\n", ct_last_error());
        return 1;
    }
    if (profile) prof_install(be);
    if (clips) return run_clips(m, be, clips, batch, save, save_pcm);
    /* --batches B1,B2,...: B windows (B·30 s) at batch B each, in this one process */
    for (const char *bl = batches ? batches : "";;) {
        if (batches) {
            batch = atoi(bl);
            seconds = 30.0 * batch;
        }
        size_t n = (size_t)(seconds * CT_ALIGN_SR);
        float *pcm = malloc(n * sizeof *pcm);
        for (size_t i = 0; i < n; i++) pcm[i] = 0.1f * randn();
        size_t windows = (n + CT_ALIGN_WINDOW - 1) / CT_ALIGN_WINDOW;
        for (int r = 0; r < reps; r++) {
            float *em;
            int frames, classes;
            double stride, t0 = now(), c0 = cpu_now();
            if (ct_w2v2_emissions(m, pcm, n, batch, &em, &frames, &classes, &stride) != CT_OK) {
                fprintf(stderr, "bench_align: %s\n", ct_last_error());
                return 1;
            }
            double dt = now() - t0, cpu = cpu_now() - c0;
            if (save && r == reps - 1) {
                FILE *f = fopen(save, "wb");
                if (!f || fwrite(em, sizeof *em, (size_t)frames * classes, f) != (size_t)frames * classes) {
                    fprintf(stderr, "bench_align: cannot write %s\n", save);
                    return 1;
                }
                fclose(f);
            }
            free(em);
            printf("{\"what\":\"emissions\",\"backend\":\"%s\",\"dtype\":\"%s\",\"threads\":%d,\"batch\":%d,\"audio_s\":%.1f,"
                   "\"windows\":%zu,\"wall_s\":%.3f,\"cpu_s\":%.3f,\"x_realtime\":%.2f,\"x_realtime_kept_30s\":%.2f}\n",
                   backend, dtype, threads, batch, seconds, windows, dt, cpu, seconds / dt, windows * 30.0 / dt);
            if (profile) {
                prof_print(dt);
                n_prof = 0;
            }
        }
        free(pcm);
        while (*bl && *bl != ',') bl++;
        if (!batches || !*bl) break;
        bl++;
    }
    ct_w2v2_free(m);
    ct_backend_free(be);
    return 0;
}
