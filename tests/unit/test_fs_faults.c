/* test_fs_faults.c — atomic files when fsync fails. The test links with
 * -Wl,--wrap=fsync (CMakeLists.txt), so every fsync the library makes goes
 * through __wrap_fsync below, which fails the next file or directory fsync
 * on request and otherwise calls the real one. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "testutil.h"

int __real_fsync(int fd);
int __wrap_fsync(int fd);

static int g_fail_file_fsync, g_fail_dir_fsync; /* fail the next one of each kind */

int __wrap_fsync(int fd) {
    struct stat st;
    int is_dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    int *flag = is_dir ? &g_fail_dir_fsync : &g_fail_file_fsync;
    if (*flag) {
        *flag = 0;
        errno = EIO;
        return -1;
    }
    return __real_fsync(fd);
}

/* The directory fsync fails after the rename: the caller is told the file
 * was replaced (committed = 1, "replaced, but"), and it was, in full. */
static void test_dir_fsync_fails_after_rename(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char path[4096];
    CT_ASSERT_OK(ct_path_join(path, sizeof path, dir, "out.txt"));
    CT_ASSERT_OK(ct_fs_write_atomic(path, "old", 3));

    ct_atomic_file f;
    CT_ASSERT_OK(ct_atomic_file_open(&f, path));
    CT_ASSERT_OK(ct_atomic_file_write(&f, "new", 3));
    g_fail_dir_fsync = 1;
    CT_ASSERT_STATUS(ct_atomic_file_commit(&f), CT_ERR_IO);
    assert_int_equal(g_fail_dir_fsync, 0); /* the wrapper was reached */
    CT_ASSERT_ERROR_HAS("out.txt: replaced, but the rename may not survive a crash: ");
    CT_ASSERT_ERROR_HAS("fsync failed: ");
    assert_int_equal(f.committed, 1);
    CT_ASSERT_STATUS(ct_atomic_file_commit(&f), CT_ERR_MISUSE);
    ct_atomic_file_close(&f);
    ct_test_expect_file_text(path, "new");
    assert_int_equal(ct_test_count_entries(dir), 1);

    /* the one-shot form says the same in its message */
    g_fail_dir_fsync = 1;
    CT_ASSERT_STATUS(ct_fs_write_atomic(path, "newer", 5), CT_ERR_IO);
    CT_ASSERT_ERROR_HAS("out.txt: replaced, but");
    ct_test_expect_file_text(path, "newer");
    assert_int_equal(ct_test_count_entries(dir), 1);
    ct_test_rmtree(dir);
}

/* The file's fsync fails: path is untouched, and a retried commit is
 * refused (a second fsync may succeed on pages the kernel dropped). */
static void test_file_fsync_failure_is_final(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char path[4096];
    CT_ASSERT_OK(ct_path_join(path, sizeof path, dir, "out.txt"));
    CT_ASSERT_OK(ct_fs_write_atomic(path, "old", 3));
    ct_atomic_file f;
    CT_ASSERT_OK(ct_atomic_file_open(&f, path));
    CT_ASSERT_OK(ct_atomic_file_write(&f, "new", 3));
    g_fail_file_fsync = 1;
    CT_ASSERT_STATUS(ct_atomic_file_commit(&f), CT_ERR_IO);
    CT_ASSERT_ERROR_HAS("out.txt: fsync failed: ");
    assert_int_equal(f.committed, 0);
    CT_ASSERT_STATUS(ct_atomic_file_commit(&f), CT_ERR_MISUSE);
    CT_ASSERT_STATUS(ct_atomic_file_write(&f, "x", 1), CT_ERR_MISUSE);
    ct_test_expect_file_text(path, "old");
    ct_atomic_file_close(&f);
    ct_test_expect_file_text(path, "old");
    assert_int_equal(ct_test_count_entries(dir), 1); /* no temp file left */
    ct_test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dir_fsync_fails_after_rename),
        cmocka_unit_test(test_file_fsync_failure_is_final),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
