/* fuzz_cli_args.c — libFuzzer target for the command-line parser
 * (src/cli/common/args.c) through cohere-transcribe's table: the input is
 * argv, NUL-separated. Whatever the tokens, the parse ends in one action with
 * a message exactly when it is an error, positionals are argv entries, the
 * formats are deduplicated valid ones; the options check and the JSON dump
 * run on every parse that succeeds, and each token also goes through the
 * int/float readers, whose results must be consistent. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/args.h"
#include "common/transcribe_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAXARGS + 2];
    int argc = 0;
    argv[argc++] = (char *)"cohere-transcribe";
    for (char *p = buf; argc < MAXARGS && p <= buf + size; p += strlen(p) + 1) argv[argc++] = p;
    argv[argc] = NULL;

    for (int i = 1; i < argc; i++) {
        int iv;
        double dv;
        /* every integer is also a float of the same value (Python agrees) */
        if (ct_args_parse_int(argv[i], &iv)) {
            if (!ct_args_parse_float(argv[i], &dv)) abort();
            if (iv > -1000000 && iv < 1000000 && dv != (double)iv) abort();
        }
        if (ct_args_is_negative_number(argv[i]) && !ct_args_parse_float(argv[i] + 1, &dv)) abort();
    }

    ct_cli_result r;
    int code = ct_cli_parse(argc, argv, &r);
    if ((code == 2) != (r.action == CT_ARGS_ERROR)) abort();
    if ((r.action == CT_ARGS_ERROR) != (r.error[0] != '\0')) abort();
    if (r.action == CT_ARGS_RUN) {
        if (r.n_paths < 1) abort();
        for (int i = 0; i < r.n_paths; i++) {
            int found = 0;
            for (int k = 1; k < argc; k++) found |= r.paths[i] == argv[k];
            if (!found) abort();
        }
        const ct_transcriber_options *o = &r.options;
        if (o->n_formats < 0 || o->n_formats > CT_FORMAT_COUNT) abort();
        for (int i = 0; i < o->n_formats; i++) {
            if ((int)o->formats[i] < 0 || (int)o->formats[i] >= CT_FORMAT_COUNT) abort();
            for (int j = 0; j < i; j++)
                if (o->formats[i] == o->formats[j]) abort();
        }
        (void)ct_transcriber_options_check(o);
        char *json = ct_cli_options_json(o, r.paths, r.n_paths);
        free(json);
    }
    ct_cli_result_free(&r);
    free(buf);
    return 0;
}
