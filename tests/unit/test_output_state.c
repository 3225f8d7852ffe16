/* test_output_state.c — state files (PRODUCT-DETAILS §3): the observed
 * canonical contract form, envelope round trip and every reader failure
 * reason, checkpoint restore rules 1-5 and skip verification rules, each
 * with its exact reason string.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/digest.h"
#include "output/render.h"
#include "output/state.h"
#include "test_output_util.h"
#include "testutil.h"

static const char *g_dir;

static int setup(void **st) {
    (void)st;
    g_dir = ct_test_tmpdir();
    return 0;
}

static int teardown(void **st) {
    (void)st;
    ct_test_rmtree(g_dir);
    return 0;
}

static void test_render_contract_canonical_observed(void **st) {
    (void)st;
    ct_transcriber_options o = test_default_options();
    o.formats[0] = CT_FORMAT_VTT;
    o.formats[1] = CT_FORMAT_TXT;
    o.n_formats = 2;
    ct_contract_inputs in = {.implementation_sha256 = "<hex>"};
    json_t *d;
    CT_ASSERT_OK(ct_render_contract_json(&o, &in, &d));
    ct_jbuf b = {0};
    CT_ASSERT_OK(ct_json_dump_canonical(d, &b));
    /* §3.2 "Example (observed) of a canonical form" */
    assert_string_equal(b.data, "{\"configuration\":{\"align_batch_size\":4,\"align_dtype\":\"fp32\","
                                "\"alignment\":\"segment\",\"formats\":[\"txt\",\"vtt\"],\"max_chars\":80,"
                                "\"max_cue_dur\":6.0,\"max_gap\":0.6},\"contract_schema_version\":3,"
                                "\"implementation_sha256\":\"<hex>\",\"models\":{\"align_revision\":null},"
                                "\"output_schema_version\":8}");
    ct_jbuf_free(&b);
    json_decref(d);
    /* word alignment names the aligner revision; keys differ per option */
    char k1[65], k2[65];
    CT_ASSERT_OK(ct_render_contract_key(&o, &in, k1));
    o.alignment = CT_ALIGN_WORD;
    CT_ASSERT_OK(ct_render_contract_json(&o, &in, &d));
    assert_string_equal(json_string_value(json_object_get(json_object_get(d, "models"), "align_revision")),
                        CT_ALIGN_MODEL_REVISION);
    json_decref(d);
    CT_ASSERT_OK(ct_render_contract_key(&o, &in, k2));
    assert_string_not_equal(k1, k2);
}

static void test_asr_contract_fields(void **st) {
    (void)st;
    ct_transcriber_options o = test_default_options();
    o.vad = CT_VAD_MODE_AUDITOK;
    o.audio_backend = CT_AUDIO_TORCHCODEC;
    ct_contract_inputs in = {"cpu", "fp32", 4, CT_DEFAULT_MODEL_ID, CT_DEFAULT_MODEL_REVISION, NULL, NULL, "i"};
    json_t *d;
    CT_ASSERT_OK(ct_asr_contract_json(&o, &in, &d));
    json_t *c = json_object_get(d, "configuration");
    assert_true(json_is_null(json_object_get(c, "vad_engine")));
    assert_true(json_is_null(json_object_get(c, "vad_threshold")));
    assert_true(json_is_real(json_object_get(c, "max_silence")));
    assert_true(json_is_real(json_object_get(c, "min_dur")));
    assert_true(json_is_null(json_object_get(c, "batch_max_size")));
    assert_string_equal(json_string_value(json_object_get(c, "audio_backend")), "ffmpeg");
    assert_true(json_is_false(json_object_get(c, "pin_memory")));
    assert_int_equal(json_integer_value(json_object_get(c, "batch_size")), 4);
    json_t *m = json_object_get(d, "models");
    assert_string_equal(json_string_value(json_object_get(m, "silero_version")), "6.2.1");
    assert_true(json_is_null(json_object_get(json_object_get(m, "asr"), "quantization")));
    json_decref(d);
    o.vad = CT_VAD_MODE_NONE;
    CT_ASSERT_OK(ct_asr_contract_json(&o, &in, &d));
    assert_true(json_is_null(json_object_get(json_object_get(d, "configuration"), "min_dur")));
    json_decref(d);
    /* the implementation fingerprint is part of the key */
    char a[65], b[65];
    CT_ASSERT_OK(ct_asr_contract_key(&o, &in, a));
    in.implementation_sha256 = "j";
    CT_ASSERT_OK(ct_asr_contract_key(&o, &in, b));
    assert_string_not_equal(a, b);
}

static void write_bytes(const char *name, const void *d, size_t n) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    ct_test_write_file(p, d, n);
}

static int open_dir(void) {
    int fd = open(g_dir, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    return fd;
}

static void expect_read_reason(const char *name, const char *want) {
    int dfd = open_dir(), ok = 1;
    char reason[CT_REASON_MAX];
    json_t *p;
    CT_ASSERT_OK(ct_state_read(dfd, name, &p, &ok, reason));
    close(dfd);
    assert_false(ok);
    assert_null(p);
    if (!strstr(reason, want)) fail_msg("reason '%s' lacks '%s'", reason, want);
}

/* A record with two segments (one empty), spans and provenance. */
static void make_record(ct_file_record *r) {
    memset(r, 0, sizeof *r);
    r->duration = 3.2;
    r->decode_backend = strdup("ffmpeg");
    r->vad_engine_actual = strdup("onnx");
    r->vad_provider = strdup("CPUExecutionProvider");
    test_add_span(r, 0.25, 2.0);
    test_add_span(r, 2.5, 3.0);
    test_add_segment(r, 0.25, 2.0, "مرحبا \"بكم\".\n", 7);
    test_add_segment(r, 2.5, 3.0, "", 1);
    r->token_limit = malloc(sizeof(int));
    r->token_limit[0] = 1;
    r->n_token_limit = 1;
    r->generation_id = strdup("0123456789abcdef0123456789abcdef");
}

static void snapshot_of(const char *name, ct_source_snapshot *s) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    CT_ASSERT_OK(ct_source_snapshot_take(p, s));
}

static void test_checkpoint_round_trip_and_reasons(void **st) {
    (void)st;
    write_bytes("a.wav", "RIFF....", 8);
    ct_source_snapshot snap;
    snapshot_of("a.wav", &snap);
    assert_int_equal(snap.size, 8);
    ct_file_record r;
    make_record(&r);
    json_t *p;
    CT_ASSERT_OK(ct_checkpoint_payload(&r, "key", &snap, 1796161296.1753945, &p));
    ct_jbuf b = {0};
    CT_ASSERT_OK(ct_state_envelope(p, &b));
    const char *head = "{\n  \"schema_version\": 1,\n  \"payload_sha256\": \"";
    assert_true(strncmp(b.data, head, strlen(head)) == 0);
    assert_true(strstr(b.data, "\"updated_unix_seconds\": 1796161296.1753945,\n") != NULL);
    assert_true(strstr(b.data, "\"vad_provider_options\": {\n        \"CPUExecutionProvider\": {}\n      },") != NULL);
    write_bytes(".a.cohere-transcribe.asr.json", b.data, b.len);

    /* restore into a fresh record: the same content back */
    ct_file_record back = {0};
    int dfd = open_dir(), ok = 0;
    char reason[CT_REASON_MAX];
    CT_ASSERT_OK(ct_checkpoint_restore(dfd, ".a.cohere-transcribe.asr.json", "key", &snap, &back, &ok, reason));
    if (!ok) fail_msg("not restored: %s", reason);
    assert_int_equal(back.resumed, 1);
    assert_int_equal(back.n_segments, 2);
    assert_string_equal(back.segments[0].text, r.segments[0].text);
    assert_int_equal(back.segments[1].generated_tokens, 1);
    assert_int_equal(back.n_token_limit, 1);
    assert_string_equal(back.generation_id, r.generation_id);
    assert_string_equal(back.vad_provider, "CPUExecutionProvider");
    assert_true(back.duration == 3.2 && back.speech_spans[1].end == 3.0);
    /* and the same payload again from it */
    json_t *again;
    CT_ASSERT_OK(ct_checkpoint_payload(&back, "key", &snap, 1796161296.1753945, &again));
    assert_true(json_equal(p, again));
    json_decref(again);

    /* rules 2-4 */
    CT_ASSERT_OK(ct_checkpoint_restore(dfd, ".a.cohere-transcribe.asr.json", "other", &snap, &back, &ok, reason));
    assert_false(ok);
    assert_string_equal(reason, "ASR checkpoint contract does not match");
    ct_source_snapshot moved = snap;
    moved.mtime_ns++;
    CT_ASSERT_OK(ct_checkpoint_restore(dfd, ".a.cohere-transcribe.asr.json", "key", &moved, &back, &ok, reason));
    assert_false(ok);
    assert_string_equal(reason, "state marker source snapshot does not match");
    json_t *m = json_deep_copy(p);
    json_object_set_new(m, "kind", json_string("published"));
    CT_ASSERT_OK(ct_checkpoint_restore_payload(m, "key", &snap, &back, &ok, reason));
    assert_string_equal(reason, "state is \"published\", not an ASR checkpoint");
    json_decref(m);

    /* rule 5, a few of the details */
    struct {
        const char *field, *json, *want;
    } bad[] = {
        {"segment_times", "[[0.25, 2.0], [1.5, 3.0]]", "segment_times contains overlapping or out-of-order rows"},
        {"segment_times", "[[0.25, 2.0], [2.5, 3.3]]", "segment_times contains an out-of-range row"},
        {"segment_times", "[[0.25, 2.0], [2.5, \"x\"]]", "segment_times contains a non-numeric row"},
        {"speech_spans", "{}", "speech_spans is not a list"},
        {"segment_texts", "[\"a\"]", "segment text/time counts differ"},
        {"generated_tokens", "[[0, 1], [0, 2]]", "generated_tokens contains a duplicate segment index"},
        {"generated_tokens", "[[2, 1]]", "generated_tokens contains an invalid row"},
        {"token_limit_segments", "[1, 1]", "token_limit_segments contains duplicate indices"},
        {"repetition_stopped_segments", "[5]", "repetition_stopped_segments is invalid"},
        {"vad_provider", "3", "checkpoint provenance strings are invalid"},
        {"vad_provider_options", "[]", "vad_provider_options is invalid"},
        {"duration", "-1.0", "duration is invalid"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m = json_deep_copy(p);
        json_object_set_new(json_object_get(m, "checkpoint"), bad[i].field, json_loads(bad[i].json, JSON_DECODE_ANY, NULL));
        CT_ASSERT_OK(ct_checkpoint_restore_payload(m, "key", &snap, &back, &ok, reason));
        assert_false(ok);
        char want[512];
        snprintf(want, sizeof want, "ASR checkpoint is invalid (%s)", bad[i].want);
        assert_string_equal(reason, want);
        json_decref(m);
    }
    /* a rejected checkpoint leaves the record as it was */
    assert_int_equal(back.n_segments, 2);
    assert_string_equal(back.segments[0].text, r.segments[0].text);
    close(dfd);
    ct_jbuf_free(&b);
    json_decref(p);
    ct_file_record_clear(&r);
    ct_file_record_clear(&back);
    ct_source_snapshot_clear(&snap);
}

static void test_envelope_reader_reasons(void **st) {
    (void)st;
    expect_read_reason("absent.json", "state marker is missing or not a regular file");
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/target.json", g_dir);
    snprintf(b, sizeof b, "%s/link.json", g_dir);
    ct_test_write_file(a, "{}", 2);
    assert_int_equal(symlink(a, b), 0);
    expect_read_reason("link.json", "state marker is missing or not a regular file");
    write_bytes("garbage.json", "{\"schema_version\": 1,", 21);
    expect_read_reason("garbage.json", "state marker is unreadable (JSON::ParserError");
    write_bytes("array.json", "[1]", 3);
    expect_read_reason("array.json", "state marker root is not an object");
    write_bytes("schema.json", "{\"schema_version\": 2, \"payload\": {}}", 36);
    expect_read_reason("schema.json", "state marker schema is unsupported");
    write_bytes("payload.json", "{\"schema_version\": 1, \"payload\": []}", 36);
    expect_read_reason("payload.json", "state marker payload is not an object");
    /* sha256("{}") is 44136fa3...; a different digest fails */
    const char *tampered = "{\"schema_version\": 1, \"payload_sha256\": \"00\", \"payload\": {}}";
    write_bytes("digest.json", tampered, strlen(tampered));
    expect_read_reason("digest.json", "state marker integrity check failed");
    const char *good = "{\"schema_version\": 1, \"payload_sha256\": "
                       "\"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a\", \"payload\": {}}";
    write_bytes("good.json", good, strlen(good));
    int dfd = open_dir(), ok = 0;
    char reason[CT_REASON_MAX];
    json_t *p;
    CT_ASSERT_OK(ct_state_read(dfd, "good.json", &p, &ok, reason));
    assert_true(ok);
    json_decref(p);
    /* over the 64 MiB cap (sparse) */
    int fd = openat(dfd, "big.json", O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)CT_STATE_MAX_BYTES + 1), 0);
    close(fd);
    close(dfd);
    expect_read_reason("big.json", "State marker is too large");
}

static void test_manifest_verification(void **st) {
    (void)st;
    write_bytes("t.wav", "RIFFdata", 8);
    ct_source_snapshot snap;
    snapshot_of("t.wav", &snap);
    ct_file_record r;
    make_record(&r);
    ct_output_member outs[2] = {{CT_FORMAT_TXT, "t.txt", "x\n", 2}, {CT_FORMAT_JSON, "t.json", "{}\n", 3}};
    json_t *p;
    CT_ASSERT_OK(ct_manifest_payload(&r, "A", "R", &snap, 1.5, outs, 2, &p));
    /* §3.4 Observed: outputs keyed by format, sorted, {name, size, sha256}
     * (json ca3d16…, size 3; txt 73cb38…, size 2) */
    ct_jbuf b = {0};
    CT_ASSERT_OK(ct_json_dump_canonical(json_object_get(p, "outputs"), &b));
    assert_string_equal(b.data, "{\"json\":{\"name\":\"t.json\",\"sha256\":\"ca3d163bab055381827226140568f3bef7eaac1"
                                "87cebd76878e0b63e9e442356\",\"size\":3},\"txt\":{\"name\":\"t.txt\",\"sha256\":"
                                "\"73cb3858a687a8494ca3323053016282f3dad39d42cf62ca4e79dda2aac7d9ac\",\"size\":2}}");
    ct_jbuf_free(&b);
    assert_string_equal(json_string_value(json_object_get(p, "kind")), "published");
    /* key order of §3.4 */
    const char *order[] = {"kind", "generation_id", "asr_contract_key", "render_contract_key", "source",
                           "updated_unix_seconds", "outputs"};
    size_t k = 0;
    const char *key;
    json_t *val;
    json_object_foreach(p, key, val) assert_string_equal(key, order[k++]);
    assert_int_equal(k, 7);
    write_bytes("t.txt", "x\n", 2);
    write_bytes("t.json", "{}\n", 3);
    ct_format fm[2] = {CT_FORMAT_TXT, CT_FORMAT_JSON};
    const char *names[2] = {"t.txt", "t.json"};
    ct_verify_request req = {"A", "R", &snap, fm, names, 2};
    int dfd = open_dir(), ok = 0;
    char reason[CT_REASON_MAX], *gid = NULL;
    CT_ASSERT_OK(ct_manifest_verify_payload(dfd, p, &req, &ok, reason, &gid));
    if (!ok) fail_msg("not verified: %s", reason);
    assert_string_equal(gid, r.generation_id);
    free(gid);
#define EXPECT_REASON(want)                                                           \
    do {                                                                              \
        CT_ASSERT_OK(ct_manifest_verify_payload(dfd, p, &req, &ok, reason, NULL));     \
        assert_false(ok);                                                             \
        assert_string_equal(reason, want);                                            \
    } while (0)
    req.asr_key = "B";
    EXPECT_REASON("state marker ASR contract does not match");
    req.asr_key = "A";
    req.render_key = "S";
    EXPECT_REASON("state marker render contract does not match");
    req.render_key = "R";
    ct_source_snapshot other = snap;
    other.size = 9;
    req.source = &other;
    EXPECT_REASON("state marker source snapshot does not match");
    req.source = &snap;
    req.n = 1;
    EXPECT_REASON("state marker output formats do not match");
    req.n = 2;
    names[1] = "u.json";
    EXPECT_REASON("state marker path for json does not match");
    names[1] = "t.json";
    write_bytes("t.json", "[]\n", 3);
    EXPECT_REASON("json output does not match its state marker");
    write_bytes("t.json", "{} \n", 4);
    EXPECT_REASON("json output does not match its state marker");
    char path[4096];
    snprintf(path, sizeof path, "%s/t.json", g_dir);
    unlink(path);
    EXPECT_REASON("json output is missing or not regular");
    assert_int_equal(symlink("t.txt", path), 0);
    EXPECT_REASON("json output is missing or not regular");
    json_object_set_new(p, "generation_id", json_string(""));
    EXPECT_REASON("state marker generation ID is invalid");
    json_object_set_new(p, "kind", json_string("asr_complete"));
    EXPECT_REASON("state is \"asr_complete\", not published");
    close(dfd);
    json_decref(p);
    ct_file_record_clear(&r);
    ct_source_snapshot_clear(&snap);
}

static void test_artifacts(void **st) {
    (void)st;
    write_bytes("silero_vad.onnx", "weights", 7);
    char w[4096];
    snprintf(w, sizeof w, "%s/silero_vad.onnx", g_dir);
    ct_artifacts a;
    CT_ASSERT_OK(ct_artifacts_compute(w, &a));
    /* the test binary itself (the library is linked statically) and the weights */
    assert_int_equal(a.n, 2);
    assert_string_equal(a.v[0].key, "bin/test_output_state");
    char exe_hex[65];
    CT_ASSERT_OK(ct_file_sha256("/proc/self/exe", exe_hex));
    assert_string_equal(a.v[0].sha256, exe_hex);
    assert_string_equal(a.v[1].key, "vad/silero_vad.onnx");
    /* sha256("weights") */
    assert_string_equal(a.v[1].sha256, "9a129038d9a00aed0cf6a7ea059ca50a813449061ab87848cf1a13eafdf33b2c");
    const ct_artifacts *once, *twice;
    CT_ASSERT_OK(ct_artifacts_process(w, &once));
    CT_ASSERT_OK(ct_artifacts_process(NULL, &twice));
    assert_ptr_equal(once, twice);
    assert_int_equal(twice->n, 2);
    char f1[65], f2[65];
    CT_ASSERT_OK(ct_implementation_fingerprint("0.1.0", &a, f1));
    CT_ASSERT_OK(ct_implementation_fingerprint("0.1.1", &a, f2));
    assert_string_not_equal(f1, f2);
    ct_artifacts_free(&a);
}

/* One file seen by two paths (bind mount: same device) or from two NFS
 * clients (same path, other device numbers) is the same source; a changed
 * inode, size, mtime or ctime, or another device AND another path, is not. */
static void test_source_identity(void **state) {
    (void)state;
    ct_source_snapshot a = {.canonical_path = (char *)"/data/x.wav", .device = 7, .inode = 42, .size = 100,
                            .mtime_ns = 5, .ctime_ns = 6};
    json_t *rec = ct_source_snapshot_json(&a);
    assert_non_null(rec);
    ct_source_snapshot b = a;
    assert_true(ct_source_matches(rec, &b));
    b.canonical_path = (char *)"/mnt/bind/x.wav"; /* same device, another path */
    assert_true(ct_source_matches(rec, &b));
    b = a;
    b.device = 99; /* another client's number for the same export and path */
    assert_true(ct_source_matches(rec, &b));
    b.canonical_path = (char *)"/elsewhere/x.wav"; /* another device and another path */
    assert_false(ct_source_matches(rec, &b));
    b = a;
    b.inode = 43;
    assert_false(ct_source_matches(rec, &b));
    b = a;
    b.size = 101;
    assert_false(ct_source_matches(rec, &b));
    b = a;
    b.mtime_ns = 50;
    assert_false(ct_source_matches(rec, &b));
    b = a;
    b.ctime_ns = 60;
    assert_false(ct_source_matches(rec, &b));
    json_decref(rec);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_contract_canonical_observed),
        cmocka_unit_test(test_asr_contract_fields),
        cmocka_unit_test(test_checkpoint_round_trip_and_reasons),
        cmocka_unit_test(test_envelope_reader_reasons),
        cmocka_unit_test(test_manifest_verification),
        cmocka_unit_test(test_artifacts),
        cmocka_unit_test(test_source_identity),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
