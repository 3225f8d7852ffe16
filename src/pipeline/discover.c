/* discover.c — input discovery (discover.h): realpath resolution, the
 * directory walk (lstat per entry, no descent through symlinked folders),
 * case-folded ordering and de-duplication. Files are stat'ed, never opened,
 * so naming a FIFO cannot block the run. Does not plan outputs (plan.c). */
#include "pipeline/discover.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utf8proc.h>

static const char *const k_audio_ext[] = {".aac", ".aif", ".aiff", ".alac", ".flac",
                                          ".m4a", ".mp3", ".mp4", ".oga", ".ogg",
                                          ".opus", ".wav", ".wave", ".webm", ".wma"};

int ct_utf8_valid(const char *s) {
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
    while (*p) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(p, -1, &cp);
        if (n <= 0 || cp < 0) return 0;
        p += n;
    }
    return 1;
}

char *ct_utf8_casefold(const char *s) {
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)s, 0, &dst,
                                      UTF8PROC_NULLTERM | UTF8PROC_CASEFOLD);
    if (n < 0) return NULL;
    return (char *)dst;
}

const char *ct_path_extname(const char *base) {
    const char *p = base;
    while (*p == '.') p++;
    const char *dot = strrchr(p, '.');
    return dot ? dot : NULL;
}

int ct_is_audio_name(const char *name) {
    const char *ext = ct_path_extname(name);
    if (!ext) return 0;
    for (size_t i = 0; i < sizeof k_audio_ext / sizeof *k_audio_ext; i++)
        if (strcasecmp(ext, k_audio_ext[i]) == 0) return 1;
    return 0;
}

static char *dup_or_null(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static char *join2(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    int slash = na > 0 && a[na - 1] != '/';
    char *d = malloc(na + (size_t)slash + nb + 1);
    if (!d) return NULL;
    memcpy(d, a, na);
    if (slash) d[na] = '/';
    memcpy(d + na + (size_t)slash, b, nb + 1);
    return d;
}

/* Lexical clean of an absolute path: segments "." dropped, ".." pops (never
 * above "/"), empty segments dropped. */
static void clean_abs(char *p) {
    size_t w = 0, r = 0, n = strlen(p);
    p[w++] = '/';
    while (r < n) {
        while (r < n && p[r] == '/') r++;
        size_t s = r;
        while (r < n && p[r] != '/') r++;
        size_t len = r - s;
        if (len == 0 || (len == 1 && p[s] == '.')) continue;
        if (len == 2 && p[s] == '.' && p[s + 1] == '.') {
            while (w > 1 && p[w - 1] != '/') w--; /* drop the last segment */
            if (w > 1) w--;                        /* and the slash before it */
            continue;
        }
        if (w > 1) p[w++] = '/';
        memmove(p + w, p + s, len);
        w += len;
    }
    p[w] = '\0';
}

ct_status ct_path_expand(const char *raw, char **out) {
    *out = NULL;
    char *abs = NULL;
    if (raw[0] == '~' && (raw[1] == '\0' || raw[1] == '/')) {
        const char *home = getenv("HOME");
        if (!home || home[0] != '/')
            return ct_fail(CT_ERR_INVALID_ARG, "%s: cannot expand '~': HOME is not an absolute path", raw);
        abs = join2(home, raw[1] ? raw + 2 : "");
    } else if (raw[0] == '/') {
        abs = dup_or_null(raw);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            return ct_fail(CT_ERR_IO, "%s: cannot read the working directory: %s", raw, strerror(errno));
        abs = join2(cwd, raw);
    }
    if (!abs) return ct_fail(CT_ERR_OOM, "%s: out of memory", raw);
    clean_abs(abs);
    *out = abs;
    return CT_OK;
}

ct_status ct_path_resolve_loose(const char *abs, char **out) {
    *out = NULL;
    char *r = realpath(abs, NULL);
    if (r) {
        *out = r;
        return CT_OK;
    }
    if (errno == ELOOP) return ct_fail(CT_ERR_INVALID_ARG, "Symlink loop");
    if (errno != ENOENT) return ct_fail(CT_ERR_IO, "%s", strerror(errno));
    /* resolve the parent, then append the missing last component */
    char *copy = dup_or_null(abs);
    if (!copy) return ct_fail(CT_ERR_OOM, "out of memory");
    clean_abs(copy);
    char *slash = strrchr(copy, '/');
    if (!slash || slash[1] == '\0') { /* "/" itself missing: cannot happen */
        free(copy);
        return ct_fail(CT_ERR_IO, "%s", strerror(ENOENT));
    }
    char *leaf = slash + 1;
    char *parent_res = NULL;
    ct_status s;
    if (slash == copy) {
        parent_res = dup_or_null("/");
        s = parent_res ? CT_OK : ct_fail(CT_ERR_OOM, "out of memory");
    } else {
        *slash = '\0';
        s = ct_path_resolve_loose(copy, &parent_res);
    }
    if (s == CT_OK) {
        *out = join2(parent_res, leaf);
        if (!*out) s = ct_fail(CT_ERR_OOM, "out of memory");
    }
    free(parent_res);
    free(copy);
    return s;
}

/* ---- candidate lists ---------------------------------------------------- */

typedef struct cand {
    char *path;     /* dir realpath + "/" + relative (not yet canonical) */
    char *relative;
    char *key;      /* case-folded path */
} cand;

typedef struct cand_vec {
    cand *v;
    size_t n, cap;
} cand_vec;

static void cand_vec_free(cand_vec *c) {
    for (size_t i = 0; i < c->n; i++) {
        free(c->v[i].path);
        free(c->v[i].relative);
        free(c->v[i].key);
    }
    free(c->v);
    memset(c, 0, sizeof *c);
}

/* Render a path for a message with non-UTF-8 bytes as \xNN. */
static void escape_bytes(const char *s, char *dst, size_t cap) {
    size_t w = 0;
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
    while (*p && w + 5 < cap) {
        utf8proc_int32_t cp;
        utf8proc_ssize_t n = utf8proc_iterate(p, -1, &cp);
        if (n <= 0 || cp < 0) {
            w += (size_t)snprintf(dst + w, cap - w, "\\x%02X", *p);
            p++;
            continue;
        }
        if (w + (size_t)n + 1 >= cap) break;
        memcpy(dst + w, p, (size_t)n);
        w += (size_t)n;
        p += n;
    }
    dst[w] = '\0';
}

static ct_status cand_push(cand_vec *c, const char *root, const char *rel) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        cand *v = realloc(c->v, cap * sizeof *v);
        if (!v) return ct_fail(CT_ERR_OOM, "input discovery: out of memory");
        c->v = v;
        c->cap = cap;
    }
    cand *e = &c->v[c->n];
    e->path = join2(root, rel);
    e->relative = dup_or_null(rel);
    e->key = NULL;
    if (!e->path || !e->relative) {
        free(e->path);
        free(e->relative);
        return ct_fail(CT_ERR_OOM, "input discovery: out of memory");
    }
    c->n++;
    if (!ct_utf8_valid(e->path)) {
        char shown[PATH_MAX * 2];
        escape_bytes(e->path, shown, sizeof shown);
        return ct_fail(CT_ERR_INVALID_ARG, "Input path must contain valid UTF-8: %s", shown);
    }
    e->key = ct_utf8_casefold(e->path);
    if (!e->key) return ct_fail(CT_ERR_OOM, "input discovery: out of memory");
    return CT_OK;
}

/* Walk root/rel (rel "" for the root itself). */
static ct_status walk(cand_vec *c, const char *root, const char *rel, int recursive) {
    char *dir_path = rel[0] ? join2(root, rel) : dup_or_null(root);
    if (!dir_path) return ct_fail(CT_ERR_OOM, "input discovery: out of memory");
    int dfd = open(dir_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        int e = errno;
        if (dfd >= 0) close(dfd);
        free(dir_path);
        return ct_fail(CT_ERR_IO, "Cannot inspect input %s: %s", root, strerror(e));
    }
    ct_status s = CT_OK;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno) s = ct_fail(CT_ERR_IO, "Cannot inspect input %s: %s", root, strerror(errno));
            break;
        }
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
        struct stat st;
        if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) continue; /* vanished while walking */
            s = ct_fail(CT_ERR_IO, "Cannot inspect input %s: %s", root, strerror(errno));
            break;
        }
        char *sub = rel[0] ? join2(rel, name) : dup_or_null(name);
        if (!sub) {
            s = ct_fail(CT_ERR_OOM, "input discovery: out of memory");
            break;
        }
        if (S_ISDIR(st.st_mode)) {
            if (recursive) s = walk(c, root, sub, recursive);
        } else {
            int regular = S_ISREG(st.st_mode);
            if (S_ISLNK(st.st_mode)) {
                /* a link counts when it leads to a regular file; links to
                 * folders are not followed, dangling links are nothing */
                struct stat tgt;
                regular = fstatat(dirfd(d), name, &tgt, 0) == 0 && S_ISREG(tgt.st_mode);
            }
            if (regular && ct_is_audio_name(name)) s = cand_push(c, root, sub);
        }
        free(sub);
        if (s != CT_OK) break;
    }
    closedir(d);
    free(dir_path);
    return s;
}

static int cand_cmp(const void *a, const void *b) {
    const cand *x = a, *y = b;
    int r = strcmp(x->key, y->key);
    return r ? r : strcmp(x->path, y->path);
}

/* ---- the seen-set (open addressing over canonical paths) ---------------- */

typedef struct seen_set {
    const char **slot;
    size_t cap, n;
} seen_set;

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* 1 if inserted, 0 if present, -1 out of memory. */
static int seen_insert(seen_set *st, const char *s) {
    if ((st->n + 1) * 2 > st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 256;
        const char **slot = calloc(cap, sizeof *slot);
        if (!slot) return -1;
        for (size_t i = 0; i < st->cap; i++) {
            if (!st->slot[i]) continue;
            size_t j = hash_str(st->slot[i]) & (cap - 1);
            while (slot[j]) j = (j + 1) & (cap - 1);
            slot[j] = st->slot[i];
        }
        free(st->slot);
        st->slot = slot;
        st->cap = cap;
    }
    size_t j = hash_str(s) & (st->cap - 1);
    while (st->slot[j]) {
        if (strcmp(st->slot[j], s) == 0) return 0;
        j = (j + 1) & (st->cap - 1);
    }
    st->slot[j] = s;
    st->n++;
    return 1;
}

/* ---- the entry point ---------------------------------------------------- */

static int blank(const char *s) {
    for (; *s; s++)
        if (!(*s == ' ' || (*s >= '\t' && *s <= '\r') || (*s >= 0x1c && *s <= 0x1f))) return 0;
    return 1;
}

void ct_input_list_free(ct_input_list *l) {
    if (!l) return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->files[i].path);
        free(l->files[i].relative);
    }
    free(l->files);
    l->files = NULL;
    l->n = 0;
}

static ct_status push_result(ct_input_list *out, size_t *cap, seen_set *seen, char *canonical,
                             const char *relative) {
    if (out->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        ct_input_file *f = realloc(out->files, nc * sizeof *f);
        if (!f) {
            free(canonical);
            return ct_fail(CT_ERR_OOM, "input discovery: out of memory");
        }
        out->files = f;
        *cap = nc;
    }
    char *rel = dup_or_null(relative);
    if (!rel) {
        free(canonical);
        return ct_fail(CT_ERR_OOM, "input discovery: out of memory");
    }
    out->files[out->n].path = canonical;
    out->files[out->n].relative = rel;
    int ins = seen_insert(seen, canonical);
    if (ins < 0) {
        free(canonical);
        free(rel);
        return ct_fail(CT_ERR_OOM, "input discovery: out of memory");
    }
    if (ins == 0) { /* a duplicate: the first occurrence stays */
        free(canonical);
        free(rel);
        return CT_OK;
    }
    out->n++;
    return CT_OK;
}

static ct_status discover_one(const char *raw, int recursive, ct_input_list *out, size_t *cap,
                              seen_set *seen) {
    char *expanded = NULL;
    CT_TRY(ct_path_expand(raw, &expanded));
    char *source = realpath(expanded, NULL);
    if (!source) {
        int e = errno;
        ct_status s = e == ENOENT ? ct_fail(CT_ERR_NOT_FOUND, "Input does not exist: %s", expanded)
                      : e == ELOOP ? ct_fail(CT_ERR_INVALID_ARG, "Invalid input path \"%s\": Symlink loop", raw)
                                   : ct_fail(CT_ERR_IO, "Invalid input path \"%s\": %s", raw, strerror(e));
        free(expanded);
        return s;
    }
    free(expanded);
    struct stat st;
    if (stat(source, &st) != 0) {
        ct_status s = ct_fail(CT_ERR_IO, "Cannot inspect input %s: %s", source, strerror(errno));
        free(source);
        return s;
    }
    if (S_ISREG(st.st_mode)) {
        const char *base = strrchr(source, '/');
        base = base ? base + 1 : source;
        char *b = dup_or_null(base);
        if (!b) {
            free(source);
            return ct_fail(CT_ERR_OOM, "input discovery: out of memory");
        }
        ct_status s = push_result(out, cap, seen, source, b);
        free(b);
        return s;
    }
    if (!S_ISDIR(st.st_mode)) {
        ct_status s = ct_fail(CT_ERR_INVALID_ARG, "Input is not a regular file or directory: %s", source);
        free(source);
        return s;
    }
    cand_vec c = {0};
    ct_status s = walk(&c, source, "", recursive);
    if (s == CT_OK && c.n > 1) qsort(c.v, c.n, sizeof *c.v, cand_cmp);
    for (size_t i = 0; s == CT_OK && i < c.n; i++) {
        char *canonical = realpath(c.v[i].path, NULL);
        if (!canonical) {
            int e = errno;
            s = ct_fail(CT_ERR_IO, "Cannot access input %s: %s", c.v[i].path,
                        e == ELOOP ? "Symlink loop" : strerror(e));
            break;
        }
        s = push_result(out, cap, seen, canonical, c.v[i].relative);
    }
    cand_vec_free(&c);
    free(source);
    return s;
}

ct_status ct_discover_inputs(const char *const *paths, size_t n, int recursive, ct_input_list *out) {
    out->files = NULL;
    out->n = 0;
    if (n == 0) return ct_fail(CT_ERR_INVALID_ARG, "audio must contain at least one path");
    for (size_t i = 0; i < n; i++) {
        if (!paths[i] || blank(paths[i]))
            return ct_fail(CT_ERR_INVALID_ARG, "audio[%zu] must not be empty", i);
        if (!ct_utf8_valid(paths[i]))
            return ct_fail(CT_ERR_INVALID_ARG, "audio[%zu] path must contain valid UTF-8", i);
    }
    size_t cap = 0;
    seen_set seen = {0};
    ct_status s = CT_OK;
    for (size_t i = 0; s == CT_OK && i < n; i++) s = discover_one(paths[i], recursive, out, &cap, &seen);
    free(seen.slot);
    if (s == CT_OK && out->n == 0)
        s = ct_fail(CT_ERR_NOT_FOUND, "No audio files found in the supplied inputs.");
    if (s != CT_OK) ct_input_list_free(out);
    return s;
}
