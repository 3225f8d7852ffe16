/* cohere-transcribe-fetch — resolve a model spec (Hub id or local folder) into
 * the Hugging Face cache and print the folder to load it from; or fetch single
 * repo files (--file), or the Silero VAD weights (--vad). A progress bar is
 * drawn on stderr when it is a terminal. Exit 0 ok, 1 failure, 2 usage,
 * 130 when interrupted (partial downloads are kept and resume next time). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fs.h"
#include "model/checkpoint.h"
#include "model/convert.h"
#include "model/hub.h"
#include "model/resolve.h"

static volatile sig_atomic_t g_cancel;
static void on_signal(int sig) {
    (void)sig;
    g_cancel = 1;
}

/* The resolver words its errors for the product's --model/--model-revision
 * options; here the model is the MODEL argument and the revision --revision. */
static void print_error(const char *msg) {
    fputs("cohere-transcribe-fetch: error: ", stderr);
    for (const char *p = msg; *p;) {
        if (!strncmp(p, "--model-revision", 16)) {
            fputs("--revision", stderr);
            p += 16;
        } else if (!strncmp(p, "--model", 7)) {
            fputs("MODEL", stderr);
            p += 7;
        } else {
            fputc(*p++, stderr);
        }
    }
    fputc('\n', stderr);
}

static void usage(FILE *f) {
    fprintf(f,
            "Usage: cohere-transcribe-fetch [options] [MODEL]\n"
            "Resolve MODEL (a Hugging Face repo id or a local folder; default %s\n"
            "pinned to %s) and print the folder that holds it.\n"
            "  --revision R     branch, tag or commit (default: the pinned commit, else main)\n"
            "  --file F         fetch only this repo file (repeatable); prints each path\n"
            "  --vad SPEC       resolve Silero VAD weights (file, folder or Hub repo[@rev])\n"
            "  --cache-dir D    cache folder (default $HF_HUB_CACHE, $HF_HOME/hub, ...)\n"
            "  --endpoint URL   Hub endpoint (default $HF_ENDPOINT or https://huggingface.co)\n"
            "  --offline        use the cache only (as HF_HUB_OFFLINE=1)\n"
            "  --quiet          no progress bar\n"
            "  --check          open the resolved checkpoint and its tokenizer with the\n"
            "                   engine's checks and print tensor, parameter and piece\n"
            "                   counts (a loading smoke test)\n"
            "  -h, --help\n",
            CT_DEFAULT_MODEL, CT_DEFAULT_MODEL_COMMIT);
}

typedef struct bar {
    char file[256]; /* the file being drawn, to restart the clock per file */
    double start;
    uint64_t first; /* bytes already there when the file's bar started (resume) */
    int open; /* a bar line is on screen without its newline */
} bar;

static void human(double b, char *out, size_t cap) {
    const char *u[] = {"B", "kB", "MB", "GB", "TB"};
    int i = 0;
    while (b >= 1000.0 && i < 4) b /= 1000.0, i++;
    snprintf(out, cap, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

static void draw(const char *repo, const char *file, uint64_t done, uint64_t total, void *user) {
    (void)repo;
    bar *b = user;
    char d[32], t[32], r[32] = "";
    if (strcmp(b->file, file) != 0) {
        snprintf(b->file, sizeof b->file, "%s", file);
        b->start = ct_now();
        b->first = done;
    }
    double el = ct_now() - b->start;
    double rate = el > 0.2 ? (double)(done - b->first) / el : 0.0;
    if (rate > 0) {
        human(rate, r, sizeof r - 2);
        strcat(r, "/s");
    }
    human((double)done, d, sizeof d);
    int width = 30;
    if (total) {
        human((double)total, t, sizeof t);
        int fill = (int)((double)width * (double)done / (double)total);
        if (fill > width) fill = width;
        fprintf(stderr, "\r%-32.32s [", file);
        for (int i = 0; i < width; i++) fputc(i < fill ? '#' : '.', stderr);
        fprintf(stderr, "] %5.1f%% %s / %s %s\033[K", 100.0 * (double)done / (double)total, d, t, r);
    } else {
        fprintf(stderr, "\r%-32.32s %s %s\033[K", file, d, r);
    }
    b->open = !(total && done >= total);
    if (!b->open) fputc('\n', stderr);
    fflush(stderr);
}

int main(int argc, char **argv) {
    const char *model = NULL, *revision = NULL, *vad = NULL;
    const char *files[64];
    int nfiles = 0, quiet = 0, check = 0;
    ct_hub_options o;
    ct_hub_default_options(&o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define VALUE(name)                                                                     \
    (!v ? (fprintf(stderr, "cohere-transcribe-fetch: error: %s needs a value\n", name), \
           exit(2), (const char *)NULL)                                                 \
        : (i++, v))
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--revision")) {
            revision = VALUE(a);
        } else if (!strcmp(a, "--file")) {
            if (nfiles == 64) {
                fprintf(stderr, "cohere-transcribe-fetch: error: too many --file\n");
                return 2;
            }
            files[nfiles++] = VALUE(a);
        } else if (!strcmp(a, "--vad")) {
            vad = VALUE(a);
        } else if (!strcmp(a, "--cache-dir")) {
            o.cache_dir = VALUE(a);
        } else if (!strcmp(a, "--endpoint")) {
            o.endpoint = VALUE(a);
        } else if (!strcmp(a, "--offline")) {
            o.offline = 1;
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (!strcmp(a, "--check")) {
            check = 1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "cohere-transcribe-fetch: error: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else if (!model) {
            model = a;
        } else {
            fprintf(stderr, "cohere-transcribe-fetch: error: more than one MODEL\n");
            return 2;
        }
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    o.cancel = &g_cancel;
    bar b = {0};
    if (!quiet && isatty(STDERR_FILENO)) {
        o.progress = draw;
        o.progress_user = &b;
    }

    ct_status st = CT_OK;
    if (vad) {
        char *path = NULL;
        st = ct_vad_weights_resolve(vad, &o, &path);
        if (st == CT_OK) printf("%s\n", path);
        free(path);
    } else if (nfiles) {
        if (!model) {
            fprintf(stderr, "cohere-transcribe-fetch: error: --file needs a MODEL repo id\n");
            return 2;
        }
        ct_hub *h = NULL;
        ct_hub_revision *rev = NULL;
        st = ct_hub_create(&o, &h);
        if (st == CT_OK) st = ct_hub_resolve_revision(h, model, revision, &rev);
        for (int i = 0; st == CT_OK && i < nfiles; i++) {
            char *path = NULL;
            int64_t size = -1;
            ct_hub_revision_has(rev, files[i], &size);
            st = ct_hub_fetch(h, model, rev->commit, files[i], size, &path);
            if (st == CT_OK) printf("%s\n", path);
            free(path);
        }
        ct_hub_revision_free(rev);
        ct_hub_free(h);
    } else {
        char *dir = NULL;
        st = ct_model_resolve(model, revision, &o, &dir);
        if (st == CT_OK) printf("%s\n", dir);
        if (st == CT_OK && check) {
            ct_checkpoint *ck = NULL;
            ct_tokenizer *tok = NULL;
            st = ct_checkpoint_open(dir, &ck);
            if (st == CT_OK)
                printf("checkpoint: %zu tensors, %lld parameters\n", ct_checkpoint_count(ck),
                       (long long)ct_checkpoint_param_count(ck));
            /* the engine's own tokenizer checks: a model it would refuse fails here */
            if (st == CT_OK) st = ct_convert_load_tokenizer(dir, &tok);
            if (st == CT_OK)
                st = ct_tokenizer_check_model(tok, ct_checkpoint_config(ck)->vocab_size,
                                              ct_checkpoint_config(ck)->eos_id, dir, NULL);
            if (st == CT_OK) printf("tokenizer: %d pieces\n", ct_tokenizer_vocab_size(tok));
            ct_tokenizer_free(tok);
            ct_checkpoint_free(ck);
        }
        free(dir);
    }
    if (b.open) fputc('\n', stderr);
    if (st != CT_OK) {
        print_error(ct_last_error());
        if (st == CT_ERR_ABORTED) return 130;
        return st == CT_ERR_INVALID_ARG ? 2 : 1;
    }
    return 0;
}
