/* test_output_profile.c — the --profile-json document (PRODUCT-DETAILS §2):
 * key order of every section as the spec lists it, derived values (run
 * totals, VAD padding ratio, engines), quantiles by the §2 formula, and the
 * quantiles of the original's default golden run from its checkpoints.
 */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/profile_json.h"
#include "output/state.h"
#include "test_output_util.h"
#include "testutil.h"

static void expect_keys(const json_t *o, const char *const *want, size_t n, const char *what) {
    size_t i = 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        if (i >= n || strcmp(k, want[i]) != 0) fail_msg("%s: key %zu is %s, want %s", what, i, k, i < n ? want[i] : "(none)");
        i++;
    }
    if (i != n) fail_msg("%s: %zu keys, want %zu", what, i, n);
}
#define KEYS(o, what, ...)                                                   \
    do {                                                                     \
        static const char *const w_[] = {__VA_ARGS__};                        \
        expect_keys((o), w_, sizeof w_ / sizeof w_[0], (what));              \
    } while (0)

static void test_profile_layout(void **st) {
    (void)st;
    ct_transcriber_options o = test_default_options();
    ct_file_record r = {0};
    r.duration = 4.0;
    r.vad_engine_actual = strdup("onnx");
    r.vad_provider = strdup("CPUExecutionProvider");
    test_add_span(&r, 0.5, 1.5);
    test_add_span(&r, 2.0, 3.0);
    test_add_segment(&r, 0.5, 1.5, "a", 3);
    test_add_segment(&r, 2.0, 3.0, "b", 4);
    ct_artifacts arts = {0};
    ct_output_context ctx = {"0.1.0", &arts, CT_DEFAULT_MODEL_ID, CT_DEFAULT_MODEL_REVISION, NULL, NULL};
    const char *outs[] = {"/o/a.txt"};
    ct_profile_file files[2] = {
        {&r, "/i/a.wav", "a.wav", 1, 4.0, outs, 1, 1, NULL, CT_FILE_COMPLETED},
        {NULL, "/i/b.wav", "b.wav", 0, 0, NULL, 0, 0, "Cohere::Transcribe::Error: broken", CT_FILE_FAILED},
    };
    int rows[2] = {3, 4};
    ct_profile_batch hist[2] = {{.oom = 1, .segments = 2, .max_new_tokens = 445},
                                {0, 2, 2, 445, 7, rows, 2, 0.1, 0, 0.5, 0.5, 0.01, 2.0, 0.0}};
    const char *audio[] = {"/i/a.wav", "/i/b.wav"};
    ct_profile_input in = {.created_unix_seconds = 1.5, .ctx = &ctx, .options = &o, .audio = audio, .n_audio = 2,
                           .device = "cpu", .dtype = "fp32", .executable = "/usr/bin/cohere-transcribe",
                           .platform = "Linux", .machine = "x86_64", .processor = "cpu", .cpu_count = 2,
                           .elapsed_seconds = 2.0, .prepared_groups = 1, .model_calls = 3, .valid_frames = 75,
                           .padded_frames = 100, .effective_block_frames = 512, .batches = 1, .processor_rows = 2,
                           .generated_tokens = 7, .effective_batch_min = 2, .effective_batch_max = 2,
                           .final_batch_size = 2, .final_batch_cap = 4, .oom_retries = 1, .history = hist,
                           .n_history = 2, .checkpoint_written_files = 1, .files = files, .n_files = 2};
    json_t *d;
    CT_ASSERT_OK(ct_profile_json_tree(&in, &d));
    KEYS(d, "top", "schema_version", "created_unix_seconds", "implementation", "models", "environment",
         "configuration", "resolved_configuration", "run", "timings", "vad", "asr", "cuda_memory", "files");
    assert_int_equal(json_integer_value(json_object_get(d, "schema_version")), 9);
    KEYS(json_object_get(json_object_get(d, "models"), "vad"), "models.vad", "source", "source_version",
         "distribution", "version", "torch_weight_asset", "onnx_weight_asset", "packed_torch_implementation");
    KEYS(json_object_get(d, "environment"), "environment", "python", "executable", "platform", "machine",
         "processor", "cpu_count", "device", "dtype", "packages", "torch_cuda_build", "pytorch_alloc_conf",
         "pytorch_cuda_alloc_conf", "pytorch_effective_alloc_conf", "torch_intraop_threads",
         "torch_interop_threads");
    KEYS(json_object_get(d, "configuration"), "configuration", "model", "model_revision", "adapter",
         "adapter_revision", "language", "text_only", "recursive", "device", "dtype", "audio_backend",
         "audio_memory_gb", "preprocess_workers", "pipeline_preparation", "vad", "vad_engine", "vad_batch_size",
         "vad_block_frames", "vad_threads", "vad_merge", "min_dur", "max_dur", "max_silence", "energy_threshold",
         "vad_threshold", "min_silence_ms", "speech_pad_ms", "batch_size", "batch_max_size", "batch_audio_seconds",
         "batch_vram_target", "adaptive_batch", "pin_memory", "max_new_tokens", "max_retry_tokens",
         "truncation_policy", "stop_repetition_loops", "alignment", "align_batch_size", "align_dtype",
         "max_chars", "max_cue_dur", "max_gap", "audio", "formats", "output_dir", "existing", "profile_json",
         "model_format", "model_quantization");
    json_t *rc = json_object_get(d, "resolved_configuration");
    assert_string_equal(json_string_value(json_object_get(rc, "vad_engine")), "onnx");
    assert_string_equal(json_string_value(json_object_get(rc, "dtype")), "fp32");
    assert_string_equal(json_string_value(json_object_get(rc, "model_format")), "dense");
    assert_true(json_is_null(json_object_get(json_object_get(d, "configuration"), "model_format")));
    json_t *run = json_object_get(d, "run");
    KEYS(run, "run", "elapsed_seconds", "successful_files", "failed_files", "successful_audio_seconds",
         "real_time_factor_x");
    assert_int_equal(json_integer_value(json_object_get(run, "successful_files")), 1);
    assert_int_equal(json_integer_value(json_object_get(run, "failed_files")), 1);
    assert_true(json_real_value(json_object_get(run, "real_time_factor_x")) == 2.0);
    KEYS(json_object_get(d, "timings"), "timings", "runtime_import_seconds", "serialization_wait_seconds",
         "input_validation_seconds", "decode_worker_seconds", "vad_worker_seconds", "vad_model_load_seconds",
         "vad_inference_seconds", "vad_postprocess_seconds", "preparation_wait_seconds", "asr_load_seconds",
         "asr_wall_seconds", "asr_feature_worker_seconds", "asr_discarded_feature_seconds",
         "asr_feature_wait_seconds", "asr_h2d_seconds", "asr_generation_call_wall_seconds",
         "asr_generate_device_seconds", "asr_generation_analysis_seconds", "asr_decode_seconds",
         "aligner_load_seconds", "emissions_seconds", "viterbi_seconds", "post_asr_seconds", "checkpoint_seconds",
         "progressive_output_seconds");
    json_t *vad = json_object_get(d, "vad");
    KEYS(vad, "vad", "requested_engines", "actual_engines", "torch_device", "torch_intraop_threads",
         "configured_file_batch_size", "configured_block_frames", "effective_block_frames", "prepared_groups",
         "model_calls", "valid_frames", "padded_frames", "padding_ratio", "max_files_per_call");
    assert_true(json_real_value(json_object_get(vad, "padding_ratio")) == 0.25);
    assert_string_equal(json_string_value(json_array_get(json_object_get(vad, "requested_engines"), 0)), "auto");
    assert_string_equal(json_string_value(json_array_get(json_object_get(vad, "actual_engines"), 0)), "onnx");
    json_t *asr = json_object_get(d, "asr");
    KEYS(asr, "asr", "batches", "processor_rows", "generated_tokens", "valid_feature_frames",
         "padded_feature_frames", "discarded_processor_rows", "discarded_valid_feature_frames",
         "discarded_padded_feature_frames", "padding_ratio", "effective_batch_min", "effective_batch_max",
         "final_batch_size", "final_batch_cap", "oom_retries", "truncation_retries", "discarded_feature_batches",
         "pin_memory_fallbacks", "all_segment_duration_seconds", "inferred_segment_duration_seconds",
         "batch_history", "checkpoint_resumed_files", "checkpoint_written_files");
    json_t *h = json_object_get(asr, "batch_history");
    KEYS(json_array_get(h, 0), "oom entry", "event", "segments", "max_new_tokens");
    KEYS(json_array_get(h, 1), "batch entry", "segments", "processor_rows", "max_new_tokens", "generated_tokens",
         "generated_tokens_by_row", "prepare_seconds", "h2d_seconds", "generation_call_wall_seconds",
         "generate_device_seconds", "generation_analysis_seconds", "padded_audio_seconds", "padding_ratio",
         "peak_allocated_gib", "peak_reserved_gib");
    KEYS(json_object_get(d, "cuda_memory"), "cuda_memory", "total_gib", "free_start_gib", "free_end_gib",
         "peak_allocated_gib", "peak_reserved_gib");
    json_t *f0 = json_array_get(json_object_get(d, "files"), 0);
    KEYS(f0, "files[0]", "path", "relative_path", "duration_seconds", "segment_count", "raw_speech_span_count",
         "raw_speech_seconds", "selected_audio_seconds", "decode_backend", "decode_fallback_reason", "vad_engine",
         "vad_provider", "vad_provider_options", "vad_fallback_reason", "generated_tokens",
         "repetition_stopped_segments", "truncation_retried_segments", "token_limit_segments",
         "fallback_alignment_segments", "outputs", "resumed_from_asr_checkpoint", "published", "error");
    assert_int_equal(json_integer_value(json_object_get(f0, "generated_tokens")), 7);
    assert_true(json_real_value(json_object_get(f0, "raw_speech_seconds")) == 2.0);
    json_t *f1 = json_array_get(json_object_get(d, "files"), 1);
    assert_true(json_is_null(json_object_get(f1, "duration_seconds")));
    assert_string_equal(json_string_value(json_object_get(f1, "error")), "Cohere::Transcribe::Error: broken");
    ct_jbuf b = {0};
    CT_ASSERT_OK(ct_profile_json(&in, &b));
    assert_true(b.len > 1000 && b.data[b.len - 1] == '\n');
    ct_jbuf_free(&b);
    json_decref(d);
    ct_file_record_clear(&r);
}

static void test_quantiles(void **st) {
    (void)st;
    double v[] = {8, 0, 3, 1, 4, 2};
    json_t *q = ct_profile_quantiles(v, 6);
    /* positions (n−1)·q = 2.5, 4.5, 4.95 over 0 1 2 3 4 8 */
    assert_true(json_real_value(json_object_get(q, "min")) == 0);
    assert_true(json_real_value(json_object_get(q, "p50")) == 2.5);
    assert_true(json_real_value(json_object_get(q, "p90")) == 6.0);
    assert_true(fabs(json_real_value(json_object_get(q, "p99")) - 7.8) < 1e-12);
    assert_true(json_real_value(json_object_get(q, "max")) == 8);
    json_decref(q);
    q = ct_profile_quantiles(v, 0);
    assert_true(json_is_null(q));
    json_decref(q);
}

/* The original's default run: quantiles of its checkpoints' segment times
 * equal its profile's all_segment_duration_seconds, bit for bit. */
static void test_golden_quantiles(void **st) {
    (void)st;
    const char *env = getenv("CT_GOLDEN");
    char root[4096], dir[8192];
    snprintf(root, sizeof root, "%s", env && *env ? env : CT_FIXTURE("golden"));
    snprintf(dir, sizeof dir, "%s/default/out", root);
    DIR *d = opendir(dir);
    if (!d) skip();
    double v[256];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name), sl = strlen(CT_STATE_CHECKPOINT_SUFFIX);
        if (l <= sl || strcmp(e->d_name + l - sl, CT_STATE_CHECKPOINT_SUFFIX) != 0) continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        int ok;
        char reason[CT_REASON_MAX];
        json_t *pl;
        CT_ASSERT_OK(ct_state_read(AT_FDCWD, p, &pl, &ok, reason));
        assert_true(ok);
        json_t *t = json_object_get(json_object_get(pl, "checkpoint"), "segment_times");
        for (size_t i = 0; i < json_array_size(t) && n < 256; i++) {
            json_t *row = json_array_get(t, i);
            v[n++] = fmax(json_number_value(json_array_get(row, 1)) - json_number_value(json_array_get(row, 0)), 0.0);
        }
        json_decref(pl);
    }
    closedir(d);
    snprintf(dir, sizeof dir, "%s/default/profile.json", root);
    json_t *prof = json_load_file(dir, 0, NULL);
    assert_non_null(prof);
    json_t *want = json_object_get(json_object_get(prof, "asr"), "all_segment_duration_seconds");
    json_t *got = ct_profile_quantiles(v, n);
    if (!json_equal(got, want)) {
        char *a = json_dumps(got, JSON_REAL_PRECISION(17)), *b = json_dumps(want, JSON_REAL_PRECISION(17));
        fail_msg("quantiles %s, original %s", a, b);
    }
    json_decref(got);
    json_decref(prof);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_layout),
        cmocka_unit_test(test_quantiles),
        cmocka_unit_test(test_golden_quantiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
