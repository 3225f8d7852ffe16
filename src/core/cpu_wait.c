/* cpu_wait.c — OpenMP's wait policy for the process (--cpu-wait): the
 * re-exec that hands OMP_WAIT_POLICY to libgomp at its start, and the report
 * of what it got.
 *
 * Why a re-exec: libgomp reads OMP_WAIT_POLICY once, in its constructor,
 * into its spin count (GOMP_SPINCOUNT in OMP_DISPLAY_ENV=verbose), and has
 * no call to change it later. setenv from a .preinit_array hook does not
 * reach that constructor either: libc resets environ to the original envp
 * after the pre-init functions (docs/PERFORMANCE.md, "OpenMP wait policy").
 * So the only place the variable can come from is the process's own start.
 * The guard CT_CPU_WAIT_EXEC holds the pid of the process that re-executed:
 * execve keeps the pid, so the new image sees its own pid there and never
 * executes again, while a child process it starts (another pid) sees an
 * inherited value it may replace. */
#include "core/cpu_wait.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

extern char **environ;

#define POLICY "OMP_WAIT_POLICY"
#define GUARD "CT_CPU_WAIT_EXEC"

int ct_cpu_wait_parse(const char *s) {
    if (!s) return -1;
    if (!strcmp(s, "passive")) return CT_CPU_WAIT_PASSIVE;
    if (!strcmp(s, "active")) return CT_CPU_WAIT_ACTIVE;
    if (!strcmp(s, "auto")) return CT_CPU_WAIT_AUTO;
    return -1;
}

const char *ct_cpu_wait_name(ct_cpu_wait w) {
    return w == CT_CPU_WAIT_ACTIVE ? "active" : w == CT_CPU_WAIT_AUTO ? "auto" : "passive";
}

static const char *env_in(char **envp, const char *name) {
    const size_t n = strlen(name);
    for (char **e = envp; e && *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

/* libgomp compares the value case-insensitively, after leading blanks */
static int policy_of(const char *v) {
    if (!v) return -1;
    while (isspace((unsigned char)*v)) v++;
    if (!strncasecmp(v, "passive", 7)) return CT_CPU_WAIT_PASSIVE;
    if (!strncasecmp(v, "active", 6)) return CT_CPU_WAIT_ACTIVE;
    return -1;
}

/* The guard names this very process: it is the re-executed image. */
static int guard_is_self(const char *g) {
    if (!g || !*g) return 0;
    char *end;
    long pid = strtol(g, &end, 10);
    return *end == 0 && pid == (long)getpid();
}

void ct_cpu_wait_exec(ct_cpu_wait w, char **argv, char **envp) {
    if (w == CT_CPU_WAIT_AUTO) return; /* libgomp's own default: nothing to set */
    char **env = envp ? envp : environ;
    const char *guard = env_in(env, GUARD), *cur = env_in(env, POLICY);
    if (guard_is_self(guard)) return; /* already the re-executed image */
    /* valgrind: /proc/self/exe is its tool, and a child would run natively */
    const char *pre = env_in(env, "LD_PRELOAD");
    if (pre && strstr(pre, "vgpreload")) return;
    /* started as `ld.so PROGRAM ...` (no interpreter of its own): /proc/self/exe
     * is the loader, which would take argv[1] for the program */
    if (getauxval(AT_BASE) == 0) return;
    if (cur && !guard) return;                   /* the user's own value wins */
    if (cur && policy_of(cur) == (int)w) return; /* inherited from our parent, and the same */
    if (!argv || !argv[0]) return;
    size_t n = 0;
    for (char **e = env; e && *e; e++) n++;
    char **ne = malloc((n + 3) * sizeof *ne);
    char pv[64], gv[64];
    if (!ne) return;
    size_t k = 0;
    for (char **e = env; e && *e; e++)
        if (strncmp(*e, POLICY "=", sizeof POLICY) && strncmp(*e, GUARD "=", sizeof GUARD)) ne[k++] = *e;
    snprintf(pv, sizeof pv, POLICY "=%s", ct_cpu_wait_name(w));
    snprintf(gv, sizeof gv, GUARD "=%ld", (long)getpid());
    ne[k++] = pv;
    ne[k++] = gv;
    ne[k] = NULL;
    fflush(NULL); /* nothing buffered is lost to the new image */
    execve("/proc/self/exe", argv, ne);
    free(ne); /* no /proc, or not allowed: run with what libgomp has */
}

const char *ct_cpu_wait_describe(char *buf, size_t cap) {
    const char *cur = getenv(POLICY), *guard = getenv(GUARD);
    const int p = policy_of(cur);
    if (cur && guard_is_self(guard))
        snprintf(buf, cap, "%s (OMP_WAIT_POLICY=%s, set by re-executing at start)", ct_cpu_wait_name(p), cur);
    else if (p >= 0)
        snprintf(buf, cap, "%s (OMP_WAIT_POLICY=%s from the environment, which wins over --cpu-wait)",
                 ct_cpu_wait_name(p), cur);
    else if (cur)
        snprintf(buf, cap, "libgomp's default, spin then sleep (OMP_WAIT_POLICY=%s is neither passive nor active)",
                 cur);
    else
        snprintf(buf, cap, "libgomp's default, spin then sleep (OMP_WAIT_POLICY unset%s)",
                 getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload") ? ", under valgrind" : "");
    return buf;
}
