/* snapshot.h — what stat says about a source file (PRODUCT-DETAILS §3.3),
 * shared by the state files (output/state.h: recorded and compared) and the
 * commit (output/publish.h: re-checked before the renames). */
#ifndef CT_OUTPUT_SNAPSHOT_H
#define CT_OUTPUT_SNAPSHOT_H

#include <stdint.h>

#include "core/error.h"

typedef struct ct_source_snapshot {
    char *canonical_path; /* realpath */
    uint64_t device, inode;
    int64_t size, mtime_ns, ctime_ns;
} ct_source_snapshot;

/* realpath + stat (following symlinks) of path; CT_ERR_IO "Cannot re-check
 * source <path>: <strerror>". Free with ct_source_snapshot_clear. */
CT_NODISCARD ct_status ct_source_snapshot_take(const char *path, ct_source_snapshot *out);
void ct_source_snapshot_clear(ct_source_snapshot *s);
/* 1 when the §3.3 fields and the canonical path are equal. */
int ct_source_snapshot_equal(const ct_source_snapshot *a, const ct_source_snapshot *b);

#endif
