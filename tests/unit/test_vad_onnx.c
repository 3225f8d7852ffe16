/* test_vad_onnx.c — the ONNX protobuf reader on hand-built messages: what it
 * collects (initializers, Constant nodes, subgraphs; raw, packed and
 * unpacked data) and how it refuses malformed input (truncation, overflow,
 * wrong wire types, size mismatches, deep nesting). Also reads the real
 * silero_vad.onnx and checks the tensors the network needs.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "vad/onnx.h"

/* A tiny protobuf writer. */
typedef struct {
    uint8_t b[4096];
    size_t n;
} pb;

static void put_varint(pb *p, uint64_t v) {
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        p->b[p->n++] = c | (v ? 0x80 : 0);
    } while (v);
}
static void put_key(pb *p, unsigned field, unsigned wire) { put_varint(p, (uint64_t)field << 3 | wire); }
static void put_bytes(pb *p, unsigned field, const void *d, size_t n) {
    put_key(p, field, 2);
    put_varint(p, n);
    memcpy(p->b + p->n, d, n);
    p->n += n;
}
static void put_str(pb *p, unsigned field, const char *s) { put_bytes(p, field, s, strlen(s)); }
static void put_msg(pb *p, unsigned field, const pb *m) { put_bytes(p, field, m->b, m->n); }
static void put_uint(pb *p, unsigned field, uint64_t v) {
    put_key(p, field, 0);
    put_varint(p, v);
}

/* ModelProto{ ir_version: 8, graph: g } */
static pb model_of(const pb *graph) {
    pb m = {0};
    put_uint(&m, 1, 8);
    put_msg(&m, 7, graph);
    return m;
}

static ct_onnx_model *parse_ok(const pb *m) {
    ct_onnx_model *om = NULL;
    CT_ASSERT_OK(ct_onnx_parse(m->b, m->n, &om));
    return om;
}

static void expect_format_error(const pb *m, const char *what) {
    ct_onnx_model *om = (ct_onnx_model *)1;
    CT_ASSERT_STATUS(ct_onnx_parse(m->b, m->n, &om), CT_ERR_FORMAT);
    assert_null(om);
    CT_ASSERT_ERROR_HAS(what);
}

static void test_collects_tensors(void **state) {
    (void)state;
    /* initializer "w": dims [2] unpacked, raw_data two floats */
    const float wv[2] = {1.5f, -2.0f};
    pb t1 = {0};
    put_uint(&t1, 1, 2);
    put_uint(&t1, 2, CT_ONNX_FLOAT);
    put_str(&t1, 8, "w");
    put_bytes(&t1, 9, wv, sizeof wv);
    /* initializer "f": dims [2,2] packed, float_data packed */
    const float fv[4] = {1, 2, 3, 4};
    pb d22 = {0};
    put_varint(&d22, 2);
    put_varint(&d22, 2);
    pb t2 = {0};
    put_bytes(&t2, 1, d22.b, d22.n);
    put_uint(&t2, 2, CT_ONNX_FLOAT);
    put_bytes(&t2, 4, fv, sizeof fv);
    put_str(&t2, 8, "f");
    /* initializer "i": int64_data unpacked, including a negative value */
    pb t3 = {0};
    put_uint(&t3, 1, 2);
    put_uint(&t3, 2, CT_ONNX_INT64);
    put_uint(&t3, 7, 7);
    put_uint(&t3, 7, (uint64_t)-1);
    put_str(&t3, 8, "i");
    /* subgraph "sub" with a Constant node whose value is a scalar float */
    const float cv = 0.25f;
    pb ct = {0};
    put_uint(&ct, 2, CT_ONNX_FLOAT);
    put_bytes(&ct, 9, &cv, 4);
    pb cattr = {0};
    put_str(&cattr, 1, "value");
    put_msg(&cattr, 5, &ct);
    put_uint(&cattr, 20, 4);
    pb cnode = {0};
    put_str(&cnode, 2, "c_out");
    put_str(&cnode, 4, "Constant");
    put_msg(&cnode, 5, &cattr);
    pb sub = {0};
    put_msg(&sub, 1, &cnode);
    put_str(&sub, 2, "sub"); /* name after the nodes: still applies to them */
    pb gattr = {0};
    put_str(&gattr, 1, "then_branch");
    put_msg(&gattr, 6, &sub);
    pb ifnode = {0};
    put_str(&ifnode, 4, "If");
    put_str(&ifnode, 2, "y");
    put_msg(&ifnode, 5, &gattr);
    pb g = {0};
    put_str(&g, 2, "top");
    put_msg(&g, 5, &t1);
    put_msg(&g, 1, &ifnode);
    put_msg(&g, 5, &t2);
    put_msg(&g, 5, &t3);
    put_uint(&g, 99, 5); /* unknown field: skipped */
    pb m = model_of(&g);
    ct_onnx_model *om = parse_ok(&m);
    assert_int_equal(ct_onnx_count(om), 4);
    const ct_onnx_tensor *w = ct_onnx_find(om, "w");
    assert_non_null(w);
    assert_string_equal(w->graph, "top");
    assert_int_equal(w->ndim, 1);
    assert_int_equal(w->dims[0], 2);
    assert_int_equal(w->nbytes, 8);
    assert_memory_equal(w->data, wv, 8);
    const ct_onnx_tensor *f = ct_onnx_find(om, "f");
    assert_int_equal(f->ndim, 2);
    assert_int_equal(f->numel, 4);
    assert_memory_equal(f->data, fv, 16);
    const ct_onnx_tensor *i = ct_onnx_find(om, "i");
    int64_t iv[2];
    memcpy(iv, i->data, 16);
    assert_int_equal(iv[0], 7);
    assert_int_equal(iv[1], -1);
    const ct_onnx_tensor *c = ct_onnx_find(om, "c_out");
    assert_non_null(c);
    assert_string_equal(c->graph, "sub");
    assert_int_equal(c->ndim, 0);
    assert_int_equal(c->numel, 1);
    float got;
    memcpy(&got, c->data, 4);
    assert_true(got == 0.25f);
    assert_null(ct_onnx_find(om, "nope"));
    ct_onnx_free(om);
    ct_onnx_free(NULL);
}

static void test_rejects_malformed(void **state) {
    (void)state;
    pb m = {0};
    /* no graph at all */
    put_uint(&m, 1, 8);
    expect_format_error(&m, "no graph");
    /* truncated varint */
    m.n = 0;
    m.b[m.n++] = 0x08;
    m.b[m.n++] = 0x80;
    expect_format_error(&m, "truncated varint");
    /* varint of 11 bytes / overflowing 64 bits */
    m.n = 0;
    m.b[m.n++] = 0x08;
    for (int k = 0; k < 9; k++) m.b[m.n++] = 0xff;
    m.b[m.n++] = 0x7f;
    expect_format_error(&m, "overflows");
    /* a length running past the end */
    m.n = 0;
    put_key(&m, 7, 2);
    put_varint(&m, 100);
    m.b[m.n++] = 0;
    expect_format_error(&m, "past the end");
    /* a huge length (2^63) must not wrap the pointer */
    m.n = 0;
    put_key(&m, 7, 2);
    put_varint(&m, (uint64_t)1 << 63);
    expect_format_error(&m, "past the end");
    /* group wire type */
    m.n = 0;
    put_key(&m, 7, 3);
    expect_format_error(&m, "wire type");
    /* field number 0 */
    m.n = 0;
    m.b[m.n++] = 0x02;
    expect_format_error(&m, "field number");
    /* graph given as a varint */
    m.n = 0;
    put_uint(&m, 7, 1);
    expect_format_error(&m, "ModelProto.graph");
    /* raw_data of the wrong size for the dims */
    pb t = {0};
    put_uint(&t, 1, 3);
    put_uint(&t, 2, CT_ONNX_FLOAT);
    put_str(&t, 8, "w");
    put_bytes(&t, 9, "12345678", 8);
    pb g = {0};
    put_msg(&g, 5, &t);
    m = model_of(&g);
    expect_format_error(&m, "raw_data size");
    /* float data missing */
    t.n = 0;
    put_uint(&t, 1, 3);
    put_uint(&t, 2, CT_ONNX_FLOAT);
    g.n = 0;
    put_msg(&g, 5, &t);
    m = model_of(&g);
    expect_format_error(&m, "no data");
    /* nine dimensions */
    t.n = 0;
    for (int k = 0; k < 9; k++) put_uint(&t, 1, 1);
    g.n = 0;
    put_msg(&g, 5, &t);
    m = model_of(&g);
    expect_format_error(&m, "8 dimensions");
    /* dims whose product overflows */
    t.n = 0;
    for (int k = 0; k < 4; k++) put_uint(&t, 1, (uint64_t)1 << 40);
    put_uint(&t, 2, CT_ONNX_FLOAT);
    g.n = 0;
    put_msg(&g, 5, &t);
    m = model_of(&g);
    expect_format_error(&m, "too large");
    /* packed float_data with a partial element */
    t.n = 0;
    put_uint(&t, 1, 1);
    put_uint(&t, 2, CT_ONNX_FLOAT);
    put_bytes(&t, 4, "123", 3);
    g.n = 0;
    put_msg(&g, 5, &t);
    m = model_of(&g);
    expect_format_error(&m, "truncated packed");
    /* subgraphs nested 40 deep */
    pb inner = {0};
    put_str(&inner, 2, "leaf");
    for (int k = 0; k < 40; k++) {
        pb attr = {0}, node = {0}, gr = {0};
        put_str(&attr, 1, "then_branch");
        put_msg(&attr, 6, &inner);
        put_str(&node, 4, "If");
        put_msg(&node, 5, &attr);
        put_msg(&gr, 1, &node);
        inner = gr;
        if (inner.n > 3500) break;
    }
    m = model_of(&inner);
    expect_format_error(&m, "nested too deeply");
    /* every truncation of a valid model fails cleanly or parses */
    const float wv[2] = {1.5f, -2.0f};
    t.n = 0;
    put_uint(&t, 1, 2);
    put_uint(&t, 2, CT_ONNX_FLOAT);
    put_str(&t, 8, "w");
    put_bytes(&t, 9, wv, sizeof wv);
    g.n = 0;
    put_msg(&g, 5, &t);
    m = model_of(&g);
    for (size_t cut = 0; cut < m.n; cut++) {
        ct_onnx_model *om;
        ct_status s = ct_onnx_parse(m.b, cut, &om);
        assert_int_equal(s, CT_ERR_FORMAT);
    }
}

/* The real file: the 16 kHz branch's tensors are Constant nodes inside the
 * top-level If's then_branch, with the shapes the network expects. */
static void test_real_silero_file(void **state) {
    (void)state;
    ct_onnx_model *om;
    CT_ASSERT_OK(ct_onnx_open(CT_TESTDATA("silero/silero_vad.onnx"), 0, &om));
    const ct_onnx_tensor *b = ct_onnx_find(om, "If_0_then_branch__Inline_0__stft.forward_basis_buffer");
    assert_non_null(b);
    assert_string_equal(b->graph, "If_0_then_branch");
    assert_int_equal(b->data_type, CT_ONNX_FLOAT);
    assert_int_equal(b->ndim, 3);
    assert_int_equal(b->dims[0], 258);
    assert_int_equal(b->dims[2], 256);
    assert_int_equal(b->nbytes, 258 * 256 * 4);
    const ct_onnx_tensor *w = ct_onnx_find(om, "If_0_then_branch__Inline_0__decoder.rnn.weight_hh");
    assert_non_null(w);
    assert_int_equal(w->dims[0], 512);
    assert_int_equal(w->dims[1], 128);
    ct_onnx_free(om);
    CT_ASSERT_STATUS(ct_onnx_open(CT_TESTDATA("silero/silero_vad.onnx"), 1000, &om), CT_ERR_LIMIT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collects_tensors),
        cmocka_unit_test(test_rejects_malformed),
        cmocka_unit_test(test_real_silero_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
