/* bench_accuracy — the engine's reduced-precision paths against its fp32
 * path on one checkpoint: a white-noise clip (as bench_engine), encoder
 * output and the first decoding step's logits as relative L2, and the
 * greedy tokens (identical up to where a row departs, with the fp32 logit
 * gap there: a departure at a small gap is a near tie, not an error).
 *
 *   bench_accuracy --model DIR [--dtype int8,bf16] [--seconds 30] [--tokens 8]
 *                  [--threads 0] [--isa-limit 0] [--dnnl-bf16 0]
 *                  [--q8-float default|none|KIND,...] [--q8-sweep 1]
 *
 * --q8-float: the int8 precision plan (asr/weights.h kinds kept in float);
 * --q8-sweep 1: after the dtypes, int8 with only one kind quantised at a
 * time (everything else in float), to see where the int8 error comes from.
 *
 * fp32 runs first and is freed before each other dtype loads, so peak
 * memory is the fp32 model's. One line per dtype, and one JSON line each.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/asr.h"
#include "asr/weights.h"
#include "compute/cpu/cpu_state.h"
#include "bench_cpu_wait.h"
#include "core/fs.h"

typedef struct run {
    float *enc, *logits; /* (frames, d), (tokens, V) copies */
    int32_t *tokens;
    int frames, n_tokens;
    double seconds;
    ct_q8_plan plan; /* int8: the plan in effect */
} run;

static double rel_l2(const float *a, const float *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static int run_dtype(const char *model, ct_dtype dt, const ct_asr_options *base, const float *clip, size_t n,
                     int tokens, run *out, int *d, int *V, char *dispatch, int cap) {
    ct_asr_options o = *base;
    o.weight_dtype = dt;
    ct_asr *asr;
    if (ct_asr_open(model, &o, &asr) != CT_OK) {
        fprintf(stderr, "bench_accuracy: %s\n", ct_last_error());
        return 1;
    }
    ct_cpu_dispatch_describe(ct_asr_backend(asr), dispatch, cap);
    ct_asr_request rq = ct_asr_default_request();
    rq.max_new_tokens = tokens;
    rq.ignore_eos = 1;
    rq.keep_encoder = 1, rq.keep_logits = 1;
    ct_asr_result res;
    const float *clips[1] = {clip};
    double t = ct_now();
    if (ct_asr_transcribe(asr, clips, &n, 1, &rq, &res) != CT_OK) {
        fprintf(stderr, "bench_accuracy: %s\n", ct_last_error());
        ct_asr_free(asr);
        return 1;
    }
    out->seconds = ct_now() - t;
    *d = ct_asr_model_weights(asr)->hp.d_enc;
    *V = ct_asr_model_weights(asr)->hp.vocab;
    out->plan = ct_asr_model_weights(asr)->q8;
    const ct_asr_clip *c = &res.clips[0];
    out->frames = c->encoder_frames, out->n_tokens = c->n_tokens;
    out->enc = malloc(sizeof(float) * (size_t)c->encoder_frames * *d);
    out->logits = malloc(sizeof(float) * (size_t)c->n_tokens * *V);
    out->tokens = malloc(sizeof(int32_t) * (size_t)c->n_tokens);
    memcpy(out->enc, c->encoder, sizeof(float) * (size_t)c->encoder_frames * *d);
    memcpy(out->logits, c->logits, sizeof(float) * (size_t)c->n_tokens * *V);
    memcpy(out->tokens, c->tokens, sizeof(int32_t) * (size_t)c->n_tokens);
    ct_asr_result_free(&res);
    ct_asr_free(asr);
    return 0;
}

/* "none" or a comma list of kind names → kind bits with CT_Q8_PLAN_SET;
 * "default": 0 (the loader's default plan); ~0u: a bad name. */
static unsigned parse_plan(const char *s) {
    if (!strcmp(s, "default")) return 0;
    unsigned plan = CT_Q8_PLAN_SET;
    if (!strcmp(s, "none")) return plan;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int b = 0;
        while (b < CT_Q8_KINDS && strcmp(ct_q8_kind_name(b), t)) b++;
        if (b == CT_Q8_KINDS) return ~0u;
        plan |= 1u << b;
    }
    return plan;
}

static void plan_text(unsigned plan, char *out, size_t cap) {
    out[0] = 0;
    for (int b = 0; b < CT_Q8_KINDS; b++)
        if (plan & (1u << b)) snprintf(out + strlen(out), cap - strlen(out), "%s%s", out[0] ? "," : "", ct_q8_kind_name(b));
    if (!out[0]) snprintf(out, cap, "none");
}

static int parse_dtype(const char *s, ct_dtype *dt) {
    if (!strcmp(s, "int8")) *dt = CT_DTYPE_Q8;
    else if (!strcmp(s, "q8_0")) *dt = CT_DTYPE_Q8_0;
    else if (!strcmp(s, "bf16")) *dt = CT_DTYPE_BF16;
    else if (!strcmp(s, "fp16")) *dt = CT_DTYPE_F16;
    else if (!strcmp(s, "fp32")) *dt = CT_DTYPE_F32;
    else return 0;
    return 1;
}

int main(int argc, char **argv) {
    const char *model = NULL, *dtypes = "int8,bf16";
    const char *cpu_wait = "passive";
    int tokens = 8, sweep = 0;
    double seconds = 30;
    ct_asr_options o = ct_asr_default_options();
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            fprintf(stderr, "bench_accuracy: %s needs a value\n", a);
            return 2;
        }
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--dtype")) dtypes = v;
        else if (!strcmp(a, "--seconds")) seconds = atof(v);
        else if (!strcmp(a, "--tokens")) tokens = atoi(v);
        else if (!strcmp(a, "--threads")) o.threads = atoi(v);
        else if (!strcmp(a, "--cpu-wait")) cpu_wait = v;
        else if (!strcmp(a, "--isa-limit")) o.isa_limit = atoi(v);
        else if (!strcmp(a, "--dnnl-bf16")) o.dnnl_bf16 = atoi(v);
        else if (!strcmp(a, "--q8-sweep")) sweep = atoi(v);
        else if (!strcmp(a, "--q8-part")) {
            if ((o.q8.part = parse_plan(v)) == ~0u) {
                fprintf(stderr, "bench_accuracy: --q8-part: '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--q8-layers")) {
            if (sscanf(v, "%d-%d", &o.q8.from, &o.q8.to) != 2) {
                fprintf(stderr, "bench_accuracy: --q8-layers: '%s' (FROM-TO)\n", v);
                return 2;
            }
        }
        else if (!strcmp(a, "--q8-float")) {
            if ((o.q8.all = parse_plan(v)) == ~0u) {
                fprintf(stderr, "bench_accuracy: --q8-float: '%s' (default, none or kinds: enc-ff1, ...)\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "bench_accuracy: unknown option %s\n", a);
            return 2;
        }
    }
    if (bench_cpu_wait("bench_accuracy", cpu_wait, argv)) return 2;
    if (!model || tokens <= 0 || seconds <= 0 || seconds > 35) {
        fprintf(stderr, "usage: bench_accuracy --model DIR [--dtype int8,bf16] [--seconds S<=35] [--tokens N] "
                        "[--threads N] [--cpu-wait passive|active] [--isa-limit L] [--dnnl-bf16 -1|0|1]\n");
        return 2;
    }
    size_t n = (size_t)(seconds * 16000.0);
    float *clip = malloc(sizeof(float) * n);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) { /* bench_engine's white noise */
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        clip[i] = (float)((double)(x >> 40) / (double)(1u << 24) - 0.5) * 0.2f;
    }
    run ref;
    int d, V;
    char disp[400];
    ct_asr_options of = o;
    of.isa_limit = 0, of.dnnl_bf16 = 0;
    if (run_dtype(model, CT_DTYPE_F32, &of, clip, n, tokens, &ref, &d, &V, disp, sizeof disp)) return 1;
    printf("fp32: %.2f s; dispatch %s\n", ref.seconds, disp);
    enum { MAXC = 64 };
    ct_dtype cdt[MAXC];
    ct_q8_plan cplan[MAXC];
    int nc = 0;
    char list[128];
    snprintf(list, sizeof list, "%s", dtypes);
    for (char *tok = strtok(list, ","); tok && nc < MAXC; tok = strtok(NULL, ",")) {
        if (!parse_dtype(tok, &cdt[nc])) {
            fprintf(stderr, "bench_accuracy: --dtype: '%s' (int8, bf16, fp16, fp32)\n", tok);
            return 2;
        }
        cplan[nc++] = o.q8;
    }
    for (int b = 0; sweep && b < CT_Q8_KINDS && nc < MAXC; b++) /* only kind b quantised */
        cdt[nc] = CT_DTYPE_Q8, cplan[nc++] = (ct_q8_plan){.all = CT_Q8_PLAN_SET | (((1u << CT_Q8_KINDS) - 1) & ~(1u << b))};
    for (int c = 0; c < nc; c++) {
        const ct_dtype dt = cdt[c];
        run r;
        o.q8 = cplan[c];
        if (run_dtype(model, dt, &o, clip, n, tokens, &r, &d, &V, disp, sizeof disp)) return 1;
        char tok[600];
        snprintf(tok, sizeof tok, "%s", ct_dtype_name(dt));
        if (dt == CT_DTYPE_Q8 || dt == CT_DTYPE_Q8_0) { /* the plan the loader used */
            char pt[240], pp[240];
            plan_text(r.plan.all & ~CT_Q8_PLAN_SET, pt, sizeof pt);
            plan_text(r.plan.part & ~CT_Q8_PLAN_SET, pp, sizeof pp);
            char to[16] = "end";
            if (r.plan.to < (1 << 20)) snprintf(to, sizeof to, "%d", r.plan.to);
            snprintf(tok, sizeof tok, "%s[float: %s; in encoder layers %d-%s: %s]", dt == CT_DTYPE_Q8 ? "int8" : "q8_0", pt,
                     r.plan.from, to, pp);
        }
        double enc = rel_l2(r.enc, ref.enc, (size_t)ref.frames * d);
        double lg0 = rel_l2(r.logits, ref.logits, (size_t)V);
        int same = 0;
        while (same < r.n_tokens && same < ref.n_tokens && r.tokens[same] == ref.tokens[same]) same++;
        double gap = 0;
        if (same < r.n_tokens && same < ref.n_tokens) {
            const float *l = ref.logits + (size_t)same * V;
            gap = l[ref.tokens[same]] - l[r.tokens[same]];
        }
        printf("%s vs fp32: encoder rel L2 %.3g, first-step logits rel L2 %.3g; tokens identical for %d of %d steps%s",
               tok, enc, lg0, same, ref.n_tokens, same < ref.n_tokens ? "" : "\n");
        if (same < ref.n_tokens) printf(", then departs at fp32 logit gap %.3f\n", gap);
        printf("    %.2f s; dispatch %s\n", r.seconds, disp);
        printf("{\"dtype\":\"%s\",\"seconds\":%.1f,\"encoder_rel_l2\":%.4g,\"logits0_rel_l2\":%.4g,\"same_tokens\":%d,"
               "\"tokens\":%d,\"departure_gap\":%.4f}\n",
               tok, seconds, enc, lg0, same, ref.n_tokens, gap);
        fflush(stdout);
        free(r.enc), free(r.logits), free(r.tokens);
    }
    free(ref.enc), free(ref.logits), free(ref.tokens);
    free(clip);
    return 0;
}
