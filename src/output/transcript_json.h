/* transcript_json.h — the schema-8 transcript document (PRODUCT-DETAILS
 * §1.2, keys in the original's order) from a file record, the options and
 * a run context; and the implementation artifacts it (and the contract
 * keys, state.h) name.
 *
 * Artifacts (docs/OUTPUTS.md): the original maps every file of its own
 * package tree to its sha256. This build's equivalent is the files that
 * make up the running implementation: the executable (/proc/self/exe,
 * key "bin/<name>"), the shared library holding this code when it is not
 * the executable itself (key "lib/<name>"), and the Silero weights in use
 * (key "vad/silero_vad.onnx"). Keys are sorted. Computed once per process.
 */
#ifndef CT_OUTPUT_TRANSCRIPT_JSON_H
#define CT_OUTPUT_TRANSCRIPT_JSON_H

#include "output/json.h"
#include "output/record.h"

#define CT_OUTPUT_SCHEMA_VERSION 8
#define CT_REPETITION_DETECTOR_VERSION 3
#define CT_DEFAULT_MODEL_ID "CohereLabs/cohere-transcribe-arabic-07-2026"
#define CT_DEFAULT_MODEL_REVISION "0a8193caa4f3f92131471ab08824e488141cb392"
#define CT_SILERO_SOURCE_VERSION "6.2.1"

typedef struct ct_artifact {
    char *key;        /* e.g. "bin/cohere-transcribe" */
    char sha256[65];
} ct_artifact;

typedef struct ct_artifacts {
    ct_artifact *v;
    size_t n;
} ct_artifacts;

void ct_artifacts_free(ct_artifacts *a);
/* Add one artifact (key copied); the list is kept sorted by key. */
CT_NODISCARD ct_status ct_artifacts_add(ct_artifacts *a, const char *key, const char *hex);
/* Hash the files named above into a fresh list. vad_weights: the Silero
 * file in use, or NULL (then no vad entry). */
CT_NODISCARD ct_status ct_artifacts_compute(const char *vad_weights, ct_artifacts *out);
/* The process-wide list, computed on the first call (thread-safe) with the
 * vad_weights of that call; later calls return the same list. */
CT_NODISCARD ct_status ct_artifacts_process(const char *vad_weights, const ct_artifacts **out);

/* What a transcript names beyond the record and the options. */
typedef struct ct_output_context {
    const char *package_version;   /* ct_version() */
    const ct_artifacts *artifacts; /* implementation.artifacts_sha256 */
    const char *model_id;          /* resolved ASR model id */
    const char *model_revision;    /* resolved revision (NULL: null) */
    const char *adapter_id, *adapter_revision; /* NULL: "adapter": null */
} ct_output_context;

/* Names the JSON and contracts use for option values. */
const char *ct_vad_mode_name(ct_vad_policy v);      /* silero / auditok / none */
const char *ct_vad_engine_name(ct_vad_engine e);    /* auto / torch / onnx / jit */
const char *ct_alignment_name(ct_alignment a);      /* segment / word / none */
/* The timing mode in effect: none with text_only, else the alignment. */
ct_alignment ct_timing_mode(const ct_transcriber_options *o);

/* models.asr of transcripts and profiles: {id, revision, format "dense",
 * quantization null, adapter null | {id, revision}} (a new reference). */
json_t *ct_asr_model_json(const char *id, const ct_output_context *ctx, int *ok);
/* {"package_version", "artifacts_sha256"} (a new reference). */
json_t *ct_implementation_json(const ct_output_context *ctx);

/* The document as a tree (new reference) and as bytes (pretty + "\n"). */
CT_NODISCARD ct_status ct_transcript_json_tree(const ct_file_record *r, const ct_transcriber_options *o,
                                               const ct_output_context *ctx, json_t **out);
CT_NODISCARD ct_status ct_transcript_json(const ct_file_record *r, const ct_transcriber_options *o,
                                          const ct_output_context *ctx, ct_jbuf *out);

/* models.aligner of word timing (§1.2 item 8), version = package version. */
json_t *ct_aligner_model_json(const char *version);

/* {"<name>": {}} for each non-empty ','-separated provider name, or null. */
json_t *ct_provider_options_json(const char *provider);

#endif
