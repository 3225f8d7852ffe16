/* test_safetensors.c — the safetensors reader against files written by the
 * reference `safetensors` library (tests/fixtures/st, made by
 * tools/reference/make_st_fixture.py), writer round trips, and a corpus of
 * malformed files generated here, each asserting the status and the cause. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "model/hub.h"
#include "model/safetensors.h"
#include "testutil.h"

/* A safetensors image: 8-byte length (hl, or the real header length when
 * hl < 0), the header text, then data_len bytes of 0x11. */
static uint8_t *make_img(const char *header, long long hl, size_t data_len, size_t *len) {
    size_t h = strlen(header);
    *len = 8 + h + data_len;
    uint8_t *p = malloc(*len);
    uint64_t v = hl < 0 ? (uint64_t)h : (uint64_t)hl;
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
    memcpy(p + 8, header, h);
    memset(p + 8 + h, 0x11, data_len);
    return p;
}

/* Parse the image; want the status and a substring of the message. */
static void expect_bad(const char *header, long long hl, size_t data_len, ct_status want, const char *sub) {
    size_t len;
    uint8_t *img = make_img(header, hl, data_len, &len);
    ct_safetensors *st = (ct_safetensors *)0x1;
    ct_status s = ct_st_open_buffer(img, len, "bad.safetensors", &st);
    if (s != want) fail_msg("header %s: got %s (%s), want %s", header, ct_status_str(s), ct_last_error(), ct_status_str(want));
    assert_null(st);
    CT_ASSERT_ERROR_HAS(sub);
    CT_ASSERT_ERROR_HAS("bad.safetensors");
    free(img);
}

static void test_reference_file(void **state) {
    (void)state;
    ct_safetensors *st;
    CT_ASSERT_OK(ct_st_open(CT_FIXTURE("st/ref.safetensors"), &st));
    assert_int_equal(ct_st_count(st), 8);
    /* ordered by name */
    const char *names[] = {"a", "b", "c", "d", "e", "f", "g", "s"};
    for (int i = 0; i < 8; i++) assert_string_equal(ct_st_at(st, (size_t)i)->name, names[i]);
    assert_null(ct_st_at(st, 8));
    assert_null(ct_st_find(st, "zz"));
    assert_string_equal(ct_st_metadata(st, "format"), "pt");
    assert_string_equal(ct_st_metadata(st, "note"), "reference");
    assert_null(ct_st_metadata(st, "absent"));
    assert_int_equal(ct_st_metadata_count(st), 2);

    const ct_st_tensor *a = ct_st_find(st, "a");
    assert_int_equal(a->dtype, CT_DTYPE_F32);
    assert_int_equal(a->ndim, 2);
    assert_int_equal(a->shape[0], 2);
    assert_int_equal(a->shape[1], 3);
    assert_int_equal(a->nbytes, 24);
    float f[6];
    CT_ASSERT_OK(ct_st_tensor_to_f32(a, f, 6));
    for (int i = 0; i < 6; i++) assert_true(f[i] == 0.5f * (float)i);

    float b[4];
    CT_ASSERT_OK(ct_st_tensor_to_f32(ct_st_find(st, "b"), b, 4));
    assert_true(b[0] == 1.0f && b[1] == -2.0f && b[2] == 0.5f && b[3] == 3.140625f);
    const ct_st_tensor *c = ct_st_find(st, "c");
    assert_int_equal(c->dtype, CT_DTYPE_I64);
    int64_t cv[3];
    memcpy(cv, c->data, sizeof cv);
    assert_true(cv[0] == 1 && cv[1] == -1 && cv[2] == (int64_t)1 << 40);
    float d[2];
    CT_ASSERT_OK(ct_st_tensor_to_f32(ct_st_find(st, "d"), d, 2));
    assert_true(d[0] == 0.5f && d[1] == -65504.0f);
    int32_t e;
    memcpy(&e, ct_st_find(st, "e")->data, 4);
    assert_int_equal(e, 7);
    const uint8_t *u = ct_st_find(st, "f")->data;
    assert_true(u[0] == 1 && u[1] == 2 && u[2] == 255);
    const int8_t *g = ct_st_find(st, "g")->data;
    assert_true(g[0] == -128 && g[1] == 127);
    const ct_st_tensor *s = ct_st_find(st, "s");
    assert_int_equal(s->ndim, 0);
    assert_int_equal(s->numel, 1);
    float sv;
    CT_ASSERT_OK(ct_st_tensor_to_f32(s, &sv, 1));
    assert_true(sv == 2.5f);
    CT_ASSERT_STATUS(ct_st_tensor_to_f32(c, f, 3), CT_ERR_UNSUPPORTED);
    CT_ASSERT_STATUS(ct_st_tensor_to_f32(a, f, 5), CT_ERR_INVALID_ARG);
    ct_st_free(st);
    ct_st_free(NULL);
}

static void test_sharded(void **state) {
    (void)state;
    ct_safetensors *st;
    /* the directory finds the index first */
    CT_ASSERT_OK(ct_st_open(CT_FIXTURE("st/sharded"), &st));
    assert_int_equal(ct_st_count(st), 3);
    float w[4];
    CT_ASSERT_OK(ct_st_tensor_to_f32(ct_st_find(st, "y.weight"), w, 4));
    for (int i = 0; i < 4; i++) assert_true(w[i] == -1.5f);
    float x[6];
    CT_ASSERT_OK(ct_st_tensor_to_f32(ct_st_find(st, "x.weight"), x, 6));
    for (int i = 0; i < 6; i++) assert_true(x[i] == 1.0f);
    assert_string_equal(ct_st_metadata(st, "format"), "pt");
    ct_st_free(st);
    CT_ASSERT_OK(ct_st_open(CT_FIXTURE("st/sharded/model.safetensors.index.json"), &st));
    assert_int_equal(ct_st_count(st), 3);
    ct_st_free(st);
}

/* A small f32 file written by our writer: name → n floats of value v. */
static void write_st(const char *path, int n, const char *const *names, float v) {
    ct_st_writer *w;
    CT_ASSERT_OK(ct_st_writer_create(path, &w));
    int64_t shape[1] = {2};
    for (int i = 0; i < n; i++) CT_ASSERT_OK(ct_st_writer_add(w, names[i], CT_DTYPE_F32, 1, shape));
    float d[2] = {v, v};
    for (int i = 0; i < n; i++) CT_ASSERT_OK(ct_st_writer_write(w, d));
    CT_ASSERT_OK(ct_st_writer_finish(w));
    ct_st_writer_free(w);
}

static void test_writer_round_trip(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char path[4096];
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    ct_st_writer *w;
    CT_ASSERT_OK(ct_st_writer_create(path, &w));
    int64_t s_a[2] = {3, 5}, s_b[1] = {7}, s_e[2] = {0, 4}, s_c[1] = {3};
    CT_ASSERT_OK(ct_st_writer_add(w, "z.a", CT_DTYPE_F32, 2, s_a));
    CT_ASSERT_OK(ct_st_writer_add(w, "empty", CT_DTYPE_F32, 2, s_e));
    CT_ASSERT_OK(ct_st_writer_add(w, "b", CT_DTYPE_BF16, 1, s_b));
    CT_ASSERT_OK(ct_st_writer_add(w, "scalar", CT_DTYPE_I64, 0, s_b));
    CT_ASSERT_OK(ct_st_writer_add(w, "c", CT_DTYPE_U8, 1, s_c));
    CT_ASSERT_STATUS(ct_st_writer_add(w, "b", CT_DTYPE_F32, 1, s_b), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("declared twice");
    CT_ASSERT_OK(ct_st_writer_set_metadata(w, "format", "pt"));
    float a[15];
    for (int i = 0; i < 15; i++) a[i] = (float)i * 0.25f - 1.0f;
    uint16_t b[7];
    for (int i = 0; i < 7; i++) b[i] = ct_f32_to_bf16((float)i + 0.5f);
    int64_t sc = -42;
    uint8_t c[3] = {9, 8, 7};
    /* a in two chunks, the empty tensor needs no write */
    CT_ASSERT_OK(ct_st_writer_write_chunk(w, a, 20));
    CT_ASSERT_STATUS(ct_st_writer_write(w, a), CT_ERR_MISUSE); /* a is half written */
    CT_ASSERT_OK(ct_st_writer_write_chunk(w, (const uint8_t *)a + 20, 40));
    CT_ASSERT_STATUS(ct_st_writer_add(w, "late", CT_DTYPE_F32, 1, s_b), CT_ERR_MISUSE);
    CT_ASSERT_OK(ct_st_writer_write(w, b));
    CT_ASSERT_OK(ct_st_writer_write(w, &sc));
    CT_ASSERT_STATUS(ct_st_writer_write_chunk(w, c, 4), CT_ERR_MISUSE); /* overruns c */
    CT_ASSERT_OK(ct_st_writer_write(w, c));
    CT_ASSERT_STATUS(ct_st_writer_write(w, c), CT_ERR_MISUSE);
    CT_ASSERT_OK(ct_st_writer_finish(w));
    ct_st_writer_free(w);

    ct_mapping m;
    CT_ASSERT_OK(ct_fs_map(path, &m));
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | m.data[i];
    assert_int_equal(hl % 8, 0); /* data area 8-byte aligned, as safetensors pads */
    assert_int_equal(m.size, 8 + hl + 60 + 14 + 8 + 3);
    ct_fs_unmap(&m);

    ct_safetensors *st;
    CT_ASSERT_OK(ct_st_open(path, &st));
    assert_int_equal(ct_st_count(st), 5);
    const ct_st_tensor *t = ct_st_find(st, "z.a");
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[1], 5);
    assert_memory_equal(t->data, a, sizeof a);
    assert_int_equal(((uintptr_t)t->data) % 8, 0);
    t = ct_st_find(st, "empty");
    assert_int_equal(t->nbytes, 0);
    assert_int_equal(t->numel, 0);
    assert_memory_equal(ct_st_find(st, "b")->data, b, sizeof b);
    assert_int_equal(ct_st_find(st, "scalar")->ndim, 0);
    assert_memory_equal(ct_st_find(st, "scalar")->data, &sc, 8);
    assert_memory_equal(ct_st_find(st, "c")->data, c, 3);
    assert_string_equal(ct_st_metadata(st, "format"), "pt");
    ct_st_free(st);

    /* An unfinished writer leaves nothing behind. */
    char p2[4096];
    snprintf(p2, sizeof p2, "%s/unfinished.safetensors", dir);
    CT_ASSERT_OK(ct_st_writer_create(p2, &w));
    CT_ASSERT_OK(ct_st_writer_add(w, "x", CT_DTYPE_F32, 1, s_b));
    CT_ASSERT_STATUS(ct_st_writer_finish(w), CT_ERR_MISUSE);
    CT_ASSERT_ERROR_HAS("'x'");
    ct_st_writer_free(w);
    assert_false(ct_fs_is_file(p2));
    ct_test_rmtree(dir);
}

/* Issue 10 item 5: a caller writing tensor by tensor (cohere-transcribe-
 * inspect: features, encoder, tokens per clip) with some tensors empty (a
 * clip too short for one frame). Each write is its declared tensor: before
 * the fix the empty ones were skipped, so the next write took the wrong
 * buffer (a heap over-read under ASan, "more tensors written than declared"
 * otherwise). */
static void test_writer_empty_tensors_written_one_by_one(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char path[4096];
    snprintf(path, sizeof path, "%s/e.safetensors", dir);
    ct_st_writer *w;
    CT_ASSERT_OK(ct_st_writer_create(path, &w));
    int64_t s_f[2] = {0, 128}, s_e[2] = {0, 8}, s_t[1] = {3}, s_x[1] = {2};
    CT_ASSERT_OK(ct_st_writer_add(w, "features.0", CT_DTYPE_F32, 2, s_f));
    CT_ASSERT_OK(ct_st_writer_add(w, "encoder.0", CT_DTYPE_F32, 2, s_e));
    CT_ASSERT_OK(ct_st_writer_add(w, "tokens.0", CT_DTYPE_I32, 1, s_t));
    CT_ASSERT_OK(ct_st_writer_add(w, "x.1", CT_DTYPE_F32, 1, s_x));
    CT_ASSERT_OK(ct_st_writer_add(w, "empty.1", CT_DTYPE_F32, 2, s_e));
    /* the empty tensors' buffers are 1-element allocations, as malloc(0)-ish
     * callers have: reading 12 bytes from them would over-read */
    float *f = malloc(sizeof(float)), *e = malloc(sizeof(float)), x[2] = {1.5f, -2.0f};
    int32_t tok[3] = {7, 8, 9};
    CT_ASSERT_OK(ct_st_writer_write(w, f));
    CT_ASSERT_OK(ct_st_writer_write(w, e));
    CT_ASSERT_OK(ct_st_writer_write(w, tok));
    CT_ASSERT_OK(ct_st_writer_write(w, x));
    CT_ASSERT_OK(ct_st_writer_write(w, e));
    CT_ASSERT_STATUS(ct_st_writer_write(w, e), CT_ERR_MISUSE);
    CT_ASSERT_OK(ct_st_writer_finish(w));
    ct_st_writer_free(w);
    free(f);
    free(e);
    ct_safetensors *st;
    CT_ASSERT_OK(ct_st_open(path, &st));
    assert_int_equal(ct_st_count(st), 5);
    assert_int_equal(ct_st_find(st, "features.0")->nbytes, 0);
    assert_int_equal(ct_st_find(st, "encoder.0")->nbytes, 0);
    assert_memory_equal(ct_st_find(st, "tokens.0")->data, tok, sizeof tok);
    assert_memory_equal(ct_st_find(st, "x.1")->data, x, sizeof x);
    ct_st_free(st);

    /* trailing empties need no write before finish */
    CT_ASSERT_OK(ct_st_writer_create(path, &w));
    CT_ASSERT_OK(ct_st_writer_add(w, "tokens.0", CT_DTYPE_I32, 1, s_t));
    CT_ASSERT_OK(ct_st_writer_add(w, "encoder.0", CT_DTYPE_F32, 2, s_e));
    CT_ASSERT_OK(ct_st_writer_write(w, tok));
    CT_ASSERT_OK(ct_st_writer_finish(w));
    ct_st_writer_free(w);
    ct_test_rmtree(dir);
}

/* A write that fails part-way (the file-size cap, as a full disk would)
 * leaves the writer failed: the caller that ignores the error and writes
 * the tensor again, or finishes, is refused, and no file appears. */
static void test_writer_failure_is_sticky(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char path[4096];
    CT_ASSERT_OK(ct_path_join(path, sizeof path, dir, "w.safetensors"));
    static float data[3 << 10];
    int64_t shape[1] = {3 << 10};
    ct_st_writer *w;
    CT_ASSERT_OK(ct_st_writer_create(path, &w));
    CT_ASSERT_OK(ct_st_writer_add(w, "a", CT_DTYPE_F32, 1, shape));
    ct_test_limit_file_size(4096);
    ct_status s = ct_st_writer_write(w, data);
    ct_test_limit_file_size(0);
    assert_int_equal(s, CT_ERR_IO);
    CT_ASSERT_STATUS(ct_st_writer_write(w, data), CT_ERR_MISUSE);
    CT_ASSERT_ERROR_HAS("w.safetensors: an earlier write failed");
    CT_ASSERT_STATUS(ct_st_writer_write_chunk(w, data, 4), CT_ERR_MISUSE);
    CT_ASSERT_STATUS(ct_st_writer_finish(w), CT_ERR_MISUSE);
    CT_ASSERT_ERROR_HAS("w.safetensors: an earlier write failed");
    assert_false(ct_fs_is_file(path));
    ct_st_writer_free(w);
    assert_false(ct_fs_is_file(path));
    ct_test_rmtree(dir);
}

static void test_malformed_headers(void **state) {
    (void)state;
    const char *ok = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    /* a valid image parses, so the failures below are due to what changed */
    size_t len;
    uint8_t *img = make_img(ok, -1, 8, &len);
    ct_safetensors *st;
    CT_ASSERT_OK(ct_st_open_buffer(img, len, "ok", &st));
    ct_st_free(st);
    /* truncated: inside the length, inside the header, inside the data */
    size_t cuts[] = {0, 1, 7};
    for (int i = 0; i < 3; i++) {
        ct_status s = ct_st_open_buffer(img, cuts[i], "bad.safetensors", &st);
        assert_int_equal(s, CT_ERR_FORMAT);
        CT_ASSERT_ERROR_HAS("shorter than the 8-byte header length");
    }
    size_t hcuts[] = {8, 9, 8 + strlen(ok) / 2, 8 + strlen(ok) - 1};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(ct_st_open_buffer(img, hcuts[i], "bad.safetensors", &st), CT_ERR_FORMAT);
        CT_ASSERT_ERROR_HAS("runs past the end of the file");
    }
    for (size_t cut = 8 + strlen(ok); cut < len; cut++) {
        assert_int_equal(ct_st_open_buffer(img, cut, "bad.safetensors", &st), CT_ERR_FORMAT);
        CT_ASSERT_ERROR_HAS("outside the data area");
    }
    free(img);

    expect_bad(ok, 1LL << 40, 8, CT_ERR_FORMAT, "exceeds the cap");
    expect_bad(ok, 100000001, 8, CT_ERR_FORMAT, "exceeds the cap");
    expect_bad("{\"a\":", -1, 0, CT_ERR_FORMAT, "not valid JSON");
    expect_bad("", -1, 0, CT_ERR_FORMAT, "not valid JSON");
    expect_bad("[1,2]", -1, 0, CT_ERR_FORMAT, "not a JSON object");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
               "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
               -1, 8, CT_ERR_FORMAT, "duplicate");
    expect_bad("{\"a\":[1]}", -1, 0, CT_ERR_FORMAT, "entry is not an object");
    expect_bad("{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8, CT_ERR_FORMAT, "missing dtype");
    expect_bad("{\"a\":{\"dtype\":3,\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8, CT_ERR_FORMAT, "dtype is not a string");
    expect_bad("{\"a\":{\"dtype\":\"Q4_0\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8, CT_ERR_FORMAT, "unknown dtype 'Q4_0'");
    expect_bad("{\"a\":{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8, CT_ERR_FORMAT, "unknown dtype 'f32'");
    expect_bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}", -1, 8, CT_ERR_UNSUPPORTED, "dtype F64 is not supported");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", -1, 8, CT_ERR_FORMAT, "missing shape");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]}}", -1, 8, CT_ERR_FORMAT, "shape is not an array");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", -1, 8, CT_ERR_FORMAT, "shape[0] is not an integer");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", -1, 8, CT_ERR_FORMAT, "negative");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", -1, 4, CT_ERR_FORMAT, "dimensions exceed");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", -1, 8, CT_ERR_FORMAT, "shape overflows");
    expect_bad("{\"a\":{\"dtype\":\"I64\",\"shape\":[1152921504606846976],\"data_offsets\":[0,8]}}", -1, 8, CT_ERR_FORMAT, "shape overflows");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", -1, 8, CT_ERR_FORMAT, "missing data_offsets");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", -1, 8, CT_ERR_FORMAT, "not a pair of integers");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":\"0,8\"}}", -1, 8, CT_ERR_FORMAT, "not a pair of integers");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}}", -1, 8, CT_ERR_FORMAT, "outside the data area of 8 bytes");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", -1, 8, CT_ERR_FORMAT, "outside the data area");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", -1, 8, CT_ERR_FORMAT, "outside the data area");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", -1, 8, CT_ERR_FORMAT, "12 bytes but data_offsets span 8 bytes");
    expect_bad("{\"a\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8, CT_ERR_FORMAT, "4 bytes but data_offsets span 8");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
               -1, 12, CT_ERR_FORMAT, "'a' and 'b' overlap");
    expect_bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
               "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
               -1, 8, CT_ERR_FORMAT, "overlap");
    expect_bad("{\"__metadata__\":{\"k\":1}}", -1, 0, CT_ERR_FORMAT, "not a string");
    expect_bad("{\"__metadata__\":[]}", -1, 0, CT_ERR_FORMAT, "__metadata__ is not an object");
    expect_bad("{\"\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", -1, 0, CT_ERR_FORMAT, "empty name");

    /* Empty tensors share an offset with others without overlapping; padding
     * spaces after the JSON are allowed, as the reference writer emits them. */
    img = make_img("{\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
                   "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}    ",
                   -1, 8, &len);
    CT_ASSERT_OK(ct_st_open_buffer(img, len, "ok", &st));
    assert_int_equal(ct_st_count(st), 2);
    ct_st_free(st);
    free(img);
}

static void test_malformed_files_and_shards(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char p[4096];
    ct_safetensors *st = NULL;
    CT_ASSERT_STATUS(ct_st_open(dir, &st), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS("neither model.safetensors");
    snprintf(p, sizeof p, "%s/missing.safetensors", dir);
    CT_ASSERT_STATUS(ct_st_open(p, &st), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS("missing.safetensors");
    /* an empty file and a truncated one on disk */
    ct_test_write_text(dir, "empty.safetensors", "");
    snprintf(p, sizeof p, "%s/empty.safetensors", dir);
    CT_ASSERT_STATUS(ct_st_open(p, &st), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("shorter than the 8-byte");

    const char *n1[] = {"x.weight", "x.bias"}, *n2[] = {"y.weight"}, *n3[] = {"x.bias"};
    snprintf(p, sizeof p, "%s/s1.safetensors", dir);
    write_st(p, 2, n1, 1.0f);
    snprintf(p, sizeof p, "%s/s2.safetensors", dir);
    write_st(p, 1, n2, 2.0f);
    snprintf(p, sizeof p, "%s/s3.safetensors", dir);
    write_st(p, 1, n3, 3.0f);
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);

    ct_test_write_text(dir, "model.safetensors.index.json",
               "{\"weight_map\":{\"x.weight\":\"s1.safetensors\",\"x.bias\":\"s1.safetensors\","
               "\"y.weight\":\"s2.safetensors\"}}");
    CT_ASSERT_OK(ct_st_open(dir, &st));
    assert_int_equal(ct_st_count(st), 3);
    float v[2];
    CT_ASSERT_OK(ct_st_tensor_to_f32(ct_st_find(st, "y.weight"), v, 2));
    assert_true(v[0] == 2.0f);
    ct_st_free(st);

    struct {
        const char *index;
        ct_status want;
        const char *sub;
    } bad[] = {
        {"{\"weight_map\":{\"x.weight\":\"s1.safetensors\",\"x.bias\":\"s1.safetensors\","
         "\"y.weight\":\"gone.safetensors\"}}", CT_ERR_NOT_FOUND, "shard 'gone.safetensors'"},
        {"{\"weight_map\":{\"x.weight\":\"s1.safetensors\",\"x.bias\":\"s1.safetensors\","
         "\"y.weight\":\"s1.safetensors\"}}", CT_ERR_FORMAT, "'y.weight' is mapped to shard 's1.safetensors', which does not contain it"},
        {"{\"weight_map\":{\"x.weight\":\"s1.safetensors\",\"y.weight\":\"s2.safetensors\"}}",
         CT_ERR_FORMAT, "holds tensor 'x.bias', which the index does not list"},
        {"{\"weight_map\":{\"x.weight\":\"s1.safetensors\",\"x.bias\":\"s3.safetensors\","
         "\"y.weight\":\"s2.safetensors\"}}", CT_ERR_FORMAT, "'x.bias' appears twice"},
        {"{\"weight_map\":{\"x.weight\":\"../s1.safetensors\"}}", CT_ERR_FORMAT,
         "names '../s1.safetensors', not a path inside the index's directory (empty, '.' or '..' path segment)"},
        {"{\"weight_map\":{\"x.weight\":7}}", CT_ERR_FORMAT, "is not a string"},
        {"{\"weight_map\":{}}", CT_ERR_FORMAT, "weight_map is empty"},
        {"{\"metadata\":{}}", CT_ERR_FORMAT, "missing or ill-typed weight_map"},
        {"{\"weight_map\":{\"a\":\"s1.safetensors\",\"a\":\"s2.safetensors\"}}", CT_ERR_FORMAT, "duplicate"},
        {"{\"weight_map\":", CT_ERR_FORMAT, "not valid JSON"},
        {"[]", CT_ERR_FORMAT, "not a JSON object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ct_test_write_text(dir, "model.safetensors.index.json", bad[i].index);
        st = (ct_safetensors *)0x1;
        ct_status s = ct_st_open(dir, &st);
        if (s != bad[i].want)
            fail_msg("index %s: got %s (%s)", bad[i].index, ct_status_str(s), ct_last_error());
        assert_null(st);
        CT_ASSERT_ERROR_HAS(bad[i].sub);
    }
    /* A malformed shard is reported with its own path. */
    snprintf(p, sizeof p, "%s/s4.safetensors", dir);
    ct_test_write_file(p, "\x04\0\0\0\0\0\0\0{]}x", 12);
    ct_test_write_text(dir, "model.safetensors.index.json", "{\"weight_map\":{\"q\":\"s4.safetensors\"}}");
    CT_ASSERT_STATUS(ct_st_open(dir, &st), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("s4.safetensors: header is not valid JSON");
    ct_test_rmtree(dir);
}

/* {"weight_map":{"x.weight":"<name>"}} with name escaped for JSON. */
static void json_escape_into(char *out, size_t cap, const char *name) {
    size_t n = (size_t)snprintf(out, cap, "{\"weight_map\":{\"x.weight\":\"");
    for (const char *c = name; *c && n + 8 < cap; c++) {
        if (*c == '"' || *c == '\\') n += (size_t)snprintf(out + n, cap - n, "\\%c", *c);
        else if ((unsigned char)*c < 0x20) n += (size_t)snprintf(out + n, cap - n, "\\u%04x", (unsigned char)*c);
        else out[n++] = *c;
    }
    snprintf(out + n, cap - n, "\"}}");
}

/* Shards in subfolders of the index's directory load, as the Hub client
 * downloads them; hostile names are refused, and the index reader accepts
 * exactly the names the Hub client accepts. */
static void test_shards_in_subfolders(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char p[4096], abs_shard[4096], index[8192];
    const char *n1[] = {"x.weight", "x.bias"}, *n2[] = {"y.weight", "z"};
    snprintf(p, sizeof p, "%s/a", dir);
    CT_ASSERT_OK(ct_fs_mkdirs(p));
    snprintf(abs_shard, sizeof abs_shard, "%s/a/s1.safetensors", dir);
    write_st(abs_shard, 2, n1, 1.0f);
    snprintf(p, sizeof p, "%s/b/c", dir);
    CT_ASSERT_OK(ct_fs_mkdirs(p));
    snprintf(p, sizeof p, "%s/b/c/s2.safetensors", dir);
    write_st(p, 2, n2, 2.0f);

    ct_safetensors *st;
    ct_test_write_text(dir, "model.safetensors.index.json",
                       "{\"weight_map\":{\"x.weight\":\"a/s1.safetensors\",\"x.bias\":\"a/s1.safetensors\","
                       "\"y.weight\":\"b/c/s2.safetensors\",\"z\":\"b/c/s2.safetensors\"}}");
    CT_ASSERT_OK(ct_st_open(dir, &st));
    assert_int_equal(ct_st_count(st), 4);
    float v[2];
    CT_ASSERT_OK(ct_st_tensor_to_f32(ct_st_find(st, "y.weight"), v, 2));
    assert_true(v[0] == 2.0f);
    CT_ASSERT_OK(ct_st_tensor_to_f32(ct_st_find(st, "x.bias"), v, 2));
    assert_true(v[1] == 1.0f);
    ct_st_free(st);

    /* a tensor stored in another shard than the map says: both named in full */
    ct_test_write_text(dir, "model.safetensors.index.json",
                       "{\"weight_map\":{\"x.weight\":\"a/s1.safetensors\",\"x.bias\":\"a/s1.safetensors\","
                       "\"y.weight\":\"a/s1.safetensors\",\"z\":\"b/c/s2.safetensors\"}}");
    CT_ASSERT_STATUS(ct_st_open(dir, &st), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("'y.weight' is mapped to 'a/s1.safetensors' but stored in 'b/c/s2.safetensors'");

    /* hostile or malformed names, each naming an existing file one way or another */
    const char *hostile[] = {
        "../a/s1.safetensors", "a/../a/s1.safetensors", "a//s1.safetensors", "./a/s1.safetensors",
        "a/./s1.safetensors",  "a/",                    "a\\s1.safetensors", "C:a/s1.safetensors",
        "a/s1.safetensors\n",  abs_shard,               "",
    };
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        json_escape_into(index, sizeof index, hostile[i]);
        ct_test_write_text(dir, "model.safetensors.index.json", index);
        st = (ct_safetensors *)0x1;
        ct_status s = ct_st_open(dir, &st);
        if (s != CT_ERR_FORMAT) fail_msg("shard name '%s': got %s (%s)", hostile[i], ct_status_str(s), ct_last_error());
        assert_null(st);
        CT_ASSERT_ERROR_HAS("not a path inside the index's directory");
        /* the Hub client refuses the same name */
        CT_ASSERT_STATUS(ct_hub_validate_filename(hostile[i]), CT_ERR_INVALID_ARG);
    }
    CT_ASSERT_OK(ct_hub_validate_filename("a/s1.safetensors"));
    CT_ASSERT_OK(ct_hub_validate_filename("b/c/s2.safetensors"));
    /* a NUL inside the name: refused (jansson rejects \u0000 before we look) */
    ct_test_write_text(dir, "model.safetensors.index.json",
                       "{\"weight_map\":{\"x.weight\":\"a/s1.safetensors\\u0000x\"}}");
    CT_ASSERT_STATUS(ct_st_open(dir, &st), CT_ERR_FORMAT);
    ct_test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reference_file),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_writer_round_trip),
        cmocka_unit_test(test_writer_failure_is_sticky),
        cmocka_unit_test(test_writer_empty_tensors_written_one_by_one),
        cmocka_unit_test(test_malformed_headers),
        cmocka_unit_test(test_malformed_files_and_shards),
        cmocka_unit_test(test_shards_in_subfolders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
