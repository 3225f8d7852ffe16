/* bench_cuda_asr.c — the CUDA engine on the device: parity against a
 * transformers dump (tools/device/tf_bench.py --dump), the throughput
 * benchmark (PCM in host memory → token ids), the encoder's achieved TFLOP/s
 * against a bf16 GEMM measured in the same process, mixed lengths through the
 * batch scheduler, and the OOM / fatal-error injection runs. One JSON line per
 * result on stdout. Without CUDA compiled in it says so and exits 0.
 *   bench_cuda_asr --model DIR [--parity FILE] [--bench B,SECS,NTOK] [--reps N]
 *                  [--mixed N] [--oom] [--no-graph] [--gemm]
 *   bench_cuda_asr --fixture tests/fixtures --dec-heads 4   (bf16 vs the fp32 reference)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CT_HAVE_CUDA
int main(void) {
    printf("{\"what\":\"skip\",\"why\":\"built without CUDA\"}\n");
    return 0;
}
#else
#include "asr/scheduler.h"
#include "compute/cuda/cuda_asr.h"
#include "core/fs.h"
#include "st_mini.h"

static const int32_t PROMPT[10] = {13764, 7, 4, 16, 62, 62, 5, 9, 11, 13};
enum { EOS = 3, PAD = 2 };

static ct_status get_weight(void *ctx, const char *name, ct_cuda_weight *w) {
    const stm *s = ctx;
    const stm_tensor *t = stm_find(s, name);
    if (!t) {
        char nm[256];
        snprintf(nm, sizeof nm, "model.%s", name);
        t = stm_find(s, nm);
    }
    if (!t) return CT_ERR_NOT_FOUND;
    w->dtype = t->dtype;
    w->ndim = t->ndim;
    memcpy(w->shape, t->shape, sizeof w->shape);
    w->data = t->data;
    return CT_OK;
}

static int die(const char *what) {
    printf("{\"what\":\"error\",\"at\":\"%s\",\"message\":\"%s\"}\n", what, ct_last_error());
    fflush(stdout);
    return 1;
}

static double rel_l2(const float *a, const float *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        if (!isfinite(a[i])) return INFINITY;
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

static unsigned long long g_rng = 88172645463325252ull;
static double urand(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (g_rng >> 11) * (1.0 / 9007199254740992.0);
}
static float grand(void) { /* Box–Muller */
    double u = urand(), v = urand();
    return (float)(sqrt(-2 * log(u + 1e-300)) * cos(2 * M_PI * v));
}

/* ---- parity against transformers ---------------------------------------- */
static int parity(ct_cuda_asr *m, const char *file) {
    stm P;
    if (stm_open(file, &P) != CT_OK) return die("parity file");
    const ct_cuda_asr_dims *d = ct_cuda_asr_get_dims(m);
    const stm_tensor *feat = stm_find(&P, "features"), *fl = stm_find(&P, "feature_lengths"),
                     *enc = stm_find(&P, "encoder_out"), *lg = stm_find(&P, "logits_last_prompt"),
                     *gt = stm_find(&P, "greedy_tokens");
    if (!feat || !fl || !enc || !lg || !gt) {
        ct_fail(CT_ERR_FORMAT, "parity file lacks a tensor");
        return die("parity file");
    }
    int B = (int)feat->shape[0], Tm = (int)feat->shape[1], Te = (int)enc->shape[1], D = d->d_enc, V = d->vocab;
    int ng = (int)gt->shape[1];
    for (int pass = 0; pass < 2; pass++) { /* 0: transformers' features, 1: PCM through the GPU mel */
        ct_cuda_asr_request rq = {0};
        ct_cuda_asr_result res = {0};
        const float *pcm[16];
        size_t ns[16];
        rq.batch = B;
        if (pass == 0) {
            rq.features = feat->data;
            rq.feature_lengths = fl->data;
            rq.T_feat = Tm;
        } else {
            for (int b = 0; b < B; b++) {
                char nm[32];
                snprintf(nm, sizeof nm, "pcm_%d", b);
                const stm_tensor *t = stm_find(&P, nm);
                if (!t) return die("parity pcm");
                pcm[b] = t->data;
                ns[b] = (size_t)t->shape[0];
            }
            rq.pcm = pcm;
            rq.n_samples = ns;
        }
        rq.prompt = PROMPT;
        rq.prompt_len = 10;
        rq.max_new = 20;
        rq.eos = EOS;
        rq.pad = PAD;
        rq.use_graph = 1;
        float *eo = calloc((size_t)B * Te * D, 4), *fo = calloc((size_t)B * V, 4), *fe = calloc((size_t)B * Tm * 128, 4);
        int32_t *tok = calloc((size_t)B * 30, 4);
        res.encoder_out = eo;
        res.T_enc_cap = Te;
        res.first_logits = fo;
        res.tokens = tok;
        res.features_out = fe;
        res.T_feat_cap = Tm;
        if (ct_cuda_asr_run(m, &rq, &res) != CT_OK) return die("parity run");
        /* encoder over valid frames only */
        double num = 0, den = 0;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < res.enc_lengths[b] && t < Te; t++)
                for (int k = 0; k < D; k++) {
                    size_t i = ((size_t)b * Te + t) * D + k;
                    double x = eo[i], y = ((const float *)enc->data)[i];
                    num += (x - y) * (x - y);
                    den += y * y;
                }
        double e_enc = sqrt(num / den);
        double e_log = rel_l2(fo, lg->data, (size_t)B * V);
        double e_feat = 0;
        if (pass == 1) {
            num = den = 0;
            for (int b = 0; b < B; b++)
                for (int t = 0; t < ((const int *)fl->data)[b]; t++)
                    for (int k = 0; k < 128; k++) {
                        size_t i = ((size_t)b * Tm + t) * 128 + k;
                        double x = fe[i], y = ((const float *)feat->data)[i];
                        num += (x - y) * (x - y);
                        den += y * y;
                    }
            e_feat = sqrt(num / den);
        }
        /* greedy tokens: the reference row holds its prompt then up to 20 new tokens */
        int same = 0, total = 0, first_diff = -1;
        for (int b = 0; b < B; b++) {
            const int32_t *r = (const int32_t *)gt->data + (size_t)b * ng;
            int off = 10; /* generated part follows the 10-token prompt */
            for (int i = 0; i < 20 && off + i < ng; i++) {
                int want = r[off + i], got = tok[b * 30 + 10 + i];
                total++;
                if (want == got) same++;
                else if (first_diff < 0) first_diff = b * 100 + i;
                if (want == EOS) break;
            }
        }
        printf("{\"what\":\"parity\",\"input\":\"%s\",\"batch\":%d,\"enc_rel_l2\":%.3e,\"first_logits_rel_l2\":%.3e,"
               "\"features_rel_l2\":%.3e,\"greedy_same\":%d,\"greedy_total\":%d,\"first_diff\":%d,"
               "\"ref_cols\":%d,\"ref_tokens_row0\":[%d,%d,%d,%d,%d],\"our_tokens_row0\":[%d,%d,%d,%d,%d]}\n",
               pass ? "pcm_gpu_mel" : "tf_features", B, e_enc, e_log, e_feat, same, total, first_diff, ng,
               ((const int32_t *)gt->data)[10], ((const int32_t *)gt->data)[11], ((const int32_t *)gt->data)[12],
               ((const int32_t *)gt->data)[13], ((const int32_t *)gt->data)[14], tok[10], tok[11], tok[12], tok[13],
               tok[14]);
        fflush(stdout);
        free(eo); free(fo); free(fe); free(tok);
    }
    stm_close(&P);
    return 0;
}

/* ---- parity against the committed fixtures (fp32 transformers on the CPU) --
 * tests/fixtures/tiny-hf weights (f32, converted to bf16 here), the batch of
 * six clips' dither-free features, and the reference encoder outputs and
 * greedy tokens from tests/fixtures/reference.safetensors. */
static const stm_tensor *need(const stm *s, const char *name) {
    const stm_tensor *t = stm_find(s, name);
    if (!t) ct_fail(CT_ERR_FORMAT, "fixture: no tensor %s", name);
    return t;
}

static int fixture(ct_cuda *c, const char *dir, int dec_heads) {
    char path[4096];
    stm W, R;
    snprintf(path, sizeof path, "%s/tiny-hf", dir);
    if (stm_open(path, &W) != CT_OK) return die("fixture model");
    snprintf(path, sizeof path, "%s/reference.safetensors", dir);
    if (stm_open(path, &R) != CT_OK) return die("fixture reference");
    ct_cuda_asr *m;
    if (ct_cuda_asr_create_heads(c, get_weight, &W, dec_heads, &m) != CT_OK) return die("fixture load");
    const ct_cuda_asr_dims *d = ct_cuda_asr_get_dims(m);
    const stm_tensor *fv = need(&R, "batch.feature_frames_valid"), *fs = need(&R, "batch.features_shape"),
                     *ev = need(&R, "batch.encoder_frames_valid"), *pr = need(&R, "prompt");
    if (!fv || !fs || !ev || !pr) return die("fixture reference");
    int B = (int)fv->shape[0], Tm = (int)((const int64_t *)fs->data)[1], M = d->n_mels, D = d->d_enc;
    if (B != 6) { /* the JSON below reports six rows: the committed fixture batch */
        ct_fail(CT_ERR_FORMAT, "fixture: %d clips in the reference, expected 6", B);
        return die("fixture reference");
    }
    int Emax = 0, L[16], E[16];
    for (int b = 0; b < B && b < 16; b++) {
        L[b] = (int)((const int64_t *)fv->data)[b];
        E[b] = (int)((const int64_t *)ev->data)[b];
        if (E[b] > Emax) Emax = E[b];
    }
    float *feat = calloc((size_t)B * Tm * M, 4);
    for (int b = 0; b < B; b++) {
        char nm[64];
        snprintf(nm, sizeof nm, "features.nodither.%d", b);
        const stm_tensor *t = need(&R, nm);
        if (!t) return die("fixture features");
        memcpy(feat + (size_t)b * Tm * M, t->data, (size_t)L[b] * M * 4);
    }
    int max_new = 40, P = (int)pr->shape[0];
    ct_cuda_asr_request rq = {0};
    ct_cuda_asr_result res = {0};
    rq.batch = B;
    rq.features = feat;
    rq.feature_lengths = L;
    rq.T_feat = Tm;
    rq.prompt = pr->data;
    rq.prompt_len = P;
    rq.max_new = max_new;
    rq.eos = EOS;
    rq.pad = PAD;
    rq.use_graph = 1;
    float *eo = calloc((size_t)B * Emax * D, 4);
    int32_t *tok = calloc((size_t)B * (P + max_new), 4);
    int ng[16];
    res.encoder_out = eo;
    res.T_enc_cap = Emax;
    res.tokens = tok;
    res.n_generated = ng;
    if (ct_cuda_asr_run(m, &rq, &res) != CT_OK) return die("fixture run");
    double num = 0, den = 0, worst = 0;
    int rows_same = 0, len_ok = 1;
    /* where a row departs from the reference: the step, and how far our token's
     * fp32 reference logit lies below the reference's choice there (a near tie
     * within bf16 error, or a real difference) */
    int first_diff[16];
    double tie_gap[16];
    for (int b = 0; b < B; b++) {
        char nm[64];
        snprintf(nm, sizeof nm, "encoder.%d", b);
        const stm_tensor *t = need(&R, nm);
        if (!t) return die("fixture encoder");
        if (res.enc_lengths[b] != E[b]) len_ok = 0;
        double n1 = 0, d1 = 0;
        for (int i = 0; i < E[b] * D; i++) {
            double x = eo[(size_t)b * Emax * D + i], y = ((const float *)t->data)[i];
            n1 += (x - y) * (x - y);
            d1 += y * y;
        }
        num += n1, den += d1;
        if (sqrt(n1 / d1) > worst) worst = sqrt(n1 / d1);
        snprintf(nm, sizeof nm, "tokens.%d", b);
        const stm_tensor *tt = need(&R, nm);
        if (!tt) return die("fixture tokens");
        int n = (int)tt->shape[0], k = 0;
        const int32_t *ours = tok + (size_t)b * (P + max_new) + P, *ref = (const int32_t *)tt->data;
        while (k < n && k < ng[b] && ours[k] == ref[k]) k++;
        int same = k == n && ng[b] == n;
        first_diff[b] = same ? -1 : k;
        tie_gap[b] = 0;
        snprintf(nm, sizeof nm, "logits.%d", b);
        const stm_tensor *lg = need(&R, nm);
        if (!lg) return die("fixture logits");
        if (!same && k < n && k < ng[b] && ours[k] >= 0 && ours[k] < d->vocab) {
            const float *row = (const float *)lg->data + (size_t)k * d->vocab;
            tie_gap[b] = row[ref[k]] - row[ours[k]];
        }
        rows_same += same;
    }
    printf("{\"what\":\"fixture_parity\",\"rows\":%d,\"enc_rel_l2\":%.3e,\"enc_rel_l2_worst_clip\":%.3e,"
           "\"enc_lengths_match\":%d,\"greedy_rows_identical\":%d,\"generated\":[%d,%d,%d,%d,%d,%d],"
           "\"first_diff\":[%d,%d,%d,%d,%d,%d],\"ref_logit_gap_at_diff\":[%.4f,%.4f,%.4f,%.4f,%.4f,%.4f]}\n",
           B, sqrt(num / den), worst, len_ok, rows_same, ng[0], ng[1], ng[2], ng[3], ng[4], ng[5], first_diff[0],
           first_diff[1], first_diff[2], first_diff[3], first_diff[4], first_diff[5], tie_gap[0], tie_gap[1], tie_gap[2],
           tie_gap[3], tie_gap[4], tie_gap[5]);
    fflush(stdout);
    /* Teacher-forced along the reference's tokens: every step's argmax given the
     * reference prefix, so one near tie cannot derail the rest of a row. A step
     * may disagree only where the fp32 reference itself nearly ties: the gap
     * logit[ref] − logit[ours] below TIE (≈ 4× the bf16 engine's error on a
     * logit difference, measured ≈ 0.06 here at logit std ≈ 8). */
    const double TIE = 0.25;
    int32_t *forced = malloc((size_t)B * max_new * 4);
    if (!forced) return die("fixture forced tokens");
    for (int b = 0; b < B; b++) {
        snprintf(path, sizeof path, "tokens.%d", b);
        const stm_tensor *tt = need(&R, path);
        int n = (int)tt->shape[0];
        for (int i = 0; i < max_new; i++) forced[(size_t)b * max_new + i] = i < n ? ((const int32_t *)tt->data)[i] : EOS;
    }
    rq.forced = forced;
    res.encoder_out = NULL;
    memset(tok, 0, (size_t)B * (P + max_new) * 4);
    if (ct_cuda_asr_run(m, &rq, &res) != CT_OK) return die("fixture forced run");
    int steps = 0, agree = 0, near = 0, far = 0;
    double worst_gap = 0, min_margin = 1e30;
    for (int b = 0; b < B; b++) {
        snprintf(path, sizeof path, "tokens.%d", b);
        const stm_tensor *tt = need(&R, path);
        snprintf(path, sizeof path, "logits.%d", b);
        const stm_tensor *lg = need(&R, path);
        int n = (int)tt->shape[0] < max_new ? (int)tt->shape[0] : max_new;
        for (int k = 0; k < n; k++) {
            const float *row = (const float *)lg->data + (size_t)k * d->vocab;
            int rt = ((const int32_t *)tt->data)[k], ot = tok[(size_t)b * (P + max_new) + P + k];
            double top2 = -1e30;
            for (int v = 0; v < d->vocab; v++)
                if (v != rt && row[v] > top2) top2 = row[v];
            if (row[rt] - top2 < min_margin) min_margin = row[rt] - top2;
            steps++;
            if (ot == rt) { agree++; continue; }
            double gap = (ot >= 0 && ot < d->vocab) ? row[rt] - row[ot] : 1e30;
            if (gap > worst_gap) worst_gap = gap;
            if (gap < TIE) near++;
            else far++;
        }
    }
    printf("{\"what\":\"fixture_forced\",\"steps\":%d,\"agree\":%d,\"near_tie_flips\":%d,\"real_differences\":%d,"
           "\"worst_gap_at_flip\":%.4f,\"tie_bound\":%.2f,\"min_ref_margin\":%.4f,\"pass\":%s}\n",
           steps, agree, near, far, worst_gap, TIE, min_margin, far == 0 ? "true" : "false");
    fflush(stdout);
    free(forced);
    free(feat); free(eo); free(tok);
    ct_cuda_asr_free(m);
    stm_close(&W);
    stm_close(&R);
    return far == 0 ? 0 : 1;
}

/* Encoder FLOPs for a batch (padded shapes, what the GPU computes). */
static double encoder_flops(const ct_cuda_asr_dims *d, int B, int Tm) {
    int T1 = (Tm - 1) / 2 + 1, T2 = (T1 - 1) / 2 + 1, T = (T2 - 1) / 2 + 1;
    double C = d->sub_channels, D = d->d_enc, FF = d->enc_ff, H = d->enc_heads, Dh = D / H, R = (double)B * T;
    double f = 2.0 * B * T1 * 64 * C * 9 + 2.0 * B * T2 * 32 * C * 9 + 2.0 * B * T2 * 32 * C * C +
               2.0 * B * T * 16 * C * 9 + 2.0 * R * 16 * C * C + 2.0 * R * 16 * C * D;
    double layer = 2.0 * R * (4 * D * FF + 3 * D * D + D * D + 2 * D * D + D * D) + 2.0 * (2 * T - 1) * D * D +
                   2.0 * B * H * T * (double)T * Dh * 2 + 2.0 * B * H * T * (2.0 * T - 1) * Dh;
    return f + d->enc_layers * layer;
}

static double gemm_rate(ct_cuda *c) {
    int n = 8192;
    uint16_t *A, *W, *D;
    float *h = malloc((size_t)n * n * 4);
    for (size_t i = 0; i < (size_t)n * n; i++) h[i] = grand();
    if (ct_cuda_malloc(c, (void **)&A, (size_t)n * n * 2) || ct_cuda_malloc(c, (void **)&W, (size_t)n * n * 2) ||
        ct_cuda_malloc(c, (void **)&D, (size_t)n * n * 2))
        return 0;
    ct_cuda_upload_bf16(c, A, h, (size_t)n * n);
    ct_cuda_upload_bf16(c, W, h, (size_t)n * n);
    free(h);
    ct_cuda_gemm_args g = {n, n, n, A, n, W, n, NULL, D, n, 0, 1.f, 0.f, CT_CUDA_ACT_NONE, 0, 0};
    for (int i = 0; i < 3; i++) ct_cuda_gemm(c, &g);
    ct_cuda_sync(c);
    double t[10];
    for (int r = 0; r < 10; r++) {
        double t0 = ct_now();
        ct_cuda_gemm(c, &g);
        ct_cuda_sync(c);
        t[r] = ct_now() - t0;
    }
    for (int i = 0; i < 10; i++)
        for (int j = i + 1; j < 10; j++)
            if (t[j] < t[i]) { double x = t[i]; t[i] = t[j]; t[j] = x; }
    ct_cuda_dfree(c, A); ct_cuda_dfree(c, W); ct_cuda_dfree(c, D);
    double tf = 2.0 * n * n * (double)n / t[5] / 1e12;
    printf("{\"what\":\"ceiling_gemm_bf16_cublaslt\",\"n\":%d,\"median_s\":%.6f,\"tflops\":%.1f}\n", n, t[5], tf);
    return tf;
}

static float **make_pcm(int B, const double *secs) {
    float **p = malloc(B * sizeof(float *));
    for (int b = 0; b < B; b++) {
        size_t n = (size_t)llround(secs[b] * 16000);
        p[b] = malloc(n * 4);
        for (size_t i = 0; i < n; i++) p[b][i] = 0.1f * grand();
    }
    return p;
}

static int bench(ct_cuda_asr *m, int B, double secs, int ntok, int reps, int graph, double peak) {
    double *sec = malloc(B * sizeof(double));
    size_t *ns = malloc(B * sizeof(size_t));
    for (int b = 0; b < B; b++) sec[b] = secs, ns[b] = (size_t)llround(secs * 16000);
    float **pcm = make_pcm(B, sec);
    int32_t *tok = malloc((size_t)B * (10 + ntok) * 4);
    int *ng = malloc(B * sizeof(int));
    double tt[16], te[16], tm[16], td[16];
    ct_cuda_asr_result res;
    for (int r = 0; r <= reps && r < 16; r++) {
        ct_cuda_asr_request rq = {0};
        memset(&res, 0, sizeof res);
        rq.batch = B;
        rq.pcm = (const float *const *)pcm;
        rq.n_samples = ns;
        rq.prompt = PROMPT;
        rq.prompt_len = 10;
        rq.max_new = ntok;
        rq.min_new = ntok;
        rq.eos = EOS;
        rq.pad = PAD;
        rq.use_graph = graph;
        res.tokens = tok;
        res.n_generated = ng;
        double t0 = ct_now();
        if (ct_cuda_asr_run(m, &rq, &res) != CT_OK) return die("bench run");
        tt[r] = ct_now() - t0;
        te[r] = res.encoder_s, tm[r] = res.mel_s, td[r] = res.decoder_s;
    }
    for (int b = 0; b < B; b++)
        if (ng[b] != ntok) {
            ct_fail(CT_ERR_INTERNAL, "row %d generated %d tokens, not %d", b, ng[b], ntok);
            return die("bench tokens");
        }
    /* medians over reps 1..reps (rep 0 warms up) */
    double *arrs[4] = {tt, te, tm, td}, med[4];
    for (int a = 0; a < 4; a++) {
        double v[16];
        int k = 0;
        for (int r = 1; r <= reps; r++) v[k++] = arrs[a][r];
        for (int i = 0; i < k; i++)
            for (int j = i + 1; j < k; j++)
                if (v[j] < v[i]) { double x = v[i]; v[i] = v[j]; v[j] = x; }
        med[a] = v[k / 2];
    }
    double fl = encoder_flops(ct_cuda_asr_get_dims(m), B, (int)(1 + ns[0] / 160));
    printf("{\"what\":\"cuda_bench\",\"batch\":%d,\"secs\":%.1f,\"new_tokens\":%d,\"graph\":%d,\"total_s\":%.4f,"
           "\"mel_s\":%.4f,\"encoder_s\":%.4f,\"decoder_s\":%.4f,\"rtfx_total\":%.1f,\"encoder_tflop\":%.2f,"
           "\"encoder_tflops\":%.1f,\"encoder_frac_of_gemm\":%.3f,\"steps\":%d,\"workspace_gib\":%.2f}\n",
           B, secs, ntok, graph, med[0], med[2], med[1], med[3], B * secs / med[0], fl / 1e12, fl / med[1] / 1e12,
           peak > 0 ? fl / med[1] / 1e12 / peak : 0, res.steps, res.workspace_bytes / 1073741824.0);
    if (res.n_prof) {
        printf("{\"what\":\"encoder_profile\",\"batch\":%d", B);
        for (int k = 0; k < res.n_prof; k++) printf(",\"%s_ms\":%.2f", res.prof_name[k], res.prof_ms[k]);
        printf("}\n");
    }
    fflush(stdout);
    for (int b = 0; b < B; b++) free(pcm[b]);
    free(pcm); free(sec); free(ns); free(tok); free(ng);
    return 0;
}

/* ---- scheduler runs: mixed lengths, uniform, OOM and fatal injection ---- */
typedef struct {
    ct_cuda_asr *m;
    ct_cuda *c;
    float **pcm;
    size_t *ns;
    int *ntok;
    int fatal_at; /* inject CT_ERR_DEVICE at this call (0: never) */
    int calls;
    long tokens;
} mixctx;

static ct_status mix_exec(void *vp, const int *idx, int n) {
    mixctx *x = vp;
    if (++x->calls == x->fatal_at) return ct_fail(CT_ERR_DEVICE, "CUDA: injected fatal device error at call %d", x->calls);
    const float **pcm = malloc(n * sizeof(float *));
    size_t *ns = malloc(n * sizeof(size_t));
    int *rn = malloc(n * sizeof(int)), *ng = malloc(n * sizeof(int)), mx = 0;
    for (int i = 0; i < n; i++) {
        pcm[i] = x->pcm[idx[i]], ns[i] = x->ns[idx[i]], rn[i] = x->ntok[idx[i]];
        if (rn[i] > mx) mx = rn[i];
    }
    ct_cuda_asr_request rq = {0};
    ct_cuda_asr_result res = {0};
    rq.batch = n;
    rq.pcm = pcm;
    rq.n_samples = ns;
    rq.prompt = PROMPT;
    rq.prompt_len = 10;
    rq.max_new = mx;
    rq.row_new = rn;
    rq.eos = EOS;
    rq.pad = PAD;
    rq.use_graph = 1;
    res.n_generated = ng;
    ct_status s = ct_cuda_asr_run(x->m, &rq, &res);
    for (int i = 0; i < n && s == CT_OK; i++) {
        if (ng[i] != rn[i]) s = ct_fail(CT_ERR_INTERNAL, "row generated %d of %d forced tokens", ng[i], rn[i]);
        x->tokens += ng[i];
    }
    free(pcm); free(ns); free(rn); free(ng);
    return s;
}

static int sched_run(ct_cuda_asr *m, ct_cuda *c, const char *name, int n, const double *sec, int max_rows,
                     double budget, size_t fail_above, int fatal_at) {
    mixctx x = {m, c, NULL, malloc(n * sizeof(size_t)), malloc(n * sizeof(int)), fatal_at, 0, 0};
    x.pcm = make_pcm(n, sec);
    double audio = 0;
    for (int i = 0; i < n; i++) {
        x.ns[i] = (size_t)llround(sec[i] * 16000);
        x.ntok[i] = (int)lround(3.3 * sec[i]);
        audio += sec[i];
    }
    ct_sched_opts o;
    ct_sched_default_options(&o);
    o.max_rows = max_rows;
    o.max_rows_limit = max_rows;
    o.max_audio_s = budget;
    ct_breaker br;
    ct_breaker_init(&br);
    ct_status *st = malloc(n * sizeof(ct_status));
    ct_sched_stats ss;
    ct_cuda_set_fail_alloc_above(c, fail_above);
    double t0 = ct_now();
    ct_status s = ct_sched_run(sec, n, &o, mix_exec, &x, &br, st, &ss);
    double wall = ct_now() - t0;
    ct_cuda_set_fail_alloc_above(c, 0);
    int ok = 0;
    for (int i = 0; i < n; i++) ok += st[i] == CT_OK;
    char msg[300];
    snprintf(msg, sizeof msg, "%s", s == CT_OK ? "" : ct_last_error());
    for (char *p = msg; *p; p++)
        if (*p == '"' || *p == '\\') *p = '\'';
    printf("{\"what\":\"sched\",\"run\":\"%s\",\"items\":%d,\"completed\":%d,\"status\":\"%s\",\"audio_s\":%.1f,"
           "\"wall_s\":%.3f,\"rtfx\":%.1f,\"tokens\":%ld,\"batches\":%d,\"calls\":%d,\"oom_retries\":%d,"
           "\"min_batch\":%d,\"max_batch\":%d,\"final_cap\":%d,\"breaker_open\":%d,\"message\":\"%s\"}\n",
           name, n, ok, ct_status_str(s), audio, wall, audio / wall, x.tokens, ss.batches, ss.calls, ss.oom_retries,
           ss.min_batch, ss.max_batch, ss.final_cap, br.open, msg);
    fflush(stdout);
    for (int i = 0; i < n; i++) free(x.pcm[i]);
    free(x.pcm); free(x.ns); free(x.ntok); free(st);
    return 0;
}

int main(int argc, char **argv) {
    const char *model = NULL, *par = NULL, *bspec = NULL, *fix = NULL;
    int reps = 3, graph = 1, mixed = 0, oom = 0, gemm = 0, dec_heads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) model = argv[++i];
        else if (!strcmp(argv[i], "--parity") && i + 1 < argc) par = argv[++i];
        else if (!strcmp(argv[i], "--bench") && i + 1 < argc) bspec = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--mixed") && i + 1 < argc) mixed = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--oom")) oom = 1;
        else if (!strcmp(argv[i], "--gemm")) gemm = 1;
        else if (!strcmp(argv[i], "--no-graph")) graph = 0;
        else if (!strcmp(argv[i], "--fixture") && i + 1 < argc) fix = argv[++i];
        else if (!strcmp(argv[i], "--dec-heads") && i + 1 < argc) dec_heads = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s --model DIR [--parity F] [--bench B,S,N] [--reps N] [--mixed N] [--oom] "
                            "[--gemm] [--no-graph] [--fixture tests/fixtures --dec-heads N]\n", argv[0]);
            return 2;
        }
    }
    ct_cuda *c;
    if (ct_cuda_create(&c) != CT_OK) return die("cuda");
    char name[128];
    size_t total, freeb;
    ct_cuda_info(c, name, sizeof name, &total, &freeb);
    printf("{\"what\":\"device\",\"name\":\"%s\",\"total_gib\":%.1f}\n", name, total / 1073741824.0);
    double peak = gemm ? gemm_rate(c) : 0;
    if (fix && fixture(c, fix, dec_heads)) return 1;
    if (!model) return 0;
    stm W;
    double t0 = ct_now();
    if (stm_open(model, &W) != CT_OK) return die("model");
    ct_cuda_asr *m;
    if (ct_cuda_asr_create(c, get_weight, &W, &m) != CT_OK) {
        for (int i = 0; i < W.n && i < 8; i++) printf("{\"what\":\"tensor\",\"name\":\"%s\"}\n", W.t[i].name);
        return die("load");
    }
    const ct_cuda_asr_dims *d = ct_cuda_asr_get_dims(m);
    printf("{\"what\":\"loaded\",\"seconds\":%.1f,\"weight_gib\":%.2f,\"enc_layers\":%d,\"d_enc\":%d,\"dec_layers\":%d,"
           "\"d_dec\":%d,\"vocab\":%d}\n", ct_now() - t0, ct_cuda_asr_weight_bytes(m) / 1073741824.0, d->enc_layers,
           d->d_enc, d->dec_layers, d->d_dec, d->vocab);
    fflush(stdout);
    if (par && parity(m, par)) return 1;
    if (bspec) {
        int B, N;
        double S;
        if (sscanf(bspec, "%d,%lf,%d", &B, &S, &N) != 3) return 2;
        if (bench(m, B, S, N, reps, graph, peak)) return 1;
    }
    if (mixed > 0) {
        double *sec = malloc(mixed * sizeof(double));
        g_rng = 20261130;
        for (int i = 0; i < mixed; i++) sec[i] = 2.0 + 33.0 * urand();
        sched_run(m, c, "mixed_2_35s", mixed, sec, 128, 128 * 35.0, 0, 0);
        int nu = 256;
        double *u = malloc(nu * sizeof(double));
        for (int i = 0; i < nu; i++) u[i] = 30.0;
        sched_run(m, c, "uniform_30s", nu, u, 128, 128 * 35.0, 0, 0);
        free(sec); free(u);
    }
    if (oom) {
        int n = 96;
        double *sec = malloc(n * sizeof(double));
        g_rng = 7;
        for (int i = 0; i < n; i++) sec[i] = 5.0 + 25.0 * urand();
        /* a cap below one 64-row batch of ~30 s: about 6 GiB of workspace */
        sched_run(m, c, "oom_injected_6GiB", n, sec, 64, 0, (size_t)6 << 30, 0);
        sched_run(m, c, "fatal_injected_call3", n, sec, 16, 0, 0, 3);
        free(sec);
    }
    ct_cuda_asr_free(m);
    stm_close(&W);
    ct_cuda_free(c);
    return 0;
}
#endif
