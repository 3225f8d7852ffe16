/* test_cli_args.c — the option parser (src/cli/common/args.c), the
 * cohere-transcribe table and the options check (src/pipeline/options.c):
 * Python int()/float() syntax against values Python 3.11 gives, argparse's
 * token rules, the parse into ct_transcriber_options, the help layout on a
 * small spec, a doctor-like spec, every check message with options named as
 * fields, the table's defaults against ct_transcriber_default_options(),
 * the effective-value helpers, and 1,200 generated command lines against
 * the Python twin's own parse_args + validate_args
 * (tests/fixtures/cli/argparse_cases.json). Exit codes and the CLI-named
 * messages through the binary are tests/e2e/cli_args.sh. */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/args.h"
#include "common/transcribe_args.h"
#include "pipeline/options.h"
#include "testutil.h"

/* ---- number syntax (expected values from Python 3.11's int()/float()) ---- */

static void test_int_syntax(void **state) {
    (void)state;
    static const struct { const char *s; int ok; int v; } cases[] = {
        {"7", 1, 7}, {" 7 ", 1, 7}, {"+0", 1, 0}, {"-5", 1, -5}, {"1_000", 1, 1000}, {"0_0", 1, 0},
        {"007", 1, 7}, {"\xd9\xa3", 1, 3} /* ٣ */, {"-\xd9\xa3", 1, -3},
        {"\xd9\xa1\xd9\xa2\xd9\xa3", 1, 123} /* ١٢٣ */, {"\xe0\xa5\xa6\xe0\xa5\xaf", 1, 9} /* ०९ */,
        {"\xef\xbc\x91\xef\xbc\x92", 1, 12} /* fullwidth １２ */,
        {"\xf0\x9d\x9f\x8f\xf0\x9d\x9f\x90", 1, 12} /* mathematical bold 𝟏𝟐 */,
        {"\xc2\xa0" "7\xe3\x80\x80", 1, 7} /* NBSP, ideographic space */, {"\t\n7\r\v\f", 1, 7},
        {"99999999999999999999", 1, INT_MAX}, {"-99999999999999999999", 1, INT_MIN},
        {"", 0, 0}, {" ", 0, 0}, {"x", 0, 0}, {"1__0", 0, 0}, {"_1", 0, 0}, {"1_", 0, 0},
        {"0x10", 0, 0}, {"1.5", 0, 0}, {"+-1", 0, 0}, {"1 2", 0, 0}, {"\xd9\xa3x", 0, 0},
        {"\xc2\xb2", 0, 0} /* superscript two: No, not Nd */, {"\x1c" "5\x1f", 0, 0},
        {"\xe2\x80\x8b" "5", 0, 0} /* zero-width space is not whitespace */, {"\xff", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int v = 12345;
        int ok = ct_args_parse_int(cases[i].s, &v);
        if (ok != cases[i].ok) fail_msg("int(%s): ok %d", cases[i].s, ok);
        if (ok) assert_int_equal(v, cases[i].v);
    }
}

static void test_float_syntax(void **state) {
    (void)state;
    static const struct { const char *s; int ok; double v; } cases[] = {
        {"5.", 1, 5.0}, {".5", 1, 0.5}, {"-.5", 1, -0.5}, {"1e1", 1, 10.0}, {"1E-2", 1, 0.01},
        {"1_0.5", 1, 10.5}, {"1.0_5", 1, 1.05}, {"1e1_0", 1, 1e10}, {" 2.5 ", 1, 2.5},
        {"\xd9\xa3.\xd9\xa5", 1, 3.5}, {"1e-999", 1, 0.0}, {"+.5e-3", 1, 0.0005}, {"1e0_1", 1, 10.0},
        {"-0", 1, -0.0}, {"30", 1, 30.0},
        {"", 0, 0}, {".", 0, 0}, {"..5", 0, 0}, {"1e", 0, 0}, {"1_.5", 0, 0}, {"1._5", 0, 0},
        {"infinit", 0, 0}, {"nan1", 0, 0}, {"0x1p3", 0, 0}, {"1e+", 0, 0}, {"e5", 0, 0},
        {"in f", 0, 0}, {"1,5", 0, 0}, {"_1.0", 0, 0}, {"1.0_", 0, 0}, {"--1", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double v = 12345;
        int ok = ct_args_parse_float(cases[i].s, &v);
        if (ok != cases[i].ok) fail_msg("float(%s): ok %d", cases[i].s, ok);
        if (ok) assert_true(v == cases[i].v && signbit(v) == signbit(cases[i].v));
    }
    double v;
    assert_true(ct_args_parse_float("inf", &v) && isinf(v) && v > 0);
    assert_true(ct_args_parse_float("INF", &v) && isinf(v) && v > 0);
    assert_true(ct_args_parse_float("-InFiNiTy", &v) && isinf(v) && v < 0);
    assert_true(ct_args_parse_float("1e999", &v) && isinf(v) && v > 0);
    assert_true(ct_args_parse_float("nan", &v) && isnan(v));
    assert_true(ct_args_parse_float("+NaN", &v) && isnan(v));
}

static void test_negative_numbers(void **state) {
    (void)state;
    assert_true(ct_args_is_negative_number("-5"));
    assert_true(ct_args_is_negative_number("-.5"));
    assert_true(ct_args_is_negative_number("-1.5"));
    assert_true(ct_args_is_negative_number("-\xd9\xa3")); /* Python's \d is Unicode */
    assert_false(ct_args_is_negative_number("-5."));
    assert_false(ct_args_is_negative_number("-1e3"));
    assert_false(ct_args_is_negative_number("-"));
    assert_false(ct_args_is_negative_number("--5"));
    assert_false(ct_args_is_negative_number("-x"));
    assert_false(ct_args_is_negative_number("5"));
}

/* ---- the cohere-transcribe parse ------------------------------------------ */

#define MAXARGS 32

/* Parse a NULL-terminated argument list (without the program name). */
static int parse_list(ct_cli_result *r, const char *const *args) {
    char *argv[MAXARGS + 1];
    int argc = 0;
    argv[argc++] = (char *)"cohere-transcribe";
    for (; *args && argc < MAXARGS; args++) argv[argc++] = (char *)*args;
    argv[argc] = NULL;
    return ct_cli_parse(argc, argv, r);
}

#define PARSE(r, ...) parse_list(r, (const char *const[]){__VA_ARGS__, NULL})

static void expect_error(const char *msg, const char *const *args) {
    ct_cli_result r;
    assert_int_equal(parse_list(&r, args), 2);
    assert_int_equal(r.action, CT_ARGS_ERROR);
    assert_string_equal(r.error, msg);
    ct_cli_result_free(&r);
}
#define EXPECT_ERROR(msg, ...) expect_error(msg, (const char *const[]){__VA_ARGS__, NULL})

static void test_parse_values(void **state) {
    (void)state;
    ct_cli_result r;
    assert_int_equal(PARSE(&r, "a.wav", "--dev", "cpu", "--lang", "en", "--model-r", "main", "--vad", "none",
                           "--max-dur=12.5", "--min-dur", "-.5", "--batch-size", " 1_6 ", "--no-recursive",
                           "--existing=skip", "--dtype", "bf16", "--text-only", "--vad-merge"),
                     0);
    assert_int_equal(r.action, CT_ARGS_RUN);
    assert_int_equal(r.n_paths, 1);
    assert_string_equal(r.paths[0], "a.wav");
    const ct_transcriber_options *o = &r.options;
    assert_int_equal(o->cli_option_names, 1);
    assert_int_equal(o->device, CT_DEVICE_CPU);
    assert_string_equal(o->language, "en");
    assert_string_equal(o->model_revision, "main");
    assert_null(o->model);
    assert_int_equal(o->vad, CT_VAD_MODE_NONE);
    assert_true(o->max_dur == 12.5 && o->min_dur == -0.5);
    assert_int_equal(o->batch_size, 16);
    assert_int_equal(o->recursive, 0);
    assert_int_equal(o->existing, CT_EXISTING_SKIP);
    assert_int_equal(o->dtype, CT_PRECISION_BF16);
    assert_int_equal(o->text_only, 1);
    assert_int_equal(o->vad_merge, 1);
    /* untouched options keep the defaults */
    assert_int_equal(o->max_new_tokens, 445);
    assert_int_equal(o->stop_repetition_loops, 1);
    assert_int_equal(o->punctuation, 1);
    /* given[] marks what was on the command line */
    const ct_args_spec *spec = ct_cli_transcribe_spec();
    int dev = ct_args_lookup(spec, "--device", 8), mnt = ct_args_lookup(spec, "--max-new-tokens", 16);
    assert_true(dev >= 0 && mnt >= 0);
    assert_int_equal(r.args.given[dev], 1);
    assert_int_equal(r.args.given[mnt], 0);
    ct_cli_result_free(&r);

    /* ours: unique prefixes that no original option shares */
    assert_int_equal(PARSE(&r, "--device-i", "3", "--th", "4", "--no-pu", "--vad-w", "w.onnx", "x"), 0);
    assert_int_equal(r.options.device_index, 3);
    assert_int_equal(r.options.device, CT_DEVICE_AUTO);
    assert_int_equal(r.options.threads, 4);
    assert_int_equal(r.options.punctuation, 0);
    assert_string_equal(r.options.vad_weights, "w.onnx");
    ct_cli_result_free(&r);

    /* the last of a boolean pair wins; values may start with '-' after '=' */
    assert_int_equal(PARSE(&r, "--recursive", "--no-recursive", "--recursive", "--model=-m", "x"), 0);
    assert_int_equal(r.options.recursive, 1);
    assert_string_equal(r.options.model, "-m");
    ct_cli_result_free(&r);

    /* --formats: deduplicated in order; the last occurrence wins */
    assert_int_equal(PARSE(&r, "a.wav", "--formats", "srt", "--formats", "json", "txt", "json", "vtt", "txt"), 0);
    assert_int_equal(r.options.n_formats, 3);
    assert_int_equal(r.options.formats[0], CT_FORMAT_JSON);
    assert_int_equal(r.options.formats[1], CT_FORMAT_TXT);
    assert_int_equal(r.options.formats[2], CT_FORMAT_VTT);
    ct_cli_result_free(&r);
    assert_int_equal(PARSE(&r, "--formats=srt", "a.wav", "b.wav"), 0);
    assert_int_equal(r.options.n_formats, 1);
    assert_int_equal(r.options.formats[0], CT_FORMAT_SRT);
    assert_int_equal(r.n_paths, 2);
    ct_cli_result_free(&r);
    /* --formats=txt srt: srt is the audio */
    assert_int_equal(PARSE(&r, "--formats=txt", "srt", "--recursive"), 0);
    assert_int_equal(r.n_paths, 1);
    assert_string_equal(r.paths[0], "srt");
    ct_cli_result_free(&r);

    /* an explicit 0 where 0 means "unset" still reads as not positive */
    assert_int_equal(PARSE(&r, "--batch-size", "0", "--preprocess-workers", "0", "--batch-audio-seconds", "0",
                           "--vad-threads", "0", "--batch-max-size", "0", "x"),
                     0);
    assert_int_equal(r.options.batch_size, -1);
    assert_int_equal(r.options.preprocess_workers, -1);
    assert_true(r.options.batch_audio_seconds == -1);
    assert_int_equal(r.options.vad_threads, -1);
    assert_int_equal(r.options.batch_max_size, -1);
    ct_cli_result_free(&r);
}

static void test_parse_positionals(void **state) {
    (void)state;
    ct_cli_result r;
    /* before or after options, one run; "--" ends options */
    assert_int_equal(PARSE(&r, "--vad", "none", "a.wav", "b.wav", "--max-dur", "5"), 0);
    assert_int_equal(r.n_paths, 2);
    ct_cli_result_free(&r);
    assert_int_equal(PARSE(&r, "a.wav", "--", "b.wav", "--model"), 0);
    assert_int_equal(r.n_paths, 3);
    assert_string_equal(r.paths[2], "--model");
    ct_cli_result_free(&r);
    assert_int_equal(PARSE(&r, "--", "--model"), 0);
    assert_int_equal(r.n_paths, 1);
    assert_string_equal(r.paths[0], "--model");
    ct_cli_result_free(&r);
    /* negative numbers, a lone '-', and tokens holding a space are positionals */
    assert_int_equal(PARSE(&r, "-5", "-", "-a b.wav", "--max-dur", "-.5"), 0);
    assert_int_equal(r.n_paths, 3);
    assert_string_equal(r.paths[0], "-5");
    assert_string_equal(r.paths[1], "-");
    assert_string_equal(r.paths[2], "-a b.wav");
    assert_true(r.options.max_dur == -0.5);
    ct_cli_result_free(&r);
    /* --help and --version end the parse */
    assert_int_equal(PARSE(&r, "--bogus", "--he"), 0);
    assert_int_equal(r.action, CT_ARGS_HELP);
    ct_cli_result_free(&r);
    assert_int_equal(PARSE(&r, "x", "--bogus", "--vers"), 0);
    assert_int_equal(r.action, CT_ARGS_VERSION);
    ct_cli_result_free(&r);
}

static void test_parse_errors(void **state) {
    (void)state;
    EXPECT_ERROR("missing argument: audio", "--vad", "none");
    EXPECT_ERROR("ambiguous option: --max", "a.wav", "--max", "3");
    EXPECT_ERROR("ambiguous option: --max", "--help", "--max");
    EXPECT_ERROR("ambiguous option: --mod", "a.wav", "--mod", "x");
    EXPECT_ERROR("invalid option: --text-only conflicts with --alignment", "--alignment", "none", "--text-only", "x");
    EXPECT_ERROR("invalid option: --text-only conflicts with --alignment", "--text-only", "--alignment", "word", "-h");
    {
        ct_cli_result r;
        assert_int_equal(PARSE(&r, "-h", "--text-only", "--alignment", "none"), 0);
        assert_int_equal(r.action, CT_ARGS_HELP);
        ct_cli_result_free(&r);
    }
    EXPECT_ERROR("invalid option: --bogus", "a.wav", "--bogus");
    EXPECT_ERROR("invalid argument: --device --device: invalid choice \"cu\"; choose from auto, mps, cuda, cpu",
                 "a.wav", "--device", "cu");
    EXPECT_ERROR("invalid argument: --vad --vad: invalid choice \"bogus\"; choose from silero, auditok, none",
                 "a.wav", "--vad", "bogus");
    /* int8 is ours: accepted, and the original's message still lists its own four */
    EXPECT_ERROR("invalid argument: --dtype --dtype: invalid choice \"int4\"; choose from auto, bf16, fp16, fp32",
                 "a.wav", "--dtype", "int4");
    {
        ct_cli_result r;
        assert_int_equal(PARSE(&r, "a.wav", "--dtype", "int8"), 0);
        assert_int_equal(r.options.dtype, CT_PRECISION_INT8);
        ct_cli_result_free(&r);
    }
    /* --align-dtype bf16 and auto are ours too (the default stays fp32) */
    EXPECT_ERROR("invalid argument: --align-dtype --align-dtype: invalid choice \"int8\"; choose from fp32, fp16",
                 "a.wav", "--align-dtype", "int8");
    {
        ct_cli_result r;
        assert_int_equal(PARSE(&r, "a.wav"), 0);
        assert_int_equal(r.options.align_dtype, CT_PRECISION_FP32);
        ct_cli_result_free(&r);
        assert_int_equal(PARSE(&r, "a.wav", "--align-dtype", "bf16"), 0);
        assert_int_equal(r.options.align_dtype, CT_PRECISION_BF16);
        ct_cli_result_free(&r);
        assert_int_equal(PARSE(&r, "a.wav", "--align-dtype", "auto"), 0);
        assert_int_equal(r.options.align_dtype, CT_PRECISION_AUTO);
        ct_cli_result_free(&r);
    }
    EXPECT_ERROR("invalid argument: unsupported output formats: a.wav", "--formats", "txt", "a.wav");
    EXPECT_ERROR("invalid argument: unsupported output formats: -", "a.wav", "--formats", "-");
    EXPECT_ERROR("invalid argument: unsupported output formats: wav, csv", "a.wav", "--formats", "wav", "txt", "csv",
                 "wav");
    EXPECT_ERROR("missing argument: --formats", "a.wav", "--formats", "--model", "m");
    EXPECT_ERROR("missing argument: --max-new-tokens", "a.wav", "--max-new-tokens", "-1e3");
    EXPECT_ERROR("missing argument: --max-dur", "a.wav", "--max-dur", "-x");
    EXPECT_ERROR("invalid argument: invalid integer value: \"x\"", "a.wav", "--max-new-tokens", "x");
    EXPECT_ERROR("invalid argument: invalid integer value: \"a\\\\b\\n\"", "a.wav", "--max-chars", "a\\b\n");
    EXPECT_ERROR("invalid argument: invalid float value: \"abc\"", "a.wav", "--max-dur", "abc");
    EXPECT_ERROR("invalid argument: unrecognized arguments: b.wav", "a.wav", "--model", "m", "b.wav");
    EXPECT_ERROR("invalid argument: unrecognized arguments: b.wav", "a.wav", "--model", "m", "--", "b.wav");
    EXPECT_ERROR("needless argument: --vad-merge=1", "a.wav", "--vad-merge=1");
    EXPECT_ERROR("needless argument: -hx", "-hx");
    /* -x is an unknown option, reported after the parse */
    EXPECT_ERROR("invalid option: -x", "-x", "a.wav");
}

/* ---- the generic parser on other specs ---------------------------------------- */

typedef struct mini {
    int mode, access;
    const char *model;
} mini;

static const ct_arg_choice MODES[] = {{"word", 1, 0}, {"segment", 0, 0}};
static const ct_arg_option MINI_OPTS[] = {
    {"--mode", NULL, "MODE", "Mode.", NULL, CT_ARG_CHOICE, offsetof(mini, mode), 0, 0, MODES, 2, "segment", NULL, 0},
    {"--model-access", NULL, NULL, "Check the model.", NULL, CT_ARG_FLAG, offsetof(mini, access), 0, 1, NULL, 0,
     NULL, NULL, 0},
    {"--model", NULL, "MODEL", "A model.", "Group two", CT_ARG_STRING, offsetof(mini, model), 0, 0, NULL, 0, NULL,
     NULL, 0},
    {"--a-very-long-option-name", NULL, "XXXXX", "Wrapped.", "Group two", CT_ARG_STRING, offsetof(mini, model), 0, 0,
     NULL, 0, NULL, NULL, 0},
    {"--exactly-fills-it", NULL, "XXXXXXXXX", "Fits.", "Group two", CT_ARG_STRING, offsetof(mini, model), 0, 0, NULL,
     0, NULL, NULL, 0},
    {"--help", "-h", NULL, "Show this help and exit.", "Group two", CT_ARG_HELP, 0, 0, 0, NULL, 0, NULL, NULL, 0},
};
static const ct_args_spec MINI = {"mini", "Usage: mini [options]", "A small tool.", MINI_OPTS, 6, NULL, NULL, NULL, 1};

static ct_args_action mini_parse(mini *m, ct_args_result *r, const char *const *args) {
    char *argv[MAXARGS + 1];
    int argc = 0;
    argv[argc++] = (char *)"mini";
    for (; *args; args++) argv[argc++] = (char *)*args;
    memset(m, 0, sizeof *m);
    return ct_args_parse(&MINI, argc, argv, m, r);
}
#define MINI_PARSE(m, r, ...) mini_parse(m, r, (const char *const[]){__VA_ARGS__, NULL})

static void test_other_spec(void **state) {
    (void)state;
    mini m;
    ct_args_result r;
    assert_int_equal(MINI_PARSE(&m, &r, "--mode", "word", "--model-a", "--model", "x"), CT_ARGS_RUN);
    assert_int_equal(m.mode, 1);
    assert_int_equal(m.access, 1);
    assert_string_equal(m.model, "x");
    ct_args_result_free(&r);
    /* no positionals here; no --version either */
    assert_int_equal(MINI_PARSE(&m, &r, "--mode", "word", "stray", "more"), CT_ARGS_ERROR);
    assert_string_equal(r.error, "invalid argument: unexpected positional argument: stray");
    ct_args_result_free(&r);
    assert_int_equal(MINI_PARSE(&m, &r, "--version"), CT_ARGS_ERROR);
    assert_string_equal(r.error, "invalid option: --version");
    ct_args_result_free(&r);
    assert_int_equal(MINI_PARSE(&m, &r, "--mod", "x"), CT_ARGS_ERROR);
    assert_string_equal(r.error, "ambiguous option: --mod");
    ct_args_result_free(&r);
    assert_int_equal(MINI_PARSE(&m, &r, "--mode=word", "--bogus", "-h"), CT_ARGS_HELP);
    ct_args_result_free(&r);
    /* plain OptionParser wording for a bad enumerated value */
    assert_int_equal(MINI_PARSE(&m, &r, "--mode", "bogus"), CT_ARGS_ERROR);
    assert_string_equal(r.error, "invalid argument: --mode bogus");
    ct_args_result_free(&r);
    assert_int_equal(MINI_PARSE(&m, &r, "--mode=bogus"), CT_ARGS_ERROR);
    assert_string_equal(r.error, "invalid argument: --mode=bogus");
    ct_args_result_free(&r);
    assert_int_equal(MINI_PARSE(&m, &r, "--mode"), CT_ARGS_ERROR);
    assert_string_equal(r.error, "missing argument: --mode");
    ct_args_result_free(&r);
}

static void test_help_layout(void **state) {
    (void)state;
    char *h = ct_args_help_text(&MINI);
    assert_non_null(h);
    /* 4 + 32 + 1: the description at column 38; long-only switches start 4
     * columns in; a switch longer than 32 columns puts its text below;
     * exactly 32 fits; a group heading follows a blank line */
    assert_string_equal(h,
                        "Usage: mini [options]\n"
                        "\n"
                        "A small tool.\n"
                        "\n"
                        "        --mode MODE                  Mode.\n"
                        "        --model-access               Check the model.\n"
                        "\n"
                        "Group two:\n"
                        "        --model MODEL                A model.\n"
                        "        --a-very-long-option-name XXXXX\n"
                        "                                     Wrapped.\n"
                        "        --exactly-fills-it XXXXXXXXX Fits.\n"
                        "    -h, --help                       Show this help and exit.\n");
    free(h);
}

/* ---- the table's defaults are the library's ------------------------------------- */

static void test_table_defaults(void **state) {
    (void)state;
    const ct_args_spec *spec = ct_cli_transcribe_spec();
    ct_transcriber_options d = ct_transcriber_default_options();
    int checked = 0;
    for (int i = 0; i < spec->n_options; i++) {
        const ct_arg_option *o = &spec->options[i];
        const char *t = o->default_text;
        const char *f = (const char *)&d + o->offset;
        if (!t) continue;
        checked++;
        switch (o->kind) {
        case CT_ARG_STRING: {
            const char *v = *(const char *const *)f;
            if (!strcmp(o->name, "--model"))
                assert_null(v); /* NULL: the default model */
            else
                assert_string_equal(v, t);
            break;
        }
        case CT_ARG_INT: {
            int v;
            assert_true(ct_args_parse_int(t, &v));
            if (v != *(const int *)f) fail_msg("%s: table %s, default %d", o->name, t, *(const int *)f);
            break;
        }
        case CT_ARG_FLOAT: {
            double v;
            assert_true(ct_args_parse_float(t, &v));
            if (v != *(const double *)f) fail_msg("%s: table %s, default %g", o->name, t, *(const double *)f);
            break;
        }
        case CT_ARG_CHOICE: {
            int found = 0;
            for (int k = 0; k < o->n_choices; k++)
                if (!strcmp(o->choices[k].name, t)) found = 1, assert_int_equal(o->choices[k].value, *(const int *)f);
            assert_true(found);
            break;
        }
        case CT_ARG_FLAG:
            /* "on"/"off" sits on the switch whose value is the default */
            if (*(const int *)f != o->flag_value) fail_msg("%s: default is not this switch", o->name);
            break;
        case CT_ARG_CHOICE_LIST: {
            ct_format fm[CT_FORMAT_COUNT];
            int n = ct_options_formats(&d, fm);
            assert_int_equal(d.n_formats, 0);
            assert_int_equal(n, 3);
            assert_string_equal(t, "txt srt vtt");
            assert_int_equal(fm[0], CT_FORMAT_TXT);
            assert_int_equal(fm[1], CT_FORMAT_SRT);
            assert_int_equal(fm[2], CT_FORMAT_VTT);
            break;
        }
        default:
            break;
        }
    }
    if (checked < 36) fail_msg("only %d defaults in the table", checked);
    /* the defaults pass the check, named either way */
    assert_int_equal(ct_transcriber_options_check(&d), CT_OK);
    d.cli_option_names = 1;
    assert_int_equal(ct_transcriber_options_check(&d), CT_OK);
}

/* ---- the check's messages, options named as fields ---------------------------------- */

typedef void (*mutate_fn)(ct_transcriber_options *o);

static void check_msg(mutate_fn fn, ct_status code, const char *msg) {
    ct_transcriber_options o = ct_transcriber_default_options();
    fn(&o);
    ct_status st = ct_transcriber_options_check(&o);
    if (st != code || strcmp(ct_last_error(), msg) != 0)
        fail_msg("got %d '%s', want %d '%s'", st, ct_last_error(), code, msg);
}

/* one mutator per rule; the name says the field */
#define M(name, body) static void name(ct_transcriber_options *o) { body; }
M(m_model_empty, o->model = "")
M(m_model_ws, o->model = "x/y ")
M(m_model_bad, o->model = "x/y.git")
M(m_rev_blank, o->model_revision = " ")
M(m_rev_local, (o->model = "/", o->model_revision = "main"))
M(m_adapter_rev_alone, o->adapter_revision = "main")
M(m_bool, o->vad_merge = 2)
M(m_bool_pnc, o->punctuation = -1)
M(m_enum_device, o->device = (ct_device)7)
M(m_enum_vad, o->vad = (ct_vad_policy)-1)
M(m_align_dtype, o->align_dtype = CT_PRECISION_INT8)
M(m_formats_n, o->n_formats = 5)
M(m_formats_v, (o->n_formats = 1, o->formats[0] = (ct_format)9))
M(m_lang, o->language = "e n")
M(m_text_word, (o->text_only = 1, o->alignment = CT_ALIGN_WORD))
M(m_text_formats, (o->alignment = CT_ALIGN_NONE, o->n_formats = 2, o->formats[0] = CT_FORMAT_TXT,
                   o->formats[1] = CT_FORMAT_SRT))
M(m_mem, o->audio_memory_gb = NAN)
M(m_workers, o->preprocess_workers = -1)
M(m_vad_bs, o->vad_block_frames = 0)
M(m_vad_prod, o->vad_batch_size = 65)
M(m_vad_thr_neg, o->vad_threads = -1)
M(m_vad_thr_onnx, (o->vad_threads = 2, o->vad_engine = CT_VAD_ENGINE_ONNX))
M(m_bs, o->batch_size = -1)
M(m_bms, o->batch_max_size = -3)
M(m_bms_lt, (o->batch_size = 8, o->batch_max_size = 4, o->adaptive_batch = 1))
M(m_bms_req, o->batch_max_size = 8)
M(m_bas, o->batch_audio_seconds = INFINITY)
M(m_vram, o->batch_vram_target = 0.99)
M(m_abs, (o->alignment = CT_ALIGN_WORD, o->align_batch_size = 0))
M(m_maxdur, o->max_dur = 0)
M(m_mindur_inf, o->min_dur = -INFINITY)
M(m_min_gt_max, o->min_dur = 31)
M(m_none_short, (o->vad = CT_VAD_MODE_NONE, o->max_dur = 0.5, o->min_dur = 40))
M(m_thr, o->vad_threshold = NAN)
M(m_pad, o->speech_pad_ms = -1)
M(m_auditok_neg, (o->vad = CT_VAD_MODE_AUDITOK, o->energy_threshold = -1))
M(m_auditok_min, (o->vad = CT_VAD_MODE_AUDITOK, o->min_dur = 0))
M(m_auditok_sil, (o->vad = CT_VAD_MODE_AUDITOK, o->max_silence = 30, o->vad_merge = 1))
M(m_merge, (o->vad = CT_VAD_MODE_NONE, o->vad_merge = 1))
M(m_mnt, o->max_new_tokens = 0)
M(m_mrt, o->max_retry_tokens = 444)
M(m_finite, o->max_gap = NAN)
M(m_cues, o->max_chars = 0)
M(m_cues_text, (o->text_only = 1, o->max_chars = 0, o->max_gap = -1, o->max_cue_dur = 0))
M(m_threads, o->threads = -2)
M(m_devidx, o->device_index = -1)
M(m_weights, o->vad_weights = "")
M(m_mps, o->device = CT_DEVICE_MPS)
M(m_fp16_cpu, (o->device = CT_DEVICE_CPU, o->alignment = CT_ALIGN_WORD, o->align_dtype = CT_PRECISION_FP16))
M(m_adapter, o->adapter = "x/y")
M(m_cli_named, (o->cli_option_names = 1, o->max_retry_tokens = 10))

static void test_check_messages(void **state) {
    (void)state;
    const ct_status E = CT_ERR_INVALID_ARG, U = CT_ERR_UNSUPPORTED;
    check_msg(m_model_empty, E, "model must be a non-empty Hugging Face repository ID or local directory");
    check_msg(m_model_ws, E, "model must not have leading or trailing whitespace");
    check_msg(m_model_bad, E,
                 "model must be a valid Hugging Face repository ID or local directory: x/y.git: a Hub "
                 "repository id cannot end with '.git'");
    check_msg(m_rev_blank, E, "model_revision must be a non-empty revision without surrounding whitespace");
    check_msg(m_rev_local, E, "model_revision cannot be used with a local model directory");
    check_msg(m_adapter_rev_alone, E, "adapter_revision requires adapter");
    check_msg(m_bool, E, "vad_merge must be a boolean");
    check_msg(m_bool_pnc, E, "punctuation must be a boolean");
    check_msg(m_enum_device, E, "device must be one of: auto, cpu, cuda, mps");
    check_msg(m_enum_vad, E, "vad must be one of: auditok, none, silero");
    check_msg(m_align_dtype, E, "align_dtype must be one of: fp16, fp32");
    check_msg(m_formats_n, E, "formats lists at most 4 formats");
    check_msg(m_formats_v, E, "formats must be one of: json, srt, txt, vtt");
    check_msg(m_lang, E,
                 "language must be a language tag the model lists (letters, digits, '-', '_'; ar or en for "
                 "the default model)");
    check_msg(m_text_word, E, "text_only conflicts with alignment=word");
    check_msg(m_text_formats, E, "Plain-text mode supports only formats=txt");
    check_msg(m_mem, E, "audio_memory_gb must be finite and positive");
    check_msg(m_workers, E, "preprocess_workers must be positive");
    check_msg(m_vad_bs, E, "vad_batch_size and vad_block_frames must be positive");
    check_msg(m_vad_prod, E, "vad_batch_size * vad_block_frames must not exceed 32768 frames");
    check_msg(m_vad_thr_neg, E, "vad_threads must be positive");
    check_msg(m_vad_thr_onnx, E, "vad_threads applies only to packed Torch Silero VAD");
    check_msg(m_bs, E, "batch_size must be positive");
    check_msg(m_bms, E, "batch_max_size must be positive");
    check_msg(m_bms_lt, E, "batch_max_size must be at least batch_size");
    check_msg(m_bms_req, E, "batch_max_size requires adaptive_batch");
    check_msg(m_bas, E, "batch_audio_seconds must be finite and positive");
    check_msg(m_vram, E, "batch_vram_target must be between 0.50 and 0.98");
    check_msg(m_abs, E, "align_batch_size must be positive");
    check_msg(m_maxdur, E, "max_dur must be finite and positive");
    check_msg(m_mindur_inf, E, "min_dur must be finite");
    check_msg(m_min_gt_max, E, "Require 0 <= min_dur <= max_dur");
    check_msg(m_none_short, E, "vad=none requires max_dur >= 1 second to bound segment count and memory use");
    check_msg(m_thr, E, "vad_threshold must be between 0 and 1");
    check_msg(m_pad, E, "min_silence_ms and speech_pad_ms must be non-negative");
    check_msg(m_auditok_neg, E, "Auditok silence and energy thresholds must be finite and non-negative");
    check_msg(m_auditok_min, E, "vad=auditok requires min_dur > 0");
    check_msg(m_auditok_sil, E, "vad=auditok requires max_silence < max_dur");
    check_msg(m_merge, E, "vad_merge is supported only with vad=silero");
    check_msg(m_mnt, E, "max_new_tokens must be positive");
    check_msg(m_mrt, E, "max_retry_tokens must be at least max_new_tokens");
    check_msg(m_finite, E, "All numeric thresholds and cue limits must be finite");
    check_msg(m_cues, E, "Subtitle cue limits must be positive (and max_gap non-negative)");
    check_msg(m_threads, E, "threads must be non-negative (0: every core)");
    check_msg(m_devidx, E, "device_index must be non-negative");
    check_msg(m_weights, E, "vad_weights must not be empty");
    check_msg(m_mps, U, "device=mps is not supported: this build runs on cuda or cpu");
    check_msg(m_fp16_cpu, U, "align_dtype=fp16 is supported only with CUDA");
    check_msg(m_adapter, U, "PEFT/LoRA adapters are not supported (adapter x/y)");
    check_msg(m_cli_named, E, "--max-retry-tokens must be at least --max-new-tokens");
    /* text mode skips the cue limits: nothing else is wrong, so it passes */
    ct_transcriber_options o = ct_transcriber_default_options();
    m_cues_text(&o);
    assert_int_equal(ct_transcriber_options_check(&o), CT_OK);
    assert_int_equal(ct_transcriber_options_check(NULL), CT_ERR_INVALID_ARG);
}

/* ---- effective values ----------------------------------------------------------------- */

static void test_effective(void **state) {
    (void)state;
    ct_transcriber_options o = ct_transcriber_default_options();
    ct_format f[CT_FORMAT_COUNT];
    assert_int_equal(ct_options_formats(&o, f), 3);
    o.text_only = 1;
    assert_int_equal(ct_options_formats(&o, f), 1);
    assert_int_equal(f[0], CT_FORMAT_TXT);
    assert_int_equal(ct_options_alignment(&o), CT_ALIGN_NONE);
    o.text_only = 0;
    o.alignment = CT_ALIGN_WORD;
    assert_int_equal(ct_options_alignment(&o), CT_ALIGN_WORD);
    o.n_formats = 4;
    o.formats[0] = CT_FORMAT_JSON, o.formats[1] = CT_FORMAT_SRT, o.formats[2] = CT_FORMAT_JSON,
    o.formats[3] = CT_FORMAT_TXT;
    assert_int_equal(ct_options_formats(&o, f), 3);
    assert_true(f[0] == CT_FORMAT_JSON && f[1] == CT_FORMAT_SRT && f[2] == CT_FORMAT_TXT);
    assert_int_equal(ct_options_batch_size(&o, CT_DEVICE_CUDA), 24);
    assert_int_equal(ct_options_batch_size(&o, CT_DEVICE_CPU), 4);
    o.batch_size = 7;
    assert_int_equal(ct_options_batch_size(&o, CT_DEVICE_CUDA), 7);
    assert_int_equal(ct_options_dtype(&o, CT_DEVICE_CPU, 0), CT_PRECISION_FP32);
    assert_int_equal(ct_options_dtype(&o, CT_DEVICE_CUDA, 1), CT_PRECISION_BF16);
    assert_int_equal(ct_options_dtype(&o, CT_DEVICE_CUDA, 0), CT_PRECISION_FP16);
    o.dtype = CT_PRECISION_BF16;
    assert_int_equal(ct_options_dtype(&o, CT_DEVICE_CPU, 0), CT_PRECISION_BF16);
    assert_int_equal(ct_options_check_device(&o, CT_DEVICE_CUDA, 0), CT_ERR_UNSUPPORTED);
    assert_string_equal(ct_last_error(), "This CUDA device does not support BF16; use dtype=fp16");
    assert_int_equal(ct_options_check_device(&o, CT_DEVICE_CUDA, 1), CT_OK);
    o.align_dtype = CT_PRECISION_FP16;
    o.cli_option_names = 1;
    assert_int_equal(ct_options_check_device(&o, CT_DEVICE_CPU, 0), CT_ERR_UNSUPPORTED);
    assert_string_equal(ct_last_error(), "--align-dtype fp16 is supported only with CUDA");
    assert_int_equal(ct_options_check_device(&o, CT_DEVICE_CUDA, 1), CT_OK);
    /* --dtype int8 (ours): CPU only, named as the user wrote it */
    o.align_dtype = CT_PRECISION_FP32;
    o.dtype = CT_PRECISION_INT8;
    assert_int_equal(ct_options_check_device(&o, CT_DEVICE_CPU, 0), CT_OK);
    assert_int_equal(ct_options_check_device(&o, CT_DEVICE_CUDA, 1), CT_ERR_UNSUPPORTED);
    assert_string_equal(ct_last_error(), "--dtype int8 runs on the CPU only; use --device cpu");
    assert_string_equal(ct_opt_precision_name(o.dtype), "int8");
    int local = -1;
    o.model = NULL;
    assert_int_equal(ct_options_model_kind(&o, &local), CT_OK);
    assert_int_equal(local, 0);
    o.model = "/";
    assert_int_equal(ct_options_model_kind(&o, &local), CT_OK);
    assert_int_equal(local, 1);
    assert_string_equal(ct_opt_device_name(CT_DEVICE_CUDA), "cuda");
    assert_string_equal(ct_opt_audio_backend_name(CT_AUDIO_SNDFILE), "sndfile");
    assert_string_equal(ct_opt_format_name((ct_format)9), "?");
}

/* ---- generated command lines against the Python twin ---------------------- */

/* The twin's message as we word it (docs/USAGE.md, "Differences from the
 * Python twin"); returns how many leading bytes must match (whole: -1). */
static int twin_message(const char *theirs, char *out, size_t cap) {
    const char *valid = "--model must be a valid Hugging Face repository ID or local directory:";
    if (!strcmp(theirs, "--audio-memory-gb must be positive")) {
        snprintf(out, cap, "--audio-memory-gb must be finite and positive");
        return -1;
    }
    if (!strncmp(theirs, valid, strlen(valid))) {
        snprintf(out, cap, "%s", valid);
        return (int)strlen(valid); /* the rule text after the colon is ours */
    }
    size_t n = 0;
    for (const char *p = theirs; *p && n + 1 < cap; p++)
        if (!(*p == ',' && p[1] >= '0' && p[1] <= '9' && p > theirs && p[-1] >= '0' && p[-1] <= '9'))
            out[n++] = *p; /* 32,768 -> 32768 */
    out[n] = '\0';
    return -1;
}

/* argv gives --align-dtype one of our extension values (bf16, auto): where
 * the twin refused it at parse time and ours went on, the case says nothing
 * about the twin's rules (the extension's own tests are above). */
static int uses_align_dtype_extension(char **argv, int argc) {
    for (int k = 1; k < argc; k++) {
        const char *a = argv[k], *v = NULL;
        if (!strcmp(a, "--align-dtype") && k + 1 < argc) v = argv[k + 1];
        else if (!strncmp(a, "--align-dtype=", 14)) v = a + 14;
        if (v && (!strcmp(v, "bf16") || !strcmp(v, "auto"))) return 1;
    }
    return 0;
}

static void test_against_twin(void **state) {
    (void)state;
    json_error_t je;
    json_t *doc = json_load_file(CT_FIXTURE("cli/argparse_cases.json"), 0, &je);
    if (!doc) fail_msg("argparse_cases.json: %s", je.text);
    json_t *cases = json_object_get(doc, "cases");
    size_t n = json_array_size(cases), bad = 0, counted[4] = {0}, extension = 0;
    assert_true(n >= 1000);
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(cases, i), *jargv = json_object_get(c, "argv");
        const char *want = json_string_value(json_object_get(c, "outcome"));
        char *argv[MAXARGS + 1];
        int argc = 0;
        argv[argc++] = (char *)"cohere-transcribe";
        for (size_t k = 0; k < json_array_size(jargv) && argc < MAXARGS; k++)
            argv[argc++] = (char *)json_string_value(json_array_get(jargv, k));
        argv[argc] = NULL;
        ct_cli_result r;
        ct_cli_parse(argc, argv, &r);
        const char *got = "ok", *msg = "";
        if (r.action == CT_ARGS_HELP || r.action == CT_ARGS_VERSION)
            got = "help";
        else if (r.action == CT_ARGS_ERROR)
            got = "parse", msg = r.error;
        else if (ct_transcriber_options_check(&r.options) != CT_OK)
            got = "config", msg = ct_last_error();
        char argline[1024];
        size_t an = 0;
        for (int k = 1; k < argc && an < sizeof argline; k++)
            an += (size_t)snprintf(argline + an, sizeof argline - an, "[%s]", argv[k]);
        int ok = !strcmp(got, want);
        if (!ok && !strcmp(want, "parse") && uses_align_dtype_extension(argv, argc)) {
            extension++;
            ct_cli_result_free(&r);
            continue;
        }
        if (ok && !strcmp(want, "config")) {
            char exp[1024];
            int len = twin_message(json_string_value(json_object_get(c, "message")), exp, sizeof exp);
            ok = len < 0 ? !strcmp(msg, exp) : !strncmp(msg, exp, (size_t)len);
            /* the gem checks --max-silence < --max-dur before --vad-merge */
            if (!ok && !strcmp(exp, "--vad-merge is supported only with --vad silero") &&
                !strcmp(msg, "--vad auditok requires --max-silence < --max-dur"))
                ok = 1;
        }
        if (!ok) {
            bad++;
            if (bad <= 20)
                print_error("case %zu %s: twin %s '%s', ours %s '%s'\n", i, argline, want,
                            json_string_value(json_object_get(c, "message")) ?
                                json_string_value(json_object_get(c, "message")) : "",
                            got, msg);
        }
        counted[!strcmp(want, "parse") ? 0 : !strcmp(want, "config") ? 1 : !strcmp(want, "ok") ? 2 : 3]++;
        ct_cli_result_free(&r);
    }
    json_decref(doc);
    /* every outcome is represented, so the comparison means something */
    assert_true(counted[0] > 100 && counted[1] > 50 && counted[2] > 50 && counted[3] > 10);
    print_message("%zu of %zu cases differ only by --align-dtype bf16/auto (ours): skipped\n", extension, n);
    assert_true(extension < 20);
    if (bad) fail_msg("%zu of %zu cases differ from the twin", bad, n);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_int_syntax),       cmocka_unit_test(test_float_syntax),
        cmocka_unit_test(test_negative_numbers), cmocka_unit_test(test_parse_values),
        cmocka_unit_test(test_parse_positionals), cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_other_spec),       cmocka_unit_test(test_help_layout),
        cmocka_unit_test(test_table_defaults),   cmocka_unit_test(test_check_messages),
        cmocka_unit_test(test_effective),        cmocka_unit_test(test_against_twin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
