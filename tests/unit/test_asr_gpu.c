/* test_asr_gpu.c — the "cuda" device of the batch entry point (asr_gpu.c).
 * Without a usable GPU: ct_asr_open and cohere-transcribe-inspect --device
 * cuda fail with the message for this build ("built without CUDA" in a
 * CPU-only build, "no CUDA device found" with CUDA compiled in), inspect exits
 * 1. With a GPU: the fixture batch through the library entry point in bf16
 * against the fp32 transformers reference (tokens identical, encoder relative
 * L2 ≤ 1e-2 per clip), texts equal the tokenizer's decoding, logits refused,
 * fp32/fp16 weights refused. */
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "asr/asr.h"
#include "compute/gpu_engine.h"
#include "model/safetensors.h"
#include "testutil.h"

#define NCLIPS 6
static const char *clip_names[NCLIPS] = {"c0_tones_1s", "c1_en_us_3s", "c2_de_noise_6s",
                                         "c3_fr_ar_10s", "c4_en_gb_30s", "c5_es_en_34s"};

/* The message ct_asr_open must give on this machine, or NULL with a GPU. */
static const char *expected_refusal(void) {
    if (!ct_gpu_engine_compiled()) return "built without CUDA";
    if (!ct_gpu_engine_device_present(NULL)) return "no CUDA device found";
    return NULL;
}

static void test_open_refused_without_gpu(void **state) {
    const char *want = expected_refusal();
    if (!want) skip();
    ct_asr_options o = ct_asr_default_options();
    o.device = "cuda";
    o.weight_dtype = CT_DTYPE_BF16;
    ct_asr *asr = (ct_asr *)0x1;
    CT_ASSERT_STATUS(ct_asr_open(CT_FIXTURE("tiny-hf"), &o, &asr), CT_ERR_UNSUPPORTED);
    assert_null(asr);
    if (!strstr(ct_last_error(), want)) fail_msg("message '%s' lacks '%s'", ct_last_error(), want);
    /* the CPU device of the same build is unaffected */
    o.device = "cpu";
    o.weight_dtype = CT_DTYPE_F32;
    CT_ASSERT_OK(ct_asr_open(CT_FIXTURE("tiny-hf"), &o, &asr));
    ct_asr_free(asr);
}

static void test_inspect_refused_without_gpu(void **state) {
    const char *want = expected_refusal();
    if (!want) skip();
    const char *dir = ct_test_tmpdir();
    char cmd[8192], errf[4096];
    snprintf(errf, sizeof errf, "%s/err.txt", dir);
    snprintf(cmd, sizeof cmd, "'%s/cohere-transcribe-inspect' --model '%s' --device cuda --out '%s/o.safetensors' '%s' 2>'%s'",
             getenv("CT_BIN"), CT_FIXTURE("tiny-hf"), dir, CT_FIXTURE("audio/c1_en_us_3s.wav"), errf);
    int st = system(cmd);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 1);
    FILE *f = fopen(errf, "r");
    assert_non_null(f);
    char buf[4096] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    if (!strstr(buf, want)) fail_msg("inspect stderr '%s' lacks '%s'", buf, want);
    ct_test_rmtree(dir);
}

static void read_wav(const char *path, float **x, size_t *n) {
    SF_INFO info = {0};
    SNDFILE *sf = sf_open(path, SFM_READ, &info);
    if (!sf) fail_msg("%s: %s", path, sf_strerror(NULL));
    *n = (size_t)info.frames;
    *x = malloc(sizeof(float) * *n);
    assert_int_equal(sf_readf_float(sf, *x, (sf_count_t)*n), (sf_count_t)*n);
    sf_close(sf);
}

static void test_fixture_batch_on_gpu(void **state) {
    if (expected_refusal()) skip();
    ct_asr_options o = ct_asr_default_options();
    o.device = "cuda";
    o.weight_dtype = CT_DTYPE_F32;
    ct_asr *asr;
    CT_ASSERT_STATUS(ct_asr_open(CT_FIXTURE("tiny-hf"), &o, &asr), CT_ERR_UNSUPPORTED); /* bf16 only */
    o.weight_dtype = CT_DTYPE_BF16;
    CT_ASSERT_OK(ct_asr_open(CT_FIXTURE("tiny-hf"), &o, &asr));
    float *clips[NCLIPS];
    size_t n[NCLIPS];
    char rel[128];
    for (int i = 0; i < NCLIPS; i++) {
        snprintf(rel, sizeof rel, "audio/%s.wav", clip_names[i]);
        read_wav(CT_FIXTURE(rel), &clips[i], &n[i]);
    }
    ct_safetensors *ref;
    CT_ASSERT_OK(ct_st_open(CT_FIXTURE("reference.safetensors"), &ref));
    ct_asr_request rq = ct_asr_default_request();
    rq.max_new_tokens = 40;
    rq.keep_logits = 1;
    ct_asr_result r;
    CT_ASSERT_STATUS(ct_asr_transcribe(asr, (const float *const *)clips, n, NCLIPS, &rq, &r), CT_ERR_UNSUPPORTED);
    rq.keep_logits = 0;
    rq.keep_features = rq.keep_encoder = 1;
    CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)clips, n, NCLIPS, &rq, &r));
    assert_int_equal(r.n, NCLIPS);
    for (int i = 0; i < NCLIPS; i++) {
        const ct_asr_clip *c = &r.clips[i];
        char nm[64];
        snprintf(nm, sizeof nm, "encoder.%d", i);
        const ct_st_tensor *e = ct_st_find(ref, nm);
        assert_non_null(e);
        assert_int_equal(c->encoder_frames, e->shape[0]);
        float *want = malloc(sizeof(float) * (size_t)e->numel);
        CT_ASSERT_OK(ct_st_tensor_to_f32(e, want, (size_t)e->numel));
        double err = ct_rel_l2(c->encoder, want, (size_t)e->numel);
        if (!(err <= 1e-2)) fail_msg("clip %d: encoder relative L2 %.3g > 1e-2 (bf16)", i, err);
        free(want);
        snprintf(nm, sizeof nm, "tokens.%d", i);
        const ct_st_tensor *t = ct_st_find(ref, nm);
        assert_non_null(t);
        if (c->n_tokens != t->shape[0] || memcmp(c->tokens, t->data, t->nbytes))
            fail_msg("clip %d: tokens differ from the reference (%d vs %d)", i, c->n_tokens, (int)t->shape[0]);
        const int32_t *tt = t->data;
        assert_int_equal(c->stop, tt[t->shape[0] - 1] == 3 ? CT_STOP_EOS : CT_STOP_MAX_TOKENS);
        char *text;
        CT_ASSERT_OK(ct_tokenizer_decode(ct_asr_tokenizer(asr), c->tokens, c->n_tokens, &text));
        assert_string_equal(text, c->text);
        free(text);
    }
    ct_asr_result_free(&r);
    ct_st_free(ref);
    for (int i = 0; i < NCLIPS; i++) free(clips[i]);
    ct_asr_free(asr);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_refused_without_gpu),
        cmocka_unit_test(test_inspect_refused_without_gpu),
        cmocka_unit_test(test_fixture_batch_on_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
