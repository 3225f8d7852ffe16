/* test_publish.c — the output-set transaction (output/publish.h) under
 * fault injection: every filesystem call of a commit failed in turn (EIO,
 * ENOSPC), a cancel at every step, a source changed mid-commit, refused
 * targets, a failed rollback finished by recovery, and child processes
 * killed (SIGKILL) while paused at each step of a commit, then recovered:
 * every time the set is the old one or the new one, whole, and no
 * temporary, backup, marker or journal is left. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/str.h"
#include "output/publish.h"
#include "testutil.h"

static char g_dir[4096];
static ct_bound_dir g_bd;
static ct_source_snapshot g_snap; /* of the set's source, a.wav */

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "%s", ct_test_real_tmpdir());
    umask(022);
    CT_ASSERT_OK(ct_bound_dir_open(g_dir, &g_bd));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    ct_publish_set_test_hook(NULL, NULL);
    ct_bound_dir_close(&g_bd);
    ct_source_snapshot_clear(&g_snap);
    ct_test_rmtree(g_dir);
    return 0;
}

static const char *P(const char *rel) { return ct_test_join(g_dir, rel); }

/* ---- the set under test: a.txt (old, 0640), a.srt (old), a.vtt (new),
 * the manifest (old) last, and a source file ----------------------------- */

static const char *const k_names[] = {"a.txt", "a.srt", "a.vtt", ".a.cohere-transcribe.manifest.json"};
static const char *const k_old[] = {"old txt\n", "old srt\n", NULL, "old manifest\n"};
static const char *const k_new[] = {"new txt, longer\n", "new srt\n", "new vtt\n", "new manifest\n"};
#define N_MEMBERS 4

static void write_old_set(void) {
    ct_test_rmtree(g_dir);
    assert_int_equal(mkdir(g_dir, 0755), 0);
    ct_bound_dir_close(&g_bd);
    CT_ASSERT_OK(ct_bound_dir_open(g_dir, &g_bd));
    for (int i = 0; i < N_MEMBERS; i++)
        if (k_old[i]) ct_test_write_text(g_dir, k_names[i], k_old[i]);
    assert_int_equal(chmod(P("a.txt"), 0640), 0);
    ct_test_write_text(g_dir, "a.wav", "RIFF");
    ct_source_snapshot_clear(&g_snap);
    CT_ASSERT_OK(ct_source_snapshot_take(P("a.wav"), &g_snap));
}

static int count_entries(void) { return ct_test_count_entries(g_dir); }

/* old set, nothing else: the 3 old members + the source */
static void expect_old_set(void) {
    for (int i = 0; i < N_MEMBERS; i++) {
        if (k_old[i]) ct_test_expect_file_text(P(k_names[i]), k_old[i]);
        else assert_int_equal(access(P(k_names[i]), F_OK), -1);
    }
    struct stat st;
    assert_int_equal(stat(P("a.txt"), &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_int_equal(count_entries(), 4);
}

static void expect_new_set(void) {
    for (int i = 0; i < N_MEMBERS; i++) ct_test_expect_file_text(P(k_names[i]), k_new[i]);
    struct stat st;
    assert_int_equal(stat(P("a.txt"), &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640); /* the replaced file's mode */
    assert_int_equal(stat(P("a.vtt"), &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644); /* 0666 & ~umask */
    assert_int_equal(count_entries(), 5);
}

static atomic_int g_cancel;

static ct_status publish(int *committed) {
    ct_publish_member m[N_MEMBERS];
    for (int i = 0; i < N_MEMBERS; i++) m[i] = (ct_publish_member){k_names[i], k_new[i], strlen(k_new[i])};
    ct_publish_request r = {.dir = &g_bd, .members = m, .n = N_MEMBERS, .source_path = P("a.wav"),
                            .snapshot = &g_snap, .cancel = &g_cancel};
    return ct_publish_set(&r, committed);
}

/* ---- the hook ------------------------------------------------------------ */

typedef struct hookctl {
    int calls;          /* non-step calls seen */
    int fail_at;        /* fail the call with this number (1-based), 0: none */
    int fail_err;
    ct_publish_op fail_also_op; /* after fail_at, fail every call of this op too (0: none) */
    char steps[64][48]; /* step labels seen */
    int n_steps;
    char last_op_entry[300];
    const char *cancel_at; /* set g_cancel at this step */
    const char *touch_source_at;
    int links_refused;  /* every link fails with EPERM: backups are copies */
} hookctl;

static hookctl g_h;

static int hook(void *user, ct_publish_op op, const char *entry) {
    hookctl *h = user;
    if (op == CT_PUB_OP_STEP) {
        if (h->n_steps < 64) snprintf(h->steps[h->n_steps++], 48, "%s", entry);
        if (h->cancel_at && strcmp(h->cancel_at, entry) == 0) atomic_store(&g_cancel, 1);
        if (h->touch_source_at && strcmp(h->touch_source_at, entry) == 0) ct_test_write_text(g_dir, "a.wav", "RIFF2");
        return 0;
    }
    h->calls++;
    if (op == CT_PUB_OP_LINK && h->links_refused) {
        if (h->calls == h->fail_at) snprintf(h->last_op_entry, sizeof h->last_op_entry, "%d %s", (int)op, entry);
        return EPERM;
    }
    if (h->fail_at && h->calls == h->fail_at) {
        snprintf(h->last_op_entry, sizeof h->last_op_entry, "%d %s", (int)op, entry);
        return h->fail_err;
    }
    if (h->fail_at && h->calls > h->fail_at && h->fail_also_op && op == h->fail_also_op) return EIO;
    return 0;
}

static void arm(void) {
    memset(&g_h, 0, sizeof g_h);
    atomic_store(&g_cancel, 0);
    ct_publish_set_test_hook(hook, &g_h);
}

/* ---- tests --------------------------------------------------------------- */

static void test_commit_replaces_set(void **state) {
    (void)state;
    write_old_set();
    arm();
    int committed = 0;
    CT_ASSERT_OK(publish(&committed));
    assert_int_equal(committed, 1);
    expect_new_set();
    /* the step points, in order */
    const char *want[] = {"stage:0", "stage:1", "stage:2", "stage:3", "backup:0", "backup:1", "backup:2",
                          "backup:3", "journal", "source", "barrier", "rename:0", "rename:1", "rename:2",
                          "rename:3", "dirsync", "commit", "cleanup"};
    assert_int_equal(g_h.n_steps, 18);
    for (int i = 0; i < 18; i++) assert_string_equal(g_h.steps[i], want[i]);
}

/* Fail each filesystem call of the commit in turn, with EIO and ENOSPC:
 * before the commit point the old set stays, whole; after it the new one
 * is in place and the error says so; no side file survives the call (or,
 * where cleanup itself failed, the recovery). */
static void test_every_call_fails(void **state) {
    (void)state;
    write_old_set();
    arm();
    CT_ASSERT_OK(publish(NULL));
    int total = g_h.calls;
    /* stage 4 x (open, fchmod, write, fsync, close), backups 3 links + a
     * marker (open, close), journal (open, close), barrier fsync, 4 renames,
     * fsync, journal unlink (the commit point), fsync, 4 cleanup unlinks */
    assert_int_equal(total, 39);
    int old_seen = 0, new_seen = 0;
    static const int errs[] = {EIO, ENOSPC, EROFS}; /* EROFS: a read-only output folder */
    for (int k = 1; k <= total; k++) {
        for (int e = 0; e < 3; e++) {
            write_old_set();
            arm();
            g_h.fail_at = k;
            g_h.fail_err = errs[e];
            int committed = -1;
            ct_status s = publish(&committed);
            if (s == CT_OK) fail_msg("call %d (%s) failed but the commit succeeded", k, g_h.last_op_entry);
            if (!strstr(ct_last_error(), strerror(g_h.fail_err)))
                fail_msg("call %d: message '%s' lacks the cause", k, ct_last_error());
            assert_int_equal(committed, k >= 35); /* after the journal's removal */
            if (committed) {
                CT_ASSERT_ERROR_HAS("Output commit completed but cleanup was incomplete");
                ct_publish_set_test_hook(NULL, NULL);
                ct_recovery rep;
                CT_ASSERT_OK(ct_publish_recover(&g_bd, "a", &rep));
                assert_int_equal(rep.rolled_back, 0);
                expect_new_set();
                new_seen++;
            } else {
                expect_old_set();
                old_seen++;
            }
        }
    }
    assert_int_equal(old_seen, 3 * 34);
    assert_int_equal(new_seen, 3 * 5);

    /* the message names the output, the operation and its entry */
    write_old_set();
    arm();
    g_h.fail_at = 3; /* the first write */
    g_h.fail_err = ENOSPC;
    CT_ASSERT_STATUS(publish(NULL), CT_ERR_IO);
    char want[8192];
    snprintf(want, sizeof want, "Cannot publish %s/a.txt: write .a.txt.", g_dir);
    assert_int_equal(strncmp(ct_last_error(), want, strlen(want)), 0);
    assert_true(ct_str_ends_with(ct_last_error(), ".tmp: No space left on device"));
    expect_old_set();
}

/* The same with hard links refused: backups are fsynced copies made under
 * a temporary name, and every call of that path fails in turn too. */
static void test_every_call_fails_copy_backups(void **state) {
    (void)state;
    write_old_set();
    arm();
    g_h.links_refused = 1;
    CT_ASSERT_OK(publish(NULL));
    expect_new_set();
    int total = g_h.calls;
    assert_true(total > 39);
    int old_seen = 0, new_seen = 0;
    for (int k = 1; k <= total; k++) {
        write_old_set();
        arm();
        g_h.links_refused = 1;
        g_h.fail_at = k;
        g_h.fail_err = ENOSPC;
        int committed = -1;
        ct_status s = publish(&committed);
        if (s == CT_OK) {
            /* only a refused link can be "failed" without effect */
            assert_true(strncmp(g_h.last_op_entry, "6 ", 2) == 0);
            expect_new_set();
            continue;
        }
        if (!strstr(ct_last_error(), strerror(ENOSPC))) fail_msg("call %d: '%s'", k, ct_last_error());
        if (committed) {
            ct_publish_set_test_hook(NULL, NULL);
            CT_ASSERT_OK(ct_publish_recover(&g_bd, "a", NULL));
            expect_new_set();
            new_seen++;
        } else {
            expect_old_set();
            old_seen++;
        }
    }
    assert_int_equal(new_seen, 5);
    assert_true(old_seen > 34);
}

/* A recovery that fails half-way (its second restore) is finished by the
 * next one. */
static void test_recovery_interrupted(void **state) {
    (void)state;
    write_old_set();
    ct_publish_set_test_hook(NULL, NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("CT_TEST_COMMIT_PAUSE", "rename:3", 1);
        _exit(publish(NULL) == CT_OK ? 0 : 1);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
    assert_true(WIFSTOPPED(st));
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    /* three members renamed, the manifest not: a mix on disk */
    ct_test_expect_file_text(P("a.txt"), "new txt, longer\n");
    ct_test_expect_file_text(P(k_names[3]), "old manifest\n");
    arm();
    g_h.fail_at = 2; /* the second restore rename */
    g_h.fail_err = EIO;
    ct_recovery rep;
    CT_ASSERT_STATUS(ct_publish_recover(&g_bd, "a", &rep), CT_ERR_IO);
    CT_ASSERT_ERROR_HAS("Cannot recover ");
    CT_ASSERT_ERROR_HAS(": restore: ");
    ct_publish_set_test_hook(NULL, NULL);
    CT_ASSERT_OK(ct_publish_recover(&g_bd, "a", &rep));
    assert_int_equal(rep.rolled_back, 1);
    expect_old_set();
}

static void test_cancel_at_each_step(void **state) {
    (void)state;
    write_old_set();
    arm();
    CT_ASSERT_OK(publish(NULL));
    int n = g_h.n_steps;
    char labels[64][48];
    memcpy(labels, g_h.steps, sizeof labels);
    for (int i = 0; i < n; i++) {
        write_old_set();
        arm();
        g_h.cancel_at = labels[i];
        int committed = -1;
        ct_status s = publish(&committed);
        int after_last_rename = strcmp(labels[i], "dirsync") == 0 || strcmp(labels[i], "commit") == 0 ||
                                strcmp(labels[i], "cleanup") == 0;
        if (after_last_rename) {
            CT_ASSERT_OK(s);
            assert_int_equal(committed, 1);
            expect_new_set();
        } else {
            if (s != CT_ERR_ABORTED) fail_msg("cancel at %s: %s", labels[i], ct_status_str(s));
            char want[8192];
            snprintf(want, sizeof want, "Output commit cancelled: %s/a.txt", g_dir);
            assert_string_equal(ct_last_error(), want);
            assert_int_equal(committed, 0);
            expect_old_set();
        }
    }
}

static void test_source_changed(void **state) {
    (void)state;
    write_old_set();
    arm();
    g_h.touch_source_at = "backup:1";
    CT_ASSERT_STATUS(publish(NULL), CT_ERR_IO);
    char want[8192];
    snprintf(want, sizeof want, "Source changed while processing: %s", P("a.wav"));
    assert_string_equal(ct_last_error(), want);
    ct_test_write_text(g_dir, "a.wav", "RIFF"); /* count_entries counts it either way */
    expect_old_set();
    /* a source that vanished */
    write_old_set();
    arm();
    assert_int_equal(unlink(P("a.wav")), 0);
    CT_ASSERT_STATUS(publish(NULL), CT_ERR_IO);
    snprintf(want, sizeof want, "Cannot re-check source %s: %s", P("a.wav"), strerror(ENOENT));
    assert_string_equal(ct_last_error(), want);
}

/* Real failures, not injected: a file size limit (EFBIG, as a full disk)
 * and a read-only output folder. */
static void test_real_failures(void **state) {
    (void)state;
    write_old_set();
    ct_publish_set_test_hook(NULL, NULL);
    ct_test_limit_file_size(10); /* "new txt, longer\n" is 16 bytes */
    ct_status s = publish(NULL);
    ct_test_limit_file_size(0);
    assert_int_equal(s, CT_ERR_IO);
    CT_ASSERT_ERROR_HAS(": write .a.txt.");
    CT_ASSERT_ERROR_HAS(strerror(EFBIG));
    expect_old_set();

    if (geteuid() == 0) return; /* root writes into a read-only folder */
    assert_int_equal(chmod(g_dir, 0555), 0);
    s = publish(NULL);
    assert_int_equal(chmod(g_dir, 0755), 0);
    assert_int_equal(s, CT_ERR_IO);
    CT_ASSERT_ERROR_HAS(strerror(EACCES));
    expect_old_set();
}

static void test_refused_targets(void **state) {
    (void)state;
    char want[8192];
    snprintf(want, sizeof want, "Publication entry is not a regular file: %s/a.srt", g_dir);
    for (int kind = 0; kind < 5; kind++) {
        write_old_set();
        assert_int_equal(unlink(P("a.srt")), 0);
        if (kind == 4 && mknod(P("a.srt"), S_IFCHR | 0600, makedev(1, 3)) != 0) {
            /* a character device (/dev/null's numbers) needs privileges a
             * container may lack */
            assert_true(errno == EPERM || errno == EACCES);
            continue;
        }
        if (kind == 0) assert_int_equal(symlink("a.txt", P("a.srt")), 0);
        if (kind == 1) assert_int_equal(symlink("missing", P("a.srt")), 0);
        if (kind == 2) assert_int_equal(mkdir(P("a.srt"), 0755), 0);
        if (kind == 3) assert_int_equal(mkfifo(P("a.srt"), 0600), 0); /* opening it would block */
        arm();
        CT_ASSERT_STATUS(publish(NULL), CT_ERR_IO);
        assert_string_equal(ct_last_error(), want);
        assert_int_equal(count_entries(), 4); /* nothing added */
        ct_test_expect_file_text(P("a.txt"), "old txt\n");
    }
}

static void test_rollback_incomplete_then_recover(void **state) {
    (void)state;
    write_old_set();
    arm();
    g_h.fail_err = EIO;
    g_h.fail_also_op = CT_PUB_OP_RENAME;
    /* numbering: stage 4 members x (open, fchmod, write, fsync, close) = 20,
     * backups: link x3 + marker (open, close) = 5, journal (open, close) = 2,
     * barrier fsync = 1, renames = 4, then the folder fsync: call 33 */
    g_h.fail_at = 33;
    ct_status s = publish(NULL);
    assert_int_equal(s, CT_ERR_IO);
    CT_ASSERT_ERROR_HAS("Output commit failed and rollback was incomplete (");
    CT_ASSERT_ERROR_HAS("fsync folder");
    CT_ASSERT_ERROR_HAS("preserved backups: [");
    CT_ASSERT_ERROR_HAS(".a.txt.");
    /* the new files are in place, backups and journal kept */
    ct_test_expect_file_text(P("a.txt"), "new txt, longer\n");
    assert_int_equal(access(P("a.vtt"), F_OK), -1); /* its undo was an unlink, which worked */
    ct_publish_set_test_hook(NULL, NULL);
    ct_recovery rep;
    CT_ASSERT_OK(ct_publish_recover(&g_bd, "a", &rep));
    assert_int_equal(rep.rolled_back, 1);
    assert_int_equal(rep.restored, 3);
    assert_int_equal(rep.removed_new, 0);
    expect_old_set();
    /* idempotent */
    CT_ASSERT_OK(ct_publish_recover(&g_bd, "a", &rep));
    assert_int_equal(rep.rolled_back + rep.restored + rep.removed_new + rep.cleaned, 0);
    expect_old_set();
}

static void test_misuse_and_binding(void **state) {
    (void)state;
    write_old_set();
    ct_publish_member bad[] = {{"../x", "a", 1}};
    ct_publish_request r = {.dir = &g_bd, .members = bad, .n = 1};
    CT_ASSERT_STATUS(ct_publish_set(&r, NULL), CT_ERR_INVALID_ARG);
    assert_string_equal(ct_last_error(), "Invalid publication entry name: ../x");
    bad[0].name = "..";
    CT_ASSERT_STATUS(ct_publish_set(&r, NULL), CT_ERR_INVALID_ARG);
    bad[0].name = "";
    CT_ASSERT_STATUS(ct_publish_set(&r, NULL), CT_ERR_INVALID_ARG);

    /* a non-canonical folder cannot be bound */
    ct_bound_dir d2;
    char link[8192];
    snprintf(link, sizeof link, "%s.link", g_dir);
    unlink(link);
    assert_int_equal(symlink(g_dir, link), 0);
    CT_ASSERT_STATUS(ct_bound_dir_open(link, &d2), CT_ERR_IO);
    char want[16384];
    snprintf(want, sizeof want, "Publication parent changed after planning: %s", link);
    assert_string_equal(ct_last_error(), want);
    unlink(link);

    /* bound again, but not the folder planning saw */
    struct stat st;
    assert_int_equal(stat(g_dir, &st), 0);
    CT_ASSERT_OK(ct_bound_dir_expect(&g_bd, (uint64_t)st.st_dev, (uint64_t)st.st_ino));
    CT_ASSERT_STATUS(ct_bound_dir_expect(&g_bd, (uint64_t)st.st_dev, (uint64_t)st.st_ino + 1), CT_ERR_IO);
    snprintf(want, sizeof want, "Publication parent changed after planning: %s", g_dir);
    assert_string_equal(ct_last_error(), want);

    /* the bound folder moved away after binding */
    char moved[8192];
    snprintf(moved, sizeof moved, "%s.moved", g_dir);
    assert_int_equal(rename(g_dir, moved), 0);
    assert_int_equal(mkdir(g_dir, 0755), 0);
    ct_publish_member one[] = {{"a.txt", "x", 1}};
    r.members = one;
    CT_ASSERT_STATUS(ct_publish_set(&r, NULL), CT_ERR_IO);
    snprintf(want, sizeof want, "Publication parent changed after planning: %s", g_dir);
    assert_string_equal(ct_last_error(), want);
    assert_int_equal(ct_test_count_entries(moved), 4); /* nothing staged in the old folder */
    assert_int_equal(ct_test_count_entries(g_dir), 0);
    ct_test_rmtree(moved);
}

static void test_state_write(void **state) {
    (void)state;
    write_old_set();
    ct_publish_member m[] = {{".a.cohere-transcribe.asr.json", "{\"v\":1}\n", 8}};
    ct_publish_request r = {.dir = &g_bd, .members = m, .n = 1, .source_path = P("a.wav"), .snapshot = &g_snap};
    CT_ASSERT_OK(ct_publish_state(&r, NULL));
    ct_test_expect_file_text(P(".a.cohere-transcribe.asr.json"), "{\"v\":1}\n");
    m[0].data = "{\"v\":2}\n";
    arm();
    g_h.fail_at = 10; /* stage 5 + backup link 1 + journal 2 + barrier 1: the rename */
    g_h.fail_err = ENOSPC;
    CT_ASSERT_STATUS(ct_publish_state(&r, NULL), CT_ERR_IO);
    CT_ASSERT_ERROR_HAS("rename");
    ct_test_expect_file_text(P(".a.cohere-transcribe.asr.json"), "{\"v\":1}\n");
    assert_int_equal(count_entries(), 5);
    /* a failed post-rename fsync with a failed rollback: State commit wording */
    arm();
    g_h.fail_at = 11;
    g_h.fail_err = EIO;
    g_h.fail_also_op = CT_PUB_OP_RENAME;
    CT_ASSERT_STATUS(ct_publish_state(&r, NULL), CT_ERR_IO);
    CT_ASSERT_ERROR_HAS("State commit failed and rollback was incomplete (");
    CT_ASSERT_ERROR_HAS("preserved backup: ");
    ct_publish_set_test_hook(NULL, NULL);
    CT_ASSERT_OK(ct_publish_recover(&g_bd, "a", NULL));
    ct_test_expect_file_text(P(".a.cohere-transcribe.asr.json"), "{\"v\":1}\n");
    assert_int_equal(count_entries(), 5);
    CT_ASSERT_STATUS(ct_publish_state(&(ct_publish_request){.dir = &g_bd, .members = m, .n = 2}, NULL),
                     CT_ERR_INVALID_ARG);
}

/* Leftovers that no journal covers are garbage; two backups of one name
 * are refused (a human decides). */
static void test_recover_garbage(void **state) {
    (void)state;
    write_old_set();
    ct_test_write_text(g_dir, ".a.txt.0123456789abcdef01234567.tmp", "partial");
    ct_test_write_text(g_dir, ".a.srt.0123456789abcdef01234567.bak", "old srt\n");
    ct_test_write_text(g_dir, ".a.vtt.0123456789abcdef01234567.new", "");
    ct_test_write_text(g_dir, ".b.txt.0123456789abcdef01234567.tmp", "another set's");
    ct_test_write_text(g_dir, ".a.txt.0123456789ABCDEF01234567.tmp", "not ours: upper-case hex");
    ct_recovery rep;
    CT_ASSERT_OK(ct_publish_recover(&g_bd, "a", &rep));
    assert_int_equal(rep.cleaned, 3);
    assert_int_equal(rep.rolled_back, 0);
    assert_int_equal(count_entries(), 6);
    assert_int_equal(unlink(P(".b.txt.0123456789abcdef01234567.tmp")), 0);
    assert_int_equal(unlink(P(".a.txt.0123456789ABCDEF01234567.tmp")), 0);
    expect_old_set();

    ct_test_write_text(g_dir, ".a.srt.0123456789abcdef01234567.bak", "x");
    ct_test_write_text(g_dir, ".a.srt.1123456789abcdef01234567.bak", "y");
    ct_test_write_text(g_dir, ".a.srt.0123456789abcdef01234567.jnl", "");
    CT_ASSERT_STATUS(ct_publish_recover(&g_bd, "a", &rep), CT_ERR_IO);
    CT_ASSERT_ERROR_HAS("two backups");
}

/* The cheap per-file check: a stat of the set's fixed journal names. */
static pid_t kill_at(const char *label) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("CT_TEST_COMMIT_PAUSE", label, 1);
        _exit(publish(NULL) == CT_OK ? 0 : 1);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
    assert_true(WIFSTOPPED(st));
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return pid;
}

static void test_recover_if_needed(void **state) {
    (void)state;
    write_old_set();
    ct_publish_set_test_hook(NULL, NULL);
    kill_at("rename:1");
    ct_recovery rep;
    CT_ASSERT_OK(ct_publish_recover_if_needed(&g_bd, "a", &rep));
    assert_int_equal(rep.rolled_back, 1);
    expect_old_set();

    /* killed before the journal: the set is whole, only garbage is left,
     * which the cheap check leaves and the folder listing finds */
    write_old_set();
    kill_at("backup:2");
    CT_ASSERT_OK(ct_publish_recover_if_needed(&g_bd, "a", &rep));
    assert_int_equal(rep.rolled_back + rep.restored + rep.removed_new + rep.cleaned, 0);
    assert_true(count_entries() > 4);
    char **v = NULL;
    size_t n = 0;
    CT_ASSERT_OK(ct_publish_pending_stems(g_dir, &v, &n));
    assert_int_equal(n, 1);
    assert_string_equal(v[0], "a");
    free(v[0]);
    free(v);
    CT_ASSERT_OK(ct_publish_recover(&g_bd, "a", &rep));
    assert_int_equal(rep.cleaned, 4 + 2); /* 4 temporaries, the backups of a.txt and a.srt */
    expect_old_set();

    /* a commit refuses to start over an interrupted one's journal */
    kill_at("barrier");
    char want[8192];
    snprintf(want, sizeof want,
             "Cannot publish %s/.a.cohere-transcribe.manifest.json: the journal "
             "..a.cohere-transcribe.manifest.json.000000000000000000000000.jnl of an interrupted commit is still "
             "there (the set must be recovered first)", g_dir);
    CT_ASSERT_STATUS(publish(NULL), CT_ERR_IO);
    assert_string_equal(ct_last_error(), want);
    CT_ASSERT_OK(ct_publish_recover_if_needed(&g_bd, "a", &rep));
    assert_int_equal(rep.rolled_back, 1);
    expect_old_set();
    CT_ASSERT_OK(publish(NULL));
    expect_new_set();
}

/* One listing names the stems that need recovery. */
static void test_pending_stems(void **state) {
    (void)state;
    write_old_set();
    char **v = NULL;
    size_t n = 9;
    CT_ASSERT_OK(ct_publish_pending_stems(g_dir, &v, &n));
    assert_int_equal(n, 0);
    free(v);
    ct_test_write_text(g_dir, ".a.txt.0123456789abcdef01234567.tmp", "");
    ct_test_write_text(g_dir, "..a.cohere-transcribe.manifest.json.0123456789abcdef01234567.jnl", "");
    ct_test_write_text(g_dir, "..talk.v2.cohere-transcribe.asr.json.0123456789abcdef01234567.bak", "");
    ct_test_write_text(g_dir, ".x.wav.0123456789abcdef01234567.tmp", "");  /* not a member name */
    ct_test_write_text(g_dir, ".a.txt.0123456789abcdef0123456.tmp", "");   /* 23 hex */
    CT_ASSERT_OK(ct_publish_pending_stems(g_dir, &v, &n));
    assert_int_equal(n, 2);
    int a = strcmp(v[0], "a") == 0 ? 0 : 1;
    assert_string_equal(v[a], "a");
    assert_string_equal(v[1 - a], "talk.v2");
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
    CT_ASSERT_STATUS(ct_publish_pending_stems(P("a.txt"), &v, &n), CT_ERR_IO);
}

/* A child paused (SIGSTOP, CT_TEST_COMMIT_PAUSE) at each step point is
 * killed with SIGKILL; recovery then leaves the old set for a kill before
 * the commit point and the new one after it, with nothing else. */
static void test_kill_at_each_step(void **state) {
    (void)state;
    const char *labels[] = {"stage:0", "stage:2", "backup:0", "backup:3", "journal", "source", "barrier",
                            "rename:0", "rename:1", "rename:3", "dirsync", "commit", "cleanup"};
    size_t n = sizeof labels / sizeof *labels;
    for (size_t i = 0; i < n; i++) {
        write_old_set();
        ct_publish_set_test_hook(NULL, NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            setenv("CT_TEST_COMMIT_PAUSE", labels[i], 1);
            ct_status s = publish(NULL);
            _exit(s == CT_OK ? 0 : 1);
        }
        int st = 0;
        assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
        if (!WIFSTOPPED(st)) fail_msg("child did not pause at %s", labels[i]);
        assert_int_equal(kill(pid, SIGKILL), 0);
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFSIGNALED(st));
        ct_recovery rep;
        CT_ASSERT_OK(ct_publish_recover(&g_bd, "a", &rep));
        if (strcmp(labels[i], "cleanup") == 0) {
            assert_int_equal(rep.rolled_back, 0);
            expect_new_set();
        } else {
            if (strncmp(labels[i], "stage", 5) && strncmp(labels[i], "backup", 6) && strcmp(labels[i], "journal"))
                assert_int_equal(rep.rolled_back, 1);
            expect_old_set();
        }
    }
}

/* Kills at random moments: a child commits sets A and B in turn, sleeping
 * 1 ms at every step point (CT_TEST_COMMIT_PAUSE=* with _MS), and is
 * killed after a random delay; after recovery every member holds the same
 * generation, and nothing else is in the folder. */
static void test_kill_at_random_moments(void **state) {
    (void)state;
    write_old_set();
    srand(12345);
    int inside = 0, kills = 50;
    for (int round = 0; round < kills; round++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            setenv("CT_TEST_COMMIT_PAUSE", "*", 1);
            setenv("CT_TEST_COMMIT_PAUSE_MS", "1", 1);
            for (unsigned gen = 0;; gen++) {
                char body[N_MEMBERS][32];
                ct_publish_member m[N_MEMBERS];
                for (int i = 0; i < N_MEMBERS; i++) {
                    snprintf(body[i], sizeof body[i], "gen %c\n", gen % 2 ? 'B' : 'A');
                    m[i] = (ct_publish_member){k_names[i], body[i], strlen(body[i])};
                }
                ct_publish_request r = {.dir = &g_bd, .members = m, .n = N_MEMBERS};
                if (ct_publish_set(&r, NULL) != CT_OK) _exit(1);
            }
        }
        struct timespec ts = {0, (long)(rand() % 40) * 1000000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int st = 0;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFSIGNALED(st)); /* it never stopped on its own */
        ct_recovery rep;
        CT_ASSERT_OK(ct_publish_recover(&g_bd, "a", &rep));
        if (rep.rolled_back || rep.cleaned) inside++;
        /* one generation throughout (the first kill may leave the old set) */
        char first[64] = "";
        for (int i = 0; i < N_MEMBERS; i++) {
            char path[8192], buf[64] = "";
            snprintf(path, sizeof path, "%s/%s", g_dir, k_names[i]);
            FILE *f = fopen(path, "r");
            if (!f) {
                assert_int_equal(i, 2); /* a.vtt is absent only in the old set */
                snprintf(buf, sizeof buf, "absent");
            } else {
                if (!fgets(buf, sizeof buf, f)) buf[0] = '\0';
                fclose(f);
            }
            const char *gen = strncmp(buf, "gen ", 4) == 0 ? buf : "old";
            if (i == 0) snprintf(first, sizeof first, "%s", gen);
            else if (strcmp(first, gen) != 0) fail_msg("round %d: %s is '%s' but a.txt is '%s'", round, k_names[i], gen, first);
        }
        assert_int_equal(count_entries(), strcmp(first, "old") == 0 ? 4 : 5);
    }
    print_message("%d of %d kills landed inside a commit\n", inside, kills);
    assert_true(inside > kills / 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commit_replaces_set, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_call_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_call_fails_copy_backups, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovery_interrupted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_at_each_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_changed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_real_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_targets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollback_incomplete_then_recover, setup, teardown),
        cmocka_unit_test_setup_teardown(test_misuse_and_binding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_state_write, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recover_garbage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pending_stems, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recover_if_needed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill_at_each_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill_at_random_moments, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
