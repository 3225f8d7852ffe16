/* test_config.c — config.json readers for both layouts: transformers'
 * defaults for absent keys, generation_config ids, the NeMo layout's fields,
 * and a corpus of malformed or unsupported configs, each with its status and
 * the cause in the message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"
#include "testutil.h"

static ct_status parse(const char *cfg, const char *gen, ct_model_config *c) {
    return ct_config_parse(cfg, strlen(cfg), "config.json", gen, gen ? strlen(gen) : 0, "generation_config.json", c);
}

static void test_transformers_defaults(void **state) {
    (void)state;
    ct_model_config c;
    /* An empty encoder_config gets CohereAsrConfig's encoder defaults; absent
     * decoder keys its class defaults — the full model. */
    CT_ASSERT_OK(parse("{\"model_type\":\"cohere_asr\",\"encoder_config\":{}}", NULL, &c));
    assert_int_equal(c.layout, CT_CONFIG_TRANSFORMERS);
    assert_int_equal(c.enc_layers, 48);
    assert_int_equal(c.enc_d_model, 1280);
    assert_int_equal(c.enc_heads, 8);
    assert_int_equal(c.enc_ff, 5120);
    assert_int_equal(c.enc_conv_kernel, 9);
    assert_int_equal(c.subsampling_channels, 256);
    assert_int_equal(c.subsampling_factor, 8);
    assert_int_equal(c.n_mels, 128);
    assert_int_equal(c.enc_scale_input, 0);
    assert_int_equal(c.dec_layers, 8);
    assert_int_equal(c.dec_d_model, 1024);
    assert_int_equal(c.dec_heads, 8);
    assert_int_equal(c.dec_ff, 4096);
    assert_int_equal(c.dec_max_positions, 1024);
    assert_int_equal(c.vocab_size, 16384);
    assert_int_equal(c.pad_id, 2);
    assert_int_equal(c.eos_id, 3);
    assert_int_equal(c.bos_id, 4);
    assert_int_equal(c.decoder_start_id, -1);
    assert_int_equal(c.n_languages, 0);

    /* Given values win; generation_config overrides config ids; eos as a list. */
    CT_ASSERT_OK(parse("{\"encoder_config\":{\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":4,"
                       "\"intermediate_size\":256,\"subsampling_conv_channels\":16,\"scale_input\":true},"
                       "\"hidden_size\":64,\"num_hidden_layers\":2,\"num_attention_heads\":4,\"intermediate_size\":128,"
                       "\"max_position_embeddings\":128,\"vocab_size\":495,\"decoder_start_token_id\":13,\"eos_token_id\":3}",
                       "{\"decoder_start_token_id\":362,\"eos_token_id\":[7,3],\"pad_token_id\":1}", &c));
    assert_int_equal(c.enc_d_model, 64);
    assert_int_equal(c.enc_layers, 2);
    assert_int_equal(c.enc_ff, 256);
    assert_int_equal(c.subsampling_channels, 16);
    assert_int_equal(c.enc_scale_input, 1);
    assert_int_equal(c.dec_d_model, 64);
    assert_int_equal(c.dec_max_positions, 128);
    assert_int_equal(c.vocab_size, 495);
    assert_int_equal(c.decoder_start_id, 362);
    assert_int_equal(c.eos_id, 7);
    assert_int_equal(c.pad_id, 1);
    assert_int_equal(c.bos_id, 4);
}

static const char *k_nemo =
    "{\"model_type\":\"cohere_asr\",\"vocab_size\":495,\"supported_languages\":[\"ar\",\"en\",\"zh\"],"
    "\"max_audio_clip_s\":35,\"overlap_chunk_second\":5,"
    "\"preprocessor\":{\"sample_rate\":16000,\"window_size\":0.025,\"window_stride\":0.01,\"features\":128,"
    "\"n_fft\":512,\"window\":\"hann\",\"normalize\":\"per_feature\"},"
    "\"encoder\":{\"feat_in\":128,\"n_layers\":2,\"d_model\":64,\"n_heads\":4,\"ff_expansion_factor\":4,"
    "\"conv_kernel_size\":9,\"subsampling_factor\":8,\"subsampling_conv_channels\":16,\"pos_emb_max_len\":5000,"
    "\"xscaling\":false},"
    "\"transf_decoder\":{\"config_dict\":{\"num_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
    "\"inner_size\":128,\"max_sequence_length\":128,\"hidden_act\":\"relu\"}}}";

static void test_nemo(void **state) {
    (void)state;
    ct_model_config c;
    CT_ASSERT_OK(parse(k_nemo, "{\"bos_token_id\":4,\"decoder_start_token_id\":362,\"eos_token_id\":3,\"pad_token_id\":2}", &c));
    assert_int_equal(c.layout, CT_CONFIG_NEMO);
    assert_int_equal(c.enc_layers, 2);
    assert_int_equal(c.enc_d_model, 64);
    assert_int_equal(c.enc_heads, 4);
    assert_int_equal(c.enc_ff, 256);
    assert_int_equal(c.enc_conv_kernel, 9);
    assert_int_equal(c.subsampling_channels, 16);
    assert_int_equal(c.enc_max_positions, 5000);
    assert_int_equal(c.n_mels, 128);
    assert_int_equal(c.win_length, 400);
    assert_int_equal(c.hop_length, 160);
    assert_int_equal(c.dec_layers, 2);
    assert_int_equal(c.dec_d_model, 64);
    assert_int_equal(c.dec_heads, 4);
    assert_int_equal(c.dec_ff, 128);
    assert_int_equal(c.dec_max_positions, 128);
    assert_int_equal(c.vocab_size, 495);
    assert_int_equal(c.decoder_start_id, 362);
    assert_int_equal(c.n_languages, 3);
    assert_string_equal(c.languages[1], "en");
    assert_int_equal(ct_config_language_index(&c, "zh"), 2);
    assert_int_equal(ct_config_language_index(&c, "xx"), -1);
    assert_true(c.max_audio_clip_s == 35.0 && c.overlap_chunk_s == 5.0);
    /* Without a generation config, NeMo ids are unknown. */
    CT_ASSERT_OK(parse(k_nemo, NULL, &c));
    assert_int_equal(c.decoder_start_id, -1);
    assert_int_equal(c.eos_id, -1);
    /* A minimal NeMo config leaves sizes unknown (-1) for the loader to derive. */
    CT_ASSERT_OK(parse("{\"encoder\":{},\"transf_decoder\":{\"config_dict\":{\"num_attention_heads\":8}}}", NULL, &c));
    assert_int_equal(c.enc_d_model, -1);
    assert_int_equal(c.enc_layers, -1);
    assert_int_equal(c.subsampling_channels, -1);
    assert_int_equal(c.dec_heads, 8);
    CT_ASSERT_OK(parse("{\"encoder\":{\"subsampling_conv_channels\":-1}}", NULL, &c));
    assert_int_equal(c.subsampling_channels, -1);
    /* the head's class count stands in for an absent vocab_size */
    CT_ASSERT_OK(parse("{\"encoder\":{},\"head\":{\"num_classes\":77}}", NULL, &c));
    assert_int_equal(c.vocab_size, 77);
}

static void test_malformed(void **state) {
    (void)state;
    struct {
        const char *cfg, *gen;
        ct_status want;
        const char *sub;
    } bad[] = {
        {"", NULL, CT_ERR_FORMAT, "config.json: not valid JSON"},
        {"{\"encoder_config\":{}", NULL, CT_ERR_FORMAT, "not valid JSON"},
        {"[1]", NULL, CT_ERR_FORMAT, "config.json: not a JSON object"},
        {"{\"encoder_config\":{},\"vocab_size\":1,\"vocab_size\":2}", NULL, CT_ERR_FORMAT, "duplicate"},
        {"{\"model_type\":\"whisper\"}", NULL, CT_ERR_UNSUPPORTED, "model_type 'whisper' is not cohere_asr"},
        {"{\"model_type\":7}", NULL, CT_ERR_UNSUPPORTED, "is not cohere_asr"},
        {"{\"hidden_size\":4}", NULL, CT_ERR_FORMAT, "not a Cohere ASR config"},
        {"{\"encoder_config\":{},\"quantization_config\":{\"quant_method\":\"bitsandbytes\"}}", NULL,
         CT_ERR_UNSUPPORTED, "quantization_config present (quant_method 'bitsandbytes')"},
        {"{\"encoder\":{},\"quantization_config\":{}}", NULL, CT_ERR_UNSUPPORTED, "dense"},
        {"{\"encoder_config\":7}", NULL, CT_ERR_FORMAT, "encoder_config is not an object"},
        {"{\"encoder_config\":{\"hidden_size\":\"1280\"}}", NULL, CT_ERR_FORMAT, "encoder_config.hidden_size is not an integer"},
        {"{\"encoder_config\":{\"hidden_size\":1280.0}}", NULL, CT_ERR_FORMAT, "encoder_config.hidden_size is not an integer"},
        {"{\"encoder_config\":{\"num_hidden_layers\":0}}", NULL, CT_ERR_FORMAT, "num_hidden_layers = 0 is out of range"},
        {"{\"encoder_config\":{\"num_hidden_layers\":-3}}", NULL, CT_ERR_FORMAT, "out of range"},
        {"{\"encoder_config\":{\"intermediate_size\":99999999999}}", NULL, CT_ERR_FORMAT, "out of range"},
        {"{\"encoder_config\":{\"scale_input\":1}}", NULL, CT_ERR_FORMAT, "scale_input is not a boolean"},
        {"{\"encoder_config\":{\"model_type\":\"wav2vec2\"}}", NULL, CT_ERR_UNSUPPORTED, "model_type 'wav2vec2'"},
        {"{\"encoder_config\":{\"hidden_act\":\"gelu\"}}", NULL, CT_ERR_UNSUPPORTED, "hidden_act 'gelu'"},
        {"{\"encoder_config\":{\"subsampling_conv_stride\":4}}", NULL, CT_ERR_UNSUPPORTED, "only 3 / 2"},
        {"{\"encoder_config\":{\"attention_bias\":false}}", NULL, CT_ERR_UNSUPPORTED, "attention_bias false"},
        {"{\"encoder_config\":{},\"num_key_value_heads\":2}", NULL, CT_ERR_UNSUPPORTED, "grouped attention"},
        {"{\"encoder_config\":{},\"head_dim\":64}", NULL, CT_ERR_UNSUPPORTED, "head_dim 64"},
        {"{\"encoder_config\":{},\"hidden_act\":\"gelu\"}", NULL, CT_ERR_UNSUPPORTED, "hidden_act 'gelu'"},
        {"{\"encoder_config\":{},\"tie_word_embeddings\":true}", NULL, CT_ERR_UNSUPPORTED, "tie_word_embeddings"},
        {"{\"encoder_config\":{},\"eos_token_id\":\"3\"}", NULL, CT_ERR_FORMAT, "eos_token_id is not an integer"},
        {"{\"encoder_config\":{},\"eos_token_id\":[]}", NULL, CT_ERR_FORMAT, "eos_token_id is an empty list"},
        {"{\"encoder_config\":{},\"pad_token_id\":-1}", NULL, CT_ERR_FORMAT, "pad_token_id = -1 is out of range"},
        {"{\"encoder_config\":{}}", "{\"decoder_start_token_id\":\"x\"}", CT_ERR_FORMAT,
         "generation_config.json: decoder_start_token_id is not an integer"},
        {"{\"encoder_config\":{}}", "{", CT_ERR_FORMAT, "generation_config.json: not valid JSON"},
        {"{\"encoder_config\":{}}", "[]", CT_ERR_FORMAT, "generation_config.json: not a JSON object"},
        {"{\"encoder\":[]}", NULL, CT_ERR_FORMAT, "encoder is not an object"},
        {"{\"encoder\":{\"n_layers\":true}}", NULL, CT_ERR_FORMAT, "encoder.n_layers is not an integer"},
        {"{\"encoder\":{\"subsampling_conv_channels\":0}}", NULL, CT_ERR_FORMAT, "subsampling_conv_channels is 0"},
        {"{\"encoder\":{},\"transf_decoder\":{\"config_dict\":5}}", NULL, CT_ERR_FORMAT,
         "transf_decoder.config_dict is not an object"},
        {"{\"encoder\":{},\"transf_decoder\":{\"config_dict\":{\"hidden_act\":\"gelu\"}}}", NULL, CT_ERR_UNSUPPORTED,
         "transf_decoder.config_dict.hidden_act 'gelu'"},
        {"{\"encoder\":{},\"preprocessor\":{\"window\":\"hamming\"}}", NULL, CT_ERR_UNSUPPORTED, "preprocessor.window 'hamming'"},
        {"{\"encoder\":{},\"preprocessor\":{\"window_size\":\"x\"}}", NULL, CT_ERR_FORMAT, "window_size is not a number"},
        {"{\"encoder\":{},\"preprocessor\":{\"window_size\":-1}}", NULL, CT_ERR_FORMAT, "window_size = -1 is out of range"},
        {"{\"encoder\":{\"feat_in\":80},\"preprocessor\":{\"features\":128}}", NULL, CT_ERR_FORMAT,
         "preprocessor.features 128 != encoder.feat_in 80"},
        {"{\"encoder\":{},\"supported_languages\":\"en\"}", NULL, CT_ERR_FORMAT, "supported_languages is not a list"},
        {"{\"encoder\":{},\"supported_languages\":[\"en\",3]}", NULL, CT_ERR_FORMAT, "supported_languages[1]"},
        {"{\"encoder\":{},\"supported_languages\":[\"\"]}", NULL, CT_ERR_FORMAT, "supported_languages[0]"},
        {"{\"encoder\":{},\"max_audio_clip_s\":\"35\"}", NULL, CT_ERR_FORMAT, "max_audio_clip_s is not a number"},
        {"{\"encoder\":{},\"vocab_size\":10,\"head\":{\"num_classes\":11}}", NULL, CT_ERR_FORMAT,
         "vocab_size 10 != head.num_classes 11"},
        {"{\"encoder\":{},\"transf_decoder\":{\"config_dict\":{\"vocab_size\":9}},\"head\":{\"num_classes\":11}}", NULL,
         CT_ERR_FORMAT, "transf_decoder.config_dict.vocab_size 9 != head.num_classes 11"},
        {"{\"encoder\":{},\"head\":[]}", NULL, CT_ERR_FORMAT, "head is not an object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ct_model_config c;
        ct_status s = parse(bad[i].cfg, bad[i].gen, &c);
        if (s != bad[i].want)
            fail_msg("case %zu (%s): got %s (%s), want %s", i, bad[i].cfg, ct_status_str(s), ct_last_error(),
                     ct_status_str(bad[i].want));
        CT_ASSERT_ERROR_HAS(bad[i].sub);
    }
    /* too many languages */
    char big[4096] = "{\"encoder\":{},\"supported_languages\":[";
    for (int i = 0; i < CT_CONFIG_MAX_LANGS + 1; i++) strcat(big, i ? ",\"en\"" : "\"en\"");
    strcat(big, "]}");
    ct_model_config c;
    CT_ASSERT_STATUS(parse(big, NULL, &c), CT_ERR_LIMIT);
    CT_ASSERT_ERROR_HAS("supported_languages");
}

static void test_load_files(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    ct_model_config c;
    CT_ASSERT_STATUS(ct_config_load(dir, &c), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS("config.json");
    char p[4096];
    snprintf(p, sizeof p, "%s/config.json", dir);
    ct_test_write_file(p, k_nemo, strlen(k_nemo));
    CT_ASSERT_OK(ct_config_load(dir, &c));
    assert_int_equal(c.decoder_start_id, -1);
    snprintf(p, sizeof p, "%s/generation_config.json", dir);
    ct_test_write_file(p, "{\"decoder_start_token_id\":9}", 28);
    CT_ASSERT_OK(ct_config_load(dir, &c));
    assert_int_equal(c.decoder_start_id, 9);
    ct_test_write_file(p, "{\"decoder_start_token_id\":", 26);
    CT_ASSERT_STATUS(ct_config_load(dir, &c), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("generation_config.json: not valid JSON");
    ct_test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transformers_defaults),
        cmocka_unit_test(test_nemo),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_load_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
