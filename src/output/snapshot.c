/* snapshot.c — source snapshots (snapshot.h). */
#include "output/snapshot.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

ct_status ct_source_snapshot_take(const char *path, ct_source_snapshot *out) {
    memset(out, 0, sizeof *out);
    char real[PATH_MAX];
    if (!realpath(path, real)) return ct_fail(CT_ERR_IO, "Cannot re-check source %s: %s", path, strerror(errno));
    struct stat s;
    if (stat(real, &s) != 0) return ct_fail(CT_ERR_IO, "Cannot re-check source %s: %s", path, strerror(errno));
    out->canonical_path = strdup(real);
    if (!out->canonical_path) return ct_fail(CT_ERR_OOM, "snapshot: out of memory");
    out->device = (uint64_t)s.st_dev;
    out->inode = (uint64_t)s.st_ino;
    out->size = (int64_t)s.st_size;
    out->mtime_ns = (int64_t)s.st_mtim.tv_sec * 1000000000LL + s.st_mtim.tv_nsec;
    out->ctime_ns = (int64_t)s.st_ctim.tv_sec * 1000000000LL + s.st_ctim.tv_nsec;
    return CT_OK;
}

void ct_source_snapshot_clear(ct_source_snapshot *s) {
    if (!s) return;
    free(s->canonical_path);
    memset(s, 0, sizeof *s);
}

int ct_source_snapshot_equal(const ct_source_snapshot *a, const ct_source_snapshot *b) {
    return a->device == b->device && a->inode == b->inode && a->size == b->size && a->mtime_ns == b->mtime_ns &&
           a->ctime_ns == b->ctime_ns && a->canonical_path && b->canonical_path &&
           strcmp(a->canonical_path, b->canonical_path) == 0;
}

