/* test_asr_cuda_ops.c — the model code of src/asr (encoder.c, decoder.c,
 * generate.c) on the "cuda" backend table, through the batch entry point
 * (device "cuda", bf16 weights and activations, and f16), against the
 * fp32 transformers reference of the fixture batch: encoder and first-step
 * logits within a relative L2 of 2e-2 per clip, greedy tokens identical up
 * to a departure at a near tie (ct_test_near_tie's rule),
 * keep_logits, keep_features and keep_encoder as on the CPU; teacher-forced
 * tokens along the reference's path equal to its own except at near ties
 * (host and device loops). Skipped without
 * a CUDA build or device (CT_REQUIRE_GPU=1 makes that a failure).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/asr.h"
#include "model/safetensors.h"
#include "fixture_io.h"
#include "testutil.h"

#define NCLIPS 6
static const char *clip_names[NCLIPS] = {"c0_tones_1s", "c1_en_us_3s", "c2_de_noise_6s",
                                         "c3_fr_ar_10s", "c4_en_gb_30s", "c5_es_en_34s"};

static float *ref_f32(const ct_safetensors *ref, const char *fmt, int i, const ct_st_tensor **t) {
    char nm[64];
    snprintf(nm, sizeof nm, fmt, i);
    *t = ct_st_find(ref, nm);
    assert_non_null(*t);
    float *x = malloc(sizeof(float) * (size_t)(*t)->numel);
    CT_ASSERT_OK(ct_st_tensor_to_f32(*t, x, (size_t)(*t)->numel));
    return x;
}

/* What run_batch and run_forced share: the tiny model on cuda in one
 * activation type, the fixture clips and the fp32 reference. */
typedef struct fixture {
    ct_asr *asr;
    float *clips[NCLIPS];
    size_t n[NCLIPS];
    ct_safetensors *ref;
} fixture;

static void fixture_open(fixture *f, ct_dtype act, ct_attn_variant variant) {
    ct_asr_options o = ct_asr_default_options();
    o.device = "cuda";
    o.weight_dtype = act;
    o.act_dtype = act;
    o.attn_variant = variant;
    CT_ASSERT_OK(ct_asr_open(CT_FIXTURE("tiny-hf"), &o, &f->asr));
    char rel[128];
    for (int i = 0; i < NCLIPS; i++) {
        snprintf(rel, sizeof rel, "audio/%s.wav", clip_names[i]);
        f->clips[i] = ct_test_read_audio(CT_FIXTURE(rel), &f->n[i]);
    }
    CT_ASSERT_OK(ct_st_open(CT_FIXTURE("reference.safetensors"), &f->ref));
}

static void fixture_close(fixture *f) {
    ct_st_free(f->ref);
    for (int i = 0; i < NCLIPS; i++) free(f->clips[i]);
    ct_asr_free(f->asr);
}

static void run_batch(ct_dtype act, ct_attn_variant variant) {
    fixture fx;
    fixture_open(&fx, act, variant);
    ct_asr *asr = fx.asr;
    float **clips = fx.clips;
    const size_t *n = fx.n;
    ct_safetensors *ref = fx.ref;
    ct_asr_request rq = ct_asr_default_request();
    rq.max_new_tokens = 40;
    rq.keep_logits = rq.keep_features = rq.keep_encoder = 1;
    ct_asr_result r;
    CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)clips, n, NCLIPS, &rq, &r));
    assert_int_equal(r.n, NCLIPS);
    const int V = ct_asr_model_weights(asr)->hp.vocab;
    for (int i = 0; i < NCLIPS; i++) {
        const ct_asr_clip *c = &r.clips[i];
        const ct_st_tensor *e, *t, *lt;
        float *want = ref_f32(ref, "encoder.%d", i, &e);
        assert_int_equal(c->encoder_frames, e->shape[0]);
        double err = ct_rel_l2(c->encoder, want, (size_t)e->numel);
        free(want);
        float *lref = ref_f32(ref, "logits.%d", i, &lt);
        assert_int_equal(lt->shape[1], V);
        assert_non_null(c->logits);
        double lerr = ct_rel_l2(c->logits, lref, (size_t)V); /* first step: the same input on both */
        printf("  %s %s clip %d: encoder rel L2 %.3g, first-step logits %.3g\n", ct_dtype_name(act),
               variant == CT_ATTN_SIMPLE ? "simple" : "auto", i, err, lerr);
        if (!(err <= 2e-2)) fail_msg("clip %d: encoder relative L2 %.3g > 2e-2", i, err);
        if (!(lerr <= 2e-2)) fail_msg("clip %d: first-step logits relative L2 %.3g > 2e-2", i, lerr);
        /* tokens: identical, or the first difference at a near tie of the
         * fp32 reference's logits (the fixture's smallest top-1/top-2 gap
         * is 0.048; a bf16 run's error on a logit difference is ≈ 0.06) */
        const double NEAR_TIE = 0.25;
        char nm[64];
        snprintf(nm, sizeof nm, "tokens.%d", i);
        t = ct_st_find(ref, nm);
        assert_non_null(t);
        const int32_t *tt = t->data;
        const int nref = (int)t->shape[0];
        if (ct_test_near_tie(i, c->tokens, c->n_tokens, tt, nref, lref, V, NEAR_TIE))
            assert_int_equal(c->stop, tt[nref - 1] == 3 ? CT_STOP_EOS : CT_STOP_MAX_TOKENS);
        free(lref);
        assert_non_null(c->features);
        char *text;
        CT_ASSERT_OK(ct_tokenizer_decode(ct_asr_tokenizer(asr), c->tokens, c->n_tokens, &text));
        assert_string_equal(text, c->text);
        free(text);
    }
    ct_asr_result_free(&r);
    fixture_close(&fx);
}

static void test_bf16(void **state) {
    (void)state;
    run_batch(CT_DTYPE_BF16, CT_ATTN_AUTO);
}
static void test_bf16_simple_attention(void **state) {
    (void)state;
    run_batch(CT_DTYPE_BF16, CT_ATTN_SIMPLE);
}
static void test_f16(void **state) {
    (void)state;
    run_batch(CT_DTYPE_F16, CT_ATTN_AUTO);
}

/* Teacher forcing on the fixture batch (ct_asr_request.forced): fed the
 * fp32 reference's tokens, each step's argmax must be the reference's next
 * token except at a near tie of the reference's logits at that step (the
 * step's inputs are the reference's, so a departure does not carry on);
 * every clip runs its whole budget. Through the host loop (keep_logits)
 * and the device loop with its graph. */
static void run_forced(ct_dtype act, int keep_logits) {
    enum { MAXNEW = 40 };
    const double NEAR_TIE = 0.25; /* run_batch's bound */
    fixture fx;
    fixture_open(&fx, act, CT_ATTN_AUTO);
    const int V = ct_asr_model_weights(fx.asr)->hp.vocab;
    ct_safetensors *ref = fx.ref;
    char rel[128];
    static int32_t forced[NCLIPS * MAXNEW];
    const int32_t *want[NCLIPS];
    int nt[NCLIPS];
    for (int i = 0; i < NCLIPS; i++) {
        snprintf(rel, sizeof rel, "tokens.%d", i);
        const ct_st_tensor *t = ct_st_find(ref, rel);
        assert_non_null(t);
        want[i] = t->data;
        nt[i] = (int)t->shape[0];
        assert_true(nt[i] >= 1 && nt[i] <= MAXNEW);
        for (int g = 0; g < MAXNEW; g++) forced[i * MAXNEW + g] = g < nt[i] ? want[i][g] : 3;
    }
    ct_asr_request rq = ct_asr_default_request();
    rq.max_new_tokens = MAXNEW;
    rq.forced = forced;
    rq.keep_logits = keep_logits;
    ct_asr_result r;
    CT_ASSERT_OK(ct_asr_transcribe(fx.asr, (const float *const *)fx.clips, fx.n, NCLIPS, &rq, &r));
    int departures = 0, steps = 0;
    for (int i = 0; i < NCLIPS; i++) {
        const ct_asr_clip *c = &r.clips[i];
        assert_int_equal(c->n_tokens, MAXNEW);
        assert_int_equal(c->stop, CT_STOP_MAX_TOKENS);
        const ct_st_tensor *lt;
        float *lref = ref_f32(ref, "logits.%d", i, &lt);
        for (int st = 0; st < nt[i]; st++, steps++) {
            if (c->tokens[st] == want[i][st]) continue;
            const double gap = lref[(size_t)st * V + want[i][st]] - lref[(size_t)st * V + c->tokens[st]];
            printf("  %s forced clip %d step %d: %d vs the reference's %d, fp32 gap %.4f\n", ct_dtype_name(act), i, st,
                   c->tokens[st], want[i][st], gap);
            if (!(gap < NEAR_TIE)) fail_msg("clip %d step %d: not a near tie (gap %.3f)", i, st, gap);
            departures++;
        }
        free(lref);
    }
    printf("  %s teacher-forced (%s loop): %d of %d steps depart, each at a near tie\n", ct_dtype_name(act),
           keep_logits ? "host" : "device", departures, steps);
    ct_asr_result_free(&r);
    fixture_close(&fx);
}

static void test_forced_bf16(void **state) {
    (void)state;
    run_forced(CT_DTYPE_BF16, 1);
    run_forced(CT_DTYPE_BF16, 0);
}
static void test_forced_f16(void **state) {
    (void)state;
    run_forced(CT_DTYPE_F16, 0);
}

static void test_refusals(void **state) {
    (void)state;
    /* 16-bit weights only: cuBLASLt multiplies them in their own type */
    ct_asr_options o = ct_asr_default_options();
    o.device = "cuda";
    o.weight_dtype = CT_DTYPE_F32;
    ct_asr *asr;
    CT_ASSERT_STATUS(ct_asr_open(CT_FIXTURE("tiny-hf"), &o, &asr), CT_ERR_UNSUPPORTED);
    CT_ASSERT_ERROR_HAS("weights in F32 are not supported");
    /* the checkpoint opens on a thread beside the backend's creation: its
     * failure and message come back to the caller's thread */
    o.weight_dtype = CT_DTYPE_BF16;
    ct_error_clear();
    CT_ASSERT_STATUS(ct_asr_open(CT_FIXTURE("audio"), &o, &asr), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS("config.json");
}

int main(void) {
    int no_gpu;
    if (!ct_test_have_gpu("test_asr_cuda_ops", &no_gpu)) return no_gpu;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_bf16_simple_attention),
        cmocka_unit_test(test_f16),
        cmocka_unit_test(test_forced_bf16),
        cmocka_unit_test(test_forced_f16),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
