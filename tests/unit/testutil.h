/* testutil.h — shared helpers for cmocka tests.
 *
 * Tests find committed fixtures under $CT_FIXTURES (tests/fixtures) and data
 * made by tests/setup/ under $CT_TESTDATA (build/testdata); CT_BIN is the
 * binaries folder. ct_test_path() joins one of those with a relative name.
 */
#ifndef CT_TESTUTIL_H
#define CT_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four includes above first. */
#include <cmocka.h>

#include "compute/backend.h"
#include "core/error.h"

/* "$VAR/rel" in a static per-call ring of buffers (valid for a few calls). */
const char *ct_test_path(const char *env_var, const char *rel);
#define CT_FIXTURE(rel) ct_test_path("CT_FIXTURES", rel)
#define CT_TESTDATA(rel) ct_test_path("CT_TESTDATA", rel)

/* A fresh empty temporary directory (under $TMPDIR or /tmp), removed with its
 * contents by ct_test_rmtree. */
const char *ct_test_tmpdir(void);
void ct_test_rmtree(const char *dir);
/* The same, as its canonical path (realpath), for tests that compare paths. */
const char *ct_test_real_tmpdir(void);
/* dir "/" rel in a ring of 16 buffers (valid for the next 15 calls). */
const char *ct_test_join(const char *dir, const char *rel);

/* Write bytes to a file (test data); asserts on failure. */
void ct_test_write_file(const char *path, const void *data, size_t len);
/* Write a NUL-terminated text as dir/name; asserts on failure. */
void ct_test_write_text(const char *dir, const char *name, const char *text);

/* Entries of dir other than "." and ".." (asserts dir opens). */
int ct_test_count_entries(const char *dir);
/* Assert the file at path holds exactly the text want. */
void ct_test_expect_file_text(const char *path, const char *want);

/* Cap the size of files this process writes at bytes (RLIMIT_FSIZE, with
 * SIGXFSZ ignored, so a write past it fails with EFBIG as on a full disk);
 * 0 restores the limit and the signal as they were. */
void ct_test_limit_file_size(size_t bytes);

/* Assert a call returned the given status, printing ct_last_error() if not. */
#define CT_ASSERT_STATUS(expr, want)                                                       \
    do {                                                                                   \
        ct_status got_ = (expr);                                                           \
        if (got_ != (want))                                                                \
            fail_msg("%s returned %s, want %s: %s", #expr, ct_status_str(got_),            \
                     ct_status_str(want), ct_last_error());                                \
    } while (0)
#define CT_ASSERT_OK(expr) CT_ASSERT_STATUS(expr, CT_OK)

/* Assert the last error message contains a substring. */
#define CT_ASSERT_ERROR_HAS(sub)                                                           \
    do {                                                                                   \
        if (!strstr(ct_last_error(), (sub)))                                               \
            fail_msg("error message '%s' lacks '%s'", ct_last_error(), (sub));             \
    } while (0)

/* max |a-b| and relative L2 ||a-b|| / ||b|| over n floats. */
double ct_max_abs_diff(const float *a, const float *b, size_t n);
double ct_rel_l2(const float *a, const float *b, size_t n);


/* xorshift64 uniform floats in [-1, 1) from *state (each test file keeps
 * its own seed, so its data does not depend on other files' draws). */
float ct_test_frand(uint64_t *state);
/* n such floats, malloc'd (one element when n is 0); the caller frees. */
float *ct_test_rnd(uint64_t *state, size_t n);


/* The near-tie rule for 16-bit engines against an fp32 reference
 * (docs/TESTING.md): our n tokens equal the reference's nref entirely, or
 * the first step where they differ is one where the reference's fp32 logits
 * ref_logits (nref, V) for its token and ours lie within near_tie; after it
 * the row follows another legitimate path and is not compared. Fails the
 * test otherwise (also when one is a strict prefix of the other). Returns
 * 1 when the tokens are identical (the caller then checks the stop reason),
 * 0 after a near-tie departure. */
int ct_test_near_tie(int clip, const int32_t *ours, int n, const int32_t *ref, int nref, const float *ref_logits,
                     int V, double near_tie);

/* The GPU tests' rule for a machine without CUDA: 1 when the "cuda" backend
 * can be created; else prints "SKIP <what>: <why>" and sets *exit_code to 0,
 * or, under CT_REQUIRE_GPU=1 (the GPU machine's test hook: a skip there is a
 * failure), prints "FAIL ..." and sets it to 1, and returns 0. */
int ct_test_have_gpu(const char *what, int *exit_code);

/* The op tests' group fixture: the "cpu-ref" backend, the "cpu" backend
 * with default options, and a 64 MiB arena over the latter. As cmocka's
 * group setup/teardown (state: a ct_test_backends *). */
typedef struct ct_test_backends {
    ct_backend *ref, *fast;
    ct_arena ws;
} ct_test_backends;
int ct_test_backends_setup(void **state);
int ct_test_backends_teardown(void **state);

/* The GPU op tests' random data: an LCG step giving a float uniform in
 * [-1, 1) (seed: the test's own state), x rounded to dt (bf16/f16 round to
 * nearest even; f32 unchanged), and n such values × scale, each
 * representable in dt (malloc'd). */
float ct_test_lcg_frand(unsigned *seed);
float ct_test_round_to(ct_dtype dt, float x);
float *ct_test_rnd_in(unsigned *seed, ct_dtype dt, size_t n, float scale);

/* Device buffers for the backend tests (any backend; the GPU tests' CUDA):
 * dput uploads n floats stored as dt (f32, bf16 or f16, round to nearest
 * even) into a new buffer with 64 bytes of slack; dpoison fills one with
 * 0xff bytes (NaN in every float type), so a kernel that skips an element
 * shows; dget downloads n elements of b widened to float32 (malloc'd).
 * Failures fail the test. */
ct_buf ct_test_dput(ct_backend *be, ct_dtype dt, const float *x, size_t n);
ct_buf ct_test_dpoison(ct_backend *be, ct_dtype dt, size_t n);
float *ct_test_dget(ct_backend *be, ct_buf b, size_t n);

#endif
