/* resolve.h — from a --model value to a folder holding a checkpoint, as the
 * original product decides it: an existing directory is local; a spec that
 * looks like a path ("./", "../", "~", absolute, or more than one '/') but
 * does not exist is an error; anything else is a Hub repository id, fetched
 * into the shared cache (hub.h) at the given revision. The default model is
 * pinned to a commit. Also the Silero VAD weights, found the same way and
 * checked against their pinned sha256. */
#ifndef CT_MODEL_RESOLVE_H
#define CT_MODEL_RESOLVE_H

#include "model/hub.h"

#define CT_DEFAULT_MODEL "CohereLabs/cohere-transcribe-arabic-07-2026"
#define CT_DEFAULT_MODEL_COMMIT "0a8193caa4f3f92131471ab08824e488141cb392"
/* The word aligner the original pins (CC-BY-NC-4.0). */
#define CT_DEFAULT_ALIGNER "MahmoudAshraf/mms-300m-1130-forced-aligner"
#define CT_DEFAULT_ALIGNER_COMMIT "49402e9577b1158620820667c218cd494cc44486"

/* The Silero weights: the file name in a folder or Hub repo, and the
 * environment variables naming a file, folder or repo (the first set wins).
 * The accepted sha256 is CT_SILERO_SHA256_V62 in vad/silero.h. */
#define CT_SILERO_WEIGHTS_FILE "silero_vad.onnx"
#define CT_SILERO_WEIGHTS_ENV "CT_VAD_WEIGHTS"
#define CT_SILERO_WEIGHTS_ENV_ALT "CT_SILERO_VAD"

/* What a spec resolved to (all strings malloc'd; free with ct_model_ref_clear). */
typedef struct ct_model_ref {
    int is_local;    /* 1: a local directory (or file); 0: a Hub snapshot */
    char *id;        /* the Hub repo id, or the local path as given */
    char *revision;  /* Hub: the commit; local: NULL */
    char *dir;       /* the folder to load from */
    int from_cache;  /* Hub: 1 when resolved without the network */
} ct_model_ref;

void ct_model_ref_clear(ct_model_ref *r);

/* spec: NULL → the default model; revision: NULL → the pinned commit for the
 * default model, "main" otherwise (and must be NULL for a local folder).
 * opts: NULL → ct_hub_default_options. Needed files: config.json,
 * generation_config.json (if the repo has it), tokenizer.json, and
 * model.safetensors or model.safetensors.index.json plus every shard it
 * names. Checkpoints with a quantization_config and PEFT adapters are
 * refused (CT_ERR_UNSUPPORTED). *dir_out is malloc'd. */
ct_status ct_model_resolve(const char *spec, const char *revision, const ct_hub_options *opts,
                           char **dir_out);
ct_status ct_model_resolve_ref(const char *spec, const char *revision, const ct_hub_options *opts,
                               ct_model_ref *out);

/* Which kind of spec this is, without touching the network: 1 local
 * (exists), 0 Hub id (valid), or an error naming the problem. */
ct_status ct_model_spec_kind(const char *spec, int *is_local);

/* Check a checkpoint folder: the needed files present (a missing one is named
 * in the CT_ERR_NOT_FOUND message), no quantization_config, not an adapter. */
ct_status ct_model_check_dir(const char *dir);

/* Silero VAD weights: spec (or, when NULL, $CT_VAD_WEIGHTS, then
 * $CT_SILERO_VAD) is a file, a
 * folder holding silero_vad.onnx, or a Hub repo id ("owner/name" or
 * "owner/name@revision") hosting it. The file's sha256 must be the pinned
 * v6.2 one. *path_out is malloc'd. */
ct_status ct_vad_weights_resolve(const char *spec, const ct_hub_options *opts, char **path_out);

/* The unique shard file names of a model.safetensors.index.json held in
 * json[0..len) (path names it in messages). Free each name and the array. */
ct_status ct_model_index_shards_parse(const char *json, size_t len, const char *path,
                                      char ***names, int *n);

/* Where an installation keeps silero_vad.onnx, first that exists of:
 * <exe dir>/../share/cohere-transcribe/silero_vad.onnx (an installed binary),
 * CT_INSTALL_DATADIR/cohere-transcribe/silero_vad.onnx (the configured prefix;
 * "/usr/local/share" when the macro is unset), and
 * <exe dir>/../testdata/silero/silero_vad.onnx (a build tree after the setup
 * test). Only existence is checked, not the sha256. CT_OK: buf holds the
 * (resolved) path; CT_ERR_NOT_FOUND: buf holds the first candidate and the
 * message lists every place looked at. */
ct_status ct_silero_default_path(char *buf, size_t cap);

/* The word aligner (config.json, vocab.json, model.safetensors or an index)
 * as a local folder or a Hub repo; spec NULL: the pinned default (revision
 * NULL: its pinned commit, "main" for another repo). */
ct_status ct_aligner_resolve_ref(const char *spec, const char *revision, const ct_hub_options *opts,
                                 ct_model_ref *out);

#endif
