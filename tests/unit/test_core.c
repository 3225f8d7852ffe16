/* test_core.c — status codes, messages, arena, filesystem helpers (atomic files included). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/arena.h"
#include "core/dtype.h"
#include "core/fs.h"
#include "testutil.h"

static void test_fail_sets_message(void **state) {
    (void)state;
    ct_status s = ct_fail(CT_ERR_FORMAT, "bad %s at %d", "header", 7);
    assert_int_equal(s, CT_ERR_FORMAT);
    assert_string_equal(ct_last_error(), "bad header at 7");
    ct_fail_wrap(CT_ERR_FORMAT, "model.safetensors");
    assert_string_equal(ct_last_error(), "model.safetensors: bad header at 7");
    assert_string_equal(ct_status_str(CT_ERR_LIMIT), "CT_ERR_LIMIT");
    assert_string_equal(ct_status_str((ct_status)999), "CT_ERR_UNKNOWN");
    ct_error_clear();
    assert_string_equal(ct_last_error(), "");
}

/* A new message may quote the previous one: ct_fail(code, "... %s",
 * ct_last_error()) reads the buffer it is about to overwrite. */
static void test_fail_quotes_last_error(void **state) {
    (void)state;
    ct_fail(CT_ERR_IO, "disk on fire");
    ct_status s = ct_fail(CT_ERR_NETWORK, "%s (and no usable cached copy: %s)", "host unreachable",
                          ct_last_error());
    assert_int_equal(s, CT_ERR_NETWORK);
    assert_string_equal(ct_last_error(), "host unreachable (and no usable cached copy: disk on fire)");
    ct_fail(CT_ERR_IO, "inner");
    ct_fail(CT_ERR_IO, "outer: %s", ct_last_error());
    assert_string_equal(ct_last_error(), "outer: inner");
    ct_error_clear();
}

static void test_arena(void **state) {
    (void)state;
    ct_arena a;
    CT_ASSERT_OK(ct_arena_init(&a, 1000));
    char *p = ct_arena_alloc(&a, 10);
    char *q = ct_arena_alloc(&a, 10);
    assert_non_null(p);
    assert_non_null(q);
    assert_int_equal((uintptr_t)p % CT_ARENA_ALIGN, 0);
    assert_int_equal((uintptr_t)q % CT_ARENA_ALIGN, 0);
    assert_true(q >= p + 10);
    size_t m = ct_arena_mark(&a);
    assert_null(ct_arena_alloc(&a, 5000));
    CT_ASSERT_ERROR_HAS("arena");
    assert_non_null(ct_arena_alloc(&a, 100));
    ct_arena_rewind(&a, m);
    assert_int_equal(a.used, m);
    ct_arena_reset(&a);
    int *z = ct_arena_calloc(&a, 4, sizeof(int));
    assert_int_equal(z[0] | z[1] | z[2] | z[3], 0);
    assert_null(ct_arena_calloc(&a, SIZE_MAX / 2, 4));
    ct_arena_free(&a);
    ct_arena_free(NULL);
}

static void test_fs(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char path[4096], sub[4096];
    CT_ASSERT_OK(ct_path_join(path, sizeof path, dir, "a.txt"));
    mode_t um = umask(022);
    CT_ASSERT_OK(ct_fs_write_atomic(path, "hello", 5));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644); /* 0666 & ~umask, not mkstemp's 0600 */
    umask(um);
    char *buf;
    size_t n;
    CT_ASSERT_OK(ct_fs_read_all(path, 100, &buf, &n));
    assert_int_equal(n, 5);
    assert_string_equal(buf, "hello");
    free(buf);
    CT_ASSERT_STATUS(ct_fs_read_all(path, 4, &buf, &n), CT_ERR_LIMIT);
    CT_ASSERT_ERROR_HAS("a.txt");
    ct_mapping m;
    CT_ASSERT_OK(ct_fs_map(path, &m));
    assert_int_equal(m.size, 5);
    assert_memory_equal(m.data, "hello", 5);
    ct_fs_unmap(&m);
    CT_ASSERT_STATUS(ct_fs_read_all("/nonexistent/x", 4, &buf, &n), CT_ERR_NOT_FOUND);
    CT_ASSERT_OK(ct_path_join(sub, sizeof sub, dir, "x/y/z"));
    CT_ASSERT_OK(ct_fs_mkdirs(sub));
    assert_true(ct_fs_is_dir(sub));
    assert_false(ct_fs_is_file(sub));
    CT_ASSERT_STATUS(ct_fs_mkdirs(path), CT_ERR_IO);
    char small[8];
    CT_ASSERT_STATUS(ct_path_join(small, sizeof small, "abcdef", "ghi"), CT_ERR_LIMIT);
    ct_test_rmtree(dir);
    assert_false(ct_fs_is_dir(dir));
}

/* A file written in pieces appears only at commit, whole, with 0666 & ~umask;
 * closed without commit it leaves nothing behind, not even the temp file. */
static void test_atomic_file(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char path[4096];
    CT_ASSERT_OK(ct_path_join(path, sizeof path, dir, "w.bin"));
    ct_atomic_file f;
    CT_ASSERT_OK(ct_atomic_file_open(&f, path));
    CT_ASSERT_OK(ct_atomic_file_write(&f, "abc", 3));
    CT_ASSERT_OK(ct_atomic_file_write(&f, "", 0));
    CT_ASSERT_OK(ct_atomic_file_write(&f, "defg", 4));
    assert_false(ct_fs_is_file(path));
    assert_int_equal(ct_test_count_entries(dir), 1); /* the temp file */
    mode_t um = umask(027);
    ct_atomic_file_close(&f);
    assert_int_equal(ct_test_count_entries(dir), 0);
    assert_false(ct_fs_is_file(path));

    CT_ASSERT_OK(ct_atomic_file_open(&f, path));
    CT_ASSERT_OK(ct_atomic_file_write(&f, "abc", 3));
    CT_ASSERT_OK(ct_atomic_file_write(&f, "defg", 4));
    CT_ASSERT_OK(ct_atomic_file_commit(&f));
    CT_ASSERT_STATUS(ct_atomic_file_write(&f, "x", 1), CT_ERR_MISUSE);
    CT_ASSERT_STATUS(ct_atomic_file_commit(&f), CT_ERR_MISUSE);
    ct_atomic_file_close(&f);
    ct_atomic_file_close(&f); /* twice is harmless */
    umask(um);
    assert_int_equal(ct_test_count_entries(dir), 1);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    char *buf;
    size_t n;
    CT_ASSERT_OK(ct_fs_read_all(path, 100, &buf, &n));
    assert_int_equal(n, 7);
    assert_string_equal(buf, "abcdefg");
    free(buf);

    /* a folder that is not there: open fails naming the path; close is safe */
    CT_ASSERT_OK(ct_path_join(path, sizeof path, dir, "no/such/w.bin"));
    CT_ASSERT_STATUS(ct_atomic_file_open(&f, path), CT_ERR_IO);
    CT_ASSERT_ERROR_HAS("no/such/w.bin");
    ct_atomic_file_close(&f);
    ct_test_rmtree(dir);
}

/* A write that fails part-way (here the file-size limit, as ENOSPC would)
 * reports the path and leaves the old file and no temp file behind. */
static void test_atomic_write_fails_cleanly(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char path[4096];
    CT_ASSERT_OK(ct_path_join(path, sizeof path, dir, "keep.txt"));
    CT_ASSERT_OK(ct_fs_write_atomic(path, "old", 3));
    ct_test_limit_file_size(4096);
    static char big[3 << 12];
    ct_status s = ct_fs_write_atomic(path, big, sizeof big);
    ct_test_limit_file_size(0);
    assert_int_equal(s, CT_ERR_IO);
    CT_ASSERT_ERROR_HAS("keep.txt: write failed");
    ct_test_expect_file_text(path, "old");
    assert_int_equal(ct_test_count_entries(dir), 1); /* no temp file left */
    ct_test_rmtree(dir);
}

/* The one entry of dir (asserts there is exactly one), copied to name. */
static void only_entry(const char *dir, char *name, size_t cap) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(name, cap, "%s", e->d_name);
        n++;
    }
    closedir(d);
    assert_int_equal(n, 1);
}

/* Names near NAME_MAX: the temp file beside them must still fit, so a
 * 250-byte (and a 255-byte) name is written atomically; the temp name keeps
 * the name's first bytes, cut on a UTF-8 boundary, and a hash. */
static void test_atomic_long_names(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char path[4096], name[512], seen[512];
    for (int len = 250; len <= 255; len += 5) {
        memset(name, 'a', (size_t)len);
        name[len] = '\0';
        CT_ASSERT_OK(ct_path_join(path, sizeof path, dir, name));
        CT_ASSERT_OK(ct_fs_write_atomic(path, "long", 4));
        char *buf;
        size_t n;
        CT_ASSERT_OK(ct_fs_read_all(path, 100, &buf, &n));
        assert_int_equal(n, 4);
        assert_string_equal(buf, "long");
        free(buf);
        only_entry(dir, seen, sizeof seen);
        assert_string_equal(seen, name);
        assert_int_equal(unlink(path), 0);
    }
    /* 127 two-byte characters (254 bytes): the temp name must not split one */
    name[0] = '\0';
    for (int i = 0; i < 127; i++) strcat(name, "\xc3\xa9");
    CT_ASSERT_OK(ct_path_join(path, sizeof path, dir, name));
    ct_atomic_file f;
    CT_ASSERT_OK(ct_atomic_file_open(&f, path));
    only_entry(dir, seen, sizeof seen);
    assert_true(strlen(seen) <= 255);
    char *tilde = strchr(seen, '~');
    assert_non_null(tilde);
    assert_int_equal((tilde - seen) % 2, 0);
    assert_non_null(strstr(tilde, ".tmp."));
    assert_memory_equal(seen, name, (size_t)(tilde - seen));
    CT_ASSERT_OK(ct_atomic_file_write(&f, "x", 1));
    CT_ASSERT_OK(ct_atomic_file_commit(&f));
    ct_atomic_file_close(&f);
    only_entry(dir, seen, sizeof seen);
    assert_string_equal(seen, name);
    ct_test_rmtree(dir);
}

/* A write that fails part-way leaves bytes in the temp file; the file is
 * failed for good: a caller that ignores the error and writes on, or
 * commits, is refused and path never appears. */
static void test_atomic_write_failure_is_sticky(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char path[4096];
    CT_ASSERT_OK(ct_path_join(path, sizeof path, dir, "sticky.bin"));
    ct_atomic_file f;
    CT_ASSERT_OK(ct_atomic_file_open(&f, path));
    ct_test_limit_file_size(4096);
    static char big[3 << 12];
    ct_status s = ct_atomic_file_write(&f, big, sizeof big);
    ct_test_limit_file_size(0);
    assert_int_equal(s, CT_ERR_IO);
    CT_ASSERT_STATUS(ct_atomic_file_write(&f, "x", 1), CT_ERR_MISUSE);
    CT_ASSERT_ERROR_HAS("sticky.bin: write after a failed write");
    CT_ASSERT_STATUS(ct_atomic_file_commit(&f), CT_ERR_MISUSE);
    CT_ASSERT_ERROR_HAS("the file was not replaced");
    assert_false(ct_fs_is_file(path));
    ct_atomic_file_close(&f);
    assert_int_equal(ct_test_count_entries(dir), 0);
    ct_test_rmtree(dir);
}

static void test_dtype_conversions(void **state) {
    (void)state;
    /* every finite f16 and bf16 value survives a round trip through float */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = ct_f16_to_f32((uint16_t)h);
        if (f != f) continue;
        assert_int_equal(ct_f32_to_f16(f), h);
        float g = ct_bf16_to_f32((uint16_t)h);
        if (g != g) continue;
        assert_int_equal(ct_f32_to_bf16(g), h);
    }
    /* known values: 1/3 rounds to nearest, ties go to even, overflow -> inf */
    assert_int_equal(ct_f32_to_f16(1.0f / 3.0f), 0x3555);
    assert_int_equal(ct_f32_to_f16(65520.0f), 0x7c00);
    assert_int_equal(ct_f32_to_f16(65519.0f), 0x7bff);
    assert_int_equal(ct_f32_to_f16(5.96046448e-08f), 0x0001); /* smallest subnormal */
    assert_int_equal(ct_f32_to_f16(2.98023224e-08f), 0x0000); /* tie -> even (0) */
    assert_int_equal(ct_f32_to_bf16(1.0f / 3.0f), 0x3eab);
    assert_int_equal(ct_f32_to_bf16(1.00390625f), 0x3f80); /* tie -> even */
    assert_int_equal(ct_f32_to_bf16(1.01171875f), 0x3f82); /* tie -> even (up) */
    assert_true(ct_bf16_to_f32(ct_f32_to_bf16(0.0f / 0.0f)) != ct_bf16_to_f32(ct_f32_to_bf16(0.0f / 0.0f)));
    assert_int_equal(ct_dtype_size(CT_DTYPE_BF16), 2);
    assert_string_equal(ct_dtype_name(CT_DTYPE_I64), "I64");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fail_sets_message),
        cmocka_unit_test(test_fail_quotes_last_error),
        cmocka_unit_test(test_arena),
        cmocka_unit_test(test_fs),
        cmocka_unit_test(test_atomic_file),
        cmocka_unit_test(test_atomic_write_fails_cleanly),
        cmocka_unit_test(test_atomic_long_names),
        cmocka_unit_test(test_atomic_write_failure_is_sticky),
        cmocka_unit_test(test_dtype_conversions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
