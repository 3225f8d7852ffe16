/* test_doctor.c — the doctor's decision pieces without the environment: the
 * audio decoder table of PRODUCT-DETAILS §11 step 6 for every backend and
 * availability, what "auto" resolves to, when model access runs, the
 * tokenizer.json checks (each failure's message), and where the default
 * Silero weights are found in a build tree. The whole command runs in
 * tests/e2e/doctor.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compute/cpu/cpu_state.h"
#include "testutil.h"

#include "audio/audio.h"
#include "model/resolve.h"
#include "pipeline/doctor.h"

typedef struct lines {
    int n;
    ct_doctor_level lv[16];
    char msg[16][512];
} lines;

static void collect(void *user, ct_doctor_level lv, const char *m) {
    lines *l = user;
    assert_true(l->n < 16);
    l->lv[l->n] = lv;
    snprintf(l->msg[l->n], sizeof l->msg[0], "%s", m);
    l->n++;
}

static void expect_line(const lines *l, int i, ct_doctor_level lv, const char *prefix) {
    assert_true(i < l->n);
    if (l->lv[i] != lv || strncmp(l->msg[i], prefix, strlen(prefix)) != 0)
        fail_msg("line %d: level %d \"%s\", want level %d \"%s...\"", i, l->lv[i], l->msg[i], lv, prefix);
}

static void test_audio_table(void **state) {
    (void)state;
    char sf[256], ff[256], want[600];
    ct_audio_ffmpeg_describe(ff, sizeof ff);
    ct_audio_sndfile_describe(sf, sizeof sf);
    lines l;

    /* both decoders work */
    memset(&l, 0, sizeof l);
    ct_doctor_audio_verdict("auto", 1, "", 1, "", collect, &l);
    assert_int_equal(l.n, 2);
    snprintf(want, sizeof want, "native FFmpeg decoder: %s", ff);
    expect_line(&l, 0, CT_DOCTOR_OK, want);
    snprintf(want, sizeof want, "native audio decoder fallback: libsndfile ABI (%s)", sf);
    expect_line(&l, 1, CT_DOCTOR_OK, want);

    memset(&l, 0, sizeof l);
    ct_doctor_audio_verdict("ffmpeg", 1, "", 1, "", collect, &l);
    assert_int_equal(l.n, 1);
    expect_line(&l, 0, CT_DOCTOR_OK, "native FFmpeg decoder: ");

    memset(&l, 0, sizeof l);
    ct_doctor_audio_verdict("torchcodec", 1, "", 0, "x", collect, &l);
    assert_int_equal(l.n, 2);
    expect_line(&l, 1, CT_DOCTOR_WARN, "torchcodec compatibility mode uses FFmpeg through the native C ABI");

    memset(&l, 0, sizeof l);
    ct_doctor_audio_verdict("librosa", 1, "", 1, "", collect, &l);
    assert_int_equal(l.n, 3);
    expect_line(&l, 1, CT_DOCTOR_WARN, "librosa compatibility mode uses FFmpeg through the native C ABI");
    expect_line(&l, 2, CT_DOCTOR_OK, "librosa compatibility fallback: libsndfile ABI (");

    /* FFmpeg broken: auto and librosa fall back to libsndfile with a warning */
    memset(&l, 0, sizeof l);
    ct_doctor_audio_verdict("auto", 0, "CT_ERR_FORMAT: no demuxer", 1, "", collect, &l);
    assert_int_equal(l.n, 2);
    expect_line(&l, 0, CT_DOCTOR_OK, "native audio decoder fallback: libsndfile ABI (");
    expect_line(&l, 1, CT_DOCTOR_WARN, "native FFmpeg decoder unavailable: CT_ERR_FORMAT: no demuxer");

    memset(&l, 0, sizeof l);
    ct_doctor_audio_verdict("librosa", 0, "gone", 1, "", collect, &l);
    expect_line(&l, 0, CT_DOCTOR_OK, "librosa compatibility fallback: libsndfile ABI (");
    expect_line(&l, 1, CT_DOCTOR_WARN, "native FFmpeg decoder unavailable: gone");

    /* ... but ffmpeg and torchcodec have no fallback, and without libsndfile nothing is left */
    const char *fatal[] = {"ffmpeg", "torchcodec"};
    for (int i = 0; i < 2; i++) {
        memset(&l, 0, sizeof l);
        ct_doctor_audio_verdict(fatal[i], 0, "gone", 1, "", collect, &l);
        assert_int_equal(l.n, 1);
        expect_line(&l, 0, CT_DOCTOR_FAIL, "native FFmpeg decoder unavailable: gone");
    }
    memset(&l, 0, sizeof l);
    ct_doctor_audio_verdict("auto", 0, "gone", 0, "also gone", collect, &l);
    assert_int_equal(l.n, 1);
    expect_line(&l, 0, CT_DOCTOR_FAIL, "native FFmpeg decoder unavailable: gone");

    /* auto with a broken libsndfile: FFmpeg decodes, the fallback is missing */
    memset(&l, 0, sizeof l);
    ct_doctor_audio_verdict("auto", 1, "", 0, "no sndfile", collect, &l);
    expect_line(&l, 1, CT_DOCTOR_WARN, "native audio decoder fallback unavailable: no sndfile");

    /* sndfile only */
    memset(&l, 0, sizeof l);
    ct_doctor_audio_verdict("sndfile", 0, "gone", 1, "", collect, &l);
    assert_int_equal(l.n, 1);
    snprintf(want, sizeof want, "native libsndfile decoder: %s", sf);
    expect_line(&l, 0, CT_DOCTOR_OK, want);
    memset(&l, 0, sizeof l);
    ct_doctor_audio_verdict("sndfile", 1, "", 0, "broken", collect, &l);
    expect_line(&l, 0, CT_DOCTOR_FAIL, "native libsndfile decoder unavailable: broken");

    memset(&l, 0, sizeof l);
    ct_doctor_audio_verdict("sox", 1, "", 1, "", collect, &l);
    expect_line(&l, 0, CT_DOCTOR_FAIL, "audio decoder configuration: unsupported audio backend: sox");
}

static void test_auto_and_access(void **state) {
    (void)state;
    assert_string_equal(ct_doctor_auto_device(0), "cpu");
    assert_string_equal(ct_doctor_auto_device(1), "cuda");
    /* cpu: bf16 only where the CPU multiplies bf16 natively through oneDNN */
    const ct_cpu_features *f = ct_cpu_features_get();
    const int native = ct_dnnl_built() && ct_cpu_isa_level(f) >= CT_ISA_BF16;
    assert_string_equal(ct_doctor_auto_dtype("cpu"), native ? "bf16" : "fp32");
    assert_string_equal(ct_doctor_auto_dtype("cuda"), "bf16");

    ct_doctor_options o;
    ct_doctor_default_options(&o);
    assert_false(ct_doctor_model_access_wanted(&o));
    o.model = CT_DEFAULT_MODEL; /* the default named explicitly: still not implied */
    assert_false(ct_doctor_model_access_wanted(&o));
    o.model = "acme/other";
    assert_true(ct_doctor_model_access_wanted(&o));
    ct_doctor_default_options(&o);
    o.model_revision = "main";
    assert_true(ct_doctor_model_access_wanted(&o));
    ct_doctor_default_options(&o);
    o.adapter = "acme/lora";
    assert_true(ct_doctor_model_access_wanted(&o));
    ct_doctor_default_options(&o);
    o.adapter_revision = "v1";
    assert_true(ct_doctor_model_access_wanted(&o));
    ct_doctor_default_options(&o);
    o.model_access = 1;
    assert_true(ct_doctor_model_access_wanted(&o));
}

/* A tokenizer.json with a BPE-style vocabulary {piece: id}: the prompt
 * tokens, then the given extra JSON members of "vocab", and added tokens. */
static char *tok_json(const char *skip, const char *extra_vocab, const char *added) {
    static const char *const need[] = {"▁", "<|startofcontext|>", "<|startoftranscript|>", "<|emo:undefined|>",
                                       "<|ar|>", "<|en|>", "<|pnc|>", "<|nopnc|>", "<|noitn|>", "<|notimestamp|>",
                                       "<|nodiarize|>", "<|endoftext|>"};
    char *s = malloc(8192);
    assert_non_null(s);
    int n = snprintf(s, 8192, "{\"model\": {\"type\": \"BPE\", \"vocab\": {");
    int id = 0;
    for (size_t i = 0; i < sizeof need / sizeof *need; i++) {
        if (skip && strstr(skip, need[i])) continue;
        n += snprintf(s + n, 8192 - n, "%s\"%s\": %d", id ? ", " : "", need[i], id);
        id++;
    }
    n += snprintf(s + n, 8192 - n, "%s%s}}, \"added_tokens\": [%s]}", extra_vocab ? ", " : "",
                  extra_vocab ? extra_vocab : "", added ? added : "");
    return s;
}

static void expect_tok(const char *json, int vocab_size, const char (*langs)[16], int n_langs, ct_status want,
                       const char *msg_part) {
    ct_error_clear();
    ct_status st = ct_doctor_tokenizer_check(json, strlen(json), "tok.json", vocab_size, langs, n_langs);
    if (st != want || (msg_part && !strstr(ct_last_error(), msg_part)))
        fail_msg("status %d \"%s\", want %d with \"%s\" (json %s)", st, ct_last_error(), want, msg_part ? msg_part : "",
                 json);
}

static void test_tokenizer_checks(void **state) {
    (void)state;
    char *j = tok_json(NULL, NULL, NULL);
    expect_tok(j, 12, NULL, 0, CT_OK, NULL);
    expect_tok(j, 0, NULL, 0, CT_OK, NULL); /* no vocab_size: ids not compared */
    /* ids 0..11 against a declared 14: missing 12 and 13 */
    expect_tok(j, 14, NULL, 0, CT_ERR_FORMAT, "tok.json vocabulary has missing token IDs: [12, 13]");
    expect_tok(j, 10, NULL, 0, CT_ERR_FORMAT, "tok.json token ID 10 is outside the checkpoint vocabulary size 10");
    /* languages the config lists */
    static const char langs[3][16] = {"ar", "en", "fr"};
    expect_tok(j, 12, langs, 3, CT_ERR_FORMAT, "tok.json is missing Cohere prompt tokens: <|fr|>");
    free(j);

    j = tok_json("<|endoftext|>", NULL, NULL);
    expect_tok(j, 11, NULL, 0, CT_ERR_FORMAT, "tok.json is missing Cohere prompt tokens: <|endoftext|>");
    free(j);
    /* every missing token is named, in prompt order */
    j = tok_json("<|en|> <|nopnc|> ▁", NULL, NULL);
    expect_tok(j, 9, NULL, 0, CT_ERR_FORMAT, "missing Cohere prompt tokens: ▁, <|en|>, <|nopnc|>");
    free(j);

    /* added tokens: the same pair again is fine, a conflict in either direction is not */
    j = tok_json(NULL, NULL, "{\"id\": 11, \"content\": \"<|endoftext|>\", \"special\": true}");
    expect_tok(j, 12, NULL, 0, CT_OK, NULL);
    free(j);
    j = tok_json(NULL, NULL, "{\"id\": 3, \"content\": \"<|other|>\"}");
    expect_tok(j, 12, NULL, 0, CT_ERR_FORMAT, "tok.json assigns ID 3 to both \"<|emo:undefined|>\" and \"<|other|>\"");
    free(j);
    j = tok_json(NULL, NULL, "{\"id\": 12, \"content\": \"<|pnc|>\"}");
    expect_tok(j, 13, NULL, 0, CT_ERR_FORMAT, "tok.json assigns token \"<|pnc|>\" to IDs 6 and 12");
    free(j);
    j = tok_json(NULL, NULL, "{\"id\": \"12\", \"content\": \"x\"}");
    expect_tok(j, 0, NULL, 0, CT_ERR_FORMAT, "tok.json contains an invalid added token");
    free(j);
    j = tok_json(NULL, NULL, "{\"id\": 12}");
    expect_tok(j, 0, NULL, 0, CT_ERR_FORMAT, "tok.json contains an invalid added token");
    free(j);
    j = tok_json(NULL, "\"bad\": -1", NULL);
    expect_tok(j, 0, NULL, 0, CT_ERR_FORMAT, "tok.json contains an invalid token/id entry");
    free(j);
    j = tok_json(NULL, "\"huge\": 99999999999", NULL);
    expect_tok(j, 0, NULL, 0, CT_ERR_FORMAT, "token ID 99999999999 is out of range");
    free(j);

    expect_tok("{\"model\": {\"vocab\": {}}}", 0, NULL, 0, CT_ERR_FORMAT, "tok.json has no model vocabulary");
    expect_tok("{\"model\": {}}", 0, NULL, 0, CT_ERR_FORMAT, "tok.json has no model vocabulary");
    expect_tok("[1]", 0, NULL, 0, CT_ERR_FORMAT, "tok.json has no model vocabulary");
    expect_tok("{\"model\": {\"vocab\": {\"a\": 0}}, \"added_tokens\": {}}", 0, NULL, 0, CT_ERR_FORMAT,
               "tok.json added_tokens must be an array");
    expect_tok("{\"model\": ", 0, NULL, 0, CT_ERR_FORMAT, "tok.json: not valid JSON");

    /* a Unigram list vocabulary: ids are positions; a repeated piece is
     * tolerated (tokenizers keeps the last), a gap is not */
    const char *uni = "{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"▁\", 0], [\"<|startofcontext|>\", 0], "
                      "[\"<|startoftranscript|>\", 0], [\"<|emo:undefined|>\", 0], [\"<|ar|>\", 0], [\"<|en|>\", 0], "
                      "[\"<|pnc|>\", 0], [\"<|nopnc|>\", 0], [\"<|noitn|>\", 0], [\"<|notimestamp|>\", 0], "
                      "[\"<|nodiarize|>\", 0], [\"<|endoftext|>\", 0], [\"a\", -1], [\"a\", -2]]}}";
    expect_tok(uni, 14, NULL, 0, CT_OK, NULL);
    expect_tok(uni, 15, NULL, 0, CT_ERR_FORMAT, "missing token IDs: [14]");
    const char *uni_bad = "{\"model\": {\"vocab\": [[1, 0]]}}";
    expect_tok(uni_bad, 0, NULL, 0, CT_ERR_FORMAT, "tok.json contains an invalid token/id entry");
}

static void test_silero_default_path(void **state) {
    (void)state;
    /* This test runs from build/tests, so <exe dir>/.. is the build folder:
     * its share/cohere-transcribe/ copy comes first when the build fetched
     * one, then the configured prefix's, then the setup test's testdata. */
    char buf[4096];
    ct_status st = ct_silero_default_path(buf, sizeof buf);
    assert_int_equal(st, CT_OK);
    char share[4096];
    snprintf(share, sizeof share, "%s/../share/cohere-transcribe/silero_vad.onnx", CT_TESTDATA(""));
    char *want = realpath(access(share, F_OK) == 0 ? share : CT_TESTDATA("silero/silero_vad.onnx"), NULL);
    assert_non_null(want);
    /* an installed copy under the configured prefix may sit between the two */
    if (strcmp(buf, want) != 0 && (access(share, F_OK) == 0 || strstr(buf, "/testdata/")))
        fail_msg("found %s, want %s", buf, want);
    free(want);
    /* a buffer too small for the path */
    char tiny[8];
    assert_int_equal(ct_silero_default_path(tiny, sizeof tiny), CT_ERR_LIMIT);
    assert_int_equal(ct_silero_default_path(NULL, 0), CT_ERR_INVALID_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_audio_table),
        cmocka_unit_test(test_auto_and_access),
        cmocka_unit_test(test_tokenizer_checks),
        cmocka_unit_test(test_silero_default_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
