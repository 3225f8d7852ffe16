/* test_asr_gpu.c — the product's "cuda" device of the batch entry point
 * (asr.c over the cuda backend table: the model code of the CPU).
 * Every build: ct_asr_device_check's answers (cpu always; cuda refused with
 * "built without CUDA" in a CPU-only build, "no CUDA device found" with CUDA
 * compiled in and no device, fp32/int8 weights refused where a device
 * exists; other names refused), ct_asr_open and cohere-transcribe-inspect
 * --device cuda failing with that message (inspect exits 1).
 * With a GPU, what the product uses on cuda beyond test_asr_cuda_ops's
 * parity: rows with different languages in one batch (per-row prompts; the
 * first-step logits of each row as in a one-language batch of the same
 * clips, and a different language giving other logits), dither on the device
 * mel (the host adds the CPU mel's noise) and a clip under 320 samples in a
 * dithered batch (the whole batch on the CPU mel), per-row token budgets
 * with ignore_eos (benchmark mode), the f16 weights the product's --dtype
 * fp16 loads, and an allocation over the fault-injection limit answering
 * CT_ERR_OOM with the session still usable (what the scheduler's halving
 * needs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "asr/asr.h"
#include "fixture_io.h"
#include "testutil.h"

#define NCLIPS 6
static const char *clip_names[NCLIPS] = {"c0_tones_1s", "c1_en_us_3s", "c2_de_noise_6s",
                                         "c3_fr_ar_10s", "c4_en_gb_30s", "c5_es_en_34s"};

/* The message ct_asr_open must give on this machine, or NULL with a GPU. */
static const char *expected_refusal(void) {
    const char *why = "";
    if (ct_backend_available("cuda", &why)) return NULL;
    return !strcmp(why, "built without CUDA") ? "built without CUDA" : "no CUDA device found";
}

static void test_device_check(void **state) {
    (void)state;
    CT_ASSERT_OK(ct_asr_device_check("cpu", CT_DTYPE_F32));
    CT_ASSERT_OK(ct_asr_device_check(NULL, CT_DTYPE_Q8));
    CT_ASSERT_STATUS(ct_asr_device_check("cuda-ops", CT_DTYPE_BF16), CT_ERR_UNSUPPORTED); /* gone with the old engine */
    CT_ASSERT_STATUS(ct_asr_device_check("mps", CT_DTYPE_BF16), CT_ERR_UNSUPPORTED);
    const char *want = expected_refusal();
    if (want) {
        CT_ASSERT_STATUS(ct_asr_device_check("cuda", CT_DTYPE_BF16), CT_ERR_UNSUPPORTED);
        CT_ASSERT_ERROR_HAS(want);
        return;
    }
    CT_ASSERT_OK(ct_asr_device_check("cuda", CT_DTYPE_BF16));
    CT_ASSERT_OK(ct_asr_device_check("cuda", CT_DTYPE_F16));
    CT_ASSERT_STATUS(ct_asr_device_check("cuda", CT_DTYPE_F32), CT_ERR_UNSUPPORTED);
    CT_ASSERT_ERROR_HAS("weights in F32 are not supported");
    CT_ASSERT_STATUS(ct_asr_device_check("cuda", CT_DTYPE_Q8), CT_ERR_UNSUPPORTED);
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

/* ---- with a GPU ----------------------------------------------------------- */

typedef struct clips {
    float *x[NCLIPS + 1];
    size_t n[NCLIPS + 1];
} clips;

static void load_clips(clips *c) {
    char rel[128];
    for (int i = 0; i < NCLIPS; i++) {
        snprintf(rel, sizeof rel, "audio/%s.wav", clip_names[i]);
        c->x[i] = ct_test_read_audio(CT_FIXTURE(rel), &c->n[i]);
    }
    c->n[NCLIPS] = 200; /* under the GPU mel's 320 samples: the end of a file cut in fixed windows */
    c->x[NCLIPS] = malloc(sizeof(float) * 200);
    for (int i = 0; i < 200; i++) c->x[NCLIPS][i] = 0.01f * (float)((i * 37) % 11 - 5);
}

static void free_clips(clips *c) {
    for (int i = 0; i <= NCLIPS; i++) free(c->x[i]);
}

static ct_asr *open_dev(const char *dev, ct_dtype wdt) {
    ct_asr_options o = ct_asr_default_options();
    o.device = dev;
    o.weight_dtype = wdt;
    ct_asr *asr;
    CT_ASSERT_OK(ct_asr_open(CT_FIXTURE("tiny-hf"), &o, &asr));
    if (!strcmp(dev, "cuda")) assert_int_equal(ct_asr_backend(asr)->act_dtype, wdt); /* activations follow the weights */
    return asr;
}
static ct_asr *open_cuda(ct_dtype wdt) { return open_dev("cuda", wdt); }

/* Rows of one batch in different languages: each row's first-step logits
 * as in a batch where every row has that row's language, and unlike those
 * of another language (so a prompt shared by the batch would fail). */
static void languages_per_row(ct_asr *asr, const char *dev) {
    clips c;
    load_clips(&c);
    const int V = ct_asr_model_weights(asr)->hp.vocab;
    const char *mixed[NCLIPS] = {"en", "de", "en", "fr", NULL, "de"};
    ct_asr_request rq = ct_asr_default_request();
    rq.max_new_tokens = 4;
    rq.keep_logits = 1;
    ct_asr_result r, one;
    rq.languages = mixed;
    CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)c.x, c.n, NCLIPS, &rq, &r));
    const char *langs[] = {"en", "de", "fr"};
    for (int l = 0; l < 3; l++) { /* the same clips, every row in one language */
        const char *all[NCLIPS];
        for (int i = 0; i < NCLIPS; i++) all[i] = langs[l];
        rq.languages = all;
        CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)c.x, c.n, NCLIPS, &rq, &one));
        for (int i = 0; i < NCLIPS; i++) {
            const char *li = mixed[i] ? mixed[i] : "en";
            double d = ct_rel_l2(r.clips[i].logits, one.clips[i].logits, (size_t)V);
            if (!strcmp(li, langs[l]) && !(d <= 1e-2))
                fail_msg("%s clip %d (%s): first-step logits %.3g from the one-language batch", dev, i, li, d);
            if (strcmp(li, langs[l]) && !(d > 1e-2))
                fail_msg("%s clip %d (%s): logits equal to those of language %s (%.3g)", dev, i, li, langs[l], d);
            if (strcmp(li, langs[l]) && i == 1) printf("  %s clip 1: %s vs %s logits differ by %.3g\n", dev, li, langs[l], d);
        }
        ct_asr_result_free(&one);
    }
    ct_asr_result_free(&r);
    free_clips(&c);
}

/* On the CPU in every build (the same asr.c path), and on cuda. */
static void test_languages_per_row(void **state) {
    (void)state;
    for (int dev = 0; dev < 2; dev++) {
        if (dev && expected_refusal()) skip();
        ct_asr *asr = dev ? open_cuda(CT_DTYPE_BF16) : open_dev("cpu", CT_DTYPE_F32);
        languages_per_row(asr, dev ? "cuda" : "cpu");
        ct_asr_free(asr);
    }
}
static void test_dither_budgets_f16(void **state) {
    if (expected_refusal()) skip();
    clips c;
    load_clips(&c);
    for (int k = 0; k < 2; k++) {
        ct_asr *asr = open_cuda(k ? CT_DTYPE_F16 : CT_DTYPE_BF16);
        ct_asr_request rq = ct_asr_default_request();
        rq.max_new_tokens = 8;
        rq.dither = 1;
        ct_asr_result r;
        /* device mel on host-dithered PCM, then a batch with the short clip (CPU mel) */
        CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)c.x, c.n, NCLIPS, &rq, &r));
        for (int i = 0; i < NCLIPS; i++) assert_true(r.clips[i].n_tokens >= 1 && r.clips[i].n_tokens <= 8);
        ct_asr_result_free(&r);
        CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)c.x, c.n, NCLIPS + 1, &rq, &r));
        assert_int_equal(r.clips[NCLIPS].feature_frames, 1); /* valid frames: 200 / 160 */
        ct_asr_result_free(&r);
        /* benchmark mode: every row exactly its own budget, EOS ignored */
        int budget[NCLIPS] = {1, 3, 8, 2, 5, 7};
        rq.dither = 0;
        rq.ignore_eos = 1;
        rq.row_max_new_tokens = budget;
        CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)c.x, c.n, NCLIPS, &rq, &r));
        for (int i = 0; i < NCLIPS; i++) {
            assert_int_equal(r.clips[i].n_tokens, budget[i]);
            assert_int_equal(r.clips[i].stop, CT_STOP_MAX_TOKENS);
        }
        ct_asr_result_free(&r);
        ct_asr_free(asr);
    }
    free_clips(&c);
}

/* A batch whose arenas pass CT_CUDA_FAIL_ALLOC_ABOVE (the test hook of
 * compute/cuda/cuda_runtime.cu, read when the backend is made) fails with
 * CT_ERR_OOM, and a smaller batch then runs on the same ct_asr: the
 * scheduler halves an out-of-memory batch and goes on (asr/scheduler.c). */
static void test_out_of_memory(void **state) {
    if (expected_refusal()) skip();
    enum { BIG = 48 };
    const float *x[BIG];
    size_t n[BIG];
    clips c;
    load_clips(&c);
    for (int i = 0; i < BIG; i++) x[i] = c.x[5], n[i] = c.n[5]; /* 34 s each */
    ct_asr_request rq = ct_asr_default_request();
    rq.max_new_tokens = 4;
    ct_asr_result r;
    ct_asr *asr = open_cuda(CT_DTYPE_BF16);
    CT_ASSERT_OK(ct_asr_transcribe(asr, x, n, BIG, &rq, &r)); /* it fits without the limit */
    ct_asr_result_free(&r);
    ct_asr_free(asr);
    const size_t limit = (size_t)64 << 20; /* the cuBLAS workspace the backend allocates at creation */
    /* the activation arena alone holds the batch's features */
    const size_t feats = sizeof(float) * BIG * (1 + c.n[5] / 160) * 128;
    if (!(feats > limit)) fail_msg("the big batch's features (%zu bytes) are too small for the test", feats);
    char v[32];
    snprintf(v, sizeof v, "%zu", limit);
    setenv("CT_CUDA_FAIL_ALLOC_ABOVE", v, 1);
    asr = open_cuda(CT_DTYPE_BF16);
    unsetenv("CT_CUDA_FAIL_ALLOC_ABOVE");
    CT_ASSERT_STATUS(ct_asr_transcribe(asr, x, n, BIG, &rq, &r), CT_ERR_OOM);
    CT_ASSERT_OK(ct_asr_transcribe(asr, (const float *const *)c.x, c.n, 2, &rq, &r));
    assert_int_equal(r.n, 2);
    ct_asr_result_free(&r);
    ct_asr_free(asr);
    free_clips(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_device_check),
        cmocka_unit_test(test_open_refused_without_gpu),
        cmocka_unit_test(test_inspect_refused_without_gpu),
        cmocka_unit_test(test_languages_per_row),
        cmocka_unit_test(test_dither_budgets_f16),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
