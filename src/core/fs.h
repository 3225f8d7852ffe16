/* fs.h — filesystem helpers: whole-file reads with a size cap, read-only
 * mappings, atomic replacement (temp file + fsync + rename + dir fsync),
 * directory creation and path joining. Every failure names the path. */
#ifndef CT_CORE_FS_H
#define CT_CORE_FS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

struct stat;

/* The one way the library opens a file it reads (model files, tokenizer,
 * config, GGUF, ONNX, audio, Hub cache files): opened O_NONBLOCK (a FIFO
 * must not block waiting for a writer) and O_NOCTTY, checked with fstat, and
 * anything but a regular file refused with CT_ERR_IO "<path>: not a regular
 * file (FIFO|directory|character device|...)", before a byte is read;
 * O_NONBLOCK is then cleared. A missing path is CT_ERR_NOT_FOUND. On success
 * *fd is open (O_CLOEXEC, close it) and *st (if non-NULL) describes it. */
ct_status ct_fs_open_input(const char *path, int *fd, struct stat *st);
/* The same check for a reader that opens the path itself (libsndfile's
 * sf_open): open, check, close. */
ct_status ct_fs_check_input(const char *path);

/* The rule every published output follows: path is new (missing), or an
 * existing regular file. Anything else is refused with CT_ERR_IO naming the
 * kind: a device, FIFO, socket or directory (a rename would replace the
 * node: --out /dev/null run as root would break /dev/null), and any symbolic
 * link, also one to a regular file (the rename would replace the link, not
 * its target). Dangling links are refused too. Empty path: CT_ERR_INVALID_ARG. */
ct_status ct_fs_check_output(const char *path);

/* "regular file", "directory", "FIFO", "socket", "character device",
 * "block device", "symbolic link", "special file" for a st_mode. */
const char *ct_fs_kind_name(unsigned mode);

/* Read a whole file into a fresh NUL-terminated buffer (free with free()).
 * Files larger than max_bytes fail with CT_ERR_LIMIT before reading. */
ct_status ct_fs_read_all(const char *path, size_t max_bytes, char **out, size_t *out_len);

/* A read-only private mapping of a whole file. Zero-length files give
 * data == NULL, size == 0 (mmap refuses them). */
typedef struct ct_mapping {
    const uint8_t *data;
    size_t size;
} ct_mapping;

ct_status ct_fs_map(const char *path, ct_mapping *out);
void ct_fs_unmap(ct_mapping *m);

/* Atomic replacement. path always holds either its old contents (or
 * nothing) or the new bytes in full, never a mix, whatever fails and even
 * across a crash: the bytes go to a temp file beside path, which is fsynced
 * and closed, renamed over path (the commit point, atomic for readers in
 * every process), and then the directory is fsynced so that the rename
 * itself survives a power loss.
 *
 * What a caller may rely on (say, a tool publishing transcripts beside the
 * audio, many processes at once, resumable by "the output exists"):
 *  - CT_OK: path holds the new bytes, and both the data and the new
 *    directory entry are on stable storage.
 *  - a failure before the rename (any step up to and including it): path is
 *    untouched and no temp file is left once the file is closed.
 *  - a failure of the directory fsync after the rename (CT_ERR_IO, the
 *    message starts "<path>: replaced, but ..."): path already holds the new
 *    bytes in full and other processes may be reading them; only their
 *    survival of a crash is unconfirmed (after one, path holds the old or the
 *    new contents, still never a mix). ct_atomic_file.committed is 1 then,
 *    so a caller that must tell the cases apart uses ct_atomic_file.
 * Writers race last-rename-wins; temp names are unique per process and call
 * (pid + counter, O_EXCL), so concurrent writers never share a temp file.
 * Temp names always fit NAME_MAX: "<name>.tmp.<pid>.<n>", or, for a name
 * too long for that, its leading bytes + "~" + a hash of the whole name.
 * The target must pass ct_fs_check_output (new, or a regular file; never a
 * device, FIFO, socket, directory or symbolic link): checked before the temp
 * file is created and again just before the rename. */
ct_status ct_fs_write_atomic(const char *path, const void *data, size_t len);

/* The same, for a file written in pieces (checkpoint writers): open makes
 * the temp file beside path (mode 0666 & ~umask), write appends to it,
 * commit fsyncs, renames over path and fsyncs the directory. close releases
 * everything and removes the temp file unless the rename happened; call it
 * after open in every case (it is a no-op on a zeroed struct).
 * A failed write or fsync makes the file failed for good: every later write
 * and commit is refused (CT_ERR_MISUSE), so a caller that ignored the error
 * cannot publish a file with a hole or a lost page; close discards it. */
typedef struct ct_atomic_file {
    char *path;
    char *tmp;     /* NULL once renamed over path */
    int fd;        /* -1 when closed */
    int failed;    /* a write or fsync failed: commit refuses */
    int committed; /* 1 once renamed over path (even if the dir fsync failed) */
} ct_atomic_file;

ct_status ct_atomic_file_open(ct_atomic_file *f, const char *path);
ct_status ct_atomic_file_write(ct_atomic_file *f, const void *data, size_t len);
ct_status ct_atomic_file_commit(ct_atomic_file *f);
void ct_atomic_file_close(ct_atomic_file *f);

/* mkdir -p with mode 0777 & ~umask. Existing directories are fine. */
ct_status ct_fs_mkdirs(const char *path);

/* 1 if path exists and is a directory / regular file, else 0. */
int ct_fs_is_dir(const char *path);
int ct_fs_is_file(const char *path);
/* 1 if path names anything (links followed): for "is this optional file
 * there?" probes, which then read it with ct_fs_open_input so that a FIFO or
 * device under the name is refused by kind, not taken as missing. */
int ct_fs_exists(const char *path);

/* NULL if s is a safe relative path to join under a directory, else a
 * static phrase saying why not. Safe: not empty, not absolute (no leading
 * '/', no drive "X:"), no control character or backslash, no empty, "." or
 * ".." segment, so it cannot leave the directory it is joined to (symbolic
 * links aside). The one rule for every name a file hands us: the Hub
 * client's repository file names and the safetensors index's shard names. */
const char *ct_path_rel_problem(const char *s);

/* dst = a "/" b, failing with CT_ERR_LIMIT if it does not fit in cap bytes. */
ct_status ct_path_join(char *dst, size_t cap, const char *a, const char *b);

/* Monotonic seconds, for stage timings; CPU seconds of the whole process
 * (all threads), for CPU-time accounting in benchmarks. */
double ct_now(void);
double ct_cpu_now(void);

#endif
