/* testutil.c — see testutil.h. */
#include "testutil.h"

#include "compute/backend.h"
#include "core/fs.h"

#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

const char *ct_test_path(const char *env_var, const char *rel) {
    static char ring[8][4096];
    static int next;
    const char *base = getenv(env_var);
    if (!base) fail_msg("environment variable %s is not set (run the tests through ctest)", env_var);
    char *buf = ring[next++ % 8];
    snprintf(buf, sizeof ring[0], "%s/%s", base, rel);
    return buf;
}

const char *ct_test_tmpdir(void) {
    static char ring[4][4096];
    static int next;
    const char *t = getenv("TMPDIR");
    char *buf = ring[next++ % 4];
    snprintf(buf, sizeof ring[0], "%s/ct-test-XXXXXX", t ? t : "/tmp");
    if (!mkdtemp(buf)) fail_msg("mkdtemp failed");
    return buf;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

void ct_test_rmtree(const char *dir) { nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS); }

void ct_test_write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f) fail_msg("cannot create %s", path);
    if (len && fwrite(data, 1, len, f) != len) fail_msg("cannot write %s", path);
    fclose(f);
}

void ct_test_write_text(const char *dir, const char *name, const char *text) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p) fail_msg("path too long: %s/%s", dir, name);
    ct_test_write_file(p, text, strlen(text));
}

double ct_max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d != d) return INFINITY;
        if (d > m) m = d;
    }
    return m;
}

double ct_rel_l2(const float *a, const float *b, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        num += d * d;
        den += (double)b[i] * (double)b[i];
    }
    if (num != num) return INFINITY;
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

void ct_test_limit_file_size(size_t bytes) {
    static struct rlimit saved;
    static void (*saved_handler)(int);
    static int active;
    if (bytes == 0) {
        if (!active) return;
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &saved), 0);
        signal(SIGXFSZ, saved_handler);
        active = 0;
        return;
    }
    if (!active) {
        assert_int_equal(getrlimit(RLIMIT_FSIZE, &saved), 0);
        saved_handler = signal(SIGXFSZ, SIG_IGN);
        active = 1;
    }
    struct rlimit lim = saved;
    lim.rlim_cur = (rlim_t)bytes;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
}

int ct_test_count_entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

void ct_test_expect_file_text(const char *path, const char *want) {
    char *buf;
    size_t n;
    CT_ASSERT_OK(ct_fs_read_all(path, strlen(want) + 4096, &buf, &n)); /* room to see a longer file */
    assert_int_equal(n, strlen(want));
    assert_memory_equal(buf, want, n);
    free(buf);
}

const char *ct_test_real_tmpdir(void) {
    static char buf[4096];
    char *r = realpath(ct_test_tmpdir(), NULL);
    assert_non_null(r);
    snprintf(buf, sizeof buf, "%s", r);
    free(r);
    return buf;
}

const char *ct_test_join(const char *dir, const char *rel) {
    static char buf[16][4096];
    static int k;
    k = (k + 1) % 16;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, rel);
    return buf[k];
}

float ct_test_frand(uint64_t *state) {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return (float)((*state >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

float *ct_test_rnd(uint64_t *state, size_t n) {
    float *p = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; p && i < n; i++) p[i] = ct_test_frand(state);
    return p;
}

int ct_test_near_tie(int clip, const int32_t *ours, int n, const int32_t *ref, int nref, const float *ref_logits,
                     int V, double near_tie) {
    int k = 0;
    while (k < nref && k < n && ours[k] == ref[k]) k++;
    if (k == nref && n == nref) return 1;
    if (k >= nref || k >= n) fail_msg("clip %d: %d tokens, the reference %d, equal up to the shorter", clip, n, nref);
    const int mine = ours[k];
    assert_true(mine >= 0 && mine < V);
    const double gap = ref_logits[(size_t)k * V + ref[k]] - ref_logits[(size_t)k * V + mine];
    printf("  clip %d: departs from the reference at step %d (%d vs %d), fp32 gap %.4f\n", clip, k, mine, ref[k], gap);
    if (!(gap < near_tie))
        fail_msg("clip %d: step %d chose %d over the reference's %d, %.3f below it in fp32: not a near tie", clip, k,
                 mine, ref[k], gap);
    return 0;
}

int ct_test_have_gpu(const char *what, int *exit_code) {
    ct_backend *be;
    if (ct_backend_create("cuda", NULL, &be) == CT_OK) {
        ct_backend_free(be);
        *exit_code = 0;
        return 1;
    }
    const char *req = getenv("CT_REQUIRE_GPU");
    const int must = req && *req == '1';
    printf("%s %s: %s\n", must ? "FAIL" : "SKIP", what, ct_last_error());
    *exit_code = must;
    return 0;
}

int ct_test_backends_setup(void **state) {
    ct_test_backends *f = calloc(1, sizeof *f);
    if (!f || ct_backend_create("cpu-ref", NULL, &f->ref) || ct_backend_create("cpu", NULL, &f->fast)) return -1;
    if (ct_backend_arena_create(f->fast, 64u << 20, &f->ws)) return -1;
    *state = f;
    return 0;
}

int ct_test_backends_teardown(void **state) {
    ct_test_backends *f = *state;
    ct_backend_arena_free(f->fast, &f->ws);
    ct_backend_free(f->ref);
    ct_backend_free(f->fast);
    free(f);
    return 0;
}

ct_buf ct_test_dput(ct_backend *be, ct_dtype dt, const float *x, size_t n) {
    size_t es = ct_dtype_size(dt);
    void *h = malloc(es * (n ? n : 1)), *d = NULL;
    for (size_t i = 0; i < n; i++) {
        if (dt == CT_DTYPE_F32) ((float *)h)[i] = x[i];
        else if (dt == CT_DTYPE_BF16) ((uint16_t *)h)[i] = ct_f32_to_bf16(x[i]);
        else ((uint16_t *)h)[i] = ct_f32_to_f16(x[i]);
    }
    CT_ASSERT_OK(be->ops->alloc(be, es * n + 64, &d));
    CT_ASSERT_OK(be->ops->to_device(be, d, h, es * n));
    free(h);
    return ct_buf_make(d, dt);
}

ct_buf ct_test_dpoison(ct_backend *be, ct_dtype dt, size_t n) {
    void *d = NULL;
    CT_ASSERT_OK(be->ops->alloc(be, ct_dtype_size(dt) * n + 64, &d));
    void *h = malloc(ct_dtype_size(dt) * n + 1);
    memset(h, 0xff, ct_dtype_size(dt) * n);
    CT_ASSERT_OK(be->ops->to_device(be, d, h, ct_dtype_size(dt) * n));
    free(h);
    return ct_buf_make(d, dt);
}

float *ct_test_dget(ct_backend *be, ct_buf b, size_t n) {
    size_t es = ct_dtype_size(b.dtype);
    void *h = malloc(es * n + 1);
    float *f = malloc(sizeof(float) * n + 4);
    CT_ASSERT_OK(be->ops->to_host(be, h, b.data, es * n));
    for (size_t i = 0; i < n; i++)
        f[i] = b.dtype == CT_DTYPE_F32    ? ((float *)h)[i]
               : b.dtype == CT_DTYPE_BF16 ? ct_bf16_to_f32(((uint16_t *)h)[i])
                                          : ct_f16_to_f32(((uint16_t *)h)[i]);
    free(h);
    return f;
}

float ct_test_lcg_frand(unsigned *seed) {
    *seed = *seed * 1664525u + 1013904223u;
    return (float)((*seed >> 8) / 8388608.0 - 1.0);
}

float ct_test_round_to(ct_dtype dt, float x) {
    if (dt == CT_DTYPE_BF16) return ct_bf16_to_f32(ct_f32_to_bf16(x));
    if (dt == CT_DTYPE_F16) return ct_f16_to_f32(ct_f32_to_f16(x));
    return x;
}

float *ct_test_rnd_in(unsigned *seed, ct_dtype dt, size_t n, float scale) {
    float *x = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) x[i] = ct_test_round_to(dt, ct_test_lcg_frand(seed) * scale);
    return x;
}
