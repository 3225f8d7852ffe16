/* console.c — stage headers, counters and the summary of PRODUCT-DETAILS
 * §10.1 on stdout, and the live progress line on stderr. The original prints
 * counter events only when current == total; the live line is ours (the
 * issue asks for files, segments, audio seconds, RTFx and ETA). */
#include "common/console.h"

#include <math.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ct_console_init(ct_console *c, int word_mode) {
    memset(c, 0, sizeof *c);
    c->out = stdout;
    c->err = stderr;
    c->tty = isatty(fileno(stderr));
    c->word_mode = word_mode;
    c->plain_every = 10.0;
    c->t0 = now();
}

void ct_console_clear(ct_console *c) {
    if (c->bar_visible) {
        fputs("\r\033[K", c->err);
        fflush(c->err);
        c->bar_visible = 0;
    }
}

void ct_console_stage(ct_console *c, int k, const char *text) {
    ct_console_clear(c);
    fprintf(c->out, "\n[%d/4] %s\n", k, text);
    fflush(c->out);
}

void ct_console_duration(double seconds, char *buf, size_t cap) {
    double r = seconds < 0 ? 0 : floor(seconds + 0.5); /* half away from zero for non-negative values */
    long long s = (long long)r, h = s / 3600, m = (s % 3600) / 60, sec = s % 60;
    if (h > 0) snprintf(buf, cap, "%lldh%02lldm%02llds", h, m, sec);
    else if (m > 0) snprintf(buf, cap, "%lldm%02llds", m, sec);
    else snprintf(buf, cap, "%llds", sec);
}

static void stage2(ct_console *c) {
    if (!c->stage2_printed) {
        c->stage2_printed = 1;
        ct_console_stage(c, 2, "Loading ASR + preparing audio");
    }
}

static const char *counter_name(ct_progress_stage s) {
    return s == CT_PROGRESS_FILES ? "files" : s == CT_PROGRESS_ASR ? "ASR" : "alignment";
}

static void draw(ct_console *c, const ct_progress *p) {
    double t = now();
    int final = p->stage == CT_PROGRESS_FILES && p->current == p->total && p->total == p->files_total;
    if (c->tty) {
        if (t - c->last_draw < 0.1 && !final) return;
    } else if (t - c->last_draw < c->plain_every && !final) {
        return;
    }
    c->last_draw = t;
    double el = p->elapsed_seconds;
    double rtfx = el > 0 ? p->audio_seconds_done / el : 0.0;
    /* done fraction: segments decoded of those prepared, scaled by the
     * files prepared of all (the rest are not segmented yet) */
    char eta[32] = "--";
    double frac = 0;
    if (p->files_total && p->files_done == p->files_total) frac = 1;
    else if (p->segments_total > 0 && p->files_total > 0)
        frac = (double)p->segments_done / (double)p->segments_total * p->files_prepared / p->files_total;
    else if (p->files_total > 0)
        frac = (double)p->files_done / p->files_total;
    if (frac >= 1) snprintf(eta, sizeof eta, "0s");
    else if (frac > 0.01) ct_console_duration(el * (1 - frac) / frac, eta, sizeof eta);
    char line[256];
    snprintf(line, sizeof line, "files %d/%d  segments %lld/%lld  audio %.1fs  RTFx %.1f  ETA %s", p->files_done,
             p->files_total, p->segments_done, p->segments_total, p->audio_seconds_done, rtfx, eta);
    if (c->tty) {
        int w = p->files_total > 0 ? (int)(20.0 * p->files_done / p->files_total) : 0;
        char bar[24];
        for (int i = 0; i < 20; i++) bar[i] = i < w ? '#' : '.';
        bar[20] = 0;
        fprintf(c->err, "\r\033[K[%s] %s", bar, line);
        c->bar_visible = 1;
    } else {
        fprintf(c->err, "progress: %s\n", line);
    }
    fflush(c->err);
}

void ct_console_progress(const ct_progress *p, void *user) {
    ct_console *c = user;
    switch (p->stage) {
    case CT_PROGRESS_STAGE:
        return; /* the original's headers are fixed text, printed from the events below */
    case CT_PROGRESS_BATCH:
        draw(c, p);
        return;
    case CT_PROGRESS_MESSAGE:
        stage2(c);
        ct_console_clear(c);
        fprintf(c->out, "%s\n", p->text ? p->text : "");
        fflush(c->out);
        return;
    default:
        if (p->current == p->total) {
            stage2(c);
            if (p->stage != CT_PROGRESS_FILES || p->current == p->files_total) {
                ct_console_clear(c);
                fprintf(c->out, "    %s: %lld/%lld\n", counter_name(p->stage), p->current, p->total);
                fflush(c->out);
            }
        }
        draw(c, p);
    }
}

static const char *status_class(const ct_file_result *f) {
    (void)f;
    return "";
}

int ct_console_summary(ct_console *c, const ct_run *run, const char *profile_path) {
    ct_console_clear(c);
    size_t n = ct_run_file_count(run);
    int all_skipped = n > 0;
    for (size_t i = 0; i < n; i++) all_skipped &= ct_file_get_status(ct_run_file(run, i)) == CT_FILE_SKIPPED;
    int rc = ct_run_error_count(run) ? 1 : 0;
    if (all_skipped) {
        for (size_t i = 0; i < n; i++)
            fprintf(c->out, "    skipping %s: verified output generation is complete\n",
                    ct_file_path(ct_run_file(run, i)));
        fprintf(c->out, "    All inputs were skipped; no model was loaded.\n");
        for (size_t i = 0; i < ct_run_error_count(run); i++) fprintf(c->out, "    [error] %s\n", ct_run_error(run, i));
        if (profile_path) fprintf(c->out, "    %s\n", profile_path);
        fflush(c->out);
        return rc;
    }
    stage2(c);
    ct_console_stage(c, 3, c->word_mode ? "Forced alignment + transactional outputs" : "Transactional outputs");
    ct_console_stage(c, 4, "Summary");
    ct_run_stats st;
    ct_run_get_stats(run, &st);
    char dur[32];
    ct_console_duration(st.elapsed_seconds, dur, sizeof dur);
    fprintf(c->out, "    %d/%d files finished in %s (RTFx %.1f)\n", st.files_completed,
            st.files_completed + st.files_failed, dur, st.rtfx);
    size_t shown = 0, total = 0;
    for (size_t i = 0; i < n; i++) {
        const ct_file_result *f = ct_run_file(run, i);
        for (size_t k = 0; k < ct_file_output_count(f); k++, total++)
            if (shown < 20) fprintf(c->out, "    %s\n", ct_file_output(f, k)), shown++;
    }
    if (total > shown) fprintf(c->out, "    ... and %zu more output files\n", total - shown);
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        const ct_file_result *f = ct_run_file(run, i);
        if (ct_file_get_status(f) != CT_FILE_FAILED) continue;
        if (!failed++) fprintf(c->out, "    Failures:\n");
        fprintf(c->out, "    - %s: %s%s\n", ct_file_path(f), status_class(f), ct_file_error(f));
    }
    /* Files whose output-set lock another process held: that process
     * publishes them, so they are neither failures nor ours (issue 12: a
     * yielding process names what it left). They do not change the exit
     * status: a run whose only unfinished files were left to others is 0. */
    size_t busy = 0;
    for (size_t i = 0; i < n; i++) busy += ct_file_get_status(ct_run_file(run, i)) == CT_FILE_BUSY;
    if (busy) fprintf(c->out, "    Left to another process: %zu file%s\n", busy, busy == 1 ? "" : "s");
    for (size_t i = 0; i < n && busy; i++) {
        const ct_file_result *f = ct_run_file(run, i);
        if (ct_file_get_status(f) == CT_FILE_BUSY) fprintf(c->out, "    - %s: %s\n", ct_file_path(f), ct_file_error(f));
    }
    for (size_t i = 0; i < ct_run_error_count(run); i++) fprintf(c->out, "    [error] %s\n", ct_run_error(run, i));
    if (profile_path) fprintf(c->out, "    %s\n", profile_path);
    fflush(c->out);
    return failed || rc ? 1 : 0;
}
