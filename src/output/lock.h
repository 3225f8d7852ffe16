/* lock.h — one exclusive lock per output set, beside the outputs
 * (PRODUCT-DETAILS §4.5, the gem's 0.1.3 canonical lock):
 * "<parent>/.cohere-transcribe-locks/<sha256(lowercase stem)>.lock" (the
 * gem hashes the identity "<canonical parent>/<stem>"; ours is the same file
 * through every path to the parent: docs/DURABILITY.md §6). Open file description (OFD) fcntl
 * write locks, never blocking; the reasoning (what NFS, Lustre and CephFS
 * honour) is in docs/DURABILITY.md. Lock files are never deleted.
 *
 * Between processes: CT_ERR_BUSY "Another transcription process owns output
 * set <identity> (lock <path>)". Inside one process (a second transcriber
 * or thread on the same set): CT_ERR_BUSY "Another transcription job owns
 * output set <identity>". Thread-safe. */
#ifndef CT_OUTPUT_LOCK_H
#define CT_OUTPUT_LOCK_H

#include "core/error.h"

typedef struct ct_output_lock ct_output_lock;

/* The lock file's name for an identity: sha256 hex of the identity with
 * full Unicode lower-casing (Ruby's String#downcase: utf8proc's simple
 * mapping plus U+0130 → "i̇"; no final-sigma rule) + ".lock". */
ct_status ct_output_lock_name(const char *identity, char name[70]);

/* Take the lock of the output set <parent>/<stem>; parent must be the
 * canonical folder the outputs go to (plan.h's parent). Creates the lock
 * folder (mode: the parent's & 03777 | 0700, + sticky when that is group-
 * or other-writable) and the lock file (0600, + 0060 / 0006 when the folder
 * is group / other writable and searchable). Refusals (CT_ERR_IO):
 * "Output lock directory is not a directory: <p>", "Output lock directory
 * is writable by multiple users but has no sticky bit: <p>. Ask its owner
 * or administrator to add the sticky bit, or remove it when no
 * transcription job is running", "Output lock is not a regular file: <p>",
 * "Output lock changed while acquiring <identity>: <p>", "Cannot acquire an
 * exclusive output lock for <identity>: the filesystem requires a writable
 * lock file at <p>". */
ct_status ct_output_lock_acquire(const char *parent, const char *stem, ct_output_lock **out);

/* Still held and still the file at its path: CT_ERR_IO "Output lock was
 * released before committing <identity>" / "Output lock changed while held
 * for <identity>: <p>". The commit calls this around every rename. */
ct_status ct_output_lock_verify(const ct_output_lock *l);

const char *ct_output_lock_identity(const ct_output_lock *l);
const char *ct_output_lock_path(const ct_output_lock *l);

/* Release and free; NULL is a no-op. */
void ct_output_lock_release(ct_output_lock *l);

#endif
