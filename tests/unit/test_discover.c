/* test_discover.c — input discovery (pipeline/discover.h) against
 * PRODUCT-DETAILS §12: explicit files whatever their extension, the walk
 * (recursion, extension list, symlinks to files in, symlinked folders,
 * dangling links and FIFOs out), the case-folded order (full folding: "ß"
 * sorts as "ss", as Python's str.casefold), de-duplication, relative
 * paths and every message. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipeline/discover.h"
#include "testutil.h"

static char g_dir[4096]; /* the realpath of this test's temp folder */

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

static void mkd(const char *rel) { assert_int_equal(mkdir(P(rel), 0777), 0); }
static void touch(const char *rel) { ct_test_write_file(P(rel), "x", 1); }
static void lnk(const char *target, const char *rel) { assert_int_equal(symlink(target, P(rel)), 0); }

static ct_status discover1(const char *path, int recursive, ct_input_list *out) {
    const char *paths[1] = {path};
    return ct_discover_inputs(paths, 1, recursive, out);
}

/* The tree of the walk tests:
 *   d/b.wav d/A.MP3 d/st.wav d/ß.wav d/notes.txt d/.wav d/x.wav.txt
 *   d/sub/c.flac d/sub/deep/e.Opus
 *   d/link.wav -> ../outside/t.wav (a link to a file: in, named by the link)
 *   d/linkdir -> ../outside (a link to a folder: not descended)
 *   d/dangling.wav -> missing, d/fifo.wav (FIFO): not files, out */
static void make_tree(void) {
    mkd("d");
    mkd("d/sub");
    mkd("d/sub/deep");
    mkd("outside");
    touch("d/b.wav");
    touch("d/A.MP3");
    touch("d/st.wav");
    touch("d/\xc3\x9f.wav");
    touch("d/notes.txt");
    touch("d/.wav");
    touch("d/x.wav.txt");
    touch("d/sub/c.flac");
    touch("d/sub/deep/e.Opus");
    touch("outside/t.wav");
    touch("outside/u.wav");
    lnk("../outside/t.wav", "d/link.wav");
    lnk("../outside", "d/linkdir");
    lnk("missing.wav", "d/dangling.wav");
    assert_int_equal(mkfifo(P("d/fifo.wav"), 0600), 0);
}

static void expect_list(const ct_input_list *l, const char *const *paths, const char *const *rels, size_t n) {
    for (size_t i = 0; i < l->n && i < n; i++) {
        assert_string_equal(l->files[i].path, P(paths[i]));
        assert_string_equal(l->files[i].relative, rels[i]);
    }
    assert_int_equal(l->n, n);
}

static void test_walk_recursive(void **state) {
    (void)state;
    make_tree();
    ct_input_list l;
    CT_ASSERT_OK(discover1(P("d"), 1, &l));
    /* order of the case-folded full paths: a.mp3 b.wav link.wav ss.wav (ß)
     * st.wav sub/c.flac sub/deep/e.opus */
    const char *paths[] = {"d/A.MP3", "d/b.wav", "outside/t.wav", "d/\xc3\x9f.wav", "d/st.wav",
                           "d/sub/c.flac", "d/sub/deep/e.Opus"};
    const char *rels[] = {"A.MP3", "b.wav", "link.wav", "\xc3\x9f.wav", "st.wav", "sub/c.flac",
                          "sub/deep/e.Opus"};
    expect_list(&l, paths, rels, 7);
    ct_input_list_free(&l);
}

static void test_walk_not_recursive(void **state) {
    (void)state;
    make_tree();
    ct_input_list l;
    CT_ASSERT_OK(discover1(P("d"), 0, &l));
    const char *paths[] = {"d/A.MP3", "d/b.wav", "outside/t.wav", "d/\xc3\x9f.wav", "d/st.wav"};
    const char *rels[] = {"A.MP3", "b.wav", "link.wav", "\xc3\x9f.wav", "st.wav"};
    expect_list(&l, paths, rels, 5);
    ct_input_list_free(&l);
}

/* Explicit files whatever their extension; a directory reached through a
 * symlink is walked below its realpath; duplicates keep the first. */
static void test_explicit_and_dedup(void **state) {
    (void)state;
    make_tree();
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(g_dir), 0);
    const char *in[] = {"d/notes.txt", "outside/t.wav", "./d/linkdir/", "d/link.wav", "d/../d/notes.txt"};
    ct_input_list l;
    CT_ASSERT_OK(ct_discover_inputs(in, 5, 1, &l));
    assert_int_equal(chdir(cwd), 0);
    const char *paths[] = {"d/notes.txt", "outside/t.wav", "outside/u.wav"};
    const char *rels[] = {"notes.txt", "t.wav", "u.wav"};
    expect_list(&l, paths, rels, 3);
    ct_input_list_free(&l);
}

static void test_messages(void **state) {
    (void)state;
    make_tree();
    ct_input_list l;
    CT_ASSERT_STATUS(ct_discover_inputs(NULL, 0, 1, &l), CT_ERR_INVALID_ARG);
    assert_string_equal(ct_last_error(), "audio must contain at least one path");
    const char *blank[] = {P("d/b.wav"), " \t"};
    CT_ASSERT_STATUS(ct_discover_inputs(blank, 2, 1, &l), CT_ERR_INVALID_ARG);
    assert_string_equal(ct_last_error(), "audio[1] must not be empty");
    const char *bad[] = {"\xff.wav"};
    CT_ASSERT_STATUS(ct_discover_inputs(bad, 1, 1, &l), CT_ERR_INVALID_ARG);
    assert_string_equal(ct_last_error(), "audio[0] path must contain valid UTF-8");

    char cwd[4096], want[8192];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(g_dir), 0);
    CT_ASSERT_STATUS(discover1("d/./nope.wav", 1, &l), CT_ERR_NOT_FOUND);
    snprintf(want, sizeof want, "Input does not exist: %s", P("d/nope.wav"));
    assert_string_equal(ct_last_error(), want);
    lnk("loop2", "loop1");
    lnk("loop1", "loop2");
    CT_ASSERT_STATUS(discover1("loop1", 1, &l), CT_ERR_INVALID_ARG);
    assert_string_equal(ct_last_error(), "Invalid input path \"loop1\": Symlink loop");
    assert_int_equal(chdir(cwd), 0);

    /* a FIFO named explicitly: refused from its stat, never opened (an
     * open would block this test forever: no writer exists) */
    CT_ASSERT_STATUS(discover1(P("d/fifo.wav"), 1, &l), CT_ERR_INVALID_ARG);
    snprintf(want, sizeof want, "Input is not a regular file or directory: %s", P("d/fifo.wav"));
    assert_string_equal(ct_last_error(), want);
    CT_ASSERT_STATUS(discover1("/dev/null", 1, &l), CT_ERR_INVALID_ARG);
    assert_string_equal(ct_last_error(), "Input is not a regular file or directory: /dev/null");
    /* a dangling symlink named explicitly does not exist */
    CT_ASSERT_STATUS(discover1(P("d/dangling.wav"), 1, &l), CT_ERR_NOT_FOUND);
    snprintf(want, sizeof want, "Input does not exist: %s", P("d/dangling.wav"));
    assert_string_equal(ct_last_error(), want);

    mkd("empty");
    touch("empty/readme.md");
    CT_ASSERT_STATUS(discover1(P("empty"), 1, &l), CT_ERR_NOT_FOUND);
    assert_string_equal(ct_last_error(), "No audio files found in the supplied inputs.");
    assert_null(l.files);
    assert_int_equal(l.n, 0);

    /* a file name that is not UTF-8, found by the walk */
    mkd("bin");
    touch("bin/a\xff.wav");
    CT_ASSERT_STATUS(discover1(P("bin"), 1, &l), CT_ERR_INVALID_ARG);
    snprintf(want, sizeof want, "Input path must contain valid UTF-8: %s", P("bin/a\\xFF.wav"));
    assert_string_equal(ct_last_error(), want);
}

static void test_walk_error(void **state) {
    (void)state;
    if (geteuid() == 0) skip(); /* root reads a mode-000 folder */
    mkd("w");
    mkd("w/locked");
    touch("w/a.wav");
    assert_int_equal(chmod(P("w/locked"), 0), 0);
    ct_input_list l;
    ct_status s = discover1(P("w"), 1, &l);
    assert_int_equal(chmod(P("w/locked"), 0700), 0);
    assert_int_equal(s, CT_ERR_IO);
    char want[8192];
    snprintf(want, sizeof want, "Cannot inspect input %s: %s", P("w"), strerror(EACCES));
    assert_string_equal(ct_last_error(), want);
}

static void test_names_and_paths(void **state) {
    (void)state;
    assert_true(ct_is_audio_name("x.WAV"));
    assert_true(ct_is_audio_name("talk.final.Opus"));
    assert_true(ct_is_audio_name("a.wave"));
    assert_false(ct_is_audio_name(".wav"));
    assert_false(ct_is_audio_name("x.wav.txt"));
    assert_false(ct_is_audio_name("wav"));
    assert_false(ct_is_audio_name("x.mpeg"));
    assert_string_equal(ct_path_extname("talk.final.wav"), ".wav");
    assert_null(ct_path_extname(".wav"));
    assert_string_equal(ct_path_extname("..a.wav"), ".wav");

    char *e = NULL;
    CT_ASSERT_OK(ct_path_expand("/a/./b//c/../d/", &e));
    assert_string_equal(e, "/a/b/d");
    free(e);
    CT_ASSERT_OK(ct_path_expand("/..", &e));
    assert_string_equal(e, "/");
    free(e);
    setenv("HOME", "/home/someone", 1);
    CT_ASSERT_OK(ct_path_expand("~/x/../y", &e));
    assert_string_equal(e, "/home/someone/y");
    free(e);
    CT_ASSERT_OK(ct_path_expand("~", &e));
    assert_string_equal(e, "/home/someone");
    free(e);
    CT_ASSERT_OK(ct_path_expand("~user", &e)); /* not a home reference here: relative */
    char cwd[4096], want[8192];
    assert_non_null(getcwd(cwd, sizeof cwd));
    snprintf(want, sizeof want, "%s/~user", strcmp(cwd, "/") ? cwd : "");
    assert_string_equal(e, want);
    free(e);

    char *f = ct_utf8_casefold("Stra\xc3\x9f" "e \xc3\x84");
    assert_string_equal(f, "strasse \xc3\xa4");
    free(f);
    assert_null(ct_utf8_casefold("\xc3"));
    assert_false(ct_utf8_valid("\xed\xa0\x80")); /* a surrogate */
    assert_false(ct_utf8_valid("\xc0\xaf"));     /* overlong '/' */
    assert_true(ct_utf8_valid("caf\xc3\xa9"));

    /* loose resolution: the existing prefix resolved, the rest appended */
    mkd("r");
    lnk("r", "rl");
    char *res = NULL;
    CT_ASSERT_OK(ct_path_resolve_loose(P("rl/new/deeper"), &res));
    assert_string_equal(res, P("r/new/deeper"));
    free(res);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_walk_recursive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_not_recursive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_explicit_and_dedup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_messages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_names_and_paths, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
