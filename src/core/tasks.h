/* tasks.h — a small pool of helper threads that run independent pieces of
 * one file's preparation (resampling blocks, Silero feature blocks) while
 * the thread that owns the file goes on with the sequential part.
 *
 * A task is the caller's struct with a ct_task first; the pool never copies
 * or frees it. ct_tasks_wait runs a task that no helper has started yet in
 * the waiting thread itself, so a wait never depends on a free helper (no
 * deadlock when every helper is busy with other files' tasks) and the
 * waiting thread does useful work. A NULL pool runs every task at submit
 * time: the sequential path, with the same results.
 */
#ifndef CT_CORE_TASKS_H
#define CT_CORE_TASKS_H

#include "core/error.h"

typedef struct ct_task ct_task;
struct ct_task {
    void (*run)(ct_task *t); /* set by the caller */
    /* owned by the pool */
    ct_task *next;
    int state; /* 0 idle/queued, 1 running, 2 done */
};

typedef struct ct_tasks ct_tasks;

/* Start `threads` helpers (>= 1). */
CT_NODISCARD ct_status ct_tasks_create(int threads, ct_tasks **out);

/* Stop and join the helpers; every submitted task must have been waited for. */
void ct_tasks_free(ct_tasks *p);

int ct_tasks_threads(const ct_tasks *p);

/* Queue t (FIFO). p NULL: run it now. t must stay alive until waited for. */
void ct_tasks_submit(ct_tasks *p, ct_task *t);

/* Return once t has run (running it here if no helper has taken it). */
void ct_tasks_wait(ct_tasks *p, ct_task *t);

#endif
