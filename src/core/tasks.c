/* tasks.c — see tasks.h. One mutex guards the FIFO and every task's state;
 * helpers wait on cv_work, waiters on cv_done (broadcast: few waiters, and
 * tasks are milliseconds long, so a shared condition costs nothing).
 */
#include "core/tasks.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "core/trace.h"

enum { QUEUED = 0, RUNNING = 1, DONE = 2 };

struct ct_tasks {
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    ct_task *head, *tail;
    int stop;
    int nthreads;
    pthread_t *threads;
};

static void *helper(void *arg) {
    ct_tasks *p = arg;
    ct_trace_thread("split helper");
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && !p->head) pthread_cond_wait(&p->cv_work, &p->mu);
        if (!p->head) break; /* stop, and nothing left */
        ct_task *t = p->head;
        p->head = t->next;
        if (!p->head) p->tail = NULL;
        t->state = RUNNING;
        pthread_mutex_unlock(&p->mu);
        double t0 = ct_trace_enabled() ? ct_now() : 0;
        t->run(t);
        if (t0 > 0) ct_trace_span("split task", t0, ct_now(), NULL, NULL);
        pthread_mutex_lock(&p->mu);
        t->state = DONE;
        pthread_cond_broadcast(&p->cv_done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

ct_status ct_tasks_create(int threads, ct_tasks **out) {
    *out = NULL;
    if (threads < 1) return ct_fail(CT_ERR_INVALID_ARG, "tasks: %d helper threads", threads);
    ct_tasks *p = calloc(1, sizeof *p);
    if (!p) return ct_fail(CT_ERR_OOM, "tasks: out of memory");
    p->threads = calloc((size_t)threads, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return ct_fail(CT_ERR_OOM, "tasks: out of memory");
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv_work, NULL);
    pthread_cond_init(&p->cv_done, NULL);
    for (int i = 0; i < threads; i++) {
        int e = pthread_create(&p->threads[i], NULL, helper, p);
        if (e) {
            ct_tasks_free(p);
            return ct_fail(CT_ERR_INTERNAL, "tasks: cannot start helper thread %d: %s", i, strerror(e));
        }
        p->nthreads++;
    }
    *out = p;
    return CT_OK;
}

void ct_tasks_free(ct_tasks *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->cv_done);
    pthread_cond_destroy(&p->cv_work);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p);
}

int ct_tasks_threads(const ct_tasks *p) { return p ? p->nthreads : 0; }

void ct_tasks_submit(ct_tasks *p, ct_task *t) {
    t->next = NULL;
    if (!p) {
        t->run(t);
        t->state = DONE;
        return;
    }
    pthread_mutex_lock(&p->mu);
    t->state = QUEUED;
    if (p->tail) p->tail->next = t;
    else p->head = t;
    p->tail = t;
    pthread_cond_signal(&p->cv_work);
    pthread_mutex_unlock(&p->mu);
}

void ct_tasks_wait(ct_tasks *p, ct_task *t) {
    if (!p) return; /* ran at submit */
    pthread_mutex_lock(&p->mu);
    if (t->state == QUEUED) { /* nobody took it: unlink and run it here */
        ct_task **pp = &p->head, *prev = NULL;
        while (*pp != t) {
            prev = *pp;
            pp = &(*pp)->next;
        }
        *pp = t->next;
        if (p->tail == t) p->tail = prev;
        t->state = RUNNING;
        pthread_mutex_unlock(&p->mu);
        t->run(t);
        pthread_mutex_lock(&p->mu);
        t->state = DONE;
    }
    while (t->state != DONE) pthread_cond_wait(&p->cv_done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
