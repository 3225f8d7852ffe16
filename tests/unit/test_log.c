/* test_log.c — the log sink: a sink that logs, replaces itself or changes
 * the level from inside its call must not deadlock (an alarm turns a hang
 * into a failure), nested messages go to stderr instead of recursing, and
 * ct_log_set from another thread waits for a running sink to return. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "testutil.h"

static int g_stderr = 2; /* the real stderr, while a test redirects fd 2 */

static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test_log: timed out: the log sink deadlocked\n";
    ssize_t r = write(g_stderr, msg, sizeof msg - 1);
    (void)r;
    _exit(1);
}

static int setup(void **state) {
    (void)state;
    if (g_stderr == 2) g_stderr = dup(2);
    signal(SIGALRM, on_alarm);
    alarm(10);
    ct_log_set_level(CT_LOG_INFO);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    alarm(0);
    ct_log_set(NULL, NULL);
    ct_log_set_level(CT_LOG_WARN);
    return 0;
}

typedef struct seen {
    int calls;
    char last[256];
} seen;

static void record(ct_log_level level, const char *msg, void *user) {
    seen *s = user;
    s->calls++;
    snprintf(s->last, sizeof s->last, "%s", msg);
}

/* Runs fn with stderr sent to a file; returns what was written (static). */
static const char *capture_stderr(void (*fn)(void)) {
    static char out[4096];
    char path[] = "/tmp/ct-test-log-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    assert_true(dup2(fd, 2) >= 0);
    fn();
    fflush(stderr);
    assert_true(dup2(saved, 2) >= 0);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, out, sizeof out - 1);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return out;
}

static seen g_outer;

static void sink_that_logs(ct_log_level level, const char *msg, void *user) {
    record(level, msg, user);
    CT_LOGW("nested from the sink (%s)", msg);
}

static void log_once(void) { CT_LOGW("outer %d", 1); }

static void test_sink_that_logs(void **state) {
    (void)state;
    memset(&g_outer, 0, sizeof g_outer);
    ct_log_set(sink_that_logs, &g_outer);
    const char *err = capture_stderr(log_once);
    assert_int_equal(g_outer.calls, 1);
    assert_string_equal(g_outer.last, "outer 1");
    assert_non_null(strstr(err, "cohere-transcribe: warn: nested from the sink (outer 1)"));
    /* and the sink still works afterwards, from this thread */
    CT_LOGW("again");
    assert_int_equal(g_outer.calls, 2);
}

static seen g_first, g_second;

static void sink_that_replaces_itself(ct_log_level level, const char *msg, void *user) {
    record(level, msg, user);
    ct_log_set(record, &g_second);
    ct_log_set_level(CT_LOG_DEBUG);
}

static void test_sink_that_sets_the_sink(void **state) {
    (void)state;
    memset(&g_first, 0, sizeof g_first);
    memset(&g_second, 0, sizeof g_second);
    ct_log_set(sink_that_replaces_itself, &g_first);
    CT_LOGI("one");
    CT_LOGD("two"); /* the level the sink set */
    assert_int_equal(g_first.calls, 1);
    assert_string_equal(g_first.last, "one");
    assert_int_equal(g_second.calls, 1);
    assert_string_equal(g_second.last, "two");
}

/* ---- another thread replaces the sink while it runs ---------------------- */

static atomic_int g_running, g_finished;

static void slow_sink(ct_log_level level, const char *msg, void *user) {
    atomic_store(&g_running, 1);
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
    atomic_store(&g_finished, 1);
}

static void *log_from_thread(void *arg) {
    (void)arg;
    CT_LOGW("from a thread");
    return NULL;
}

static void test_set_waits_for_running_sink(void **state) {
    (void)state;
    atomic_store(&g_running, 0);
    atomic_store(&g_finished, 0);
    ct_log_set(slow_sink, NULL);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, log_from_thread, NULL), 0);
    while (!atomic_load(&g_running)) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    seen after;
    memset(&after, 0, sizeof after);
    ct_log_set(record, &after);
    /* the old sink had returned before ct_log_set did */
    assert_int_equal(atomic_load(&g_finished), 1);
    pthread_join(t, NULL);
    CT_LOGW("new sink");
    assert_int_equal(after.calls, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sink_that_logs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sink_that_sets_the_sink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_set_waits_for_running_sink, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
