/* cohere-transcribe-doctor — checks the installation without loading model
 * weights (PRODUCT-DETAILS §11; what each check does here: docs/DOCTOR.md)
 * and prints one [OK]/[WARN]/[FAIL] line per result, then the verdict.
 * Exit 0 passed, 1 failed, 2 command-line error (help and the message on
 * stderr). The checks are src/pipeline/doctor.h; this file parses and prints. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_preinit.h" /* OpenBLAS fitted into ulimit -v before main (the Silero smoke uses it) */
#include "cohere_transcribe.h"
#include "pipeline/doctor.h"

#define PROG "cohere-transcribe-doctor"

typedef struct opt {
    const char *name; /* long name without "--" */
    const char *meta; /* NULL: a flag */
    const char *help;
} opt;

/* In help order; -h/--help is last, as the original prints it. */
static const opt OPTS[] = {
    {"mode", "MODE", "Output mode to validate (default: segment)."},
    {"model-access", NULL, "Resolve and validate selected model metadata."},
    {"model", "MODEL", "Hub repository or local model directory; implies model access."},
    {"model-revision", "REVISION", "Optional Hub model commit, tag, or branch."},
    {"adapter", "ADAPTER", "Optional Hub repository or local LoRA adapter directory."},
    {"adapter-revision", "REVISION", "Optional Hub adapter commit, tag, or branch."},
    {"audio-backend", "BACKEND", "Decoder configuration to validate (default: auto)."},
    {"vad-weights", "PATH", "Silero VAD weights to validate (default: the installed copy)."},
    {"help", NULL, "Show this help and exit."},
};
enum { N_OPTS = sizeof OPTS / sizeof *OPTS, OPT_HELP = N_OPTS - 1 };

static const char *const MODES[] = {"word", "segment", NULL};
static const char *const BACKENDS[] = {"auto", "torchcodec", "ffmpeg", "librosa", "sndfile", NULL};

/* The layout of the original's OptionParser help: 4-space indent, a 32-column
 * switch field (long-only switches 4 columns in), one space, the text. */
static void usage(FILE *f) {
    fprintf(f, "Usage: " PROG " [options]\n\nValidate the transcription package without loading model weights.\n\n");
    for (int i = 0; i < N_OPTS; i++) {
        char sw[96];
        if (i == OPT_HELP)
            snprintf(sw, sizeof sw, "-h, --help");
        else
            snprintf(sw, sizeof sw, "    --%s%s%s", OPTS[i].name, OPTS[i].meta ? " " : "", OPTS[i].meta ? OPTS[i].meta : "");
        if (strlen(sw) > 32)
            fprintf(f, "    %s\n    %-32s %s\n", sw, "", OPTS[i].help);
        else
            fprintf(f, "    %-32s %s\n", sw, OPTS[i].help);
    }
}

/* A command-line error: the help and the message on stderr, exit 2. */
__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...) {
    usage(stderr);
    fprintf(stderr, PROG ": error: ");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

/* The option a "--name[=v]" token means: its index, -1 none, -2 ambiguous.
 * An exact name wins over longer names it is a prefix of (--model). */
static int lookup(const char *tok, size_t *name_len) {
    const char *s = tok + 2;
    size_t n = strcspn(s, "=");
    *name_len = n;
    int found = -1, count = 0;
    for (int i = 0; i < N_OPTS; i++) {
        if (strncmp(OPTS[i].name, s, n) != 0) continue;
        if (strlen(OPTS[i].name) == n) return i;
        found = i;
        count++;
    }
    return count > 1 ? -2 : count == 1 ? found : -1;
}

static int is_long(const char *a) { return a[0] == '-' && a[1] == '-' && a[2]; }

static int negative_number(const char *s) {
    if (s[0] != '-') return 0;
    const char *p = s + 1;
    int digits = 0, dot = 0;
    for (; *p; p++) {
        if (*p >= '0' && *p <= '9') digits++;
        else if (*p == '.' && !dot) dot = 1;
        else return 0;
    }
    return digits > 0;
}

static int in(const char *v, const char *const *choices) {
    for (int i = 0; choices[i]; i++)
        if (!strcmp(v, choices[i])) return 1;
    return 0;
}

typedef struct tally {
    int warnings, failures;
} tally;

static void print_line(void *user, ct_doctor_level lv, const char *msg) {
    tally *t = user;
    static const char *const prefix[] = {"[OK]   ", "[WARN] ", "[FAIL] "};
    t->warnings += lv == CT_DOCTOR_WARN;
    t->failures += lv == CT_DOCTOR_FAIL;
    printf("%s%s\n", prefix[lv], msg);
    fflush(stdout); /* each line as its check finishes (the model check may download) */
}

int main(int argc, char **argv) {
    ct_doctor_options o;
    ct_doctor_default_options(&o);
    const char *mode = "segment";

    /* As the original: an ambiguous prefix is an error even before --help;
     * unknown options are not when -h/--help comes later. */
    int help_at = -1;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        size_t n;
        int k = is_long(argv[i]) ? lookup(argv[i], &n) : -1;
        if (k == OPT_HELP || (argv[i][0] == '-' && argv[i][1] == 'h')) break;
        if (k == -2) {
            char name[256];
            snprintf(name, sizeof name, "--%.*s", (int)n, argv[i] + 2);
            die("ambiguous option: %s", name);
        }
    }
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        size_t n;
        int k = is_long(argv[i]) ? lookup(argv[i], &n) : -1;
        if (k == OPT_HELP || (argv[i][0] == '-' && argv[i][1] == 'h')) {
            help_at = i;
            break;
        }
        if (k >= 0 && OPTS[k].meta && !strchr(argv[i], '=')) i++; /* its value */
    }

    const char *positional = NULL;
    int options_done = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (options_done || a[0] != '-' || !a[1]) {
            if (!positional) positional = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            options_done = 1;
            continue;
        }
        if (a[1] == 'h') { /* -h, or a short cluster that starts with it */
            usage(stdout);
            return 0;
        }
        size_t n;
        int k = a[1] == '-' ? lookup(a, &n) : -1;
        if (k == -2) {
            char name[256];
            snprintf(name, sizeof name, "--%.*s", (int)n, a + 2);
            die("ambiguous option: %s", name);
        }
        if (k == -1) {
            if (help_at > i) continue; /* --help below wins */
            die("invalid option: %s", a);
        }
        const char *eq = strchr(a, '=');
        if (!OPTS[k].meta) {
            if (eq) die("needless argument: %s", a);
            if (k == OPT_HELP) {
                usage(stdout);
                return 0;
            }
            o.model_access = 1; /* the only other flag */
            continue;
        }
        const char *v;
        if (eq) {
            v = eq + 1;
        } else {
            /* the next token, unless it looks like an option (argparse: a lone
             * "-", a negative number or a token with a space is a value) */
            const char *nx = i + 1 < argc ? argv[i + 1] : NULL;
            if (!nx || (nx[0] == '-' && nx[1] && !negative_number(nx) && !strchr(nx, ' ')))
                die("missing argument: %s", a);
            v = argv[++i];
        }
        const char *name = OPTS[k].name;
        if (!strcmp(name, "mode") || !strcmp(name, "audio-backend")) {
            if (!in(v, !strcmp(name, "mode") ? MODES : BACKENDS)) {
                if (eq) die("invalid argument: %s", a);
                die("invalid argument: %s %s", a, v);
            }
            if (!strcmp(name, "mode")) mode = v;
            else o.audio_backend = v;
        } else if (!strcmp(name, "model")) {
            o.model = v;
        } else if (!strcmp(name, "model-revision")) {
            o.model_revision = v;
        } else if (!strcmp(name, "adapter")) {
            o.adapter = v;
        } else if (!strcmp(name, "adapter-revision")) {
            o.adapter_revision = v;
        } else {
            o.vad_weights = v;
        }
    }
    if (positional) die("invalid argument: unexpected positional argument: %s", positional);

    o.word_mode = !strcmp(mode, "word");
    char built[32];
    snprintf(built, sizeof built, "%d.%d.%d", CT_VERSION_MAJOR, CT_VERSION_MINOR, CT_VERSION_PATCH);
    o.built_version = built;

    /* the policy cohere-transcribe gets by default (--cpu-wait passive), so
     * that the runtime line below reports what a run would have */
    ct_cpu_wait_exec(CT_CPU_WAIT_AUTO, argv, NULL);
    tally t = {0, 0};
    ct_doctor_run(&o, print_line, &t);
    printf("\n");
    if (t.failures) {
        printf("Validation failed: %d failure(s), %d warning(s).\n", t.failures, t.warnings);
        return 1;
    }
    printf("Validation passed for %s mode with %d warning(s).\n", mode, t.warnings);
    return 0;
}
