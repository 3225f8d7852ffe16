/* lock.c — per-output-set locks beside the outputs (lock.h): the lock
 * folder and file with the gem 0.1.3's modes and checks, a non-blocking
 * OFD fcntl write lock, the in-process registry that tells a second job of
 * this process from another process, and re-verification. Lock files are
 * never deleted (deleting one would let two processes lock different
 * files of the same name). */
#include "output/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utf8proc.h>

#include <openssl/evp.h>

#define LOCK_DIR ".cohere-transcribe-locks"

struct ct_output_lock {
    int fd;       /* the lock file, -1 once released */
    int dir_fd;   /* the lock folder */
    char *identity;
    char *path;   /* <parent>/.cohere-transcribe-locks/<digest>.lock */
    char name[70];
    struct ct_output_lock *next; /* the registry */
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ct_output_lock *g_held;

/* Ruby's String#downcase (full mapping, no context rules): the simple
 * lower-case mapping everywhere except U+0130, which becomes "i" + U+0307. */
static char *full_lower(const char *s) {
    size_t n = strlen(s), cap = n * 3 + 4, w = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
    while (*p) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t k = utf8proc_iterate(p, -1, &cp);
        if (k <= 0 || cp < 0) { /* not UTF-8: bytes kept, ASCII lowered */
            out[w++] = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
            p++;
            continue;
        }
        p += k;
        if (cp == 0x130) {
            out[w++] = 'i';
            w += (size_t)utf8proc_encode_char(0x307, (utf8proc_uint8_t *)out + w);
            continue;
        }
        w += (size_t)utf8proc_encode_char(utf8proc_tolower(cp), (utf8proc_uint8_t *)out + w);
    }
    out[w] = '\0';
    return out;
}

ct_status ct_output_lock_name(const char *identity, char name[70]) {
    char *low = full_lower(identity);
    if (!low) return ct_fail(CT_ERR_OOM, "output lock: out of memory");
    unsigned char md[32];
    unsigned int mdlen = 0;
    int ok = EVP_Digest(low, strlen(low), md, &mdlen, EVP_sha256(), NULL) == 1 && mdlen == 32;
    free(low);
    if (!ok) return ct_fail(CT_ERR_INTERNAL, "output lock: sha256 failed");
    for (int i = 0; i < 32; i++) snprintf(name + 2 * i, 3, "%02x", md[i]);
    memcpy(name + 64, ".lock", 6);
    return CT_OK;
}

static void lock_free(struct ct_output_lock *l) {
    if (!l) return;
    if (l->fd >= 0) close(l->fd);
    if (l->dir_fd >= 0) close(l->dir_fd);
    free(l->identity);
    free(l->path);
    free(l);
}

/* Open (creating if needed) the lock folder below the bound parent. */
static ct_status open_lock_dir(const char *parent, const char *dir_path, int *out) {
    *out = -1;
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat pst;
    if (pfd < 0 || fstat(pfd, &pst) != 0) {
        int e = errno;
        if (pfd >= 0) close(pfd);
        return ct_fail(CT_ERR_IO, "Cannot prepare output lock directory %s: %s", dir_path, strerror(e));
    }
    mode_t mode = (pst.st_mode & 03777) | 0700;
    if (mode & 0022) mode |= 01000;
    int created = 0;
    if (mkdirat(pfd, LOCK_DIR, mode) == 0) created = 1;
    else if (errno != EEXIST) {
        int e = errno;
        close(pfd);
        return ct_fail(CT_ERR_IO, "Cannot prepare output lock directory %s: %s", dir_path, strerror(e));
    }
    int dfd = openat(pfd, LOCK_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    close(pfd);
    if (dfd < 0) {
        if (e == ENOTDIR || e == ELOOP) return ct_fail(CT_ERR_IO, "Output lock directory is not a directory: %s", dir_path);
        return ct_fail(CT_ERR_IO, "Cannot open output lock directory %s: %s", dir_path, strerror(e));
    }
    struct stat st;
    if (fstat(dfd, &st) != 0 || !S_ISDIR(st.st_mode)) {
        close(dfd);
        return ct_fail(CT_ERR_IO, "Output lock directory is not a directory: %s", dir_path);
    }
    /* mkdir applied the umask; a shared folder needs the parent's sharing */
    if (created && (st.st_mode & 07777) != mode && fchmod(dfd, mode) == 0) st.st_mode = (st.st_mode & ~07777u) | mode;
    if (st.st_uid != geteuid() && (st.st_mode & 0022) && !(st.st_mode & 01000)) {
        close(dfd);
        return ct_fail(CT_ERR_IO,
                       "Output lock directory is writable by multiple users but has no sticky bit: %s. Ask its owner "
                       "or administrator to add the sticky bit, or remove it when no transcription job is running",
                       dir_path);
    }
    *out = dfd;
    return CT_OK;
}

static ct_status open_lock_file(struct ct_output_lock *l, int *read_only) {
    struct stat dst;
    if (fstat(l->dir_fd, &dst) != 0) return ct_fail(CT_ERR_IO, "Cannot open output lock %s: %s", l->path, strerror(errno));
    mode_t mode = 0600;
    if ((dst.st_mode & 0030) == 0030) mode |= 0060;
    if ((dst.st_mode & 0003) == 0003) mode |= 0006;
    *read_only = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = openat(l->dir_fd, l->name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0 && errno == EACCES) {
            fd = openat(l->dir_fd, l->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
            if (fd >= 0) *read_only = 1;
        }
        if (fd >= 0) {
            l->fd = fd;
            return CT_OK;
        }
        if (errno == ELOOP) return ct_fail(CT_ERR_IO, "Output lock is not a regular file: %s", l->path);
        if (errno != ENOENT) return ct_fail(CT_ERR_IO, "Cannot open output lock %s: %s", l->path, strerror(errno));
        fd = openat(l->dir_fd, l->name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
        if (fd >= 0) {
            if (fchmod(fd, mode) != 0) { /* the umask may have taken the group bits: best effort */ }
            l->fd = fd;
            return CT_OK;
        }
        if (errno != EEXIST) return ct_fail(CT_ERR_IO, "Cannot create output lock %s: %s", l->path, strerror(errno));
    }
    return ct_fail(CT_ERR_IO, "Cannot open output lock %s: it keeps appearing and vanishing", l->path);
}

/* The descriptor and the path name one regular file. */
static int same_file(const struct ct_output_lock *l) {
    struct stat a, b;
    return fstat(l->fd, &a) == 0 && S_ISREG(a.st_mode) && fstatat(l->dir_fd, l->name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISREG(b.st_mode) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

ct_status ct_output_lock_acquire(const char *parent, const char *stem, ct_output_lock **out) {
    *out = NULL;
    struct ct_output_lock *l = calloc(1, sizeof *l);
    if (!l) return ct_fail(CT_ERR_OOM, "output lock: out of memory");
    l->fd = l->dir_fd = -1;
    const char *sep = strcmp(parent, "/") ? "/" : "";
    if (asprintf(&l->identity, "%s%s%s", parent, sep, stem) < 0) l->identity = NULL;
    /* The file is named after the stem only, not the identity (the gem
     * hashes "<canonical parent>/<stem>"): the lock folder already lies in
     * the parent, and a path-free name makes every route to that folder (a
     * bind mount, another machine's mount point of a shared filesystem)
     * reach the same lock file, where a path-based name would give each
     * route its own lock (docs/DURABILITY.md §6). */
    ct_status s = l->identity ? ct_output_lock_name(stem, l->name) : ct_fail(CT_ERR_OOM, "output lock: out of memory");
    if (s == CT_OK && asprintf(&l->path, "%s%s%s/%s", parent, sep, LOCK_DIR, l->name) < 0) {
        l->path = NULL;
        s = ct_fail(CT_ERR_OOM, "output lock: out of memory");
    }
    if (s != CT_OK) {
        lock_free(l);
        return s;
    }
    /* one job per set inside this process: the OFD lock would refuse a
     * second description too, but the message must say who holds it */
    pthread_mutex_lock(&g_mu);
    for (struct ct_output_lock *h = g_held; h; h = h->next)
        if (strcmp(h->path, l->path) == 0) {
            pthread_mutex_unlock(&g_mu);
            s = ct_fail(CT_ERR_BUSY, "Another transcription job owns output set %s", l->identity);
            lock_free(l);
            return s;
        }
    char *dir_path = NULL;
    if (asprintf(&dir_path, "%s%s%s", parent, sep, LOCK_DIR) < 0) dir_path = NULL;
    s = dir_path ? open_lock_dir(parent, dir_path, &l->dir_fd) : ct_fail(CT_ERR_OOM, "output lock: out of memory");
    free(dir_path);
    int read_only = 0;
    if (s == CT_OK) s = open_lock_file(l, &read_only);
    if (s == CT_OK) {
        struct stat st;
        if (fstat(l->fd, &st) != 0 || !S_ISREG(st.st_mode))
            s = ct_fail(CT_ERR_IO, "Output lock is not a regular file: %s", l->path);
    }
    if (s == CT_OK) {
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
        int r = fcntl(l->fd, F_OFD_SETLK, &fl);
        if (r != 0 && errno == EINVAL) r = fcntl(l->fd, F_SETLK, &fl); /* kernels before 3.15 */
        if (r != 0) {
            if (errno == EAGAIN || errno == EACCES)
                s = ct_fail(CT_ERR_BUSY, "Another transcription process owns output set %s (lock %s)", l->identity, l->path);
            else if (errno == EBADF && read_only)
                s = ct_fail(CT_ERR_IO,
                            "Cannot acquire an exclusive output lock for %s: the filesystem requires a writable lock "
                            "file at %s", l->identity, l->path);
            else
                s = ct_fail(CT_ERR_IO, "Cannot lock %s for output set %s: %s", l->path, l->identity, strerror(errno));
        }
    }
    if (s == CT_OK && !same_file(l)) s = ct_fail(CT_ERR_IO, "Output lock changed while acquiring %s: %s", l->identity, l->path);
    if (s == CT_OK) {
        l->next = g_held;
        g_held = l;
    }
    pthread_mutex_unlock(&g_mu);
    if (s != CT_OK) {
        lock_free(l); /* closing the descriptor drops a lock it may have taken */
        return s;
    }
    *out = l;
    return CT_OK;
}

ct_status ct_output_lock_verify(const ct_output_lock *l) {
    if (!l) return ct_fail(CT_ERR_MISUSE, "output lock: NULL");
    if (l->fd < 0) return ct_fail(CT_ERR_IO, "Output lock was released before committing %s", l->identity);
    if (!same_file(l)) return ct_fail(CT_ERR_IO, "Output lock changed while held for %s: %s", l->identity, l->path);
    return CT_OK;
}

const char *ct_output_lock_identity(const ct_output_lock *l) { return l ? l->identity : NULL; }
const char *ct_output_lock_path(const ct_output_lock *l) { return l ? l->path : NULL; }

void ct_output_lock_release(ct_output_lock *l) {
    if (!l) return;
    pthread_mutex_lock(&g_mu);
    for (struct ct_output_lock **p = &g_held; *p; p = &(*p)->next)
        if (*p == l) {
            *p = l->next;
            break;
        }
    pthread_mutex_unlock(&g_mu);
    lock_free(l);
}
