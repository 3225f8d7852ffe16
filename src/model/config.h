/* config.h — the model's configuration, read from either config.json layout.
 *
 * Two layouts exist (MODEL.md): the Hub release's NeMo-style config.json
 * (encoder.*, preprocessor.*, transf_decoder.config_dict.*, top-level
 * vocab_size, supported_languages) and the transformers style written by
 * save_pretrained (encoder_config.*, decoder fields at top level). The
 * transformers layout gets transformers' own defaults (CohereAsrConfig and
 * its encoder defaults) for absent keys, exactly as from_pretrained would;
 * a NeMo-style key that is absent stays -1 ("unknown") and is derived from
 * the tensors by the checkpoint loader. Special ids come from
 * generation_config.json when present, else from config.json.
 * Quantized checkpoints (quantization_config) are refused: dense only.
 */
#ifndef CT_MODEL_CONFIG_H
#define CT_MODEL_CONFIG_H

#include <stddef.h>

#include "core/error.h"

#define CT_CONFIG_MAX_LANGS 128

typedef enum ct_config_layout {
    CT_CONFIG_TRANSFORMERS = 0, /* save_pretrained: encoder_config + top-level decoder */
    CT_CONFIG_NEMO = 1,         /* Hub release: encoder / transf_decoder / preprocessor */
    CT_CONFIG_GGUF = 2          /* metadata of a GGUF file */
} ct_config_layout;

/* Every size is an int; -1 means the config did not say (derive it). */
typedef struct ct_model_config {
    ct_config_layout layout;
    /* frontend */
    int sample_rate; /* 16000 */
    int n_mels;      /* 128 */
    int n_fft;       /* 512 */
    int win_length;  /* 400 samples */
    int hop_length;  /* 160 samples */
    /* encoder (Conformer) */
    int enc_layers;
    int enc_d_model;
    int enc_heads;
    int enc_ff;                /* feed-forward inner size */
    int enc_conv_kernel;       /* depthwise kernel */
    int subsampling_factor;    /* 8 */
    int subsampling_channels;  /* 256 */
    int enc_max_positions;     /* relative position table (5000) */
    int enc_scale_input;       /* 1: multiply input by sqrt(d) (xscaling) */
    /* decoder */
    int dec_layers;
    int dec_d_model;
    int dec_heads;
    int dec_ff;
    int dec_max_positions; /* 1024 */
    int vocab_size;
    /* special ids (-1: not given) */
    int pad_id, eos_id, bos_id, decoder_start_id;
    /* languages named by the config (NeMo layout only); may be empty */
    int n_languages;
    char languages[CT_CONFIG_MAX_LANGS][16];
    double max_audio_clip_s;   /* -1 when absent */
    double overlap_chunk_s;    /* -1 when absent */
} ct_model_config;

/* Read dir/config.json and, if present, dir/generation_config.json. */
ct_status ct_config_load(const char *dir, ct_model_config *out);

/* Parse config text and optional generation config text (gen may be NULL);
 * the labels name the sources in messages. For ct_config_load, tests, fuzzing. */
ct_status ct_config_parse(const char *config, size_t config_len, const char *label, const char *gen,
                          size_t gen_len, const char *gen_label, ct_model_config *out);

/* Write dir/config.json in the transformers layout save_pretrained writes
 * (dtype_name: "float32", "bfloat16", "float16") and dir/generation_config.json.
 * Every size field of cfg must be known. */
ct_status ct_config_write_transformers(const ct_model_config *cfg, const char *dtype_name, const char *dir);
/* dir/generation_config.json alone (ids that are -1 are left out). */
ct_status ct_config_write_generation(const ct_model_config *cfg, const char *dir);

/* Any JSON side file of a checkpoint (config.json, preprocessor_config.json,
 * ...) as these writers make them: dir/name, indented by 2, keys sorted, a
 * trailing newline, written atomically. Takes the reference to j (a jansson
 * json_t): released on success and failure alike. */
struct json_t;
ct_status ct_config_write_json(const char *dir, const char *name, struct json_t *j);

/* Index of lang in cfg->languages, or -1. */
int ct_config_language_index(const ct_model_config *cfg, const char *lang);

#endif
