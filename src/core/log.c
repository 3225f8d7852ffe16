/* log.c — the process-wide log sink and level (the one piece of global state
 * besides the backend registry; guarded so threads may log concurrently).
 *
 * Sink calls are serialised by a recursive mutex, so a sink never runs twice
 * at once and, once ct_log_set() returns, the old sink is not running on
 * another thread and will not be called again. The mutex is recursive and a
 * thread-local flag marks "inside the sink", so a sink may itself call
 * ct_log_set()/ct_log_set_level() or reach library code that logs: such a
 * nested message goes to stderr instead of back into the sink (no
 * recursion, no deadlock). The level is an atomic read on every call. */
#include "core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t g_log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_log_lock; /* recursive: guards the sink and serialises its calls */
static ct_log_fn g_log_fn;
static void *g_log_user;
static _Atomic int g_log_level = -1; /* -1: not yet read from CT_LOG */
static _Thread_local int t_in_sink;   /* this thread is inside the sink */

static void init_lock(void) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&g_log_lock, &a);
    pthread_mutexattr_destroy(&a);
}

static void lock(void) {
    pthread_once(&g_log_once, init_lock);
    pthread_mutex_lock(&g_log_lock);
}

static void unlock(void) { pthread_mutex_unlock(&g_log_lock); }

static int level_from_env(void) {
    const char *e = getenv("CT_LOG");
    if (!e) return CT_LOG_WARN;
    if (!strcmp(e, "error")) return CT_LOG_ERROR;
    if (!strcmp(e, "warn")) return CT_LOG_WARN;
    if (!strcmp(e, "info")) return CT_LOG_INFO;
    if (!strcmp(e, "debug")) return CT_LOG_DEBUG;
    return CT_LOG_WARN;
}

void ct_log_set(ct_log_fn fn, void *user_data) {
    lock();
    g_log_fn = fn;
    g_log_user = user_data;
    unlock();
}

void ct_log_set_level(ct_log_level level) { atomic_store(&g_log_level, (int)level); }

int ct_log_enabled(ct_log_level level) {
    int cur = atomic_load(&g_log_level);
    if (cur < 0) {
        /* Two threads may both read CT_LOG here; they store the same value. */
        int want = level_from_env(), expected = -1;
        atomic_compare_exchange_strong(&g_log_level, &expected, want);
        cur = atomic_load(&g_log_level);
    }
    return (int)level <= cur;
}

static void to_stderr(ct_log_level level, const char *msg) {
    static const char *names[] = {"error", "warn", "info", "debug"};
    fprintf(stderr, "cohere-transcribe: %s: %s\n", names[level], msg);
}

void ct_log(ct_log_level level, const char *fmt, ...) {
    if (!ct_log_enabled(level)) return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (t_in_sink) { /* logged from inside the sink: never back into it */
        to_stderr(level, buf);
        return;
    }
    lock();
    ct_log_fn fn = g_log_fn;
    void *user = g_log_user;
    if (fn) {
        t_in_sink = 1;
        fn(level, buf, user);
        t_in_sink = 0;
    } else {
        to_stderr(level, buf);
    }
    unlock();
}
