/* state.h — the durable state files of an output set (PRODUCT-DETAILS §3):
 * the integrity envelope and its verifying reader, the source snapshot,
 * the manifest ("published") and ASR checkpoint ("asr_complete") payloads,
 * the contract keys, checkpoint restore and skip verification, with the
 * original's reason strings.
 *
 * Pure apart from what §3 itself reads: stat/realpath of the source, the
 * state file (64 MiB cap) and the published outputs (re-hashed), all
 * opened relative to a directory descriptor the caller has bound. Writing
 * is publication's (publish.c): builders here return trees and bytes.
 *
 * Verdicts: functions that decide "reusable or not" return CT_OK and set
 * *ok (1/0) with the reason in reason[CT_REASON_MAX]; a non-OK status is a
 * real failure (out of memory).
 */
#ifndef CT_OUTPUT_STATE_H
#define CT_OUTPUT_STATE_H

#include <stdint.h>

#include "output/json.h"
#include "output/record.h"
#include "output/snapshot.h"
#include "output/transcript_json.h"

#define CT_STATE_SCHEMA_VERSION 1
#define CT_CONTRACT_SCHEMA_VERSION 3
#define CT_STATE_MAX_BYTES ((size_t)64 << 20)
#define CT_REASON_MAX 1024
#define CT_STATE_MANIFEST_SUFFIX ".cohere-transcribe.manifest.json"
#define CT_STATE_CHECKPOINT_SUFFIX ".cohere-transcribe.asr.json"
#define CT_ALIGN_MODEL_REVISION "2100fb247d8e43962eef24491597fbeb8b469531"

/* ---- source snapshot (§3.3): output/snapshot.h ------------------------ */
/* {"canonical_path", "snapshot": {device, inode, size, mtime_ns, ctime_ns}} */
json_t *ct_source_snapshot_json(const ct_source_snapshot *s);
/* 1 when a recorded payload.source is the file of a fresh snapshot: inode,
 * size, mtime, ctime equal, and the device or the canonical path equal (one
 * file by two paths through a bind mount; one export seen from two NFS
 * clients with their own device numbers). */
int ct_source_matches(const json_t *recorded, const ct_source_snapshot *fresh);

/* ---- envelope (§3.2) -------------------------------------------------- */

/* The envelope bytes of payload: pretty {schema_version, payload_sha256,
 * payload} + "\n". */
CT_NODISCARD ct_status ct_state_envelope(const json_t *payload, ct_jbuf *out);

/* Verify an envelope document's bytes; on success *payload is a new
 * reference. Reasons: "state marker is unreadable (<Class>: <msg>)",
 * "state marker root is not an object", "state marker schema is
 * unsupported", "state marker payload is not an object", "state marker
 * integrity check failed". */
CT_NODISCARD ct_status ct_state_decode(const char *data, size_t len, json_t **payload, int *ok,
                                       char reason[CT_REASON_MAX]);

/* The same from dirfd/name (AT_FDCWD and a path work too): a regular,
 * non-symlink file of at most 64 MiB ("state marker is missing or not a
 * regular file" otherwise). */
CT_NODISCARD ct_status ct_state_read(int dirfd, const char *name, json_t **payload, int *ok,
                                     char reason[CT_REASON_MAX]);

/* ".<stem>.cohere-transcribe.manifest.json" / ".asr.json" names. */
CT_NODISCARD ct_status ct_state_manifest_name(const char *stem, char **out);
CT_NODISCARD ct_status ct_state_checkpoint_name(const char *stem, char **out);

/* ---- contract keys (§3.6) --------------------------------------------- */

/* What the options do not say: resolved values and the implementation. */
typedef struct ct_contract_inputs {
    const char *device;         /* resolved: "cpu" / "cuda" */
    const char *dtype;          /* resolved: "fp32" / "bf16" / "fp16" */
    int batch_size;             /* resolved; 0: null */
    const char *model_id;       /* resolved id */
    const char *model_revision; /* resolved revision (NULL: null) */
    const char *adapter_id, *adapter_revision;
    const char *implementation_sha256; /* ct_implementation_fingerprint */
} ct_contract_inputs;

/* fingerprint({"package_version", "artifacts_sha256"}): OUR I_asr and
 * I_render (one value for both: the build's artifacts are one binary). */
CT_NODISCARD ct_status ct_implementation_fingerprint(const char *package_version, const ct_artifacts *a,
                                                     char hex[65]);

/* The fingerprinted documents (new references) and their keys. */
CT_NODISCARD ct_status ct_asr_contract_json(const ct_transcriber_options *o, const ct_contract_inputs *in,
                                            json_t **out);
CT_NODISCARD ct_status ct_render_contract_json(const ct_transcriber_options *o, const ct_contract_inputs *in,
                                               json_t **out);
CT_NODISCARD ct_status ct_asr_contract_key(const ct_transcriber_options *o, const ct_contract_inputs *in,
                                           char hex[65]);
CT_NODISCARD ct_status ct_render_contract_key(const ct_transcriber_options *o, const ct_contract_inputs *in,
                                              char hex[65]);

/* ---- payloads (§3.4, §3.5) ------------------------------------------- */

/* 32 random lowercase hex characters + NUL. */
CT_NODISCARD ct_status ct_generation_id_new(char out[33]);
/* Set r->generation_id to a fresh one unless it has one. */
CT_NODISCARD ct_status ct_record_ensure_generation_id(ct_file_record *r);
/* Wall clock in float seconds (updated_unix_seconds). */
double ct_unix_now(void);

/* One published output: format, basename, rendered bytes. */
typedef struct ct_output_member {
    ct_format format;
    const char *name;
    const void *data;
    size_t len;
} ct_output_member;

CT_NODISCARD ct_status ct_manifest_payload(const ct_file_record *r, const char *asr_key, const char *render_key,
                                           const ct_source_snapshot *src, double updated_unix_seconds,
                                           const ct_output_member *outs, size_t n_outs, json_t **out);
CT_NODISCARD ct_status ct_checkpoint_payload(const ct_file_record *r, const char *asr_key,
                                             const ct_source_snapshot *src, double updated_unix_seconds,
                                             json_t **out);

/* ---- restore (§3.5) and skip verification (§3.7) --------------------- */

/* Rules 2-5 on a decoded payload: on *ok the record's duration, segments,
 * texts, token counts, stop lists, provenance, speech spans and
 * generation_id are replaced and resumed = 1 (source_path, words and cues
 * are left alone). Reasons: `state is "<kind>", not an ASR checkpoint`,
 * "ASR checkpoint contract does not match", "state marker source snapshot
 * does not match", "ASR checkpoint is invalid (<detail>)". */
CT_NODISCARD ct_status ct_checkpoint_restore_payload(const json_t *payload, const char *asr_key,
                                                     const ct_source_snapshot *fresh, ct_file_record *r, int *ok,
                                                     char reason[CT_REASON_MAX]);
/* Rule 1 + the above from dirfd/name. */
CT_NODISCARD ct_status ct_checkpoint_restore(int dirfd, const char *name, const char *asr_key,
                                             const ct_source_snapshot *fresh, ct_file_record *r, int *ok,
                                             char reason[CT_REASON_MAX]);

typedef struct ct_verify_request {
    const char *asr_key, *render_key;
    const ct_source_snapshot *source;  /* fresh snapshot */
    const ct_format *formats;          /* requested, in request order, no duplicates */
    const char *const *names;          /* output basenames, parallel to formats */
    size_t n;
} ct_verify_request;

/* Skip verification of the manifest dirfd/manifest_name against the
 * outputs dirfd/names[i] (re-hashed). On *ok, *generation_id (malloc'd,
 * may be NULL to ignore) is the manifest's. */
CT_NODISCARD ct_status ct_manifest_verify(int dirfd, const char *manifest_name, const ct_verify_request *req,
                                          int *ok, char reason[CT_REASON_MAX], char **generation_id);
/* The same on an already decoded payload. */
CT_NODISCARD ct_status ct_manifest_verify_payload(int dirfd, const json_t *payload, const ct_verify_request *req,
                                                  int *ok, char reason[CT_REASON_MAX], char **generation_id);

#endif
