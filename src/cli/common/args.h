/* args.h — a small table-driven option parser with argparse's rules and the
 * original gem's (OptionParser) messages, shared by the command-line tools.
 *
 * One table of options (name, metavar, help text, group, kind, choices, the
 * field it writes) drives both parsing and the --help text. Parsing writes
 * the values straight into a caller's struct at each option's offset; it never
 * prints. The rules (PRODUCT-DETAILS §10.3):
 *   - long options as `--opt VALUE` or `--opt=VALUE`; a unique prefix of a
 *     long option is accepted, an ambiguous one is an error (checked for every
 *     token before anything else, as argparse does); an exact name wins over
 *     longer names it prefixes. Options marked `addition` (ours, not the
 *     original's) only take a prefix that matches no original option, so the
 *     original's abbreviations keep their meaning (`--dev` is still --device
 *     although --device-index exists);
 *   - a value option takes the next token unless that token looks like an
 *     option (starts with '-' and is not a lone '-', a negative number
 *     `-\d+` / `-\d*.\d+`, or a token holding a space): "missing argument";
 *   - a list option (`--formats`) takes every following value-like token,
 *     `--formats=x` exactly one;
 *   - positionals may come before or after options, but form one run: once an
 *     option follows a positional, later positionals are "unrecognized
 *     arguments"; `--` makes every later token a positional;
 *   - -h/--help and --version end parsing where they stand: they win over
 *     unknown options before them (those are reported only at the end), not
 *     over an earlier bad value;
 *   - a declared conflicting pair (--text-only, --alignment) is an error
 *     where the second of the two stands (even --alignment none), so a
 *     help after both loses to it and a help before them wins;
 *   - integers and floats follow Python's int()/float() syntax
 *     (ct_args_parse_int/ct_args_parse_float). */
#ifndef CT_CLI_ARGS_H
#define CT_CLI_ARGS_H

#include <stddef.h>

typedef enum ct_arg_kind {
    CT_ARG_FLAG,        /* no value: stores flag_value (an int field) */
    CT_ARG_STRING,      /* const char * field, borrowed from argv */
    CT_ARG_INT,         /* int field; Python int() syntax, saturated to the int range */
    CT_ARG_FLOAT,       /* double field; Python float() syntax */
    CT_ARG_CHOICE,      /* int (enum) field: one of choices, exactly */
    CT_ARG_CHOICE_LIST, /* int array field + int count field: one or more choices, deduplicated */
    CT_ARG_HELP,        /* -h/--help */
    CT_ARG_VERSION      /* --version */
} ct_arg_kind;

typedef struct ct_arg_choice {
    const char *name;
    int value;
    int extension; /* ours (e.g. --dtype int8): accepted, never listed in the
                      original's "choose from" messages, so those stay its own */
} ct_arg_choice;

/* Option flags. */
#define CT_ARG_ADDITION 1u  /* not in the original: loses prefix ties (above) */
#define CT_ARG_ZERO_SET 2u  /* INT/FLOAT whose field uses 0 for "unset": an explicit
                             * 0 is stored as -1 so that validation still sees a
                             * non-positive value (and says so) */

typedef struct ct_arg_option {
    const char *name;         /* "--model" */
    const char *short_name;   /* "-h" or NULL */
    const char *metavar;      /* "MODEL", "FORMAT [FORMAT ...]" or NULL */
    const char *help;         /* one line */
    const char *group;        /* heading the option sits under (NULL: the first, unnamed group) */
    ct_arg_kind kind;
    size_t offset;            /* field written (FLAG/STRING/INT/FLOAT/CHOICE/CHOICE_LIST) */
    size_t count_offset;      /* CHOICE_LIST: the int count field */
    int flag_value;           /* FLAG: the value stored */
    const ct_arg_choice *choices;
    int n_choices;
    const char *default_text; /* the default as a user would type it (docs, tests); NULL: none */
    const char *list_error;   /* CHOICE_LIST: "unsupported output formats" */
    unsigned flags;           /* CT_ARG_* above */
} ct_arg_option;

typedef struct ct_args_spec {
    const char *prog;          /* "cohere-transcribe" */
    const char *usage;         /* the first line, "Usage: ..." */
    const char *description;   /* NULL: none */
    const ct_arg_option *options;
    int n_options;
    /* Positionals: positional_name set → one or more required ("missing
     * argument: audio" when none); NULL → none allowed ("invalid argument:
     * unexpected positional argument: X"). */
    const char *positional_name;
    /* A pair of option names that may not both be given (or NULL). */
    const char *conflict_a, *conflict_b;
    /* 0: a bad enumerated value reads as cohere-transcribe 0.1.3 words it,
     * `invalid argument: --device --device: invalid choice "cu"; choose from
     * auto, mps, cuda, cpu`; 1: as plain OptionParser does (the doctor),
     * `invalid argument: --mode bogus` (`--mode=bogus` as typed). */
    int plain_choice_errors;
} ct_args_spec;

typedef enum ct_args_action {
    CT_ARGS_RUN = 0,
    CT_ARGS_HELP = 1,
    CT_ARGS_VERSION = 2,
    CT_ARGS_ERROR = 3
} ct_args_action;

#define CT_ARGS_MAX_OPTIONS 96
#define CT_ARGS_ERROR_MAX 1024

typedef struct ct_args_result {
    ct_args_action action;
    char error[CT_ARGS_ERROR_MAX]; /* CT_ARGS_ERROR: the message after "prog: error: " */
    const char **positionals;      /* malloc'd array of argv pointers (free with ct_args_result_free) */
    int n_positionals;
    unsigned char given[CT_ARGS_MAX_OPTIONS]; /* options[i] was given (last occurrence wins) */
} ct_args_result;

/* Parse argv[1..argc) against spec into target (already holding the
 * defaults). Returns the action; never prints. On CT_ARGS_ERROR the target
 * may be partly written. Out of memory is reported as an error message. */
ct_args_action ct_args_parse(const ct_args_spec *spec, int argc, char *const *argv, void *target,
                             ct_args_result *out);
void ct_args_result_free(ct_args_result *r);

/* The --help text (malloc'd, ends with a newline; NULL if out of memory):
 * the usage line, a blank line, the description and a blank line, then one
 * line per switch: 4-space indent, a 32-column switch field (long-only
 * switches start 4 columns in), one space, the help text; a switch longer
 * than the field puts its help on the next line at the same column. A blank
 * line and the heading precede each named group. */
char *ct_args_help_text(const ct_args_spec *spec);

/* Python int(s): surrounding Python whitespace, optional sign, digits of any
 * Unicode Nd script (by value), single '_' between digits. Values beyond the
 * int range saturate. 1 valid, 0 not. */
int ct_args_parse_int(const char *s, int *out);
/* Python float(s): the same whitespace and digits; [sign] digits[.digits]
 * | .digits, optional exponent, '_' between digits; inf, infinity, nan in any
 * case. 1 valid, 0 not. */
int ct_args_parse_float(const char *s, double *out);

/* argparse's negative-number test for a token: -\d+ or -\d*.\d+ (Unicode \d). */
int ct_args_is_negative_number(const char *s);

/* Index of the option a name (as typed, before any '=') resolves to under
 * the prefix rules: >= 0 the option, -1 unknown, -2 ambiguous. */
int ct_args_lookup(const ct_args_spec *spec, const char *name, size_t len);

#endif
