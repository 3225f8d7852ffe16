/* cohere-transcribe — TEMPORARY harness main (branch h-cliargs): parses the
 * command line, checks the options, prints the resolved options as JSON on
 * stdout and exits 0. It transcribes nothing. The lead replaces this body
 * with the real main (parse → check → ct_transcriber_create/run → console);
 * the exit-code contract it shows stays: parse errors 2 (help + message on
 * stderr), --help/--version 0 on stdout, configuration errors 1 (the message
 * alone on stderr). tests/e2e/cli_args.sh relies only on that contract. */
#include <stdio.h>
#include <stdlib.h>

#include "cohere_transcribe.h"
#include "common/transcribe_args.h"

int main(int argc, char **argv) {
    ct_cli_result r;
    ct_cli_parse(argc, argv, &r);
    if (r.action != CT_ARGS_RUN) {
        int code = ct_cli_report(&r, stdout, stderr);
        ct_cli_result_free(&r);
        return code;
    }
    if (ct_transcriber_options_check(&r.options) != CT_OK) {
        fprintf(stderr, "%s\n", ct_last_error());
        ct_cli_result_free(&r);
        return 1;
    }
    /* HARNESS ONLY: the lead's main runs the transcriber here. */
    char *json = ct_cli_options_json(&r.options, r.paths, r.n_paths);
    if (json) puts(json);
    free(json);
    ct_cli_result_free(&r);
    return json ? 0 : 1;
}
