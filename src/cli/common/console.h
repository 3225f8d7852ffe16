/* console.h — what cohere-transcribe shows a person: the four stage headers
 * and summary of the original (PRODUCT-DETAILS §10.1) on stdout, and a live
 * progress line on stderr (a redrawn bar on a terminal, a plain line every
 * few seconds otherwise). Fed by the library's progress callback. */
#ifndef CT_CLI_CONSOLE_H
#define CT_CLI_CONSOLE_H

#include <stdio.h>

#include "cohere_transcribe.h"

typedef struct ct_console {
    FILE *out;            /* stdout: stages, counters, summary */
    FILE *err;            /* stderr: the live progress */
    int tty;              /* err is a terminal: redraw one line */
    int word_mode;        /* the [3/4] header names forced alignment */
    int stage2_printed;   /* "[2/4] ..." is printed before the first shown event */
    int bar_visible;      /* a progress line is on the terminal (erase before printing) */
    double last_draw;     /* seconds, for throttling */
    double plain_every;   /* seconds between plain lines when not a terminal */
    double t0;
} ct_console;

void ct_console_init(ct_console *c, int word_mode);
/* The ct_progress_fn to pass to ct_transcriber_set_progress (user = console). */
void ct_console_progress(const ct_progress *p, void *user);
/* A stage header line: "\n[k/4] text". */
void ct_console_stage(ct_console *c, int k, const char *text);
/* Everything after the run: the remaining headers and the summary (or the
 * all-skipped report). Returns the exit status (0 or 1). */
int ct_console_summary(ct_console *c, const ct_run *run, const char *profile_path);
/* Erase a progress line left on the terminal. */
void ct_console_clear(ct_console *c);
/* Seconds as the summary shows them: 1h02m03s, 4m05s, 7s (half away from zero). */
void ct_console_duration(double seconds, char *buf, size_t cap);

#endif
