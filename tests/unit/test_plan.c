/* test_plan.c — output planning (pipeline/plan.h) against PRODUCT-DETAILS
 * §12 and §3.1: parents beside the canonical source or under the output
 * root (created), stems, output and state paths, and every refusal with
 * its exact message: non-regular targets, outputs on inputs, collisions,
 * escapes (".." and symlinked folders), reserved state paths, the profile
 * rules and --existing error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/fs.h"
#include "pipeline/plan.h"
#include "testutil.h"

static char g_dir[4096];

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s", ct_test_real_tmpdir());
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ct_test_rmtree(g_dir);
    return 0;
}

static const char *P(const char *rel) { return ct_test_join(g_dir, rel); }

/* P() in a buffer of its own, for input lists that must outlive the ring */
static const char *keep(const char *rel) {
    static char buf[8][4096];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s", P(rel));
    return buf[k];
}

static void mkd(const char *rel) { assert_int_equal(mkdir(P(rel), 0777), 0); }
static void touch(const char *rel) { ct_test_write_file(P(rel), "x", 1); }
static void lnk(const char *target, const char *rel) { assert_int_equal(symlink(target, P(rel)), 0); }

static const ct_format k_txt_srt[] = {CT_FORMAT_TXT, CT_FORMAT_SRT, CT_FORMAT_TXT};
static const ct_format k_all[] = {CT_FORMAT_JSON, CT_FORMAT_TXT, CT_FORMAT_SRT, CT_FORMAT_VTT};

static ct_plan_options opts(const ct_format *f, int n) {
    ct_plan_options o = {0};
    o.formats = f;
    o.n_formats = n;
    o.existing = CT_EXISTING_ERROR;
    return o;
}

static ct_status plan_paths(const char *const *paths, size_t n, const ct_plan_options *o, ct_plan *p) {
    ct_input_list in;
    ct_status s = ct_discover_inputs(paths, n, 1, &in);
    if (s != CT_OK) fail_msg("discovery failed: %s", ct_last_error());
    s = ct_plan_outputs(&in, o, p);
    ct_input_list_free(&in);
    return s;
}

static void expect_error(const char *fmt, const char *a, const char *b, const char *c) {
    char want[16384];
    snprintf(want, sizeof want, fmt, a, b, c);
    assert_string_equal(ct_last_error(), want);
}

static void test_beside_source(void **state) {
    (void)state;
    mkd("d");
    mkd("t");
    touch("t/talk.final.wav");
    lnk("../t/talk.final.wav", "d/link.wav");
    const char *in[] = {keep("d/link.wav")};
    ct_plan_options o = opts(k_txt_srt, 3);
    ct_plan p;
    CT_ASSERT_OK(plan_paths(in, 1, &o, &p));
    assert_int_equal(p.n, 1);
    const ct_planned_file *f = &p.files[0];
    /* an explicit file's relative path is its canonical basename: the
     * outputs go next to the link's target, named after the target */
    assert_string_equal(f->source, P("t/talk.final.wav"));
    assert_string_equal(f->parent, P("t"));
    assert_string_equal(f->stem, "talk.final");
    assert_string_equal(f->identity, P("t/talk.final"));
    assert_int_equal(f->n_outputs, 2); /* the repeated txt dropped */
    assert_int_equal(f->formats[0], CT_FORMAT_TXT);
    assert_int_equal(f->formats[1], CT_FORMAT_SRT);
    assert_string_equal(f->output_paths[0], P("t/talk.final.txt"));
    assert_string_equal(f->output_paths[1], P("t/talk.final.srt"));
    assert_string_equal(f->output_names[1], "talk.final.srt");
    assert_string_equal(f->manifest_path, P("t/.talk.final.cohere-transcribe.manifest.json"));
    assert_string_equal(f->checkpoint_path, P("t/.talk.final.cohere-transcribe.asr.json"));
    assert_string_equal(f->manifest_name, ".talk.final.cohere-transcribe.manifest.json");
    assert_string_equal(f->checkpoint_name, ".talk.final.cohere-transcribe.asr.json");
    assert_int_equal(f->n_existing, 0);
    struct stat st;
    assert_int_equal(stat(P("t"), &st), 0);
    assert_int_equal(f->parent_ino, (uint64_t)st.st_ino);
    CT_ASSERT_OK(ct_plan_recheck(&p));

    /* the parent replaced by another folder between the passes */
    assert_int_equal(rename(P("t"), P("t.old")), 0);
    mkd("t");
    CT_ASSERT_STATUS(ct_plan_recheck(&p), CT_ERR_IO);
    expect_error("Publication parent identity changed between planning passes: %s", P("t"), 0, 0);
    ct_plan_free(&p);
}

static void test_output_root(void **state) {
    (void)state;
    mkd("in");
    mkd("in/sub");
    touch("in/sub/c.flac");
    touch("in/a.wav");
    touch("x.talk.mp3");
    const char *in[] = {keep("in"), keep("x.talk.mp3")};
    ct_plan_options o = opts(k_all, 4);
    o.output_dir = P("out/new/./");
    ct_plan p;
    CT_ASSERT_OK(plan_paths(in, 2, &o, &p));
    assert_string_equal(p.output_root, P("out/new"));
    assert_int_equal(p.n, 3);
    assert_string_equal(p.files[0].output_paths[0], P("out/new/a.json"));
    assert_string_equal(p.files[1].parent, P("out/new/sub"));
    assert_string_equal(p.files[1].output_paths[3], P("out/new/sub/c.vtt"));
    assert_string_equal(p.files[2].stem, "x.talk");
    assert_string_equal(p.files[2].output_paths[1], P("out/new/x.talk.txt"));
    assert_true(ct_fs_is_dir(P("out/new/sub")));
    ct_plan_free(&p);

    /* a root that is a file */
    touch("afile");
    o.output_dir = P("afile");
    CT_ASSERT_STATUS(plan_paths(in, 2, &o, &p), CT_ERR_IO);
    char want[8192];
    /* the rest of the message is core/fs.c's */
    snprintf(want, sizeof want, "Cannot prepare output paths: %s", P("afile"));
    assert_int_equal(strncmp(ct_last_error(), want, strlen(want)), 0);
}

static void test_escapes(void **state) {
    (void)state;
    mkd("in");
    mkd("in/sub");
    touch("in/sub/c.wav");
    mkd("out");
    mkd("elsewhere");
    lnk("../elsewhere", "out/sub");
    const char *in[] = {keep("in")};
    ct_plan_options o = opts(k_all, 1);
    o.output_dir = P("out");
    ct_plan p;
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Output directory escapes output root: %s -> %s", P("out/sub"), P("elsewhere"), 0);
    assert_null(p.files);

    /* a relative path with ".." (not one discovery makes, but planning is
     * a function of its input) */
    ct_input_file f = {(char *)P("in/sub/c.wav"), (char *)"../up/c.wav"};
    ct_input_list l = {&f, 1};
    CT_ASSERT_STATUS(ct_plan_outputs(&l, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Output directory escapes output root: %s -> %s", P("out/../up"), P("up"), 0);
    assert_false(ct_fs_is_dir(P("up")));
}

static void test_target_refusals(void **state) {
    (void)state;
    mkd("d");
    touch("d/a.wav");
    touch("elsewhere.txt");
    const char *in[] = {keep("d/a.wav")};
    ct_plan_options o = opts(k_txt_srt, 2);
    ct_plan p;
    lnk("../elsewhere.txt", "d/a.txt");
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Output path is not a regular file: %s", P("d/a.txt"), 0, 0);
    assert_int_equal(unlink(P("d/a.txt")), 0);
    lnk("missing", "d/a.txt"); /* dangling */
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Output path is not a regular file: %s", P("d/a.txt"), 0, 0);
    assert_int_equal(unlink(P("d/a.txt")), 0);
    mkd("d/a.txt");
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Output path is not a regular file: %s", P("d/a.txt"), 0, 0);
    assert_int_equal(rmdir(P("d/a.txt")), 0);
    assert_int_equal(mkfifo(P("d/a.srt"), 0600), 0);
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Output path is not a regular file: %s", P("d/a.srt"), 0, 0);
    assert_int_equal(unlink(P("d/a.srt")), 0);
    if (mknod(P("d/a.srt"), S_IFCHR | 0600, makedev(1, 3)) == 0) { /* needs privileges */
        CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
        expect_error("Output path is not a regular file: %s", P("d/a.srt"), 0, 0);
        assert_int_equal(unlink(P("d/a.srt")), 0);
    }

    /* reserved state paths */
    mkd("d/.a.cohere-transcribe.manifest.json");
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("State marker is not a regular file: %s", P("d/.a.cohere-transcribe.manifest.json"), 0, 0);
    assert_int_equal(rmdir(P("d/.a.cohere-transcribe.manifest.json")), 0);
    lnk("x", "d/.a.cohere-transcribe.asr.json");
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("ASR checkpoint is not a regular file: %s", P("d/.a.cohere-transcribe.asr.json"), 0, 0);
    assert_int_equal(unlink(P("d/.a.cohere-transcribe.asr.json")), 0);
    CT_ASSERT_OK(plan_paths(in, 1, &o, &p));
    ct_plan_free(&p);
}

/* The same corpus through a symlinked folder and through its real path, from
 * another working directory: the same canonical parents and identities, so
 * both runs take the same locks. */
static void test_same_corpus_two_paths(void **state) {
    (void)state;
    mkd("real");
    mkd("real/sub");
    touch("real/sub/a.wav");
    lnk("real", "alias");
    const char *in1[] = {keep("alias")};
    const char *in2[] = {"real"};
    ct_plan_options o = opts(k_txt_srt, 2);
    ct_plan p1, p2;
    CT_ASSERT_OK(plan_paths(in1, 1, &o, &p1));
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(g_dir), 0);
    ct_status s = plan_paths(in2, 1, &o, &p2);
    assert_int_equal(chdir(cwd), 0);
    CT_ASSERT_OK(s);
    assert_string_equal(p1.files[0].identity, P("real/sub/a"));
    assert_string_equal(p2.files[0].identity, p1.files[0].identity);
    assert_string_equal(p2.files[0].output_paths[1], p1.files[0].output_paths[1]);
    ct_plan_free(&p1);
    ct_plan_free(&p2);
}

static void test_collisions(void **state) {
    (void)state;
    mkd("d");
    touch("d/a.wav");
    touch("d/a.mp3");
    const char *in[] = {keep("d")};
    ct_plan_options o = opts(k_txt_srt, 2);
    ct_plan p;
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Output collision between %s and %s: %s", P("d/a.mp3"), P("d/a.wav"), P("d/a.txt"));

    /* an explicit input whose output is itself */
    mkd("e");
    touch("e/notes.txt");
    const char *in2[] = {keep("e/notes.txt")};
    CT_ASSERT_STATUS(plan_paths(in2, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Output path for %s collides with an input: %s", P("e/notes.txt"), P("e/notes.txt"), 0);
    /* an input's output that is another input */
    mkd("f");
    touch("f/b.wav");
    touch("f/b.srt");
    const char *in3[] = {keep("f/b.wav"), keep("f/b.srt")};
    CT_ASSERT_STATUS(plan_paths(in3, 2, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Output path for %s collides with an input: %s", P("f/b.wav"), P("f/b.srt"), 0);

    /* reserved paths against inputs and outputs */
    mkd("g");
    touch("g/a.wav");
    touch("g/.a.cohere-transcribe.manifest.json");
    const char *in4[] = {keep("g/a.wav"), keep("g/.a.cohere-transcribe.manifest.json")};
    ct_plan_options oj = opts(k_all, 1); /* json only */
    CT_ASSERT_STATUS(plan_paths(in4, 2, &oj, &p), CT_ERR_INVALID_ARG);
    expect_error("State marker collides with an input or output: %s", P("g/.a.cohere-transcribe.manifest.json"), 0, 0);
    mkd("h");
    touch("h/a.wav");
    touch("h/.a.cohere-transcribe.manifest.wav"); /* its json output is a.wav's manifest */
    const char *in5[] = {keep("h")};
    CT_ASSERT_STATUS(plan_paths(in5, 1, &oj, &p), CT_ERR_INVALID_ARG);
    expect_error("State marker collides with an input or output: %s", P("h/.a.cohere-transcribe.manifest.json"), 0, 0);
    /* the same the other way round: a later output lands on a planned marker */
    const char *in6[] = {keep("h/a.wav"), keep("h/.a.cohere-transcribe.manifest.wav")};
    CT_ASSERT_STATUS(plan_paths(in6, 2, &oj, &p), CT_ERR_INVALID_ARG);
    expect_error("State marker collides with an input or output: %s", P("h/.a.cohere-transcribe.manifest.json"), 0, 0);
}

static void test_profile(void **state) {
    (void)state;
    mkd("d");
    touch("d/a.wav");
    const char *in[] = {keep("d/a.wav")};
    ct_plan_options o = opts(k_txt_srt, 2);
    ct_plan p;
    o.profile_json = P("prof/new/p.json");
    CT_ASSERT_OK(plan_paths(in, 1, &o, &p));
    assert_string_equal(p.profile_path, P("prof/new/p.json"));
    assert_true(ct_fs_is_dir(P("prof/new")));
    ct_plan_free(&p);

    lnk("x.json", "d/link.json");
    o.profile_json = P("d/link.json");
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Profile path is not a regular file: %s", P("d/link.json"), 0, 0);
    o.profile_json = P("d");
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Profile path is not a regular file: %s", P("d"), 0, 0);
    o.profile_json = P("d/a.wav");
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Profile path collides with an input audio file: %s", P("d/a.wav"), 0, 0);
    o.profile_json = P("d/a.srt");
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Profile path collides with a transcript output: %s", P("d/a.srt"), 0, 0);
    o.profile_json = P("d/.a.cohere-transcribe.manifest.json");
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Profile path collides with a reserved state marker: %s", P("d/.a.cohere-transcribe.manifest.json"), 0, 0);
    o.profile_json = P("d/.a.cohere-transcribe.asr.json");
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    expect_error("Profile path collides with a reserved asr checkpoint: %s", P("d/.a.cohere-transcribe.asr.json"), 0, 0);
    touch("afile");
    o.profile_json = P("afile/p.json");
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_IO);
    char want[8192];
    snprintf(want, sizeof want, "Cannot prepare profile output path %s: ", P("afile/p.json"));
    assert_true(strncmp(ct_last_error(), want, strlen(want)) == 0);
    o.profile_json = "\xfe.json";
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    assert_string_equal(ct_last_error(), "profile_json path must contain valid UTF-8");
    o.profile_json = NULL;
    o.output_dir = "\xfe";
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    assert_string_equal(ct_last_error(), "output_dir path must contain valid UTF-8");
}

static void test_existing(void **state) {
    (void)state;
    mkd("d");
    touch("d/a.wav");
    touch("d/b.wav");
    touch("d/c.wav");
    touch("d/a.txt");
    touch("d/b.srt");
    touch("d/b.txt");
    const char *in[] = {keep("d")};
    ct_plan_options o = opts(k_txt_srt, 2);
    ct_plan p;
    CT_ASSERT_STATUS(plan_paths(in, 1, &o, &p), CT_ERR_INVALID_ARG);
    char want[16384];
    snprintf(want, sizeof want,
             "Output already exists:\n  %s\n  %s\n  %s\nUse existing: 'overwrite' or existing: 'skip'.",
             P("d/a.txt"), P("d/b.txt"), P("d/b.srt"));
    assert_string_equal(ct_last_error(), want);
    o.existing = CT_EXISTING_SKIP;
    CT_ASSERT_OK(plan_paths(in, 1, &o, &p));
    assert_int_equal(p.n, 3);
    assert_int_equal(p.files[0].n_existing, 1);
    assert_int_equal(p.files[0].output_exists[0], 1);
    assert_int_equal(p.files[0].output_exists[1], 0);
    assert_int_equal(p.files[1].n_existing, 2);
    assert_int_equal(p.files[2].n_existing, 0);
    ct_plan_free(&p);

    /* many: the first 10 named, the rest counted */
    mkd("m");
    char want2[16384] = "Output already exists:";
    for (int i = 0; i < 12; i++) {
        char n[32];
        snprintf(n, sizeof n, "m/f%02d.wav", i);
        touch(n);
        snprintf(n, sizeof n, "m/f%02d.txt", i);
        touch(n);
        if (i < 10) {
            size_t w = strlen(want2);
            snprintf(want2 + w, sizeof want2 - w, "\n  %s", P(n));
        }
    }
    strcat(want2, "\n  ... and 2 more\nUse existing: 'overwrite' or existing: 'skip'.");
    const char *inm[] = {keep("m")};
    o.existing = CT_EXISTING_ERROR;
    CT_ASSERT_STATUS(plan_paths(inm, 1, &o, &p), CT_ERR_INVALID_ARG);
    assert_string_equal(ct_last_error(), want2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_beside_source, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_root, setup, teardown),
        cmocka_unit_test_setup_teardown(test_escapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_target_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_same_corpus_two_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_collisions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_profile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_existing, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
