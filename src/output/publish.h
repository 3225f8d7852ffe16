/* publish.h — the output-set transaction (PRODUCT-DETAILS §4.3), the single
 * state file write (§4.4) and crash recovery, all descriptor-relative to a
 * bound parent folder. The protocol, the on-disk state after a crash at
 * each step and why readers and the next run are safe: docs/DURABILITY.md.
 *
 * In short: every member is staged in ".<name>.<24 hex>.tmp" (0600, then
 * its final mode; written, fsynced, closed); each existing destination
 * gets a backup ".<name>.<hex>.bak" (a hard link, or a fsynced copy) and
 * each new one a marker ".<name>.<hex>.new"; a journal (one fixed name per
 * set, ".<last>.000…0.jnl") says "roll back if found"; the source is
 * re-checked; the folder is fsynced; the temporaries are renamed over the destinations in order
 * (formats in the user's order, manifest last); the folder is fsynced; the
 * journal is removed and the folder fsynced again (the commit point); then
 * backups and markers go. Any failure or a cancel before the last rename
 * rolls back; nothing the transaction made is left behind. */
#ifndef CT_OUTPUT_PUBLISH_H
#define CT_OUTPUT_PUBLISH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "output/lock.h"
#include "output/snapshot.h"

/* A bound publication folder (§4.1): its canonical path, a descriptor
 * (O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_NONBLOCK) and its device/inode. */
typedef struct ct_bound_dir {
    int fd; /* -1 when closed */
    char *path;
    uint64_t dev, ino;
} ct_bound_dir;

/* path must be canonical (realpath(path) == path): else CT_ERR_IO
 * "Publication parent changed after planning: <path>". */
ct_status ct_bound_dir_open(const char *path, ct_bound_dir *d);
/* realpath still the path, same device/inode by path and by descriptor:
 * "Publication parent changed after planning: <p>" / "Retained publication
 * parent changed identity: <p>". */
ct_status ct_bound_dir_verify(const ct_bound_dir *d);
void ct_bound_dir_close(ct_bound_dir *d); /* a zeroed or closed one is fine */
/* The folder bound now is the one planning saw (plan.h's parent_dev and
 * parent_ino): else CT_ERR_IO "Publication parent changed after planning:
 * <path>". */
ct_status ct_bound_dir_expect(const ct_bound_dir *d, uint64_t dev, uint64_t ino);

typedef struct ct_publish_member {
    const char *name; /* entry name in the folder: not "", ".", "..", no '/' */
    const void *data;
    size_t len;
} ct_publish_member;

typedef struct ct_publish_request {
    const ct_bound_dir *dir;
    const ct_publish_member *members; /* formats in the user's order, manifest last */
    size_t n;
    const char *source_path;          /* with snapshot: re-checked before the renames */
    const ct_source_snapshot *snapshot;
    const atomic_int *cancel;         /* nonzero: cancel (may be set from a signal handler) */
    const ct_output_lock *lock;       /* re-verified around every rename (may be NULL) */
} ct_publish_request;

/* Publish the set. CT_OK: every member holds its new bytes, durably, and
 * nothing else the call made is left. On failure (rolled back: every
 * destination holds its old bytes or is absent as before) the message
 * names the member and the failed operation; CT_ERR_ABORTED "Output commit
 * cancelled: <dir>/<first member>"; "Source changed while processing:
 * <path>"; "Cannot re-check source <path>: <msg>"; "Publication entry is
 * not a regular file: <p>" (a destination that is a symlink, folder, FIFO:
 * refused, never opened); "Cannot allocate a unique publication temporary
 * for <name>". When the rollback itself fails: "Output commit failed and
 * rollback was incomplete (<dest>: <msg>; ...); preserved backups: [<p>,
 * ...]" (the journal stays, so ct_publish_recover finishes the job).
 * *committed (may be NULL) is 1 when the new set is in place even though
 * an error is returned ("Output commit completed but cleanup was
 * incomplete (...)"). A cancel after the last rename is ignored: the set
 * is complete by then. */
ct_status ct_publish_set(const ct_publish_request *r, int *committed);

/* The single state file write of §4.4 (the ASR checkpoint): the same
 * transaction with one member, messages "State commit ...". */
ct_status ct_publish_state(const ct_publish_request *r, int *committed);

/* What ct_publish_recover did. */
typedef struct ct_recovery {
    int rolled_back; /* a journal was found: the interrupted set was restored */
    int restored;    /* backups renamed back over their destinations */
    int removed_new; /* destinations a rolled-back commit had created, removed */
    int cleaned;     /* temporaries, backups, markers, journals deleted */
} ct_recovery;

/* Resolve what a killed commit of the set <stem> left in the folder: with
 * a journal, roll the set back to its old state (backups renamed back,
 * destinations that had none removed); without one, the set is already
 * whole (old or new) and the leftovers are deleted. Covers the four format
 * names, the manifest and the checkpoint of the stem. Idempotent, safe to
 * re-run after a crash inside it. Call it under the set's lock, before
 * revalidation: it must not run beside a live commit of the same set.
 * CT_ERR_IO when an entry cannot be restored or removed (named). */
ct_status ct_publish_recover(const ct_bound_dir *d, const char *stem, ct_recovery *report);

/* The same, at the cost of a few stats when there is nothing to roll back:
 * only an interrupted commit's journal (one fixed name per set) triggers
 * ct_publish_recover. Leftovers without a journal are garbage that does
 * not affect the set; ct_publish_pending_stems + ct_publish_recover, once
 * per folder, removes them. For the per-file call under the lock. */
ct_status ct_publish_recover_if_needed(const ct_bound_dir *d, const char *stem, ct_recovery *report);

/* The stems in a folder that have entries a killed commit may have left
 * (".<member>.<24 hex>.{tmp,bak,new,jnl}" of one of the stem's six member
 * names): one listing for the whole folder, so a run over thousands of
 * finished files calls ct_publish_recover only where it has work. Free
 * each string and the array with free(). */
ct_status ct_publish_pending_stems(const char *dir_path, char ***stems, size_t *n);

/* ---- test hook (tests only; not thread-safe; NULL disables) -------------
 * Called before every filesystem call of a commit, rollback and recovery
 * with the operation and the entry it touches; a nonzero return fails that
 * call with that errno without making it. CT_PUB_OP_STEP marks the named
 * points between steps ("stage:<i>", "backup:<i>", "journal", "source",
 * "barrier", "rename:<i>", "dirsync", "commit", "cleanup"); its return is
 * ignored (a test sets the cancel flag there).
 *
 * Environment hook, for kill tests of whole runs: CT_TEST_COMMIT_PAUSE=
 * <label>[,<label>...] (or "*") makes the process stop itself (SIGSTOP)
 * at those step points; with CT_TEST_COMMIT_PAUSE_MS=<ms> it sleeps that
 * long instead. CT_TEST_COMMIT_FAIL=<op>:<n>=<errno> (op: open, write,
 * fsync, close, fchmod, link, rename, unlink, dirsync; errno: ENOSPC, EIO,
 * EROFS, EACCES, EDQUOT) fails the n-th such call of the process once, for
 * fault-injection tests of whole runs (tests/e2e/durability_faults.sh);
 * ignored while a ct_publish_set_test_hook is set. */
typedef enum ct_publish_op {
    CT_PUB_OP_STEP = 0,
    CT_PUB_OP_OPEN,
    CT_PUB_OP_WRITE,
    CT_PUB_OP_FSYNC,
    CT_PUB_OP_CLOSE,
    CT_PUB_OP_FCHMOD,
    CT_PUB_OP_LINK,
    CT_PUB_OP_RENAME,
    CT_PUB_OP_UNLINK,
    CT_PUB_OP_DIRSYNC,
    CT_PUB_OP_COUNT
} ct_publish_op;

typedef int (*ct_publish_hook_fn)(void *user, ct_publish_op op, const char *entry);
void ct_publish_set_test_hook(ct_publish_hook_fn fn, void *user);

#endif
