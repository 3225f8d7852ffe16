/* model_testutil.h — helpers the checkpoint tests share (test_checkpoint,
 * test_gguf): a tiny random model's options and a tensor-by-tensor
 * comparison of two checkpoints. Header-only and kept out of testutil.c,
 * which programs without the model module (tools/device/build.sh) link. */
#ifndef CT_MODEL_TESTUTIL_H
#define CT_MODEL_TESTUTIL_H

#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "model/checkpoint.h"
#include "model/random_model.h"
#include "testutil.h"

/* A 2+2-layer, d_model 64, 400-token f32 model whose weights are
 * bf16-representable (so f32 and bf16 copies hold the same values). */
static inline ct_random_model_opts ct_test_tiny_model(uint64_t seed) {
    ct_random_model_opts o = ct_random_model_default_options();
    o.enc_layers = 2, o.enc_d_model = 64, o.enc_heads = 4, o.enc_ff = 256, o.subsampling_channels = 16;
    o.dec_layers = 2, o.dec_d_model = 64, o.dec_heads = 4, o.dec_ff = 128, o.dec_max_positions = 128;
    o.vocab_size = 400;
    o.seed = seed;
    o.dtype = CT_DTYPE_F32;
    o.bf16_exact = 1;
    return o;
}

/* Every tensor of a (but those named skip_prefix...) is in b with the same
 * shape and the same values: as floats for float dtypes, byte for byte for
 * I64 (which both must be). */
static inline void ct_test_assert_tensors_in_except(const ct_checkpoint *a, const ct_checkpoint *b,
                                                    const char *skip_prefix) {
    for (size_t i = 0; i < ct_checkpoint_count(a); i++) {
        const ct_st_tensor *x = ct_checkpoint_at(a, i);
        if (skip_prefix && strncmp(x->name, skip_prefix, strlen(skip_prefix)) == 0) continue;
        const ct_st_tensor *y = ct_checkpoint_tensor(b, x->name);
        if (!y) fail_msg("tensor %s missing from the second checkpoint", x->name);
        assert_int_equal(x->ndim, y->ndim);
        for (int k = 0; k < x->ndim; k++) assert_int_equal(x->shape[k], y->shape[k]);
        if (x->dtype == CT_DTYPE_I64 || y->dtype == CT_DTYPE_I64) {
            assert_int_equal(x->dtype, y->dtype);
            assert_memory_equal(x->data, y->data, x->nbytes);
            continue;
        }
        size_t n = (size_t)x->numel;
        float *fx = malloc(n * sizeof *fx + 4), *fy = malloc(n * sizeof *fy + 4);
        CT_ASSERT_OK(ct_st_tensor_to_f32(x, fx, n));
        CT_ASSERT_OK(ct_st_tensor_to_f32(y, fy, n));
        if (n && memcmp(fx, fy, n * sizeof *fx) != 0)
            fail_msg("tensor %s differs (max |d| %g)", x->name, ct_max_abs_diff(fx, fy, n));
        free(fx);
        free(fy);
    }
}

static inline void ct_test_assert_tensors_in(const ct_checkpoint *a, const ct_checkpoint *b) {
    ct_test_assert_tensors_in_except(a, b, NULL);
}

/* A fresh temp dir holding fixture_dir's config.json, generation_config.json,
 * preprocessor_config.json and model.safetensors, with tokenizer_file as its
 * tokenizer.json (remove with ct_test_rmtree). */
static inline const char *ct_test_model_copy(const char *fixture_dir, const char *tokenizer_file) {
    const char *d = ct_test_tmpdir();
    const char *files[] = {"config.json", "generation_config.json", "preprocessor_config.json", "model.safetensors",
                           "tokenizer.json"};
    for (size_t i = 0; i < 5; i++) {
        char from[4096], to[4096], *b;
        size_t n;
        snprintf(from, sizeof from, "%s/%s", fixture_dir, files[i]);
        if (i == 4) snprintf(from, sizeof from, "%s", tokenizer_file);
        snprintf(to, sizeof to, "%s/%s", d, files[i]);
        CT_ASSERT_OK(ct_fs_read_all(from, (size_t)1 << 28, &b, &n));
        ct_test_write_file(to, b, n);
        free(b);
    }
    return d;
}

#endif
