/* log.c — the process-wide log sink and level (the one piece of global state
 * besides the backend registry; guarded so threads may log concurrently). */
#include "core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static ct_log_fn g_log_fn;
static void *g_log_user;
static int g_log_level = -1; /* -1: not yet read from CT_LOG */

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
    pthread_mutex_lock(&g_log_lock);
    g_log_fn = fn;
    g_log_user = user_data;
    pthread_mutex_unlock(&g_log_lock);
}

void ct_log_set_level(ct_log_level level) {
    pthread_mutex_lock(&g_log_lock);
    g_log_level = (int)level;
    pthread_mutex_unlock(&g_log_lock);
}

int ct_log_enabled(ct_log_level level) {
    pthread_mutex_lock(&g_log_lock);
    if (g_log_level < 0) g_log_level = level_from_env();
    int on = (int)level <= g_log_level;
    pthread_mutex_unlock(&g_log_lock);
    return on;
}

void ct_log(ct_log_level level, const char *fmt, ...) {
    if (!ct_log_enabled(level)) return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    static const char *names[] = {"error", "warn", "info", "debug"};
    pthread_mutex_lock(&g_log_lock);
    if (g_log_fn)
        g_log_fn(level, buf, g_log_user);
    else
        fprintf(stderr, "cohere-transcribe: %s: %s\n", names[level], buf);
    pthread_mutex_unlock(&g_log_lock);
}
