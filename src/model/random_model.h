/* random_model.h — write a Cohere ASR checkpoint of any size with random,
 * variance-preserving weights (REFERENCE.md), for benchmarks and tests.
 *
 * The default layout is what transformers' save_pretrained writes
 * (transformers config.json, generation_config.json, model.safetensors with
 * `model.` prefixes except log_softmax.*, preprocessor_config.json and a
 * tokenizer.json in the fixtures' Unigram conventions), so transformers and
 * this engine load the very same weights. The NeMo-style Hub layout can be
 * written too (tests of the loader). Every tensor draws from its own stream
 * seeded by (seed, tensor name, block of 65536 values): values do not depend
 * on layout, dtype, thread count or
 * write order, and memory stays at about one tensor.
 */
#ifndef CT_MODEL_RANDOM_MODEL_H
#define CT_MODEL_RANDOM_MODEL_H

#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"
#include "model/config.h"

typedef struct ct_random_model_opts {
    int enc_layers, enc_d_model, enc_heads, enc_ff, enc_conv_kernel, subsampling_channels, n_mels;
    int dec_layers, dec_d_model, dec_heads, dec_ff, dec_max_positions, vocab_size;
    ct_dtype dtype;          /* F32 or BF16 (F16 also accepted) */
    uint64_t seed;
    ct_config_layout layout; /* CT_CONFIG_TRANSFORMERS (default) or CT_CONFIG_NEMO */
    int bf16_exact;          /* round f32 values to bf16-representable ones */
    float head_scale;        /* multiplies the output head weight (1: plain) */
    int write_tokenizer;     /* also tokenizer.json (default 1) */
} ct_random_model_opts;

/* The full 2.07 B model (MODEL.md sizes), bf16, seed 0, transformers layout. */
ct_random_model_opts ct_random_model_default_options(void);

/* Write the checkpoint files into dir (created if needed). */
ct_status ct_random_model_write(const ct_random_model_opts *o, const char *dir);

/* Number of parameters the options describe (the counters excluded). */
int64_t ct_random_model_param_count(const ct_random_model_opts *o);

/* Minimum vocabulary the generated tokenizer needs (specials, languages,
 * 256 byte pieces and "▁"). */
int ct_random_model_min_vocab(void);

#endif
