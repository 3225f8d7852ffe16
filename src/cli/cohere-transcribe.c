/* cohere-transcribe — the product's command: audio files and folders in,
 * txt/srt/vtt/json output sets out (docs/USAGE.md). Everything it does goes
 * through the public header; this file parses the command line (through
 * common/transcribe_args), shows progress and the summary (common/console)
 * and turns signals into a clean cancel.
 *
 * Exit status: 0 every file completed or was skipped; 1 a file failed or the
 * run failed (a library error prints only its message on stderr); 2 a
 * command-line error (help, then "cohere-transcribe: error: ..." on stderr);
 * 130 SIGINT, 143 SIGTERM, 129 SIGHUP, after rolling back the commit in
 * progress (files published earlier stay published).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blas_preinit.h" /* a start-up hook, not API: fits OpenBLAS into ulimit -v before main */
#include "cohere_transcribe.h"
#include "common/console.h"
#include "common/transcribe_args.h"

static ct_transcriber *g_transcriber;
static volatile sig_atomic_t g_signal;

/* Async-signal-safe: records the first signal and asks the run to stop. A
 * second SIGINT/SIGTERM while the rollback runs is ignored: the rollback is
 * short, and dying inside it would leave the cleanup to the next run. */
static void on_signal(int sig) {
    if (!g_signal) g_signal = sig;
    if (g_transcriber) ct_transcriber_cancel(g_transcriber);
}

static void install_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* SIGHUP: the terminal went away; stop cleanly like SIGTERM (exit 129).
     * Batch users who want the run to outlive the terminal use nohup, which
     * sets SIGHUP to ignored before we start: keep it ignored then. */
    struct sigaction old;
    if (sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler != SIG_IGN) sigaction(SIGHUP, &sa, NULL);
    /* SIGPIPE: stdout piped into `head` must not kill a run in the middle of
     * a commit; writes to the closed pipe fail with EPIPE instead, and the
     * run goes on (outputs are files, not stdout). */
    signal(SIGPIPE, SIG_IGN);
}

static int signal_exit(ct_console *con) {
    ct_console_clear(con);
    if (g_signal == SIGINT) {
        printf("\n    Interrupted; the active output commit was rolled back. Files completed earlier remain "
               "published.\n");
        fflush(stdout);
        return 130;
    }
    printf("\n    Termination requested; active work was cancelled and completed files remain published.\n");
    fflush(stdout);
    return g_signal == SIGHUP ? 129 : 143;
}

int main(int argc, char **argv) {
    ct_cli_result cli;
    ct_cli_parse(argc, argv, &cli);
    if (cli.action != CT_ARGS_RUN) { /* help, version or a parse error */
        int code = ct_cli_report(&cli, stdout, stderr);
        ct_cli_result_free(&cli);
        return code;
    }
    /* OpenMP's wait policy: only a process start sets it (before any thread) */
    ct_cpu_wait_exec(cli.options.cpu_wait, argv, NULL);
    ct_console con;
    ct_console_init(&con, cli.options.alignment == CT_ALIGN_WORD && !cli.options.text_only);
    ct_console_stage(&con, 1, "Validating inputs and outputs");
    ct_transcriber *t = NULL;
    if (ct_transcriber_create(&cli.options, &t) != CT_OK) {
        fprintf(stderr, "%s\n", ct_last_error());
        ct_cli_result_free(&cli);
        return 1;
    }
    ct_transcriber_set_progress(t, ct_console_progress, &con);
    g_transcriber = t;
    install_signals();
    ct_run *run = NULL;
    ct_status s = ct_transcriber_run(t, cli.paths, (size_t)cli.n_paths, &run);
    g_transcriber = NULL;
    int rc;
    if (g_signal) {
        rc = signal_exit(&con);
    } else if (s != CT_OK) {
        ct_console_clear(&con);
        fprintf(stderr, "%s\n", ct_transcriber_errmsg(t));
        rc = 1;
    } else {
        rc = ct_console_summary(&con, run, cli.options.profile_json);
    }
    ct_run_free(run);
    ct_transcriber_free(t);
    ct_cli_result_free(&cli);
    if (fflush(stdout) != 0 && errno != EPIPE && rc == 0) rc = 1;
    return rc;
}
