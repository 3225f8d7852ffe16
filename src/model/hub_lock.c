/* hub_lock.c — the per-blob lock: an flock(2) on
 * <cache>/.locks/models--owner--name/<etag>.lock, the same file and lock kind
 * that huggingface_hub's filelock takes, so Python and C processes sharing a
 * cache also exclude each other. The kernel drops the lock when a holder
 * dies, so a killed download never leaves a stale lock behind. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"
#include "model/hub_internal.h"

ct_status ct_hub_lock(ct_hub *h, const char *path, int *fd_out) {
    *fd_out = -1;
    char dir[CT_HUB_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    CT_TRY(ct_fs_mkdirs(dirname(dir)));
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0664);
    if (fd < 0) return ct_fail(CT_ERR_IO, "%s: cannot open lock file: %s", path, strerror(errno));
    /* group-writable as huggingface_hub makes it, so users sharing a cache can wait */
    (void)fchmod(fd, 0664);
    double start = ct_now(), next_note = start + 5.0;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) break;
        if (errno != EWOULDBLOCK && errno != EINTR) {
            int e = errno;
            close(fd);
            return ct_fail(CT_ERR_IO, "%s: cannot lock: %s", path, strerror(e));
        }
        ct_status st = ct_hub_check_cancel(h);
        if (st != CT_OK) {
            close(fd);
            return st;
        }
        if (ct_now() >= next_note) {
            CT_LOGI("hub: waiting for another process downloading into the cache (%s, %.0f s)",
                    path, ct_now() - start);
            next_note = ct_now() + 10.0;
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    *fd_out = fd;
    return CT_OK;
}

void ct_hub_unlock(int fd) {
    if (fd < 0) return;
    flock(fd, LOCK_UN);
    close(fd);
}
