/* transcribe_args.h — the command line of cohere-transcribe: its option table
 * (args.h) over ct_transcriber_options, the parse into options + paths, and
 * the printing of help, version and parse errors with their exit codes.
 *
 *     ct_cli_result r;
 *     int code = ct_cli_parse(argc, argv, &r);   // never prints
 *     if (r.action != CT_ARGS_RUN) return ct_cli_report(&r, stdout, stderr);
 *     if (ct_transcriber_options_check(&r.options) != CT_OK) { print ct_last_error(); exit 1 }
 *     ... ct_transcriber_create(&r.options, ...) / run over r.paths ...
 *     ct_cli_result_free(&r);
 */
#ifndef CT_CLI_TRANSCRIBE_ARGS_H
#define CT_CLI_TRANSCRIBE_ARGS_H

#include <stdio.h>

#include "cohere_transcribe.h"
#include "common/args.h"

typedef struct ct_cli_result {
    ct_args_action action;
    char error[CT_ARGS_ERROR_MAX];   /* CT_ARGS_ERROR: the message */
    /* CT_ARGS_RUN: the options (cli_option_names = 1, strings borrowed from
     * argv) and the positional paths (argv pointers, in order) */
    ct_transcriber_options options;
    const char *const *paths;
    int n_paths;
    ct_args_result args;             /* which options were given (args.given) */
} ct_cli_result;

/* The option table and spec (for the doctor's own table, tests and docs). */
const ct_args_spec *ct_cli_transcribe_spec(void);

/* Parse argv. Returns the exit code the action implies (0 run/help/version,
 * 2 parse error); prints nothing. Free with ct_cli_result_free. */
int ct_cli_parse(int argc, char **argv, ct_cli_result *out);
void ct_cli_result_free(ct_cli_result *r);

/* Print what a non-run action calls for and return the exit code: help →
 * out, 0; version → "cohere-transcribe <version>" on out, 0; error → the
 * full help then "cohere-transcribe: error: <message>" on err, 2. The
 * generic form serves any spec (the doctor); version may be NULL there. */
int ct_cli_report(const ct_cli_result *r, FILE *out, FILE *err);
int ct_args_report(const ct_args_spec *spec, ct_args_action action, const char *error,
                   const char *version, FILE *out, FILE *err);

/* The resolved options as one JSON object (field names as in the struct,
 * enums by their command-line names; the effective formats, alignment,
 * batch size and dtype for `device`) — malloc'd, NULL if out of memory.
 * For tests and the temporary harness main. */
char *ct_cli_options_json(const ct_transcriber_options *o, const char *const *paths, int n_paths);

#endif
