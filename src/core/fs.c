/* fs.c — see fs.h. POSIX only (Linux is the target). */
#include "core/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *ct_fs_kind_name(unsigned mode) {
    switch (mode & S_IFMT) {
    case S_IFREG: return "regular file";
    case S_IFDIR: return "directory";
    case S_IFIFO: return "FIFO";
    case S_IFSOCK: return "socket";
    case S_IFCHR: return "character device";
    case S_IFBLK: return "block device";
    case S_IFLNK: return "symbolic link";
    default: return "special file";
    }
}

ct_status ct_fs_open_input(const char *path, int *fd_out, struct stat *st_out) {
    *fd_out = -1;
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
     * writer forever (and a tty or modem device for carrier); O_NOCTTY: a
     * terminal named as input must not become our controlling terminal.
     * The check is on the opened descriptor (fstat), so a file swapped
     * between a stat and the open cannot slip through. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        return ct_fail(e == ENOENT || e == ENOTDIR ? CT_ERR_NOT_FOUND : CT_ERR_IO, "%s: cannot open: %s", path,
                       strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ct_fail(CT_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ct_fail(CT_ERR_IO, "%s: not a regular file (%s)", path, ct_fs_kind_name((unsigned)st.st_mode));
    }
    /* Regular files ignore O_NONBLOCK today; clear it anyway so that reads
     * keep their blocking meaning whatever the filesystem. */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return ct_fail(CT_ERR_IO, "%s: cannot set blocking mode: %s", path, strerror(e));
    }
    *fd_out = fd;
    if (st_out) *st_out = st;
    return CT_OK;
}

ct_status ct_fs_check_input(const char *path) {
    int fd;
    CT_TRY(ct_fs_open_input(path, &fd, NULL));
    close(fd);
    return CT_OK;
}

ct_status ct_fs_read_all(const char *path, size_t max_bytes, char **out, size_t *out_len) {
    *out = NULL;
    if (out_len) *out_len = 0;
    int fd;
    struct stat st;
    CT_TRY(ct_fs_open_input(path, &fd, &st));
    if ((uint64_t)st.st_size > (uint64_t)max_bytes) {
        close(fd);
        return ct_fail(CT_ERR_LIMIT, "%s: %lld bytes exceed the limit of %zu", path,
                       (long long)st.st_size, max_bytes);
    }
    size_t n = (size_t)st.st_size;
    char *buf = malloc(n + 1);
    if (!buf) {
        close(fd);
        return ct_fail(CT_ERR_OOM, "%s: cannot allocate %zu bytes", path, n + 1);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int e = errno;
            free(buf);
            close(fd);
            return ct_fail(CT_ERR_IO, "%s: read failed at byte %zu: %s", path, got,
                           r == 0 ? "file shrank while reading" : strerror(e));
        }
        got += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    if (out_len) *out_len = n;
    return CT_OK;
}

ct_status ct_fs_map(const char *path, ct_mapping *out) {
    out->data = NULL;
    out->size = 0;
    int fd;
    struct stat st;
    CT_TRY(ct_fs_open_input(path, &fd, &st));
    if (st.st_size == 0) {
        close(fd);
        return CT_OK;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
        return ct_fail(e == ENOMEM ? CT_ERR_OOM : CT_ERR_IO, "%s: mmap of %lld bytes failed: %s", path,
                       (long long)st.st_size, strerror(e));
    out->data = p;
    out->size = (size_t)st.st_size;
    return CT_OK;
}

void ct_fs_unmap(ct_mapping *m) {
    if (m && m->data) munmap((void *)m->data, m->size);
    if (m) {
        m->data = NULL;
        m->size = 0;
    }
}

static ct_status fsync_dir_of(const char *path) {
    char tmp[PATH_MAX];
    if (strlen(path) >= sizeof tmp) return ct_fail(CT_ERR_LIMIT, "%s: path too long", path);
    strcpy(tmp, path);
    const char *dir = dirname(tmp);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ct_fail(CT_ERR_IO, "%s: cannot open directory: %s", dir, strerror(errno));
    int r = fsync(fd);
    int e = errno;
    close(fd);
    if (r != 0 && e != EINVAL) return ct_fail(CT_ERR_IO, "%s: fsync failed: %s", dir, strerror(e));
    return CT_OK;
}

/* The temp file for path: "<name>.tmp.<pid>.<n>" in path's directory, where
 * <name> is path's last component. When that would not fit NAME_MAX (or the
 * whole path PATH_MAX), <name> becomes its leading bytes (cut on a UTF-8
 * character boundary) + "~" + 8 hex digits of an FNV-1a hash of the whole
 * name, so long names stay recognisable and distinct in a listing. */
static ct_status temp_name(char *out, size_t cap, const char *path, unsigned n) {
    const char *slash = strrchr(path, '/');
    size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
    const char *base = path + dl;
    size_t bl = strlen(base);
    char suffix[48];
    size_t sl = (size_t)snprintf(suffix, sizeof suffix, ".tmp.%ld.%u", (long)getpid(), n);
    size_t room = NAME_MAX;
    if (dl + room + 1 > cap) room = cap > dl + 1 ? cap - dl - 1 : 0;
    if (bl + sl <= room) {
        snprintf(out, cap, "%.*s%s%s", (int)dl, path, base, suffix);
        return CT_OK;
    }
    enum { HASH_LEN = 9 }; /* "~" + 8 hex digits */
    if (room < sl + HASH_LEN + 1) return ct_fail(CT_ERR_LIMIT, "%s: path too long for a temp file beside it", path);
    size_t keep = room - sl - HASH_LEN;
    while (keep > 0 && ((unsigned char)base[keep] & 0xC0) == 0x80) keep--;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < bl; i++) h = (h ^ (unsigned char)base[i]) * 16777619u;
    snprintf(out, cap, "%.*s%.*s~%08x%s", (int)dl, path, (int)keep, base, (unsigned)h, suffix);
    return CT_OK;
}

ct_status ct_fs_check_output(const char *path) {
    if (!path || !*path) return ct_fail(CT_ERR_INVALID_ARG, "output path is empty");
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return CT_OK; /* a new file */
        return ct_fail(errno == ENOTDIR ? CT_ERR_NOT_FOUND : CT_ERR_IO, "%s: cannot check the output path: %s",
                       path, strerror(errno));
    }
    if (S_ISREG(st.st_mode)) return CT_OK;
    if (S_ISLNK(st.st_mode)) {
        /* A rename would replace the link itself, not what it points to, so
         * neither a link to a device (never touch it) nor one to a regular
         * file (the user meant the target, we would break the link) can be
         * replaced the way the caller expects: refuse both, naming what the
         * link points to. */
        struct stat t;
        const char *to = stat(path, &t) != 0 ? "missing" : ct_fs_kind_name((unsigned)t.st_mode);
        return ct_fail(CT_ERR_IO, "%s: refusing to replace a symbolic link (target: %s)", path, to);
    }
    return ct_fail(CT_ERR_IO, "%s: refusing to replace a %s: the output must be a regular file or a new path",
                   path, ct_fs_kind_name((unsigned)st.st_mode));
}

ct_status ct_atomic_file_open(ct_atomic_file *f, const char *path) {
    /* The temp file is opened with mode 0666 so the kernel applies the umask
     * as for any new file (mkstemp would give 0600; changing the process
     * umask to read it would race with other threads). The name is unique per
     * process, thread call and attempt; O_EXCL refuses a clash. */
    static _Atomic unsigned counter;
    f->fd = -1;
    f->tmp = NULL;
    f->failed = 0;
    f->committed = 0;
    f->path = NULL;
    CT_TRY(ct_fs_check_output(path));
    if (!(f->path = strdup(path))) return ct_fail(CT_ERR_OOM, "%s: out of memory", path);
    char tmp[PATH_MAX];
    for (int attempt = 0; attempt < 100 && f->fd < 0; attempt++) {
        CT_TRY(temp_name(tmp, sizeof tmp, path, counter++));
        f->fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (f->fd < 0 && errno != EEXIST)
            return ct_fail(CT_ERR_IO, "%s: cannot create temp file: %s", path, strerror(errno));
    }
    if (f->fd < 0) return ct_fail(CT_ERR_IO, "%s: cannot create a unique temp file", path);
    if (!(f->tmp = strdup(tmp))) {
        close(f->fd);
        f->fd = -1;
        unlink(tmp);
        return ct_fail(CT_ERR_OOM, "%s: out of memory", path);
    }
    return CT_OK;
}

ct_status ct_atomic_file_write(ct_atomic_file *f, const void *data, size_t len) {
    if (f->failed) return ct_fail(CT_ERR_MISUSE, "%s: write after a failed write or fsync", f->path);
    if (f->fd < 0) return ct_fail(CT_ERR_MISUSE, "%s: write to a closed file", f->path);
    const unsigned char *p = data;
    while (len > 0) {
        size_t step = len > ((size_t)1 << 30) ? ((size_t)1 << 30) : len;
        ssize_t w = write(f->fd, p, step);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            /* Part of the bytes may be in the file: it can never be completed. */
            f->failed = 1;
            return ct_fail(CT_ERR_IO, "%s: write failed: %s", f->path, w < 0 ? strerror(errno) : "no progress");
        }
        p += w;
        len -= (size_t)w;
    }
    return CT_OK;
}

ct_status ct_atomic_file_commit(ct_atomic_file *f) {
    if (f->failed)
        return ct_fail(CT_ERR_MISUSE, "%s: commit after a failed write or fsync; the file was not replaced", f->path);
    if (f->fd < 0 || !f->tmp) return ct_fail(CT_ERR_MISUSE, "%s: commit of a closed file", f->path);
    if (fsync(f->fd) != 0) {
        /* Linux may drop the failed pages and report the error only once: a
         * second fsync could succeed on lost data, so no retry is allowed. */
        f->failed = 1;
        return ct_fail(CT_ERR_IO, "%s: fsync failed: %s", f->path, strerror(errno));
    }
    int r = close(f->fd);
    f->fd = -1;
    if (r != 0) return ct_fail(CT_ERR_IO, "%s: close failed: %s", f->path, strerror(errno));
    /* Checked again just before the commit point: the target may have been
     * replaced by a device, FIFO or link while the file was being written. */
    CT_TRY(ct_fs_check_output(f->path));
    if (rename(f->tmp, f->path) != 0) return ct_fail(CT_ERR_IO, "%s: rename failed: %s", f->path, strerror(errno));
    free(f->tmp);
    f->tmp = NULL;
    f->committed = 1;
    if (fsync_dir_of(f->path) != CT_OK)
        return ct_fail_wrap(CT_ERR_IO, "%s: replaced, but the rename may not survive a crash", f->path);
    return CT_OK;
}

void ct_atomic_file_close(ct_atomic_file *f) {
    if (!f || !f->path) return;
    if (f->fd >= 0) close(f->fd);
    if (f->tmp) unlink(f->tmp);
    free(f->tmp);
    free(f->path);
    f->fd = -1;
    f->tmp = NULL;
    f->path = NULL;
}

ct_status ct_fs_write_atomic(const char *path, const void *data, size_t len) {
    ct_atomic_file f;
    ct_status s = ct_atomic_file_open(&f, path);
    if (s == CT_OK) s = ct_atomic_file_write(&f, data, len);
    if (s == CT_OK) s = ct_atomic_file_commit(&f);
    ct_atomic_file_close(&f);
    return s;
}

ct_status ct_fs_mkdirs(const char *path) {
    char tmp[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0) return ct_fail(CT_ERR_INVALID_ARG, "mkdirs: empty path");
    if (n >= sizeof tmp) return ct_fail(CT_ERR_LIMIT, "%s: path too long", path);
    memcpy(tmp, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (tmp[i] == '/' || tmp[i] == '\0') {
            char c = tmp[i];
            tmp[i] = '\0';
            if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
                return ct_fail(CT_ERR_IO, "%s: cannot create directory: %s", tmp, strerror(errno));
            tmp[i] = c;
        }
    }
    if (!ct_fs_is_dir(path)) return ct_fail(CT_ERR_IO, "%s: exists and is not a directory", path);
    return CT_OK;
}

int ct_fs_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int ct_fs_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

int ct_fs_is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

const char *ct_path_rel_problem(const char *s) {
    if (!s || !*s) return "empty";
    if (s[0] == '/' || (((s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z') && s[1] == ':')) return "must be relative";
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '\\') return "contains a forbidden character";
    for (const char *seg = s;;) {
        const char *end = strchr(seg, '/');
        size_t len = end ? (size_t)(end - seg) : strlen(seg);
        if (len == 0 || (len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
            return "empty, '.' or '..' path segment";
        if (!end) return NULL;
        seg = end + 1;
    }
}

ct_status ct_path_join(char *dst, size_t cap, const char *a, const char *b) {
    size_t la = strlen(a);
    int need_sep = la > 0 && a[la - 1] != '/';
    int n = snprintf(dst, cap, "%s%s%s", a, need_sep ? "/" : "", b);
    if (n < 0 || (size_t)n >= cap) return ct_fail(CT_ERR_LIMIT, "path too long: %s/%s", a, b);
    return CT_OK;
}

static double clock_seconds(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double ct_now(void) { return clock_seconds(CLOCK_MONOTONIC); }

double ct_cpu_now(void) { return clock_seconds(CLOCK_PROCESS_CPUTIME_ID); }
