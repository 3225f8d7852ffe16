/* publish_recover.c — crash recovery of output sets (publish.h): finds the
 * temporaries, backups, markers and journals a killed commit left for a
 * stem and resolves the set to its old state (journal found) or keeps it
 * (no journal) and deletes the leftovers; and the one-listing scan of a
 * folder for the stems that need it. Protocol: docs/DURABILITY.md §5. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/str.h"
#include "output/publish.h"
#include "output/publish_internal.h"

/* ---- recovery ---------------------------------------------------------- */

typedef struct side_entry {
    char entry[NAME_MAX + 1];
    int member; /* index into the set's names */
    char kind;  /* 't'mp, 'b'ak, 'n'ew, 'j'nl */
    int done;
} side_entry;

#define CT_RECOVER_NAMES 6

static ct_status recover_fail(const ct_bound_dir *d, const char *entry, const char *what) {
    return ct_fail(CT_ERR_IO, "Cannot recover %s/%s: %s: %s", d->path, entry, what, strerror(errno));
}

static ct_status scan_sides(const ct_bound_dir *d, char names[][NAME_MAX + 1], side_entry **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    int fd = openat(d->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir) {
        if (fd >= 0) close(fd);
        return ct_fail(CT_ERR_IO, "Cannot recover %s: cannot list it: %s", d->path, strerror(errno));
    }
    side_entry *v = NULL;
    size_t n = 0, cap = 0;
    ct_status s = CT_OK;
    struct dirent *de;
    while ((de = readdir(dir))) {
        char name[NAME_MAX + 1];
        const char *ext = ct_pub_parse_side(de->d_name, name);
        if (!ext) continue;
        int member = -1;
        for (int k = 0; k < CT_RECOVER_NAMES; k++)
            if (strcmp(names[k], name) == 0) member = k;
        if (member < 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            side_entry *nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                s = ct_fail(CT_ERR_OOM, "Cannot recover %s: out of memory", d->path);
                break;
            }
            v = nv;
        }
        snprintf(v[n].entry, sizeof v[n].entry, "%s", de->d_name);
        v[n].member = member;
        v[n].kind = ext[0] == 't' ? 't' : ext[0] == 'b' ? 'b' : ext[0] == 'n' ? 'n' : 'j';
        v[n].done = 0;
        n++;
    }
    closedir(dir);
    if (s != CT_OK) {
        free(v);
        return s;
    }
    *out = v;
    *n_out = n;
    return CT_OK;
}

/* Roll the set back: each backup over its destination (or dropped when it
 * is still the destination itself), each destination with a marker and no
 * backup removed. */
static ct_status roll_back_sides(const ct_bound_dir *d, char names[][NAME_MAX + 1], side_entry *v, size_t n,
                                 ct_recovery *rep) {
    for (int k = 0; k < CT_RECOVER_NAMES; k++) {
        side_entry *bak = NULL, *mark = NULL;
        for (size_t i = 0; i < n; i++) {
            if (v[i].member != k) continue;
            if (v[i].kind == 'b') {
                if (bak)
                    return ct_fail(CT_ERR_IO, "Cannot recover %s/%s: two backups (%s, %s); resolve it by hand",
                                   d->path, names[k], bak->entry, v[i].entry);
                bak = &v[i];
            } else if (v[i].kind == 'n') {
                mark = &v[i];
            }
        }
        if (bak) {
            struct stat b, cur;
            int same = fstatat(d->fd, bak->entry, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
                       fstatat(d->fd, names[k], &cur, AT_SYMLINK_NOFOLLOW) == 0 && b.st_dev == cur.st_dev &&
                       b.st_ino == cur.st_ino;
            if (same) { /* never renamed over: the backup is a second link to it */
                if (ct_pub_unlink(d->fd, bak->entry) != 0 && errno != ENOENT) return recover_fail(d, bak->entry, "remove");
                rep->cleaned++;
            } else {
                if (ct_pub_rename(d->fd, bak->entry, names[k]) != 0) return recover_fail(d, bak->entry, "restore");
                rep->restored++;
            }
            bak->done = 1;
        } else if (mark) {
            if (ct_pub_unlink(d->fd, names[k]) == 0) rep->removed_new++;
            else if (errno != ENOENT) return recover_fail(d, names[k], "remove");
        }
    }
    return CT_OK;
}

ct_status ct_publish_recover(const ct_bound_dir *d, const char *stem, ct_recovery *report) {
    ct_recovery rep = {0};
    if (report) *report = rep;
    CT_TRY(ct_bound_dir_verify(d));
    static const char *const k_suffix[CT_RECOVER_NAMES] = {".txt", ".srt", ".vtt", ".json",
                                                           ".cohere-transcribe.manifest.json",
                                                           ".cohere-transcribe.asr.json"};
    char names[CT_RECOVER_NAMES][NAME_MAX + 1];
    for (int k = 0; k < CT_RECOVER_NAMES; k++) {
        int w = snprintf(names[k], sizeof names[k], "%s%s%s", k >= 4 ? "." : "", stem, k_suffix[k]);
        if (w < 0 || w > NAME_MAX) names[k][0] = '\0'; /* cannot have been published */
    }
    side_entry *v = NULL;
    size_t n = 0;
    CT_TRY(scan_sides(d, names, &v, &n));
    ct_status s = CT_OK;
    int journal = 0;
    for (size_t i = 0; i < n; i++) journal |= v[i].kind == 'j';
    if (journal) {
        s = roll_back_sides(d, names, v, n, &rep);
        if (s == CT_OK && ct_pub_dirsync(d->fd, d->path) != 0) s = recover_fail(d, ".", "fsync");
        /* the journal goes only once the old set is durable again */
        for (size_t i = 0; s == CT_OK && i < n; i++) {
            if (v[i].kind != 'j') continue;
            if (ct_pub_unlink(d->fd, v[i].entry) != 0 && errno != ENOENT) s = recover_fail(d, v[i].entry, "remove");
            v[i].done = 1;
            rep.cleaned++;
        }
        if (s == CT_OK && ct_pub_dirsync(d->fd, d->path) != 0) s = recover_fail(d, ".", "fsync");
        rep.rolled_back = s == CT_OK;
    }
    for (size_t i = 0; s == CT_OK && i < n; i++) {
        if (v[i].done) continue;
        if (ct_pub_unlink(d->fd, v[i].entry) != 0 && errno != ENOENT) s = recover_fail(d, v[i].entry, "remove");
        else rep.cleaned++;
    }
    free(v);
    if (report) *report = rep;
    return s;
}

ct_status ct_publish_recover_if_needed(const ct_bound_dir *d, const char *stem, ct_recovery *report) {
    if (report) memset(report, 0, sizeof *report);
    static const char *const k_suffix[CT_RECOVER_NAMES] = {".txt", ".srt", ".vtt", ".json",
                                                           ".cohere-transcribe.manifest.json",
                                                           ".cohere-transcribe.asr.json"};
    for (int k = 0; k < CT_RECOVER_NAMES; k++) {
        char name[NAME_MAX + 1], jnl[NAME_MAX + 1];
        int w = snprintf(name, sizeof name, "%s%s%s", k >= 4 ? "." : "", stem, k_suffix[k]);
        if (w < 0 || w > NAME_MAX || !ct_pub_journal_name(jnl, name)) continue;
        struct stat st;
        if (fstatat(d->fd, jnl, &st, AT_SYMLINK_NOFOLLOW) == 0) return ct_publish_recover(d, stem, report);
        if (errno != ENOENT) return ct_fail(CT_ERR_IO, "Cannot recover %s/%s: stat: %s", d->path, jnl, strerror(errno));
    }
    return CT_OK;
}

/* The stem a member name belongs to, or 0 when it is none of ours. */
static int stem_of(const char *name, char *stem) {
    static const char *const k_state[] = {".cohere-transcribe.manifest.json", ".cohere-transcribe.asr.json"};
    static const char *const k_fmt[] = {".txt", ".srt", ".vtt", ".json"};
    size_t n = strlen(name);
    if (name[0] == '.')
        for (int i = 0; i < 2; i++)
            if (ct_str_ends_with(name, k_state[i]) && n > strlen(k_state[i]) + 1) {
                size_t len = n - strlen(k_state[i]) - 1;
                memcpy(stem, name + 1, len);
                stem[len] = '\0';
                return 1;
            }
    for (int i = 0; i < 4; i++)
        if (ct_str_ends_with(name, k_fmt[i]) && n > strlen(k_fmt[i])) {
            size_t len = n - strlen(k_fmt[i]);
            memcpy(stem, name, len);
            stem[len] = '\0';
            return 1;
        }
    return 0;
}

ct_status ct_publish_pending_stems(const char *dir_path, char ***stems, size_t *n_stems) {
    *stems = NULL;
    *n_stems = 0;
    int fd = open(dir_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
    if (!dir) {
        if (fd >= 0) close(fd);
        return ct_fail(CT_ERR_IO, "Cannot recover %s: cannot list it: %s", dir_path, strerror(errno));
    }
    char **v = NULL;
    size_t n = 0, cap = 0;
    ct_status s = CT_OK;
    struct dirent *de;
    while ((de = readdir(dir))) {
        char name[NAME_MAX + 1], stem[NAME_MAX + 1];
        if (de->d_name[0] != '.' || !ct_pub_parse_side(de->d_name, name) || !stem_of(name, stem)) continue;
        int seen = 0;
        for (size_t i = 0; i < n && !seen; i++) seen = strcmp(v[i], stem) == 0;
        if (seen) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            char **nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                s = ct_fail(CT_ERR_OOM, "Cannot recover %s: out of memory", dir_path);
                break;
            }
            v = nv;
        }
        if (!(v[n] = strdup(stem))) {
            s = ct_fail(CT_ERR_OOM, "Cannot recover %s: out of memory", dir_path);
            break;
        }
        n++;
    }
    closedir(dir);
    if (s != CT_OK) {
        for (size_t i = 0; i < n; i++) free(v[i]);
        free(v);
        return s;
    }
    *stems = v;
    *n_stems = n;
    return CT_OK;
}
