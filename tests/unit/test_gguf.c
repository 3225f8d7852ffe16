/* test_gguf.c — GGUF reader/writer: every metadata type and tensor dtype
 * round-trips; a safetensors checkpoint → GGUF → checkpoint gives identical
 * tensors and config, and GGUF → safetensors directory gives the original
 * files back; a GGUF written by the reference gguf-py (CrispASR's converter
 * conventions, tests/fixtures/gguf) loads; a corpus of malformed GGUF
 * images built here fails each with its status and cause. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compute/quant.h"
#include "core/fs.h"
#include "model/checkpoint.h"
#include "model/convert.h"
#include "model/gguf.h"
#include "model/random_model.h"
#include "model/tokenizer.h"
#include "model_testutil.h"
#include "testutil.h"

/* ---- a little GGUF image builder ---------------------------------------- */

typedef struct img {
    uint8_t b[1 << 14];
    size_t n;
} img;

static void u8(img *m, unsigned v) { m->b[m->n++] = (uint8_t)v; }
static void le(img *m, uint64_t v, int k) {
    for (int i = 0; i < k; i++) u8(m, (unsigned)(v >> (8 * i)) & 0xff);
}
static void str(img *m, const char *s) {
    le(m, strlen(s), 8);
    memcpy(m->b + m->n, s, strlen(s));
    m->n += strlen(s);
}
static void header(img *m, uint32_t ver, uint64_t nt, uint64_t nkv) {
    m->n = 0;
    memcpy(m->b, "GGUF", 4);
    m->n = 4;
    le(m, ver, 4);
    le(m, nt, 8);
    le(m, nkv, 8);
}
static void kv_u32(img *m, const char *k, uint32_t v) {
    str(m, k);
    le(m, CT_GGUF_U32, 4);
    le(m, v, 4);
}
/* tensor info with torch-order shape given innermost first (ne order) */
static void tinfo(img *m, const char *name, int nd, const uint64_t *ne, uint32_t type, uint64_t off) {
    str(m, name);
    le(m, (uint64_t)nd, 4);
    for (int i = 0; i < nd; i++) le(m, ne[i], 8);
    le(m, type, 4);
    le(m, off, 8);
}
static void pad(img *m, size_t a) {
    while (m->n % a) u8(m, 0);
}
static void data(img *m, size_t bytes) {
    for (size_t i = 0; i < bytes; i++) u8(m, (unsigned)(i * 7 + 1) & 0xff);
}

static void expect_bad(const img *m, ct_status want, const char *sub) {
    ct_gguf *g = (ct_gguf *)0x1;
    ct_status s = ct_gguf_open_buffer(m->b, m->n, "bad.gguf", &g);
    if (s != want) fail_msg("got %s (%s), want %s '%s'", ct_status_str(s), ct_last_error(), ct_status_str(want), sub);
    assert_null(g);
    CT_ASSERT_ERROR_HAS(sub);
    CT_ASSERT_ERROR_HAS("bad.gguf");
}

/* A valid image: one u32 key, tensors a [2,3] f32 at 0 and b [4] f16 at 32. */
static void good(img *m) {
    header(m, 3, 2, 1);
    kv_u32(m, "k", 5);
    uint64_t ne_a[2] = {3, 2}, ne_b[1] = {4};
    tinfo(m, "a", 2, ne_a, 0, 0);
    tinfo(m, "b", 1, ne_b, 1, 32);
    pad(m, 32);
    data(m, 32 + 8);
}

static void test_malformed(void **state) {
    (void)state;
    img m;
    good(&m);
    ct_gguf *g;
    CT_ASSERT_OK(ct_gguf_open_buffer(m.b, m.n, "ok", &g));
    assert_int_equal(ct_gguf_tensor_count(g), 2);
    assert_int_equal(ct_gguf_find_tensor(g, "a")->shape[0], 2);
    assert_int_equal(ct_gguf_find_tensor(g, "a")->shape[1], 3);
    ct_gguf_free(g);
    /* every truncation fails cleanly */
    size_t full = m.n;
    for (size_t cut = 0; cut < full; cut++) {
        ct_status s = ct_gguf_open_buffer(m.b, cut, "bad.gguf", &g);
        if (s != CT_ERR_FORMAT) fail_msg("cut at %zu: %s (%s)", cut, ct_status_str(s), ct_last_error());
        CT_ASSERT_ERROR_HAS("bad.gguf");
    }
    assert_int_equal(ct_gguf_open_buffer(m.b, 3, "bad.gguf", &g), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("no 'GGUF' magic");
    assert_int_equal(ct_gguf_open_buffer(m.b, 20, "bad.gguf", &g), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("truncated");
    assert_int_equal(ct_gguf_open_buffer(m.b, full - 1, "bad.gguf", &g), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("'b': bytes [32, 40) lie outside the data area of 39 bytes");

    good(&m);
    m.b[0] = 'X';
    expect_bad(&m, CT_ERR_FORMAT, "no 'GGUF' magic");
    good(&m);
    m.b[4] = 1;
    expect_bad(&m, CT_ERR_UNSUPPORTED, "GGUF version 1 is not supported");
    good(&m);
    m.b[4] = 4;
    expect_bad(&m, CT_ERR_UNSUPPORTED, "version 4");
    good(&m);
    m.b[15] = 0x10; /* tensor count 2^60 + 2 */
    expect_bad(&m, CT_ERR_FORMAT, "tensor infos cannot fit");
    good(&m);
    m.b[23] = 0x7f;
    expect_bad(&m, CT_ERR_FORMAT, "metadata entries cannot fit");
    good(&m);
    m.b[24 + 7] = 0x40; /* key length huge */
    expect_bad(&m, CT_ERR_FORMAT, "truncated: metadata key needs");

    header(&m, 3, 0, 1);
    str(&m, "k");
    le(&m, 13, 4);
    expect_bad(&m, CT_ERR_FORMAT, "key 'k': unknown value type 13");
    header(&m, 3, 0, 1);
    str(&m, "k");
    le(&m, CT_GGUF_BOOL, 4);
    u8(&m, 2);
    expect_bad(&m, CT_ERR_FORMAT, "bool value 2");
    header(&m, 3, 0, 1);
    str(&m, "");
    le(&m, CT_GGUF_U8, 4);
    u8(&m, 2);
    expect_bad(&m, CT_ERR_FORMAT, "metadata key 0 is empty");
    header(&m, 3, 0, 2);
    kv_u32(&m, "k", 1);
    kv_u32(&m, "k", 2);
    expect_bad(&m, CT_ERR_FORMAT, "metadata key 'k' appears twice");
    header(&m, 3, 0, 1);
    str(&m, "arr");
    le(&m, CT_GGUF_ARRAY, 4);
    le(&m, CT_GGUF_U32, 4);
    le(&m, 1000, 8);
    le(&m, 1, 4);
    expect_bad(&m, CT_ERR_FORMAT, "key 'arr': array of 1000 elements runs past the end");
    header(&m, 3, 0, 1);
    str(&m, "arr");
    le(&m, CT_GGUF_ARRAY, 4);
    le(&m, CT_GGUF_STRING, 4);
    le(&m, (uint64_t)1 << 40, 8);
    expect_bad(&m, CT_ERR_FORMAT, "runs past the end");
    header(&m, 3, 0, 1);
    str(&m, "arr");
    le(&m, CT_GGUF_ARRAY, 4);
    for (int d = 0; d < 6; d++) {
        le(&m, CT_GGUF_ARRAY, 4);
        le(&m, 1, 8);
    }
    expect_bad(&m, CT_ERR_FORMAT, "nested deeper than");
    header(&m, 3, 0, 1);
    str(&m, "arr");
    le(&m, CT_GGUF_ARRAY, 4);
    le(&m, 99, 4);
    le(&m, 0, 8);
    expect_bad(&m, CT_ERR_FORMAT, "unknown array element type 99");
    header(&m, 3, 0, 1);
    kv_u32(&m, "general.alignment", 3);
    expect_bad(&m, CT_ERR_FORMAT, "general.alignment 3 is not a power of two");
    header(&m, 3, 0, 1);
    str(&m, "general.alignment");
    le(&m, CT_GGUF_STRING, 4);
    str(&m, "32");
    expect_bad(&m, CT_ERR_FORMAT, "general.alignment is not an integer");

    uint64_t ne[5] = {4, 1, 1, 1, 1};
    header(&m, 3, 1, 0);
    tinfo(&m, "q", 1, ne, 2, 0); /* Q4_0 */
    pad(&m, 32);
    data(&m, 32);
    expect_bad(&m, CT_ERR_UNSUPPORTED, "tensor 'q' has ggml type 2 (Q4_0)");
    CT_ASSERT_ERROR_HAS("the supported tensor types are F32, F16, BF16 and Q8_0");
    /* Q8_0: rows (ne[0]) a multiple of 32, 34 bytes per block */
    uint64_t ne48[2] = {48, 2}, ne64[2] = {64, 2};
    header(&m, 3, 1, 0);
    tinfo(&m, "q8", 2, ne48, 8, 0);
    pad(&m, 32);
    data(&m, 128);
    expect_bad(&m, CT_ERR_FORMAT, "tensor 'q8' is Q8_0 with rows of 48 elements (ne[0]); Q8_0 needs a multiple of 32");
    header(&m, 3, 1, 0);
    tinfo(&m, "q8", 2, ne64, 8, 0);
    pad(&m, 32);
    data(&m, 4 * 34 - 1);
    expect_bad(&m, CT_ERR_FORMAT, "'q8': bytes [0, 136) lie outside the data area of 135 bytes");
    u8(&m, 0);
    CT_ASSERT_OK(ct_gguf_open_buffer(m.b, m.n, "q8.gguf", &g));
    assert_int_equal(ct_gguf_find_tensor(g, "q8")->dtype, CT_DTYPE_Q8_0);
    assert_int_equal(ct_gguf_find_tensor(g, "q8")->nbytes, 136);
    assert_int_equal(ct_gguf_find_tensor(g, "q8")->shape[0], 2);
    ct_gguf_free(g);
    header(&m, 3, 1, 0);
    tinfo(&m, "z", 0, ne, 0, 0);
    expect_bad(&m, CT_ERR_FORMAT, "tensor 'z': 0 dimensions");
    header(&m, 3, 1, 0);
    tinfo(&m, "f", 5, ne, 0, 0);
    expect_bad(&m, CT_ERR_FORMAT, "tensor 'f': 5 dimensions");
    header(&m, 3, 1, 0);
    tinfo(&m, "m", 1, ne, 0, 4);
    pad(&m, 32);
    data(&m, 64);
    expect_bad(&m, CT_ERR_FORMAT, "offset 4 is not a multiple of the alignment 32");
    header(&m, 3, 1, 0);
    tinfo(&m, "o", 1, ne, 0, 64);
    pad(&m, 32);
    data(&m, 64);
    expect_bad(&m, CT_ERR_FORMAT, "'o': bytes [64, 80) lie outside the data area of 64 bytes");
    uint64_t big[2] = {(uint64_t)1 << 40, (uint64_t)1 << 40};
    header(&m, 3, 1, 0);
    tinfo(&m, "h", 2, big, 0, 0);
    expect_bad(&m, CT_ERR_FORMAT, "tensor 'h': shape overflows");
    uint64_t ne8[1] = {8};
    header(&m, 3, 2, 0);
    tinfo(&m, "x", 1, ne8, 0, 0);
    tinfo(&m, "y", 1, ne8, 0, 0);
    pad(&m, 32);
    data(&m, 32);
    expect_bad(&m, CT_ERR_FORMAT, "tensors 'x' and 'y' overlap");
    header(&m, 3, 2, 0);
    tinfo(&m, "x", 1, ne, 0, 0);
    tinfo(&m, "x", 1, ne, 0, 32);
    pad(&m, 32);
    data(&m, 64);
    expect_bad(&m, CT_ERR_FORMAT, "tensor 'x' appears twice");

    /* v2 files and a metadata-only file parse */
    header(&m, 2, 0, 1);
    kv_u32(&m, "k", 9);
    CT_ASSERT_OK(ct_gguf_open_buffer(m.b, m.n, "v2", &g));
    assert_int_equal(ct_gguf_version(g), 2);
    int64_t v;
    CT_ASSERT_OK(ct_gguf_get_int(g, "k", 0, 10, &v));
    assert_int_equal(v, 9);
    CT_ASSERT_STATUS(ct_gguf_get_int(g, "k", 0, 8, &v), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("'k' = 9 is out of range");
    CT_ASSERT_STATUS(ct_gguf_get_int(g, "absent", 0, 8, &v), CT_ERR_NOT_FOUND);
    const char *sv;
    CT_ASSERT_STATUS(ct_gguf_get_str(g, "k", &sv), CT_ERR_FORMAT);
    ct_gguf_free(g);
}

static void test_writer_types(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char p[4096];
    snprintf(p, sizeof p, "%s/t.gguf", dir);
    ct_gguf_writer *w;
    CT_ASSERT_OK(ct_gguf_writer_create(p, &w));
    CT_ASSERT_OK(ct_gguf_writer_set_u32(w, "u", 7));
    CT_ASSERT_OK(ct_gguf_writer_set_f32(w, "f", 2.5f));
    CT_ASSERT_OK(ct_gguf_writer_set_bool(w, "b", 1));
    CT_ASSERT_OK(ct_gguf_writer_set_str(w, "s", "h\xc3\xa9llo"));
    const char *sa[3] = {"x", "", "\xe2\x96\x81"};
    CT_ASSERT_OK(ct_gguf_writer_set_str_array(w, "sa", sa, 3));
    float fa[2] = {-1.5f, 3.0f};
    CT_ASSERT_OK(ct_gguf_writer_set_f32_array(w, "fa", fa, 2));
    int32_t ia[3] = {-7, 0, 1 << 30};
    CT_ASSERT_OK(ct_gguf_writer_set_i32_array(w, "ia", ia, 3));
    CT_ASSERT_STATUS(ct_gguf_writer_set_u32(w, "u", 8), CT_ERR_INVALID_ARG);
    int64_t s23[2] = {2, 3}, s5[1] = {5}, s4[3] = {1, 2, 2};
    CT_ASSERT_OK(ct_gguf_writer_add_tensor(w, "m", CT_DTYPE_F32, 2, s23));
    CT_ASSERT_OK(ct_gguf_writer_add_tensor(w, "h", CT_DTYPE_F16, 1, s5));
    CT_ASSERT_OK(ct_gguf_writer_add_tensor(w, "bf", CT_DTYPE_BF16, 3, s4));
    CT_ASSERT_STATUS(ct_gguf_writer_add_tensor(w, "u8", CT_DTYPE_U8, 1, s5), CT_ERR_INVALID_ARG);
    float m[6] = {1, 2, 3, 4, 5, 6};
    uint16_t h[5], bf[4];
    for (int i = 0; i < 5; i++) h[i] = ct_f32_to_f16((float)i / 4);
    for (int i = 0; i < 4; i++) bf[i] = ct_f32_to_bf16((float)-i);
    CT_ASSERT_OK(ct_gguf_writer_write(w, m));
    CT_ASSERT_OK(ct_gguf_writer_write(w, h));
    CT_ASSERT_STATUS(ct_gguf_writer_finish(w), CT_ERR_MISUSE);
    CT_ASSERT_ERROR_HAS("'bf'");
    CT_ASSERT_OK(ct_gguf_writer_write(w, bf));
    CT_ASSERT_STATUS(ct_gguf_writer_write(w, bf), CT_ERR_MISUSE);
    CT_ASSERT_OK(ct_gguf_writer_finish(w));
    ct_gguf_writer_free(w);

    ct_gguf *g;
    CT_ASSERT_OK(ct_gguf_open(p, &g));
    assert_int_equal(ct_gguf_version(g), 3);
    assert_int_equal(ct_gguf_alignment(g), 32);
    assert_int_equal(ct_gguf_kv_count(g), 7);
    int64_t iv;
    double dv;
    const char *sv;
    CT_ASSERT_OK(ct_gguf_get_int(g, "u", 0, 100, &iv));
    assert_int_equal(iv, 7);
    CT_ASSERT_OK(ct_gguf_get_float(g, "f", &dv));
    assert_true(dv == 2.5);
    assert_int_equal(ct_gguf_find(g, "b")->type, CT_GGUF_BOOL);
    assert_int_equal(ct_gguf_find(g, "b")->u, 1);
    CT_ASSERT_OK(ct_gguf_get_str(g, "s", &sv));
    assert_string_equal(sv, "h\xc3\xa9llo");
    const ct_gguf_value *a = ct_gguf_find(g, "sa");
    assert_int_equal(a->arr.elem, CT_GGUF_STRING);
    assert_int_equal(a->arr.n, 3);
    assert_string_equal(a->arr.items[2].str.s, "\xe2\x96\x81");
    assert_int_equal(a->arr.items[1].str.len, 0);
    a = ct_gguf_find(g, "fa");
    assert_true(ct_gguf_array_num(a, 0) == -1.5 && ct_gguf_array_num(a, 1) == 3.0);
    a = ct_gguf_find(g, "ia");
    assert_true(ct_gguf_array_num(a, 0) == -7 && ct_gguf_array_num(a, 2) == (double)(1 << 30));
    const ct_st_tensor *t = ct_gguf_find_tensor(g, "m");
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[0], 2);
    assert_int_equal(t->shape[1], 3);
    assert_memory_equal(t->data, m, sizeof m);
    assert_int_equal(((const uint8_t *)t->data - (const uint8_t *)ct_gguf_tensor_at(g, 0)->data) % 32, 0);
    t = ct_gguf_find_tensor(g, "h");
    assert_int_equal(t->dtype, CT_DTYPE_F16);
    assert_memory_equal(t->data, h, sizeof h);
    t = ct_gguf_find_tensor(g, "bf");
    assert_int_equal(t->dtype, CT_DTYPE_BF16);
    assert_int_equal(t->ndim, 3);
    assert_int_equal(t->shape[0], 1);
    assert_int_equal(t->shape[2], 2);
    assert_memory_equal(t->data, bf, sizeof bf);
    assert_int_equal(((uintptr_t)t->data - (uintptr_t)ct_gguf_tensor_at(g, 0)->data) % 32, 0);
    ct_gguf_free(g);
    ct_test_rmtree(dir);
}

/* ---- checkpoint round trips --------------------------------------------- */

static void assert_same_config(const ct_model_config *a, const ct_model_config *b) {
    const int x[] = {a->enc_layers, a->enc_d_model, a->enc_heads, a->enc_ff, a->enc_conv_kernel, a->subsampling_channels,
                     a->n_mels, a->dec_layers, a->dec_d_model, a->dec_heads, a->dec_ff, a->dec_max_positions,
                     a->vocab_size, a->pad_id, a->eos_id, a->bos_id, a->decoder_start_id};
    const int y[] = {b->enc_layers, b->enc_d_model, b->enc_heads, b->enc_ff, b->enc_conv_kernel, b->subsampling_channels,
                     b->n_mels, b->dec_layers, b->dec_d_model, b->dec_heads, b->dec_ff, b->dec_max_positions,
                     b->vocab_size, b->pad_id, b->eos_id, b->bos_id, b->decoder_start_id};
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        if (x[i] != y[i]) fail_msg("config field %zu: %d != %d", i, x[i], y[i]);
}

static void assert_files_equal(const char *d1, const char *d2, const char *name) {
    char p1[4096], p2[4096];
    snprintf(p1, sizeof p1, "%s/%s", d1, name);
    snprintf(p2, sizeof p2, "%s/%s", d2, name);
    char *a, *b;
    size_t na, nb;
    CT_ASSERT_OK(ct_fs_read_all(p1, 1 << 26, &a, &na));
    CT_ASSERT_OK(ct_fs_read_all(p2, 1 << 26, &b, &nb));
    if (na != nb || memcmp(a, b, na)) fail_msg("%s differs after the round trip", name);
    free(a);
    free(b);
}

/* As for safetensors: after a failed write the writer refuses the retry
 * and finish, and no file appears. */
static void test_writer_failure_is_sticky(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char path[4096];
    CT_ASSERT_OK(ct_path_join(path, sizeof path, dir, "w.gguf"));
    static float data[3 << 10];
    int64_t shape[1] = {3 << 10};
    ct_gguf_writer *w;
    CT_ASSERT_OK(ct_gguf_writer_create(path, &w));
    CT_ASSERT_OK(ct_gguf_writer_set_str(w, "general.architecture", "cohere_asr"));
    CT_ASSERT_OK(ct_gguf_writer_add_tensor(w, "a", CT_DTYPE_F32, 1, shape));
    ct_test_limit_file_size(4096);
    ct_status s = ct_gguf_writer_write(w, data);
    ct_test_limit_file_size(0);
    assert_int_equal(s, CT_ERR_IO);
    CT_ASSERT_STATUS(ct_gguf_writer_write(w, data), CT_ERR_MISUSE);
    CT_ASSERT_ERROR_HAS("w.gguf: an earlier write failed");
    CT_ASSERT_STATUS(ct_gguf_writer_finish(w), CT_ERR_MISUSE);
    CT_ASSERT_ERROR_HAS("w.gguf: an earlier write failed");
    assert_false(ct_fs_is_file(path));
    ct_gguf_writer_free(w);
    assert_false(ct_fs_is_file(path));
    ct_test_rmtree(dir);
}

static void test_round_trip(void **state) {
    (void)state;
    const char *d1 = ct_test_tmpdir(), *d2 = ct_test_tmpdir();
    ct_random_model_opts o = ct_test_tiny_model(5);
    CT_ASSERT_OK(ct_random_model_write(&o, d1));
    char gp[4096], back[4096], gp16[4096];
    snprintf(gp, sizeof gp, "%s/m.gguf", d2);
    snprintf(gp16, sizeof gp16, "%s/m16.gguf", d2);
    snprintf(back, sizeof back, "%s/back", d2);
    CT_ASSERT_OK(ct_convert_to_gguf(d1, gp, CT_CONVERT_KEEP_DTYPE));
    ct_checkpoint *a, *b, *c;
    CT_ASSERT_OK(ct_checkpoint_open(d1, &a));
    CT_ASSERT_OK(ct_checkpoint_open(gp, &b));
    assert_int_equal(ct_checkpoint_config(b)->layout, CT_CONFIG_GGUF);
    assert_same_config(ct_checkpoint_config(a), ct_checkpoint_config(b));
    /* all but the 2 BatchNorm counters travel, and fe.mel_fb / fe.window are
     * added (the transformers layout has none) */
    assert_int_equal(ct_checkpoint_count(b) + 2 - 2, ct_checkpoint_count(a));
    assert_non_null(ct_checkpoint_tensor(b, "preprocessor.featurizer.fb"));
    assert_non_null(ct_checkpoint_tensor(b, "preprocessor.featurizer.window"));
    ct_test_assert_tensors_in_except(b, a, "preprocessor.featurizer.");
    CT_ASSERT_OK(ct_convert_from_gguf(gp, back, CT_CONVERT_KEEP_DTYPE));
    CT_ASSERT_OK(ct_checkpoint_open(back, &c));
    assert_same_config(ct_checkpoint_config(a), ct_checkpoint_config(c));
    assert_int_equal(ct_checkpoint_count(c), ct_checkpoint_count(a));
    ct_test_assert_tensors_in(a, c);
    assert_files_equal(d1, back, "config.json");
    assert_files_equal(d1, back, "generation_config.json");
    assert_files_equal(d1, back, "tokenizer.json");
    /* the vocabulary the GGUF carries is usable by the tokenizer module */
    char tj0[4096];
    snprintf(tj0, sizeof tj0, "%s/tok-from-gguf.json", d2);
    CT_ASSERT_OK(ct_convert_gguf_tokenizer(gp, tj0));
    ct_tokenizer *tok;
    CT_ASSERT_OK(ct_tokenizer_load(tj0, &tok));
    assert_int_equal(ct_tokenizer_vocab_size(tok), 400);
    assert_int_equal(ct_tokenizer_id(tok, "\xe2\x96\x81"), ct_checkpoint_config(c)->decoder_start_id);
    assert_int_equal(ct_tokenizer_id(tok, "<|endoftext|>"), ct_checkpoint_config(c)->eos_id);
    assert_true(ct_tokenizer_is_special(tok, ct_tokenizer_id(tok, "<|en|>")));
    assert_false(ct_tokenizer_is_special(tok, ct_tokenizer_id(tok, "<0x41>")));
    int32_t ids[16];
    int np;
    CT_ASSERT_OK(ct_tokenizer_prompt(tok, "en", 1, ids, 16, &np));
    assert_int_equal(np, 10);
    assert_int_equal(ids[0], ct_checkpoint_config(c)->decoder_start_id);
    assert_int_equal(ids[4], ct_tokenizer_id(tok, "<|en|>"));
    ct_tokenizer_free(tok);
    ct_checkpoint_free(c);
    ct_checkpoint_free(b);

    /* narrowing to bf16 is exact for bf16-representable weights */
    CT_ASSERT_OK(ct_convert_to_gguf(d1, gp16, CT_DTYPE_BF16));
    CT_ASSERT_OK(ct_checkpoint_open(gp16, &b));
    assert_int_equal(ct_checkpoint_tensor(b, "encoder.layers.1.self_attn.linear_q.weight")->dtype, CT_DTYPE_BF16);
    ct_test_assert_tensors_in_except(b, a, "preprocessor.featurizer.");
    ct_checkpoint_free(b);
    ct_checkpoint_free(a);

    /* a GGUF that is not Cohere Transcribe, and one missing a tensor */
    char p[4096];
    snprintf(p, sizeof p, "%s/other.gguf", d2);
    ct_gguf_writer *w;
    CT_ASSERT_OK(ct_gguf_writer_create(p, &w));
    CT_ASSERT_OK(ct_gguf_writer_set_str(w, "general.architecture", "whisper"));
    CT_ASSERT_OK(ct_gguf_writer_finish(w));
    ct_gguf_writer_free(w);
    CT_ASSERT_STATUS(ct_checkpoint_open(p, &a), CT_ERR_UNSUPPORTED);
    CT_ASSERT_ERROR_HAS("general.architecture 'whisper' is not cohere-transcribe");
    char tj[4096];
    snprintf(tj, sizeof tj, "%s/t.json", d2);
    CT_ASSERT_STATUS(ct_convert_gguf_tokenizer(p, tj), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS("no tokenizer.ggml.tokens");
    CT_ASSERT_OK(ct_gguf_writer_create(p, &w));
    CT_ASSERT_OK(ct_gguf_writer_set_u32(w, "x", 1));
    CT_ASSERT_OK(ct_gguf_writer_finish(w));
    ct_gguf_writer_free(w);
    CT_ASSERT_STATUS(ct_checkpoint_open(p, &a), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS("general.architecture");
    ct_test_rmtree(d1);
    ct_test_rmtree(d2);
}

/* Two GGUF tensor names that map to one NeMo name ("enc.blk.01.…" beside
 * "enc.blk.1.…": the layer number is read as an integer) are refused with a
 * message naming both and what they collide on. */
static void test_name_collision(void **state) {
    (void)state;
    const char *d1 = ct_test_tmpdir(), *d2 = ct_test_tmpdir();
    ct_random_model_opts o = ct_random_model_default_options();
    o.enc_layers = 11, o.enc_d_model = 32, o.enc_heads = 2, o.enc_ff = 64, o.subsampling_channels = 8;
    o.dec_layers = 1, o.dec_d_model = 32, o.dec_heads = 2, o.dec_ff = 64, o.dec_max_positions = 64;
    o.vocab_size = 330, o.seed = 3, o.dtype = CT_DTYPE_F32;
    CT_ASSERT_OK(ct_random_model_write(&o, d1));
    char gp[4096];
    snprintf(gp, sizeof gp, "%s/m.gguf", d2);
    CT_ASSERT_OK(ct_convert_to_gguf(d1, gp, CT_CONVERT_KEEP_DTYPE));
    /* rename layer 10 to "01" in place (same length, so offsets hold) */
    char *buf;
    size_t n, hits = 0;
    CT_ASSERT_OK(ct_fs_read_all(gp, (size_t)1 << 30, &buf, &n));
    for (size_t i = 0; i + 11 <= n; i++)
        if (memcmp(buf + i, "enc.blk.10.", 11) == 0) memcpy(buf + i, "enc.blk.01.", 11), hits++;
    assert_true(hits > 10);
    CT_ASSERT_OK(ct_fs_write_atomic(gp, buf, n));
    free(buf);
    ct_checkpoint *ck = (ct_checkpoint *)0x1;
    CT_ASSERT_STATUS(ct_checkpoint_open(gp, &ck), CT_ERR_FORMAT);
    assert_null(ck);
    CT_ASSERT_ERROR_HAS("m.gguf: tensors 'enc.blk.01.");
    CT_ASSERT_ERROR_HAS("' and 'enc.blk.1.");
    CT_ASSERT_ERROR_HAS("' both map to 'encoder.layers.1.");
    assert_null(strstr(ct_last_error(), "model."));
    ct_test_rmtree(d1);
    ct_test_rmtree(d2);
}

/* tests/fixtures/gguf/crisp-tiny.gguf was written by gguf-py following
 * CrispASR's converter (f16 matrices, f32 vectors; no counters) from the
 * random model with the options below (tools/reference/make_gguf_fixture.py). */
static void test_reference_gguf(void **state) {
    (void)state;
    const char *d1 = ct_test_tmpdir();
    ct_random_model_opts o = ct_random_model_default_options();
    o.enc_layers = 2, o.enc_d_model = 32, o.enc_heads = 2, o.enc_ff = 64, o.subsampling_channels = 8;
    o.dec_layers = 1, o.dec_d_model = 32, o.dec_heads = 2, o.dec_ff = 64, o.dec_max_positions = 64;
    o.vocab_size = 330, o.seed = 3, o.dtype = CT_DTYPE_F32;
    CT_ASSERT_OK(ct_random_model_write(&o, d1));
    ct_checkpoint *a, *b;
    CT_ASSERT_OK(ct_checkpoint_open(d1, &a));
    CT_ASSERT_OK(ct_checkpoint_open(CT_FIXTURE("gguf/crisp-tiny.gguf"), &b));
    assert_same_config(ct_checkpoint_config(a), ct_checkpoint_config(b));
    size_t n16 = 0;
    for (size_t i = 0; i < ct_checkpoint_count(b); i++) {
        const ct_st_tensor *y = ct_checkpoint_at(b, i), *x = ct_checkpoint_tensor(a, y->name);
        if (!strcmp(y->name, "preprocessor.featurizer.window")) { /* fe.window, unused by the model */
            assert_int_equal(y->ndim, 1);
            assert_int_equal(y->shape[0], 400);
            continue;
        }
        if (!x) fail_msg("fixture tensor %s is not in the model", y->name);
        assert_int_equal(x->ndim, y->ndim);
        for (int k = 0; k < x->ndim; k++) assert_int_equal(x->shape[k], y->shape[k]);
        size_t n = (size_t)x->numel;
        float *fx = malloc(n * 4), *fy = malloc(n * 4);
        CT_ASSERT_OK(ct_st_tensor_to_f32(x, fx, n));
        CT_ASSERT_OK(ct_st_tensor_to_f32(y, fy, n));
        if (y->dtype == CT_DTYPE_F16) {
            n16++;
            for (size_t k = 0; k < n; k++) fx[k] = ct_f16_to_f32(ct_f32_to_f16(fx[k]));
        } else {
            assert_int_equal(y->dtype, CT_DTYPE_F32);
        }
        if (memcmp(fx, fy, n * 4)) fail_msg("fixture tensor %s differs", y->name);
        free(fx);
        free(fy);
    }
    assert_true(n16 > 10);
    /* two counters dropped, fe.window added */
    assert_int_equal(ct_checkpoint_count(b) + 2 - 1, ct_checkpoint_count(a));
    ct_checkpoint_free(a);
    ct_checkpoint_free(b);
    ct_test_rmtree(d1);
}

/* A CrispASR-style Q8_0 file (tools/reference/make_gguf_fixture.py --q8_0,
 * gguf-py's quantizer) reads: its matrices are Q8_0 blocks of the random
 * model's values, each within half a step of its block (plus the f16
 * rounding of the step), our quantizer makes the same bytes from the same
 * floats, and it converts to a directory (values dequantised exactly, f32). */
static void test_q8_0_reads(void **state) {
    (void)state;
    const char *d1 = ct_test_tmpdir();
    ct_random_model_opts o = ct_random_model_default_options();
    o.enc_layers = 2, o.enc_d_model = 32, o.enc_heads = 2, o.enc_ff = 64, o.subsampling_channels = 8;
    o.dec_layers = 1, o.dec_d_model = 32, o.dec_heads = 2, o.dec_ff = 64, o.dec_max_positions = 64;
    o.vocab_size = 330, o.seed = 3, o.dtype = CT_DTYPE_F32;
    CT_ASSERT_OK(ct_random_model_write(&o, d1));
    const char *p = CT_FIXTURE("gguf/crisp-tiny-q8_0.gguf");
    ct_checkpoint *a, *b;
    CT_ASSERT_OK(ct_checkpoint_open(d1, &a));
    CT_ASSERT_OK(ct_checkpoint_open(p, &b));
    size_t nq = 0, blocks = 0, same_bytes = 0;
    for (size_t i = 0; i < ct_checkpoint_count(b); i++) {
        const ct_st_tensor *y = ct_checkpoint_at(b, i), *x = ct_checkpoint_tensor(a, y->name);
        if (y->dtype != CT_DTYPE_Q8_0) continue;
        assert_non_null(x);
        nq++;
        assert_int_equal(y->ndim, 2);
        assert_int_equal(y->shape[1] % 32, 0);
        assert_int_equal(y->nbytes, (size_t)y->numel / 32 * 34);
        size_t n = (size_t)x->numel;
        float *fx = malloc(n * 4), *fy = malloc(n * 4);
        unsigned char *mine = malloc(y->nbytes);
        CT_ASSERT_OK(ct_st_tensor_to_f32(x, fx, n));
        CT_ASSERT_OK(ct_st_tensor_to_f32(y, fy, n));
        assert_int_equal(ct_q80_quantize_row(mine, fx, CT_DTYPE_F32, (int64_t)n), -1);
        for (size_t bk = 0; bk < n / 32; bk++) {
            const unsigned char *blk = (const unsigned char *)y->data + bk * 34;
            uint16_t h;
            memcpy(&h, blk, 2);
            float amax = 0.0f;
            for (int k = 0; k < 32; k++) amax = fmaxf(amax, fabsf(fx[bk * 32 + k]));
            const float d = ct_f16_to_f32(h), d32 = amax / 127.0f;
            for (int k = 0; k < 32; k++) {
                const float e = fabsf(fy[bk * 32 + k] - fx[bk * 32 + k]);
                if (!(e <= 0.5f * d32 * (1.0f + 0x1p-10f) + 127.0f * fabsf(d - d32) + 1e-7f))
                    fail_msg("%s block %zu: error %g, step %g", y->name, bk, e, d);
            }
            same_bytes += memcmp(mine + bk * 34, blk, 34) == 0;
            blocks++;
        }
        free(fx), free(fy), free(mine);
    }
    assert_true(nq > 10);
    print_message("Q8_0 fixture: %zu tensors, %zu of %zu blocks byte-identical to ours\n", nq, same_bytes, blocks);
    assert_int_equal(same_bytes, blocks);
    char d[4096];
    snprintf(d, sizeof d, "%s/back", ct_test_tmpdir());
    CT_ASSERT_OK(ct_convert_from_gguf(p, d, CT_CONVERT_KEEP_DTYPE));
    ct_checkpoint *c;
    CT_ASSERT_OK(ct_checkpoint_open(d, &c));
    const ct_st_tensor *q = ct_checkpoint_tensor(b, "encoder.layers.0.self_attn.linear_q.weight");
    const ct_st_tensor *f = ct_checkpoint_tensor(c, "encoder.layers.0.self_attn.linear_q.weight");
    assert_int_equal(q->dtype, CT_DTYPE_Q8_0);
    assert_int_equal(f->dtype, CT_DTYPE_F32);
    float *fq = malloc((size_t)q->numel * 4);
    CT_ASSERT_OK(ct_st_tensor_to_f32(q, fq, (size_t)q->numel));
    assert_memory_equal(fq, f->data, (size_t)q->numel * 4);
    free(fq);
    /* safetensors has no Q8_0 */
    CT_ASSERT_STATUS(ct_convert_from_gguf(p, d, CT_DTYPE_Q8_0), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("safetensors has no Q8_0");
    ct_checkpoint_free(c);
    ct_checkpoint_free(a);
    ct_checkpoint_free(b);
    ct_test_rmtree(d1);
}

static void test_names(void **state) {
    (void)state;
    const char *pairs[][2] = {
        {"encoder.layers.12.self_attn.linear_q.weight", "enc.blk.12.attn.q.weight"},
        {"encoder.layers.0.self_attn.pos_bias_u", "enc.blk.0.attn.pos_bias_u"},
        {"encoder.layers.3.conv.batch_norm.running_var", "enc.blk.3.conv.bn.var"},
        {"encoder.layers.3.conv.batch_norm.bias", "enc.blk.3.conv.bn.bias"},
        {"encoder.layers.47.norm_out.weight", "enc.blk.47.out_norm.weight"},
        {"encoder.pre_encode.conv.5.bias", "enc.pre.conv.5.bias"},
        {"encoder_decoder_proj.weight", "enc.proj.weight"},
        {"transf_decoder._decoder.layers.7.second_sub_layer.out_projection.bias", "dec.blk.7.cross_o.bias"},
        {"transf_decoder._decoder.layers.0.third_sub_layer.dense_out.weight", "dec.blk.0.ffn_down.weight"},
        {"transf_decoder._embedding.position_embedding.pos_enc", "dec.pos.weight"},
        {"log_softmax.mlp.layer0.weight", "dec.head.weight"},
        {"preprocessor.featurizer.fb", "fe.mel_fb"},
    };
    char out[256];
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        CT_ASSERT_OK(ct_gguf_name_from_nemo(pairs[i][0], out, sizeof out));
        assert_string_equal(out, pairs[i][1]);
        CT_ASSERT_OK(ct_gguf_name_to_nemo(pairs[i][1], out, sizeof out));
        assert_string_equal(out, pairs[i][0]);
    }
    CT_ASSERT_STATUS(ct_gguf_name_from_nemo("encoder.layers.0.conv.batch_norm.num_batches_tracked", out, sizeof out),
                     CT_ERR_NOT_FOUND);
    CT_ASSERT_STATUS(ct_gguf_name_to_nemo("enc.blk.x.attn.q.weight", out, sizeof out), CT_ERR_NOT_FOUND);
    CT_ASSERT_STATUS(ct_gguf_name_to_nemo("enc.proj.", out, sizeof out), CT_ERR_NOT_FOUND);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malformed),     cmocka_unit_test(test_writer_types),
        cmocka_unit_test(test_round_trip),    cmocka_unit_test(test_writer_failure_is_sticky),
        cmocka_unit_test(test_name_collision),    cmocka_unit_test(test_reference_gguf),
        cmocka_unit_test(test_names),         cmocka_unit_test(test_q8_0_reads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
