/* plan.h — output planning (PRODUCT-DETAILS §12 "Output planning", §3.1,
 * §3.7 at planning): for each discovered input, the bound parent folder,
 * the stem, the output path of every requested format, the manifest and
 * ASR checkpoint paths, and every refusal, before any model is loaded.
 *
 * A pure function of the discovery result, the options and the filesystem;
 * its only side effects are creating missing output folders (the output
 * root, the sub-folders below it, the profile's folder), as the original
 * does. Locks (output/lock.h) and manifest verification (output/state.h)
 * come later, per file, under the lock. */
#ifndef CT_PIPELINE_PLAN_H
#define CT_PIPELINE_PLAN_H

#include <stdint.h>

#include "cohere_transcribe.h"
#include "core/error.h"
#include "pipeline/discover.h"

typedef struct ct_plan_options {
    const char *output_dir;    /* NULL: each output set beside its (canonical) source */
    const ct_format *formats;  /* in the user's order; duplicates are dropped */
    int n_formats;             /* >= 1 (the caller applies the default list) */
    ct_existing existing;      /* CT_EXISTING_ERROR fails planning when any output exists */
    const char *profile_json;  /* NULL: no profile */
} ct_plan_options;

typedef struct ct_planned_file {
    char *source;               /* canonical input path */
    char *relative;             /* from discovery */
    char *parent;               /* canonical output folder (exists once planned) */
    uint64_t parent_dev, parent_ino;
    char *stem;                 /* relative basename minus its last extension */
    char *identity;             /* "<parent>/<stem>": the output set's lock identity */
    int n_outputs;
    ct_format formats[CT_FORMAT_COUNT]; /* requested order, de-duplicated */
    char *output_names[CT_FORMAT_COUNT]; /* "<stem>.<fmt>" */
    char *output_paths[CT_FORMAT_COUNT]; /* "<parent>/<stem>.<fmt>" */
    int output_exists[CT_FORMAT_COUNT];  /* a regular file is there at planning */
    int n_existing;
    char *manifest_name, *manifest_path;     /* ".<stem>.cohere-transcribe.manifest.json" */
    char *checkpoint_name, *checkpoint_path; /* ".<stem>.cohere-transcribe.asr.json" */
} ct_planned_file;

typedef struct ct_plan {
    ct_planned_file *files;
    size_t n;
    char *output_root;  /* canonical, NULL without output_dir */
    char *profile_path; /* expanded profile path (parent resolved), NULL without one */
} ct_plan;

/* Plan every input. Failures abort the whole plan (*out is then empty),
 * CT_ERR_INVALID_ARG unless said:
 *  "output_dir path must contain valid UTF-8", "profile_json path must contain valid UTF-8";
 *  "Output directory escapes output root: <supplied> -> <resolved>";
 *  "Output path is not a regular file: <p>" (a symlink, folder, FIFO, ...);
 *  "Output path for <src> collides with an input: <p>";
 *  "Output collision between <a> and <b>: <p>" (a.wav and a.mp3 in one folder);
 *  "State marker is not a regular file: <p>", "ASR checkpoint is not a regular file: <p>";
 *  "State marker collides with an input or output: <p>" (likewise "ASR checkpoint ...");
 *  "Profile path is not a regular file: <p>", "Profile path collides with an input audio
 *  file: <p>", "... with a transcript output: <p>", "... with a reserved state marker: <p>",
 *  "... with a reserved asr checkpoint: <p>";
 *  existing == CT_EXISTING_ERROR and outputs exist: "Output already exists:\n  <p>\n  <p>
 *  ...\nUse existing: 'overwrite' or existing: 'skip'." (the plan's existing outputs
 *  in plan order: the first 10 named, then "  ... and <n> more");
 *  CT_ERR_IO "Cannot prepare output paths: <detail>" for an OS error,
 *  "Cannot prepare profile output path <p>: <msg>" for the profile's folder. */
ct_status ct_plan_outputs(const ct_input_list *inputs, const ct_plan_options *o, ct_plan *out);

/* The second planning pass's check (§12): every planned parent still
 * resolves to itself with the same device and inode, else CT_ERR_IO
 * "Publication parent identity changed between planning passes: <path>". */
ct_status ct_plan_recheck(const ct_plan *p);

void ct_plan_free(ct_plan *p);

/* "txt", "srt", "vtt", "json". */
const char *ct_plan_format_ext(ct_format f);

#endif
