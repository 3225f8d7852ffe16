/* trace.c — the recorder behind trace.h: fixed-size events appended under
 * one mutex (a run makes thousands, not millions: one per file stage, per
 * engine call and per publication), JSON written once at the end. */
#include "core/trace.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/fs.h"

enum { MAX_EVENTS = 1 << 20, LABEL = 96, ARGS = 160, THREAD_NAME = 32, MAX_THREADS = 256 };

typedef struct {
    const char *name;
    double t0, t1;
    int tid;
    char label[LABEL];
    char args[ARGS];
} event;

typedef struct {
    int tid;
    char name[THREAD_NAME];
} thread_name;

static atomic_int on;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static event *events;
static size_t n_events, cap_events, dropped;
static thread_name threads[MAX_THREADS];
static size_t n_threads;
static double origin; /* ct_now() at the process start */

int ct_trace_enabled(void) { return atomic_load_explicit(&on, memory_order_relaxed); }

static int gettid_(void) { return (int)syscall(SYS_gettid); }

/* The process start on ct_now()'s clock: /proc/self/stat's start time
 * (clock ticks since boot) against CLOCK_BOOTTIME now. CLOCK_MONOTONIC
 * differs from it only by time suspended, which a run does not span. If
 * /proc is not readable, the start of recording is the origin. */
static double process_start(double now) {
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f) return now;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p) return now;
    unsigned long long start = 0;
    /* after ") ": state (field 3), then fields 4..21, then starttime (22) */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &start) !=
        1)
        return now;
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec bt;
    if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &bt) != 0) return now;
    double age = (double)bt.tv_sec + bt.tv_nsec * 1e-9 - (double)start / (double)hz;
    return age >= 0 && age < 1e6 ? now - age : now;
}

ct_status ct_trace_start(void) {
    pthread_mutex_lock(&mu);
    if (atomic_load(&on)) {
        pthread_mutex_unlock(&mu);
        return ct_fail(CT_ERR_MISUSE, "trace: another run is already recording a trace");
    }
    n_events = dropped = n_threads = 0;
    origin = process_start(ct_now());
    atomic_store(&on, 1);
    pthread_mutex_unlock(&mu);
    return CT_OK;
}

void ct_trace_thread(const char *name) {
    if (!ct_trace_enabled()) return;
    int tid = gettid_();
    pthread_mutex_lock(&mu);
    size_t i = 0;
    while (i < n_threads && threads[i].tid != tid) i++;
    if (i < MAX_THREADS) {
        threads[i].tid = tid;
        snprintf(threads[i].name, sizeof threads[i].name, "%s", name);
        if (i == n_threads) n_threads++;
    }
    pthread_mutex_unlock(&mu);
}

void ct_trace_span(const char *name, double t0, double t1, const char *label, const char *args, ...) {
    if (!ct_trace_enabled()) return;
    event e = {.name = name, .t0 = t0, .t1 = t1 < t0 ? t0 : t1, .tid = gettid_()};
    if (label) snprintf(e.label, sizeof e.label, "%s", label);
    if (args) {
        va_list ap;
        va_start(ap, args);
        vsnprintf(e.args, sizeof e.args, args, ap);
        va_end(ap);
    }
    pthread_mutex_lock(&mu);
    if (atomic_load(&on)) {
        if (n_events == cap_events && cap_events < MAX_EVENTS) {
            size_t cap = cap_events ? 2 * cap_events : 4096;
            event *p = realloc(events, cap * sizeof *p);
            if (p) events = p, cap_events = cap;
        }
        if (n_events < cap_events) events[n_events++] = e;
        else dropped++;
    }
    pthread_mutex_unlock(&mu);
}

/* JSON string body: quotes, backslashes and control characters escaped;
 * other bytes (UTF-8 file names) as they are. */
static void put_escaped(FILE *f, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
}

static ct_status write_json(const char *path) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return ct_fail(CT_ERR_OOM, "trace: buffer");
    int pid = (int)getpid();
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"dropped_events\":%zu},\"traceEvents\":[\n", dropped);
    fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"cohere-transcribe\"}}",
            pid, pid);
    for (size_t i = 0; i < n_threads; i++) {
        fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"", pid,
                threads[i].tid);
        put_escaped(f, threads[i].name);
        fputs("\"}}", f);
    }
    for (size_t i = 0; i < n_events; i++) {
        const event *e = &events[i];
        /* microseconds since the process start, as the format wants */
        fprintf(f, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.1f,\"dur\":%.1f,\"args\":{", e->name,
                pid, e->tid, (e->t0 - origin) * 1e6, (e->t1 - e->t0) * 1e6);
        int comma = 0;
        if (e->label[0]) {
            fputs("\"label\":\"", f);
            put_escaped(f, e->label);
            fputc('"', f);
            comma = 1;
        }
        if (e->args[0]) fprintf(f, "%s%s", comma ? "," : "", e->args);
        fputs("}}", f);
    }
    fputs("\n]}\n", f);
    if (fclose(f) != 0) {
        free(buf);
        return ct_fail(CT_ERR_OOM, "trace: buffer");
    }
    ct_status s = ct_fs_write_atomic(path, buf, len);
    free(buf);
    return s == CT_OK ? CT_OK : ct_fail_wrap(s, "trace %s", path);
}

ct_status ct_trace_stop(const char *path) {
    pthread_mutex_lock(&mu);
    int was = atomic_exchange(&on, 0);
    ct_status s = was && path ? write_json(path) : CT_OK;
    free(events);
    events = NULL;
    n_events = cap_events = dropped = n_threads = 0;
    pthread_mutex_unlock(&mu);
    return s;
}
