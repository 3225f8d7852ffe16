/* trace.h — a timeline of one run, for whoever tunes it: spans of the
 * threads that decode, segment, transcribe and publish, written as Chrome
 * trace-event JSON (open it in ui.perfetto.dev or chrome://tracing).
 *
 * Off unless a run asks for it (`--trace FILE`, ct_transcriber_options
 * .trace_path); off, each call costs one relaxed atomic load. The recorder
 * is process-wide, like the log sink: the preparation workers, their split
 * helpers, the engine and the publisher share no handle that could carry
 * it, and a timeline is only useful when it holds all of them. One run at a
 * time records (a second start while recording fails).
 *
 * Times are ct_now() seconds (CLOCK_MONOTONIC); the file's origin is the
 * process start, so the first span's offset is the start-up cost. */
#ifndef CT_CORE_TRACE_H
#define CT_CORE_TRACE_H

#include "core/error.h"

/* Nonzero while a run records. */
int ct_trace_enabled(void);

/* Begin recording (the buffer starts empty). CT_ERR_MISUSE when a
 * run already records. */
CT_NODISCARD ct_status ct_trace_start(void);

/* Stop recording and write the events to path atomically (temporary file +
 * rename); path NULL discards them. Safe to call when not recording. */
CT_NODISCARD ct_status ct_trace_stop(const char *path);

/* One complete span [t0, t1] of the calling thread. name: a short literal
 * kept by pointer (it must outlive the run: use string literals). label:
 * shown as args.label (escaped; NULL for none), e.g. a file name. args: a
 * printf format of further args members, numbers only, e.g. "\"rows\":%d"
 * (NULL for none); it is pasted into the JSON as is. Events beyond the
 * recorder's limit (1 M) are counted and dropped. */
void ct_trace_span(const char *name, double t0, double t1, const char *label, const char *args, ...)
    CT_PRINTF(5, 6);

/* A file's label: its last path component (a pointer into path). */
static inline const char *ct_trace_file(const char *path) {
    const char *b = path;
    for (const char *c = path; c && *c; c++)
        if (*c == '/') b = c + 1;
    return b;
}

/* Names the calling thread in the timeline ("prep worker", "asr"). */
void ct_trace_thread(const char *name);

#endif
