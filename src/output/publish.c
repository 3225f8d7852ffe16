/* publish.c — the output-set transaction, the single state write and crash
 * recovery (publish.h; protocol and crash analysis in docs/DURABILITY.md).
 * Everything is descriptor-relative to a bound folder; every filesystem
 * call goes through the hooked wrappers so tests can fail any one of them.
 * Recovery is in publish_recover.c.
 * Does not render, lock or decide what to publish: the pipeline does. */
#include "output/publish.h"
#include "output/publish_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- hooks and syscall wrappers ---------------------------------------- */

static ct_publish_hook_fn g_hook;
static void *g_hook_user;

void ct_publish_set_test_hook(ct_publish_hook_fn fn, void *user) {
    g_hook = fn;
    g_hook_user = user;
}

/* CT_TEST_COMMIT_FAIL=<op>:<n>=<errno> (a test hook, publish.h): the n-th
 * call (from 1, counted over the whole process) of <op> fails once with
 * <errno> without being made, so a shell test can break every step of the
 * commits of a full run. Parsed on first use; unknown specs do nothing. */
static int env_fail(ct_publish_op op) {
    static int parsed, want_op = -1, err;
    static long nth, seen;
    if (!parsed) {
        parsed = 1;
        static const char *const ops[] = {"step", "open", "write", "fsync", "close", "fchmod", "link", "rename",
                                          "unlink", "dirsync"};
        static const struct { const char *name; int e; } errs[] = {
            {"ENOSPC", ENOSPC}, {"EIO", EIO}, {"EROFS", EROFS}, {"EACCES", EACCES}, {"EDQUOT", EDQUOT}};
        const char *spec = getenv("CT_TEST_COMMIT_FAIL");
        const char *colon = spec ? strchr(spec, ':') : NULL, *eq = colon ? strchr(colon, '=') : NULL;
        if (!eq) return 0;
        for (int i = 1; i < (int)(sizeof ops / sizeof ops[0]); i++)
            if (strlen(ops[i]) == (size_t)(colon - spec) && strncmp(spec, ops[i], (size_t)(colon - spec)) == 0) want_op = i;
        nth = strtol(colon + 1, NULL, 10);
        for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
            if (strcmp(eq + 1, errs[i].name) == 0) err = errs[i].e;
        if (!err || nth < 1) want_op = -1;
    }
    if ((int)op != want_op || ++seen != nth) return 0;
    return err;
}

/* 0: go ahead; -1 with errno: the test hook fails this call. */
static int hooked(ct_publish_op op, const char *entry) {
    if (!g_hook) {
        int e = op == CT_PUB_OP_STEP ? 0 : env_fail(op);
        if (e) errno = e;
        return e ? -1 : 0;
    }
    int e = g_hook(g_hook_user, op, entry);
    if (e == 0 || op == CT_PUB_OP_STEP) return 0;
    errno = e;
    return -1;
}

static int x_openat(int dfd, const char *name, int flags, mode_t mode) {
    if (hooked(CT_PUB_OP_OPEN, name)) return -1;
    return openat(dfd, name, flags | O_CLOEXEC, mode);
}

static int x_write_all(int fd, const void *data, size_t len, const char *entry) {
    const char *p = data;
    while (len > 0) {
        if (hooked(CT_PUB_OP_WRITE, entry)) return -1;
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static int x_fsync(int fd, const char *entry) { return hooked(CT_PUB_OP_FSYNC, entry) ? -1 : fsync(fd); }
static int x_fchmod(int fd, mode_t m, const char *entry) { return hooked(CT_PUB_OP_FCHMOD, entry) ? -1 : fchmod(fd, m); }

static int x_close(int fd, const char *entry) {
    if (hooked(CT_PUB_OP_CLOSE, entry)) {
        int e = errno;
        close(fd); /* the descriptor is released whatever the hook says */
        errno = e;
        return -1;
    }
    return close(fd);
}

static int x_link(int dfd, const char *from, const char *to) {
    return hooked(CT_PUB_OP_LINK, to) ? -1 : linkat(dfd, from, dfd, to, 0);
}
int ct_pub_rename(int dfd, const char *from, const char *to) {
    return hooked(CT_PUB_OP_RENAME, to) ? -1 : renameat(dfd, from, dfd, to);
}
int ct_pub_unlink(int dfd, const char *name) { return hooked(CT_PUB_OP_UNLINK, name) ? -1 : unlinkat(dfd, name, 0); }
int ct_pub_dirsync(int dfd, const char *dir) { return hooked(CT_PUB_OP_DIRSYNC, dir) ? -1 : fsync(dfd); }

/* CT_TEST_COMMIT_PAUSE: stop (or sleep) at the named step points. */
static void maybe_pause(const char *label) {
    const char *spec = getenv("CT_TEST_COMMIT_PAUSE");
    if (!spec || !*spec) return;
    int hit = strcmp(spec, "*") == 0;
    size_t n = strlen(label);
    for (const char *p = spec; !hit && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        hit = len == n && strncmp(p, label, n) == 0;
        p += len + (comma ? 1 : 0);
    }
    if (!hit) return;
    const char *ms = getenv("CT_TEST_COMMIT_PAUSE_MS");
    if (ms && *ms) {
        long v = strtol(ms, NULL, 10);
        struct timespec ts = {v / 1000, (v % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    } else {
        raise(SIGSTOP);
    }
}

/* ---- snapshots and bound folders --------------------------------------- */

ct_status ct_bound_dir_open(const char *path, ct_bound_dir *d) {
    d->fd = -1;
    d->path = NULL;
    char *real = realpath(path, NULL);
    int same = real && strcmp(real, path) == 0;
    free(real);
    if (!same) return ct_fail(CT_ERR_IO, "Publication parent changed after planning: %s", path);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
        if (fd >= 0) close(fd);
        return ct_fail(CT_ERR_IO, "Publication parent changed after planning: %s", path);
    }
    d->path = strdup(path);
    if (!d->path) {
        close(fd);
        return ct_fail(CT_ERR_OOM, "%s: out of memory", path);
    }
    d->fd = fd;
    d->dev = (uint64_t)st.st_dev;
    d->ino = (uint64_t)st.st_ino;
    return CT_OK;
}

ct_status ct_bound_dir_verify(const ct_bound_dir *d) {
    if (!d || d->fd < 0) return ct_fail(CT_ERR_MISUSE, "publication: folder not bound");
    struct stat st;
    if (fstat(d->fd, &st) != 0 || (uint64_t)st.st_dev != d->dev || (uint64_t)st.st_ino != d->ino)
        return ct_fail(CT_ERR_IO, "Retained publication parent changed identity: %s", d->path);
    char *real = realpath(d->path, NULL);
    int same = real && strcmp(real, d->path) == 0 && stat(real, &st) == 0 && S_ISDIR(st.st_mode) &&
               (uint64_t)st.st_dev == d->dev && (uint64_t)st.st_ino == d->ino;
    free(real);
    if (!same) return ct_fail(CT_ERR_IO, "Publication parent changed after planning: %s", d->path);
    return CT_OK;
}

ct_status ct_bound_dir_expect(const ct_bound_dir *d, uint64_t dev, uint64_t ino) {
    if (!d || d->fd < 0) return ct_fail(CT_ERR_MISUSE, "publication: folder not bound");
    if (d->dev != dev || d->ino != ino)
        return ct_fail(CT_ERR_IO, "Publication parent changed after planning: %s", d->path);
    return CT_OK;
}

void ct_bound_dir_close(ct_bound_dir *d) {
    if (!d) return;
    if (d->fd >= 0) close(d->fd);
    free(d->path);
    d->fd = -1;
    d->path = NULL;
}

/* ---- names ------------------------------------------------------------- */

/* The process umask without changing it under other threads' feet:
 * /proc/self/status has it since Linux 4.7; the umask() dance otherwise. */
static mode_t current_umask(void) {
    FILE *f = fopen("/proc/self/status", "re");
    if (f) {
        char line[256];
        unsigned v;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "Umask: %o", &v) == 1) {
                fclose(f);
                return (mode_t)v;
            }
        fclose(f);
    }
    mode_t m = umask(022);
    umask(m);
    return m;
}

static int entry_name_ok(const char *n) {
    return n && *n && strcmp(n, ".") != 0 && strcmp(n, "..") != 0 && !strchr(n, '/');
}

/* ".<name>.<24 hex>.<ext>" in out (NAME_MAX + 1 bytes); 0 if too long. */
static int side_name(char *out, const char *name, const char *ext) {
    unsigned char r[12];
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t k = getrandom(r + got, sizeof r - got, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) { /* no entropy source: time and counter still make names unique enough with O_EXCL */
            static unsigned counter;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            unsigned long long x = (unsigned long long)ts.tv_nsec ^ ((unsigned long long)getpid() << 32) ^ ++counter;
            for (; got < sizeof r; got++, x = x * 6364136223846793005ull + 1442695040888963407ull) r[got] = (unsigned char)(x >> 56);
            break;
        }
        got += (size_t)k;
    }
    char hex[25];
    for (int i = 0; i < 12; i++) snprintf(hex + 2 * i, 3, "%02x", r[i]);
    int w = snprintf(out, NAME_MAX + 1, ".%s.%s.%s", name, hex, ext);
    return w > 0 && w <= NAME_MAX;
}

int ct_pub_journal_name(char *out, const char *name) {
    int w = snprintf(out, NAME_MAX + 1, ".%s.000000000000000000000000.jnl", name);
    return w > 0 && w <= NAME_MAX;
}

/* If entry is ".<name>.<24 hex>.<ext>" with ext tmp|bak|new|jnl: its
 * name part (in name_out) and ext (returned); else NULL. */
const char *ct_pub_parse_side(const char *entry, char *name_out) {
    size_t n = strlen(entry);
    if (n < 1 + 1 + 1 + 24 + 4 || entry[0] != '.') return NULL;
    const char *ext = entry + n - 3;
    if (entry[n - 4] != '.' || !(strcmp(ext, "tmp") == 0 || strcmp(ext, "bak") == 0 ||
                                 strcmp(ext, "new") == 0 || strcmp(ext, "jnl") == 0))
        return NULL;
    const char *hex = entry + n - 4 - 24;
    if (hex[-1] != '.') return NULL;
    for (int i = 0; i < 24; i++)
        if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f'))) return NULL;
    size_t len = (size_t)(hex - 1 - (entry + 1));
    if (len == 0 || len > NAME_MAX) return NULL;
    memcpy(name_out, entry + 1, len);
    name_out[len] = '\0';
    return ext;
}

/* ---- the transaction --------------------------------------------------- */

typedef struct member_state {
    char tmp[NAME_MAX + 1], bak[NAME_MAX + 1], mark[NAME_MAX + 1];
    int has_tmp, has_bak, has_mark;
    int committed, preserved;
} member_state;

typedef struct txn {
    const ct_publish_request *r;
    member_state *m;
    char jnl[NAME_MAX + 1];
    int has_jnl;
    const char *kind; /* "Output commit" / "State commit" */
} txn;

static ct_status os_fail(const txn *t, size_t i, const char *what, const char *entry) {
    int e = errno;
    return ct_fail(CT_ERR_IO, "Cannot publish %s/%s: %s %s: %s",
                   t->r->dir->path, t->r->members[i].name, what, entry, strerror(e));
}

static ct_status step(const txn *t, const char *label, long i, int cancellable) {
    char l[48];
    if (i >= 0) snprintf(l, sizeof l, "%s:%ld", label, i);
    else snprintf(l, sizeof l, "%s", label);
    hooked(CT_PUB_OP_STEP, l);
    maybe_pause(l);
    if (cancellable && t->r->cancel && atomic_load(t->r->cancel))
        return ct_fail(CT_ERR_ABORTED, "%s cancelled: %s/%s", t->kind, t->r->dir->path, t->r->members[0].name);
    return CT_OK;
}

static ct_status verify(const txn *t) {
    CT_TRY(ct_bound_dir_verify(t->r->dir));
    if (t->r->lock) CT_TRY(ct_output_lock_verify(t->r->lock));
    return CT_OK;
}

/* 1 regular (mode in *mode, identity in *st), 0 absent, -1 other, -2 error */
static int dest_kind(int dfd, const char *name, struct stat *st) {
    if (fstatat(dfd, name, st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? 0 : -2;
    return S_ISREG(st->st_mode) ? 1 : -1;
}

static ct_status not_regular(const txn *t, const char *name) {
    return ct_fail(CT_ERR_IO, "Publication entry is not a regular file: %s/%s", t->r->dir->path, name);
}

/* Create a fresh ".<name>.<hex>.<ext>" O_EXCL|O_NOFOLLOW 0600. */
static int create_side(const txn *t, size_t i, const char *ext, char *out, ct_status *s) {
    const char *name = t->r->members[i].name;
    for (int attempt = 0; attempt < 100; attempt++) {
        if (!side_name(out, name, ext)) {
            *s = ct_fail(CT_ERR_LIMIT, "Cannot publish %s/%s: the name is too long for a publication temporary",
                         t->r->dir->path, name);
            return -1;
        }
        int fd = x_openat(t->r->dir->fd, out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
        if (fd >= 0) return fd;
        if (errno != EEXIST) {
            *s = os_fail(t, i, "create", out);
            return -1;
        }
    }
    *s = ct_fail(CT_ERR_IO, "Cannot allocate a unique publication temporary for %s", name);
    return -1;
}

static ct_status stage(txn *t, size_t i, mode_t new_mode) {
    const ct_publish_member *mb = &t->r->members[i];
    member_state *m = &t->m[i];
    struct stat st;
    int k = dest_kind(t->r->dir->fd, mb->name, &st);
    if (k == -1) return not_regular(t, mb->name);
    if (k == -2) return os_fail(t, i, "stat", mb->name);
    mode_t mode = k == 1 ? (st.st_mode & 07777) : new_mode;
    ct_status s = CT_OK;
    int fd = create_side(t, i, "tmp", m->tmp, &s);
    if (fd < 0) return s;
    m->has_tmp = 1;
    if (x_fchmod(fd, mode, m->tmp) != 0) s = os_fail(t, i, "chmod", m->tmp);
    else if (x_write_all(fd, mb->data, mb->len, m->tmp) != 0) s = os_fail(t, i, "write", m->tmp);
    else if (x_fsync(fd, m->tmp) != 0) s = os_fail(t, i, "fsync", m->tmp);
    if (x_close(fd, m->tmp) != 0 && s == CT_OK) s = os_fail(t, i, "close", m->tmp);
    if (s == CT_OK) s = verify(t);
    return s;
}

/* A copy of the destination when hard links are not to be had: staged
 * under a .tmp name and renamed to the .bak name once fsynced, so a
 * backup that exists is always complete. */
static ct_status backup_copy(txn *t, size_t i, const struct stat *orig) {
    member_state *m = &t->m[i];
    const char *name = t->r->members[i].name;
    int in = x_openat(t->r->dir->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0);
    if (in < 0) return errno == ELOOP ? not_regular(t, name) : os_fail(t, i, "open", name);
    struct stat st;
    if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != orig->st_ino || st.st_dev != orig->st_dev) {
        close(in);
        return not_regular(t, name);
    }
    ct_status s = CT_OK;
    char copy[NAME_MAX + 1];
    int out = create_side(t, i, "tmp", copy, &s);
    if (out < 0) {
        close(in);
        return s;
    }
    if (x_fchmod(out, st.st_mode & 07777, copy) != 0) s = os_fail(t, i, "chmod", copy);
    char buf[65536];
    while (s == CT_OK) {
        ssize_t r = read(in, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) s = os_fail(t, i, "read", name);
        if (r <= 0) break;
        if (x_write_all(out, buf, (size_t)r, copy) != 0) s = os_fail(t, i, "write", copy);
    }
    if (s == CT_OK && x_fsync(out, copy) != 0) s = os_fail(t, i, "fsync", copy);
    if (x_close(out, copy) != 0 && s == CT_OK) s = os_fail(t, i, "close", copy);
    close(in);
    if (s == CT_OK) {
        for (int attempt = 0; attempt < 100 && s == CT_OK; attempt++) {
            if (!side_name(m->bak, name, "bak")) break;
            struct stat tmp;
            if (fstatat(t->r->dir->fd, m->bak, &tmp, AT_SYMLINK_NOFOLLOW) == 0) continue;
            if (ct_pub_rename(t->r->dir->fd, copy, m->bak) != 0) s = os_fail(t, i, "rename", m->bak);
            else m->has_bak = 1;
            break;
        }
        if (s == CT_OK && !m->has_bak) s = ct_fail(CT_ERR_IO, "Cannot allocate a unique publication temporary for %s", name);
    }
    if (!m->has_bak) ct_pub_unlink(t->r->dir->fd, copy);
    return s;
}

static ct_status backup(txn *t, size_t i) {
    member_state *m = &t->m[i];
    const char *name = t->r->members[i].name;
    int dfd = t->r->dir->fd;
    struct stat st;
    int k = dest_kind(dfd, name, &st);
    if (k == -1) return not_regular(t, name);
    if (k == -2) return os_fail(t, i, "stat", name);
    ct_status s = CT_OK;
    if (k == 0) { /* nothing to back up: a marker says the destination is new */
        int fd = create_side(t, i, "new", m->mark, &s);
        if (fd < 0) return s;
        m->has_mark = 1;
        if (x_close(fd, m->mark) != 0) return os_fail(t, i, "close", m->mark);
        return verify(t);
    }
    int linked = 0;
    for (int attempt = 0; attempt < 100 && !linked; attempt++) {
        if (!side_name(m->bak, name, "bak"))
            return ct_fail(CT_ERR_LIMIT, "Cannot publish %s/%s: the name is too long for a publication temporary",
                           t->r->dir->path, name);
        if (x_link(dfd, name, m->bak) == 0) {
            linked = 1;
            break;
        }
        if (errno == EEXIST) continue;
        if (errno == EPERM || errno == EOPNOTSUPP || errno == EXDEV || errno == EMLINK || errno == ENOSYS ||
            errno == EACCES)
        {
            ct_status c = backup_copy(t, i, &st);
            return c == CT_OK ? verify(t) : c;
        }
        return os_fail(t, i, "link", m->bak);
    }
    if (!linked) return ct_fail(CT_ERR_IO, "Cannot allocate a unique publication temporary for %s", name);
    m->has_bak = 1;
    /* the link names what was there at fstatat: it must be that regular file */
    struct stat b;
    if (fstatat(dfd, m->bak, &b, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(b.st_mode) || b.st_ino != st.st_ino ||
        b.st_dev != st.st_dev)
        return not_regular(t, name);
    return verify(t);
}

static ct_status source_check(const txn *t) {
    if (!t->r->source_path || !t->r->snapshot) return CT_OK;
    ct_source_snapshot now;
    struct stat st;
    if (stat(t->r->source_path, &st) != 0)
        return ct_fail(CT_ERR_IO, "Cannot re-check source %s: %s", t->r->source_path, strerror(errno));
    CT_TRY(ct_source_snapshot_take(t->r->source_path, &now));
    int same = ct_source_snapshot_equal(&now, t->r->snapshot);
    ct_source_snapshot_clear(&now);
    if (!same) return ct_fail(CT_ERR_IO, "Source changed while processing: %s", t->r->source_path);
    return CT_OK;
}

/* Append "<what>: <msg>" to a "; "-separated list. */
static void note(char *buf, size_t cap, const char *what, const char *msg) {
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "%s%s: %s", n ? "; " : "", what, msg);
}

/* Undo the committed renames (reverse order), then fsync the folder. On a
 * failure the entries needed to finish the job (journal, backups, markers)
 * are kept for ct_publish_recover and listed. */
static int rollback(txn *t, char *errs, size_t cap) {
    int dfd = t->r->dir->fd, ok = 1;
    for (size_t j = t->r->n; j-- > 0;) {
        member_state *m = &t->m[j];
        if (!m->committed) continue;
        const char *name = t->r->members[j].name;
        int r = m->has_bak ? ct_pub_rename(dfd, m->bak, name) : ct_pub_unlink(dfd, name);
        if (r != 0 && !(errno == ENOENT && !m->has_bak)) {
            char what[PATH_MAX + NAME_MAX + 2];
            snprintf(what, sizeof what, "%s/%s", t->r->dir->path, name);
            note(errs, cap, what, strerror(errno));
            m->preserved = 1;
            ok = 0;
            continue;
        }
        if (m->has_bak) m->has_bak = 0; /* renamed back: nothing left to delete */
        m->committed = 0;
    }
    if (ct_pub_dirsync(dfd, t->r->dir->path) != 0) {
        note(errs, cap, t->r->dir->path, strerror(errno));
        for (size_t j = 0; j < t->r->n; j++) t->m[j].preserved = 1;
        ok = 0;
    }
    return ok;
}

/* Delete what the transaction made and does not need. Returns 0 and notes
 * the failures. The journal goes first: once it is gone, the rest is
 * garbage to recovery. */
static int cleanup(txn *t, int keep_journal, char *errs, size_t cap) {
    int dfd = t->r->dir->fd, ok = 1;
    char what[PATH_MAX + NAME_MAX + 16];
#define CT_DROP(flag, entry)                                                              \
    do {                                                                                  \
        if ((flag) && ct_pub_unlink(dfd, (entry)) != 0 && errno != ENOENT) {                   \
            snprintf(what, sizeof what, "cleanup %s/%s", t->r->dir->path, (entry));       \
            note(errs, cap, what, strerror(errno));                                       \
            ok = 0;                                                                       \
        } else {                                                                          \
            (flag) = 0;                                                                   \
        }                                                                                 \
    } while (0)
    if (!keep_journal) CT_DROP(t->has_jnl, t->jnl);
    for (size_t j = 0; j < t->r->n; j++) {
        member_state *m = &t->m[j];
        if (!m->committed) CT_DROP(m->has_tmp, m->tmp);
        if (!m->preserved) {
            CT_DROP(m->has_bak, m->bak);
            CT_DROP(m->has_mark, m->mark);
        }
    }
#undef CT_DROP
    return ok;
}

static ct_status run_txn(txn *t, int *committed) {
    const ct_publish_request *r = t->r;
    int dfd = r->dir->fd;
    size_t last = r->n - 1;
    CT_TRY(verify(t));
    mode_t new_mode = 0666 & ~current_umask();
    for (size_t i = 0; i < r->n; i++) {
        CT_TRY(step(t, "stage", (long)i, 1));
        CT_TRY(stage(t, i, new_mode));
    }
    for (size_t i = 0; i < r->n; i++) {
        CT_TRY(step(t, "backup", (long)i, 1));
        CT_TRY(backup(t, i));
    }
    CT_TRY(step(t, "journal", -1, 1));
    /* one fixed name per set, so that finding an interrupted commit costs
     * one stat (ct_publish_recover_if_needed) and a second commit of the
     * same set beside this one cannot start */
    if (!ct_pub_journal_name(t->jnl, r->members[last].name))
        return ct_fail(CT_ERR_LIMIT, "Cannot publish %s/%s: the name is too long for a publication temporary",
                       r->dir->path, r->members[last].name);
    int fd = x_openat(dfd, t->jnl, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
    if (fd < 0 && errno == EEXIST)
        return ct_fail(CT_ERR_IO, "Cannot publish %s/%s: the journal %s of an interrupted commit is still there "
                       "(the set must be recovered first)", r->dir->path, r->members[last].name, t->jnl);
    if (fd < 0) return os_fail(t, last, "create", t->jnl);
    t->has_jnl = 1;
    if (x_close(fd, t->jnl) != 0) return os_fail(t, last, "close", t->jnl);
    CT_TRY(step(t, "source", -1, 1));
    CT_TRY(source_check(t));
    CT_TRY(verify(t));
    CT_TRY(step(t, "barrier", -1, 1));
    /* temporaries, backups, markers and the journal reach the disk before
     * any rename can: a crash after a rename always finds them */
    if (ct_pub_dirsync(dfd, r->dir->path) != 0) return os_fail(t, 0, "fsync folder", r->dir->path);
    for (size_t i = 0; i < r->n; i++) {
        CT_TRY(step(t, "rename", (long)i, 1));
        CT_TRY(verify(t));
        if (ct_pub_rename(dfd, t->m[i].tmp, r->members[i].name) != 0) return os_fail(t, i, "rename", t->m[i].tmp);
        t->m[i].committed = 1;
        t->m[i].has_tmp = 0;
        CT_TRY(verify(t));
    }
    /* past the last rename the set is complete: a cancel no longer undoes it */
    step(t, "dirsync", -1, 0);
    if (ct_pub_dirsync(dfd, r->dir->path) != 0) return os_fail(t, 0, "fsync folder", r->dir->path);
    CT_TRY(verify(t));
    step(t, "commit", -1, 0);
    /* the commit point: without the journal, recovery keeps the new set */
    if (ct_pub_unlink(dfd, t->jnl) != 0) return os_fail(t, last, "remove", t->jnl);
    t->has_jnl = 0;
    for (size_t i = 0; i < r->n; i++) t->m[i].committed = 2; /* final: never rolled back */
    if (committed) *committed = 1;
    if (ct_pub_dirsync(dfd, r->dir->path) != 0) {
        return ct_fail(CT_ERR_IO, "%s completed but cleanup was incomplete (fsync %s: %s)", t->kind, r->dir->path,
                       strerror(errno));
    }
    if (r->lock && ct_output_lock_verify(r->lock) != CT_OK) /* completed, but someone broke the lock */
        return ct_fail_wrap(CT_ERR_IO, "%s completed but the lock was not held throughout", t->kind);
    step(t, "cleanup", -1, 0);
    return CT_OK;
}

static ct_status transact(const ct_publish_request *r, int *committed, const char *kind) {
    if (committed) *committed = 0;
    if (!r || !r->dir || !r->members || r->n == 0) return ct_fail(CT_ERR_INVALID_ARG, "publication: nothing to publish");
    for (size_t i = 0; i < r->n; i++)
        if (!entry_name_ok(r->members[i].name))
            return ct_fail(CT_ERR_INVALID_ARG, "Invalid publication entry name: %s",
                           r->members[i].name ? r->members[i].name : "(null)");
    txn t = {.r = r, .kind = kind};
    t.m = calloc(r->n, sizeof *t.m);
    if (!t.m) return ct_fail(CT_ERR_OOM, "publication: out of memory");
    ct_status s = run_txn(&t, committed);
    char errs[4096] = "";
    int final = r->n > 0 && t.m[0].committed == 2;
    if (s != CT_OK && !final) {
        int had_commits = 0;
        for (size_t i = 0; i < r->n; i++) had_commits |= t.m[i].committed;
        char cause[2048];
        snprintf(cause, sizeof cause, "%s", ct_last_error());
        if (had_commits && !rollback(&t, errs, sizeof errs)) {
            char kept[4096] = "";
            for (size_t i = 0; i < r->n; i++)
                if (t.m[i].preserved && t.m[i].has_bak) {
                    size_t n = strlen(kept);
                    snprintf(kept + n, sizeof kept - n, "%s%s/%s", n ? ", " : "", r->dir->path, t.m[i].bak);
                }
            ct_status f;
            if (strcmp(kind, "State commit") == 0)
                f = ct_fail(CT_ERR_IO, "State commit failed and rollback was incomplete (%s; %s); preserved backup: %s",
                            cause, errs, kept[0] ? kept : "none");
            else
                f = ct_fail(CT_ERR_IO, "Output commit failed and rollback was incomplete (%s; %s); preserved backups: [%s]",
                            cause, errs, kept);
            cleanup(&t, 1, errs, sizeof errs);
            free(t.m);
            return f;
        }
    }
    char cerrs[4096] = "";
    int clean = cleanup(&t, 0, cerrs, sizeof cerrs);
    free(t.m);
    if (s == CT_OK && !clean)
        return ct_fail(CT_ERR_IO, "%s completed but cleanup was incomplete (%s)", kind, cerrs);
    return s;
}

ct_status ct_publish_set(const ct_publish_request *r, int *committed) {
    return transact(r, committed, "Output commit");
}

ct_status ct_publish_state(const ct_publish_request *r, int *committed) {
    if (committed) *committed = 0;
    if (r && r->n != 1) return ct_fail(CT_ERR_INVALID_ARG, "publication: a state write has one member");
    return transact(r, committed, "State commit");
}
