/* hub_cache.c — the on-disk layout shared with Python's huggingface_hub:
 * folder names, refs (the commit as 40 hex characters, no newline, replaced
 * atomically), relative snapshot links into blobs/, the CACHEDIR.TAG file,
 * and checking a finished blob against its etag (sha256 for LFS files, the
 * git blob sha1 for small ones). No network here. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"
#include "model/digest.h"
#include "model/hub_internal.h"

/* The exact text huggingface_hub writes (Cache Directory Tagging Standard). */
static const char k_cachedir_tag[] =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by huggingface_hub.\n"
    "# For information about cache directory tags, see:\n"
    "#\thttps://bford.info/cachedir/\n";

ct_status ct_hub_repo_folder(const char *repo, char *out, size_t cap) {
    /* "models" + "--" + each '/'-separated part joined by "--" */
    size_t k = 0;
    const char *prefix = "models--";
    size_t pl = strlen(prefix);
    if (pl + 1 > cap) return ct_fail(CT_ERR_LIMIT, "%s: repo folder name too long", repo);
    memcpy(out, prefix, pl);
    k = pl;
    for (const char *p = repo; *p; p++) {
        if (k + 3 > cap) return ct_fail(CT_ERR_LIMIT, "%s: repo folder name too long", repo);
        if (*p == '/') {
            out[k++] = '-';
            out[k++] = '-';
        } else {
            out[k++] = *p;
        }
    }
    out[k] = '\0';
    return CT_OK;
}

ct_status ct_hub_storage_dir(const ct_hub *h, const char *repo, char *out, size_t cap) {
    char folder[256];
    CT_TRY(ct_hub_repo_folder(repo, folder, sizeof folder));
    return ct_path_join(out, cap, h->cache_dir, folder);
}

ct_status ct_hub_read_ref(const ct_hub *h, const char *repo, const char *revision, char *commit) {
    char storage[CT_HUB_PATH_MAX], path[CT_HUB_PATH_MAX];
    CT_TRY(ct_hub_storage_dir(h, repo, storage, sizeof storage));
    if (snprintf(path, sizeof path, "%s/refs/%s", storage, revision) >= (int)sizeof path)
        return ct_fail(CT_ERR_LIMIT, "%s: ref path too long", revision);
    char *buf;
    size_t n;
    ct_status st = ct_fs_read_all(path, 4096, &buf, &n);
    if (st != CT_OK) return st;
    /* Python writes no newline; tolerate one (hand-made caches) */
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) buf[--n] = '\0';
    if (!ct_hub_is_commit(buf)) {
        free(buf);
        return ct_fail(CT_ERR_FORMAT, "%s: not a commit id", path);
    }
    memcpy(commit, buf, 41);
    free(buf);
    return CT_OK;
}

ct_status ct_hub_write_ref(const ct_hub *h, const char *repo, const char *revision,
                           const char *commit) {
    if (strcmp(revision, commit) == 0) return CT_OK;
    char have[41];
    if (ct_hub_read_ref(h, repo, revision, have) == CT_OK && strcmp(have, commit) == 0) return CT_OK;
    ct_error_clear();
    char storage[CT_HUB_PATH_MAX], path[CT_HUB_PATH_MAX], dir[CT_HUB_PATH_MAX];
    CT_TRY(ct_hub_storage_dir(h, repo, storage, sizeof storage));
    if (snprintf(path, sizeof path, "%s/refs/%s", storage, revision) >= (int)sizeof path)
        return ct_fail(CT_ERR_LIMIT, "%s: ref path too long", revision);
    snprintf(dir, sizeof dir, "%s", path);
    CT_TRY(ct_fs_mkdirs(dirname(dir)));
    return ct_fs_write_atomic(path, commit, 40);
}

ct_status ct_hub_link_snapshot(const char *storage, const char *commit, const char *file,
                               const char *etag) {
    char link[CT_HUB_PATH_MAX], dir[CT_HUB_PATH_MAX], target[CT_HUB_PATH_MAX];
    if (snprintf(link, sizeof link, "%s/snapshots/%s/%s", storage, commit, file) >= (int)sizeof link)
        return ct_fail(CT_ERR_LIMIT, "%s: snapshot path too long", file);
    snprintf(dir, sizeof dir, "%s", link);
    CT_TRY(ct_fs_mkdirs(dirname(dir)));
    /* relative, so the cache can move: one "../" per folder in the file name
     * plus two for snapshots/<commit> */
    size_t k = 0;
    int depth = 2;
    for (const char *p = file; *p; p++) depth += *p == '/';
    for (int i = 0; i < depth; i++) {
        memcpy(target + k, "../", 3);
        k += 3;
    }
    if (snprintf(target + k, sizeof target - k, "blobs/%s", etag) >= (int)(sizeof target - k))
        return ct_fail(CT_ERR_LIMIT, "%s: link target too long", etag);
    char tmp[CT_HUB_PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmplink", link, (long)getpid());
    unlink(tmp);
    if (symlink(target, tmp) != 0)
        return ct_fail(CT_ERR_IO, "%s: cannot create a link: %s", tmp, strerror(errno));
    if (rename(tmp, link) != 0) {
        int e = errno;
        unlink(tmp);
        return ct_fail(CT_ERR_IO, "%s: cannot place the link: %s", link, strerror(e));
    }
    return CT_OK;
}

void ct_hub_write_cachedir_tag(const ct_hub *h) {
    char path[CT_HUB_PATH_MAX];
    if (ct_path_join(path, sizeof path, h->cache_dir, "CACHEDIR.TAG") != CT_OK) return;
    if (ct_fs_is_file(path)) return;
    if (ct_fs_write_atomic(path, k_cachedir_tag, sizeof k_cachedir_tag - 1) != CT_OK) ct_error_clear();
}

/* ---- listing a snapshot -------------------------------------------------- */

typedef struct list_acc {
    char **files;
    int64_t *sizes;
    int n, cap;
} list_acc;

static ct_status list_add(list_acc *a, const char *name, int64_t size) {
    if (a->n == a->cap) {
        int nc = a->cap ? a->cap * 2 : 16;
        char **nf = realloc(a->files, (size_t)nc * sizeof *nf);
        if (!nf) return ct_fail(CT_ERR_OOM, "out of memory listing a snapshot");
        a->files = nf;
        int64_t *ns = realloc(a->sizes, (size_t)nc * sizeof *ns);
        if (!ns) return ct_fail(CT_ERR_OOM, "out of memory listing a snapshot");
        a->sizes = ns;
        a->cap = nc;
    }
    a->files[a->n] = strdup(name);
    if (!a->files[a->n]) return ct_fail(CT_ERR_OOM, "out of memory listing a snapshot");
    a->sizes[a->n++] = size;
    return CT_OK;
}

static ct_status list_dir(const char *root, const char *rel, list_acc *a, int depth) {
    if (depth > 16) return CT_OK;
    char path[CT_HUB_PATH_MAX];
    if (snprintf(path, sizeof path, "%s%s%s", root, rel[0] ? "/" : "", rel) >= (int)sizeof path)
        return ct_fail(CT_ERR_LIMIT, "%s: path too long", rel);
    DIR *d = opendir(path);
    if (!d) return ct_fail(CT_ERR_IO, "%s: cannot list: %s", path, strerror(errno));
    ct_status st = CT_OK;
    struct dirent *e;
    while (st == CT_OK && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char sub[CT_HUB_PATH_MAX], full[CT_HUB_PATH_MAX];
        if (snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name) >= (int)sizeof sub)
            continue;
        snprintf(full, sizeof full, "%s/%s", root, sub);
        struct stat s;
        if (stat(full, &s) != 0) continue; /* a dangling link: the blob is missing */
        if (S_ISDIR(s.st_mode)) st = list_dir(root, sub, a, depth + 1);
        else if (S_ISREG(s.st_mode)) st = list_add(a, sub, (int64_t)s.st_size);
    }
    closedir(d);
    return st;
}

ct_status ct_hub_list_snapshot(const char *snapdir, char ***files, int64_t **sizes, int *n) {
    list_acc a = {0};
    ct_status st = list_dir(snapdir, "", &a, 0);
    if (st != CT_OK) {
        for (int i = 0; i < a.n; i++) free(a.files[i]);
        free(a.files);
        free(a.sizes);
        return st;
    }
    *files = a.files;
    *sizes = a.sizes;
    *n = a.n;
    return CT_OK;
}

/* ---- blob verification --------------------------------------------------- */

static int all_hex(const char *s, size_t n) {
    if (strlen(s) != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

ct_status ct_hub_verify_blob(const char *path, const char *etag) {
    int sha256 = all_hex(etag, 64), gitsha1 = all_hex(etag, 40);
    if (!sha256 && !gitsha1) return CT_OK;
    char hex[65];
    CT_TRY(ct_file_digest(path, sha256 ? CT_DIGEST_SHA256 : CT_DIGEST_GIT_SHA1, hex));
    if (strcmp(hex, etag) != 0)
        return ct_fail(CT_ERR_FORMAT, "%s: content hash %s does not match the Hub's %s", path, hex,
                       etag);
    return CT_OK;
}
