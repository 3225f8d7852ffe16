/* test_output_json.c — the JSON writer against PRODUCT-DETAILS §1.1/§3.2:
 * every observed float text, the layout rules' examples, string escaping,
 * the pretty and canonical forms, and a property test of the shortest
 * digits against Python repr (tests/fixtures/output/float_repr.txt, made by
 * tools/reference/make_float_vectors.py).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/json.h"
#include "testutil.h"

static void check_float(double v, const char *want) {
    char out[32];
    size_t n;
    CT_ASSERT_OK(ct_json_format_double(v, out, &n));
    if (strcmp(out, want) != 0) fail_msg("%.17g formatted as %s, want %s", v, out, want);
    assert_int_equal(n, strlen(want));
}

static void test_observed_floats(void **st) {
    (void)st;
    /* §1.1 "Observed:" */
    check_float(0.1, "0.1");
    check_float(1e-5, "0.00001");
    check_float(1e-7, "0.0000001");
    check_float(1e15, "1e+15");
    check_float(1e16, "1e+16");
    check_float(3599.9995, "3599.9995");
    check_float(0.30000000000000004, "0.30000000000000004");
    /* the rules' own examples */
    check_float(100.0, "100.0");
    check_float(123456789012345.0, "123456789012345.0");
    check_float(0.25, "0.25");
    check_float(0.0001, "0.0001");
    check_float(0.0000625, "0.0000625");
    check_float(0.000000123, "0.000000123");
    check_float(1e20, "1e+20");
    check_float(1.5e300, "1.5e+300");
    check_float(5e-324, "5e-324");
    check_float(1e-10, "1e-10");
    check_float(-0.0, "-0.0");
    check_float(0.0, "0.0");
    check_float(1.6099999999999999, "1.6099999999999999");
    /* from §1.3 and §3.2 */
    check_float(30.0, "30.0");
    check_float(3.2, "3.2");
    check_float(1.125, "1.125");
    check_float(6.0, "6.0");
    check_float(-2.5, "-2.5");
    /* boundaries of the plain/scientific rules */
    check_float(999999999999999.0, "999999999999999.0"); /* E = 14 */
    check_float(1234567890123456.7, "1234567890123456.8"); /* K = -1 > -7 */
    check_float(1.234e-8, "0.00000001234");                /* K = -11, |E| = 8 < 10 */
    check_float(1.2345e-10, "1.2345e-10");                 /* K = -14, |E| = 10 */
    check_float(1e-6, "0.000001");
}

static void test_nan_refused(void **st) {
    (void)st;
    char out[32];
    size_t n;
    CT_ASSERT_STATUS(ct_json_format_double(NAN, out, &n), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("NaN not allowed in JSON");
    CT_ASSERT_STATUS(ct_json_format_double(INFINITY, out, &n), CT_ERR_INVALID_ARG);
    CT_ASSERT_STATUS(ct_json_format_double(-INFINITY, out, &n), CT_ERR_INVALID_ARG);
}

/* Digits and exponent of a Python repr ("1.25e-07", "0.001", "123.0"). */
static void repr_digits(const char *repr, char d[32], int *K) {
    int n = 0, point = -1, e = 0, lead = 1;
    const char *p = repr;
    if (*p == '-') p++;
    int pos = 0; /* digits seen, including leading zeros */
    for (; *p && *p != 'e'; p++) {
        if (*p == '.') {
            point = pos;
            continue;
        }
        if (lead && *p == '0') {
            pos++;
            continue;
        }
        lead = 0;
        d[n++] = *p;
        pos++;
    }
    if (*p == 'e') e = atoi(p + 1);
    if (point < 0) point = pos;
    /* value = 0.d1d2.. * 10^(point - leading zeros) ... computed via
     * counting: digits after the point = pos - point */
    int after = pos - point;
    while (n > 1 && d[n - 1] == '0') {
        n--;
        after--;
    }
    d[n] = '\0';
    *K = e - after;
}

static void test_shortest_digits_match_python_repr(void **st) {
    (void)st;
    FILE *f = fopen(CT_FIXTURE("output/float_repr.txt"), "r");
    assert_non_null(f);
    char line[128];
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long bits;
        char repr[64];
        if (sscanf(line, "%llx %63s", &bits, repr) != 2) continue;
        double v;
        memcpy(&v, &bits, sizeof v);
        char want[32], got[24];
        int wk, gk;
        repr_digits(repr, want, &wk);
        ct_json_shortest_digits(v, got, &gk);
        if (strcmp(want, got) != 0 || wk != gk)
            fail_msg("%s: digits %s e%d, Python repr %s e%d", repr, got, gk, want, wk);
        /* the text reads back as the same double, and its layout is the
         * one §1.1 prescribes for these digits */
        char text[32];
        size_t n;
        CT_ASSERT_OK(ct_json_format_double(v, text, &n));
        if (strtod(text, NULL) != v) fail_msg("%s does not read back as %s", text, repr);
        int nd = (int)strlen(got), E = wk + nd - 1;
        int sci = !((wk >= 0 && abs(E) < 15) || (wk < 0 && (wk > -7 || abs(E) < 10)));
        if ((strchr(text, 'e') != NULL) != sci) fail_msg("%s: wrong layout for %s", text, repr);
        if (!sci && !strchr(text, '.')) fail_msg("%s: plain text without a point", text);
        count++;
    }
    fclose(f);
    assert_true(count > 8000);
}

static void test_random_doubles_round_trip(void **st) {
    (void)st;
    unsigned long long x = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double v;
        memcpy(&v, &x, sizeof v);
        if (!isfinite(v)) continue;
        char text[32], d[24];
        size_t n;
        int K;
        CT_ASSERT_OK(ct_json_format_double(v, text, &n));
        if (strtod(text, NULL) != v && !(v == 0)) fail_msg("%s does not read back as %.17g", text, v);
        if (v == 0) continue;
        /* shortest: one digit fewer never reads back */
        ct_json_shortest_digits(v, d, &K);
        int nd = (int)strlen(d);
        if (nd > 1) {
            char shorter[40];
            snprintf(shorter, sizeof shorter, "%.*e", nd - 2, fabs(v));
            if (strtod(shorter, NULL) == fabs(v)) fail_msg("%.17g: %s has %d digits, %s is shorter", v, d, nd, shorter);
        }
    }
}

static void check_escaped(const char *in, size_t n, const char *want) {
    ct_jbuf b = {0};
    CT_ASSERT_OK(ct_json_put_string(&b, in, n));
    if (strcmp(b.data, want) != 0) fail_msg("escaped as %s, want %s", b.data, want);
    ct_jbuf_free(&b);
}

static void test_string_escaping(void **st) {
    (void)st;
    check_escaped("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
    check_escaped("\b\f\n\r\t", 5, "\"\\b\\f\\n\\r\\t\"");
    check_escaped("\x01\x1f\x7f", 3, "\"\\u0001\\u001f\x7f\"");
    check_escaped("\0x", 2, "\"\\u0000x\"");
    /* raw UTF-8, "/" and U+2028 unescaped */
    check_escaped("مرحبا/\xe2\x80\xa8", strlen("مرحبا/\xe2\x80\xa8"), "\"مرحبا/\xe2\x80\xa8\"");
}

static char *dump(const json_t *v, int canonical) {
    ct_jbuf b = {0};
    CT_ASSERT_OK(canonical ? ct_json_dump_canonical(v, &b) : ct_json_dump_pretty(v, &b));
    return ct_jbuf_take(&b, NULL);
}

static void test_pretty_and_canonical(void **st) {
    (void)st;
    json_t *v = json_pack("{s:i, s:[], s:{}, s:[i, {s:n, s:b}], s:{s:f, s:s}}", "z", 1, "empty_a", "empty_o", "arr",
                          2, "k", "t", 1, "obj", "b", 0.5, "a", "x");
    assert_non_null(v);
    char *p = dump(v, 0);
    assert_string_equal(p, "{\n"
                           "  \"z\": 1,\n"
                           "  \"empty_a\": [],\n"
                           "  \"empty_o\": {},\n"
                           "  \"arr\": [\n"
                           "    2,\n"
                           "    {\n"
                           "      \"k\": null,\n"
                           "      \"t\": true\n"
                           "    }\n"
                           "  ],\n"
                           "  \"obj\": {\n"
                           "    \"b\": 0.5,\n"
                           "    \"a\": \"x\"\n"
                           "  }\n"
                           "}\n");
    char *c = dump(v, 1);
    assert_string_equal(c, "{\"arr\":[2,{\"k\":null,\"t\":true}],\"empty_a\":[],\"empty_o\":{},\"obj\":{\"a\":\"x\","
                           "\"b\":0.5},\"z\":1}");
    free(p);
    free(c);
    json_decref(v);
    /* keys sort by UTF-8 bytes: "B" < "a" < "é" */
    v = json_pack("{s:i, s:i, s:i}", "é", 1, "a", 2, "B", 3);
    c = dump(v, 1);
    assert_string_equal(c, "{\"B\":3,\"a\":2,\"é\":1}");
    free(c);
    json_decref(v);
}

static void test_parse_round_trip(void **st) {
    (void)st;
    const char *text = "{\n  \"a\": 0.00001,\n  \"b\": [\n    1e+16,\n    -0.0,\n    \"x\\u0000y\"\n  ]\n}\n";
    json_t *v;
    CT_ASSERT_OK(ct_json_parse(text, strlen(text), &v));
    char *p = dump(v, 0);
    assert_string_equal(p, text);
    free(p);
    json_decref(v);
    CT_ASSERT_STATUS(ct_json_parse("{\"a\":", 5, &v), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("JSON::ParserError");
    assert_null(v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_observed_floats),
        cmocka_unit_test(test_nan_refused),
        cmocka_unit_test(test_shortest_digits_match_python_repr),
        cmocka_unit_test(test_random_doubles_round_trip),
        cmocka_unit_test(test_string_escaping),
        cmocka_unit_test(test_pretty_and_canonical),
        cmocka_unit_test(test_parse_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
