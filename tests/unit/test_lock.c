/* test_lock.c — per-output-set locks (output/lock.h): the lock name (the
 * spec's example digest, Ruby's full lower-casing), the lock folder's and
 * file's modes, the same set twice in one process, two processes (fork)
 * contending, refused lock paths (symlink, FIFO, folder), the sticky-bit
 * rule, and a commit that stops when its lock file is swapped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "output/lock.h"
#include "output/publish.h"
#include "testutil.h"

static char g_dir[4096];

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s", ct_test_real_tmpdir());
    umask(022);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ct_test_rmtree(g_dir);
    return 0;
}

static const char *P(const char *rel) { return ct_test_join(g_dir, rel); }

static void sha256_hex(const char *s, char out[65]) {
    unsigned char md[32];
    unsigned int n = 0;
    assert_int_equal(EVP_Digest(s, strlen(s), md, &n, EVP_sha256(), NULL), 1);
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void expect_name_of(const char *identity, const char *lowered) {
    char name[70], want[70];
    CT_ASSERT_OK(ct_output_lock_name(identity, name));
    sha256_hex(lowered, want);
    strcat(want, ".lock");
    assert_string_equal(name, want);
}

static void test_lock_name(void **state) {
    (void)state;
    char name[70];
    CT_ASSERT_OK(ct_output_lock_name("/o/Sub/Talk", name));
    /* PRODUCT-DETAILS §4.5's example: 309b72db…fdae42.lock */
    assert_int_equal(strncmp(name, "309b72db", 8), 0);
    assert_string_equal(name + 58, "fdae42.lock");
    expect_name_of("/o/Sub/Talk", "/o/sub/talk");
    expect_name_of("/o/\xc4\xb0stanbul", "/o/i\xcc\x87stanbul");           /* İ → i + U+0307 */
    expect_name_of("/o/\xce\xa3\xce\x91\xce\xa3", "/o/\xcf\x83\xce\xb1\xcf\x83"); /* ΣΑΣ → σασ: no final ς */
    expect_name_of("/o/\xc3\x84rger", "/o/\xc3\xa4rger");
}

static void test_modes_and_same_process(void **state) {
    (void)state;
    ct_output_lock *a = NULL, *b = NULL;
    CT_ASSERT_OK(ct_output_lock_acquire(g_dir, "talk", &a));
    char want[8192], name[70];
    CT_ASSERT_OK(ct_output_lock_name("talk", name));
    snprintf(want, sizeof want, "%s/.cohere-transcribe-locks/%s", g_dir, name);
    assert_string_equal(ct_output_lock_path(a), want);
    assert_string_equal(ct_output_lock_identity(a), P("talk"));
    struct stat st;
    assert_int_equal(stat(P(".cohere-transcribe-locks"), &st), 0);
    struct stat parent;
    assert_int_equal(stat(g_dir, &parent), 0);
    mode_t dmode = (parent.st_mode & 03777) | 0700;
    if (dmode & 0022) dmode |= 01000;
    assert_int_equal(st.st_mode & 07777, dmode);
    assert_int_equal(stat(want, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    CT_ASSERT_OK(ct_output_lock_verify(a));

    /* the same set again in this process, also through a case variant */
    CT_ASSERT_STATUS(ct_output_lock_acquire(g_dir, "talk", &b), CT_ERR_BUSY);
    snprintf(want, sizeof want, "Another transcription job owns output set %s", P("talk"));
    assert_string_equal(ct_last_error(), want);
    CT_ASSERT_STATUS(ct_output_lock_acquire(g_dir, "TALK", &b), CT_ERR_BUSY);
    snprintf(want, sizeof want, "Another transcription job owns output set %s", P("TALK"));
    assert_string_equal(ct_last_error(), want);
    assert_null(b);
    CT_ASSERT_OK(ct_output_lock_acquire(g_dir, "other", &b));
    ct_output_lock_release(a);
    CT_ASSERT_OK(ct_output_lock_acquire(g_dir, "talk", &a));
    ct_output_lock_release(a);
    ct_output_lock_release(b);
    ct_output_lock_release(NULL);

    /* a shared (world-writable) parent: sticky folder, shared lock files */
    assert_int_equal(mkdir(P("shared"), 0777), 0);
    assert_int_equal(chmod(P("shared"), 0777), 0);
    CT_ASSERT_OK(ct_output_lock_acquire(P("shared"), "x", &a));
    assert_int_equal(stat(P("shared/.cohere-transcribe-locks"), &st), 0);
    assert_int_equal(st.st_mode & 07777, 01777);
    assert_int_equal(stat(ct_output_lock_path(a), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0666);
    ct_output_lock_release(a);
}

/* A child holds the lock; this process is refused with the process wording
 * and gets it once the child is gone. */
static void test_two_processes(void **state) {
    (void)state;
    int ready[2], go[2];
    assert_int_equal(pipe(ready), 0);
    assert_int_equal(pipe(go), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ct_output_lock *l = NULL;
        char c = ct_output_lock_acquire(g_dir, "talk", &l) == CT_OK ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1) _exit(2);
        if (read(go[0], &c, 1) != 1) _exit(3);
        ct_output_lock_release(l);
        _exit(0);
    }
    char c = 0;
    assert_int_equal(read(ready[0], &c, 1), 1);
    assert_int_equal(c, 'y');
    ct_output_lock *l = NULL;
    CT_ASSERT_STATUS(ct_output_lock_acquire(g_dir, "talk", &l), CT_ERR_BUSY);
    char name[70], want[8192];
    CT_ASSERT_OK(ct_output_lock_name("talk", name));
    snprintf(want, sizeof want, "Another transcription process owns output set %s (lock %s/.cohere-transcribe-locks/%s)",
             P("talk"), g_dir, name);
    assert_string_equal(ct_last_error(), want);
    assert_null(l);
    /* another set is free meanwhile */
    CT_ASSERT_OK(ct_output_lock_acquire(g_dir, "talk2", &l));
    ct_output_lock_release(l);
    assert_int_equal(write(go[1], "x", 1), 1);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CT_ASSERT_OK(ct_output_lock_acquire(g_dir, "talk", &l));
    /* and the child's successor is refused in turn */
    pid = fork();
    if (pid == 0) {
        ct_output_lock *m = NULL;
        _exit(ct_output_lock_acquire(g_dir, "talk", &m) == CT_ERR_BUSY ? 0 : 1);
    }
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    ct_output_lock_release(l);
    close(ready[0]);
    close(ready[1]);
    close(go[0]);
    close(go[1]);
}

static void test_refused_paths(void **state) {
    (void)state;
    char name[70], want[8192];
    ct_output_lock *l = NULL;
    /* the lock folder is a symlink, then a file */
    assert_int_equal(mkdir(P("elsewhere"), 0755), 0);
    assert_int_equal(symlink("elsewhere", P(".cohere-transcribe-locks")), 0);
    CT_ASSERT_STATUS(ct_output_lock_acquire(g_dir, "a", &l), CT_ERR_IO);
    snprintf(want, sizeof want, "Output lock directory is not a directory: %s/.cohere-transcribe-locks", g_dir);
    assert_string_equal(ct_last_error(), want);
    assert_int_equal(unlink(P(".cohere-transcribe-locks")), 0);
    ct_test_write_text(g_dir, ".cohere-transcribe-locks", "x");
    CT_ASSERT_STATUS(ct_output_lock_acquire(g_dir, "a", &l), CT_ERR_IO);
    assert_string_equal(ct_last_error(), want);
    assert_int_equal(unlink(P(".cohere-transcribe-locks")), 0);

    /* the lock file is a symlink, a FIFO (never blocks), a folder */
    assert_int_equal(mkdir(P(".cohere-transcribe-locks"), 0755), 0);
    CT_ASSERT_OK(ct_output_lock_name("a", name));
    char lp[8192];
    snprintf(lp, sizeof lp, "%s/.cohere-transcribe-locks/%s", g_dir, name);
    snprintf(want, sizeof want, "Output lock is not a regular file: %s", lp);
    assert_int_equal(symlink("../elsewhere/x", lp), 0);
    CT_ASSERT_STATUS(ct_output_lock_acquire(g_dir, "a", &l), CT_ERR_IO);
    assert_string_equal(ct_last_error(), want);
    assert_int_equal(unlink(lp), 0);
    assert_int_equal(mkfifo(lp, 0600), 0);
    CT_ASSERT_STATUS(ct_output_lock_acquire(g_dir, "a", &l), CT_ERR_IO);
    assert_string_equal(ct_last_error(), want);
    assert_int_equal(unlink(lp), 0);
    assert_int_equal(mkdir(lp, 0700), 0);
    CT_ASSERT_STATUS(ct_output_lock_acquire(g_dir, "a", &l), CT_ERR_IO);
    assert_int_equal(rmdir(lp), 0);
    CT_ASSERT_OK(ct_output_lock_acquire(g_dir, "a", &l));

    /* the file replaced while held */
    CT_ASSERT_OK(ct_output_lock_verify(l));
    assert_int_equal(rename(lp, P("moved.lock")), 0);
    ct_test_write_file(lp, "", 0);
    CT_ASSERT_STATUS(ct_output_lock_verify(l), CT_ERR_IO);
    snprintf(want, sizeof want, "Output lock changed while held for %s: %s", P("a"), lp);
    assert_string_equal(ct_last_error(), want);
    ct_output_lock_release(l);
}

/* A folder of another user, writable by others without the sticky bit. */
static void test_sticky_rule(void **state) {
    (void)state;
    if (geteuid() != 0) skip(); /* needs a folder owned by someone else */
    assert_int_equal(mkdir(P(".cohere-transcribe-locks"), 0777), 0);
    assert_int_equal(chmod(P(".cohere-transcribe-locks"), 0777), 0);
    assert_int_equal(chown(P(".cohere-transcribe-locks"), 65534, 65534), 0);
    ct_output_lock *l = NULL;
    CT_ASSERT_STATUS(ct_output_lock_acquire(g_dir, "a", &l), CT_ERR_IO);
    char want[8192];
    snprintf(want, sizeof want,
             "Output lock directory is writable by multiple users but has no sticky bit: %s/.cohere-transcribe-locks. "
             "Ask its owner or administrator to add the sticky bit, or remove it when no transcription job is running",
             g_dir);
    assert_string_equal(ct_last_error(), want);
    assert_int_equal(chmod(P(".cohere-transcribe-locks"), 01777), 0);
    CT_ASSERT_OK(ct_output_lock_acquire(g_dir, "a", &l));
    ct_output_lock_release(l);
}

/* The commit re-verifies its lock around each rename: a lock file swapped
 * before the renames stops the commit, and the old output stays. */
static int g_swapped;
static char g_lock_path[8192];
static int swap_hook(void *user, ct_publish_op op, const char *entry) {
    (void)user;
    if (op == CT_PUB_OP_STEP && strcmp(entry, "rename:1") == 0 && !g_swapped) {
        g_swapped = 1;
        unlink(g_lock_path);
        ct_test_write_file(g_lock_path, "", 0);
    }
    return 0;
}

static void test_commit_checks_lock(void **state) {
    (void)state;
    ct_test_write_text(g_dir, "a.txt", "old\n");
    ct_test_write_text(g_dir, "a.srt", "old srt\n");
    ct_output_lock *l = NULL;
    CT_ASSERT_OK(ct_output_lock_acquire(g_dir, "a", &l));
    snprintf(g_lock_path, sizeof g_lock_path, "%s", ct_output_lock_path(l));
    ct_bound_dir d;
    CT_ASSERT_OK(ct_bound_dir_open(g_dir, &d));
    ct_publish_member m[] = {{"a.txt", "new\n", 4}, {"a.srt", "new srt\n", 8}};
    ct_publish_request r = {.dir = &d, .members = m, .n = 2, .lock = l};
    g_swapped = 0;
    ct_publish_set_test_hook(swap_hook, NULL);
    ct_status s = ct_publish_set(&r, NULL);
    ct_publish_set_test_hook(NULL, NULL);
    assert_int_equal(s, CT_ERR_IO);
    CT_ASSERT_ERROR_HAS("Output lock changed while held for");
    ct_test_expect_file_text(P("a.txt"), "old\n");
    ct_test_expect_file_text(P("a.srt"), "old srt\n");
    assert_int_equal(ct_test_count_entries(g_dir), 3); /* a.txt, a.srt, the lock folder */
    ct_output_lock_release(l);
    ct_bound_dir_close(&d);
}

/* 8 processes started together on 12 output sets: each set is locked,
 * found unpublished and written by exactly one of them; the others skip
 * it (published) or yield it (locked), and every set is whole. */
static void test_eight_processes_twelve_sets(void **state) {
    (void)state;
    enum { PROCS = 8, SETS = 12 };
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        pids[p] = fork();
        assert_true(pids[p] >= 0);
        if (pids[p] != 0) continue;
        close(go[1]);
        char c;
        if (read(go[0], &c, 1) != 0) _exit(9); /* start together: the parent closes the pipe */
        ct_bound_dir d;
        if (ct_bound_dir_open(g_dir, &d) != CT_OK) _exit(2);
        for (int k = 0; k < SETS; k++) {
            int set = (k + p * 5) % SETS; /* different orders meet */
            char stem[16], txt[32], man[4200], body[64], rec[8];
            snprintf(stem, sizeof stem, "s%02d", set);
            ct_output_lock *l = NULL;
            ct_status s = ct_output_lock_acquire(g_dir, stem, &l);
            char what = 'B';
            if (s == CT_OK) {
                snprintf(man, sizeof man, "%s/.%s.cohere-transcribe.manifest.json", g_dir, stem);
                if (access(man, F_OK) == 0) {
                    what = 'S';
                } else {
                    snprintf(txt, sizeof txt, "%s.txt", stem);
                    snprintf(man, sizeof man, ".%s.cohere-transcribe.manifest.json", stem);
                    snprintf(body, sizeof body, "written by %d\n", p);
                    ct_publish_member m[] = {{txt, body, strlen(body)}, {man, body, strlen(body)}};
                    ct_publish_request r = {.dir = &d, .members = m, .n = 2, .lock = l};
                    what = ct_publish_set(&r, NULL) == CT_OK ? 'W' : 'E';
                }
                ct_output_lock_release(l);
            } else if (s != CT_ERR_BUSY || !strstr(ct_last_error(), "Another transcription process owns output set")) {
                what = 'E';
            }
            snprintf(rec, sizeof rec, "%c%d%02d", what, p, set);
            if (write(fds[1], rec, 4) != 4) _exit(3);
        }
        ct_bound_dir_close(&d);
        _exit(0);
    }
    close(fds[1]);
    close(go[0]);
    close(go[1]);
    int written[SETS] = {0}, writer[SETS], seen = 0, busy = 0;
    char rec[4];
    while (read(fds[0], rec, 4) == 4) {
        seen++;
        int p = rec[1] - '0', set = (rec[2] - '0') * 10 + (rec[3] - '0');
        if (rec[0] == 'E') fail_msg("process %d failed on set %d", p, set);
        if (rec[0] == 'W') {
            written[set]++;
            writer[set] = p;
        }
        busy += rec[0] == 'B';
    }
    close(fds[0]);
    for (int p = 0; p < PROCS; p++) {
        int st = 0;
        assert_int_equal(waitpid(pids[p], &st, 0), pids[p]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    assert_int_equal(seen, PROCS * SETS);
    for (int k = 0; k < SETS; k++) {
        assert_int_equal(written[k], 1);
        char name[64], want[64];
        snprintf(name, sizeof name, "s%02d.txt", k);
        snprintf(want, sizeof want, "written by %d\n", writer[k]);
        ct_test_expect_file_text(P(name), want);
        snprintf(name, sizeof name, ".s%02d.cohere-transcribe.manifest.json", k);
        ct_test_expect_file_text(P(name), want);
    }
    /* 24 outputs + the lock folder: no temporary, backup or journal */
    assert_int_equal(ct_test_count_entries(g_dir), 2 * SETS + 1);
    print_message("%d of %d attempts yielded to a lock holder\n", busy, PROCS * SETS);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lock_name),
        cmocka_unit_test_setup_teardown(test_modes_and_same_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_processes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sticky_rule, setup, teardown),
        cmocka_unit_test_setup_teardown(test_commit_checks_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eight_processes_twelve_sets, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
