/* plan.c — output planning (plan.h): output root and per-file parents
 * (created, resolved, kept inside the root), stems, output and state paths,
 * and the refusals of PRODUCT-DETAILS §12 with their messages. Outputs and
 * reserved paths are checked with lstat only; nothing is opened or locked
 * here. Manifest verification (--existing skip) is the pipeline's, later. */
#include "pipeline/plan.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"

static const char *const k_ext[CT_FORMAT_COUNT] = {"txt", "srt", "vtt", "json"};

const char *ct_plan_format_ext(ct_format f) {
    return (unsigned)f < CT_FORMAT_COUNT ? k_ext[f] : "?";
}

static char *xasprintf(const char *fmt, ...) CT_PRINTF(1, 2);
static char *xasprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    return s;
}

/* ---- a string → owner map (open addressing; keys borrowed) ------------- */

typedef struct smap_entry {
    const char *key;
    size_t owner; /* index of the planned file */
    int kind;     /* 0 output, 1 state marker, 2 ASR checkpoint, 3 input */
} smap_entry;

typedef struct smap {
    smap_entry *e;
    size_t cap, n;
} smap;

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static const smap_entry *smap_get(const smap *m, const char *key) {
    if (!m->cap) return NULL;
    for (size_t j = hash_str(key) & (m->cap - 1); m->e[j].key; j = (j + 1) & (m->cap - 1))
        if (strcmp(m->e[j].key, key) == 0) return &m->e[j];
    return NULL;
}

static ct_status smap_put(smap *m, const char *key, size_t owner, int kind) {
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        smap_entry *e = calloc(cap, sizeof *e);
        if (!e) return ct_fail(CT_ERR_OOM, "Cannot prepare output paths: out of memory");
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->e[i].key) continue;
            size_t j = hash_str(m->e[i].key) & (cap - 1);
            while (e[j].key) j = (j + 1) & (cap - 1);
            e[j] = m->e[i];
        }
        free(m->e);
        m->e = e;
        m->cap = cap;
    }
    size_t j = hash_str(key) & (m->cap - 1);
    while (m->e[j].key) j = (j + 1) & (m->cap - 1);
    m->e[j] = (smap_entry){key, owner, kind};
    m->n++;
    return CT_OK;
}

/* ---- helpers ----------------------------------------------------------- */

/* 0 missing, 1 regular file, -1 something else (symlink, folder, FIFO, ...),
 * -2 an lstat error (errno kept). */
static int entry_kind(const char *p) {
    struct stat st;
    if (lstat(p, &st) != 0) return errno == ENOENT || errno == ENOTDIR ? 0 : -2;
    return S_ISREG(st.st_mode) ? 1 : -1;
}

static int inside(const char *root, const char *p) {
    size_t n = strlen(root);
    if (n == 1) return p[0] == '/'; /* root "/" holds everything */
    return strncmp(root, p, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

static void planned_free(ct_planned_file *f) {
    free(f->source);
    free(f->relative);
    free(f->parent);
    free(f->stem);
    free(f->identity);
    for (int i = 0; i < CT_FORMAT_COUNT; i++) {
        free(f->output_names[i]);
        free(f->output_paths[i]);
    }
    free(f->manifest_name);
    free(f->manifest_path);
    free(f->checkpoint_name);
    free(f->checkpoint_path);
}

void ct_plan_free(ct_plan *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) planned_free(&p->files[i]);
    free(p->files);
    free(p->output_root);
    free(p->profile_path);
    memset(p, 0, sizeof *p);
}

/* mkdir -p of a path whose existing part is already canonical, one
 * component at a time relative to the opened parent, never following a
 * symlink (O_NOFOLLOW): a link swapped in meanwhile cannot make us create
 * folders outside the root (§4.1's mkdirat rule). 0777 & ~umask. */
static ct_status mkdirs_nofollow(const char *abs) {
    int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ct_fail(CT_ERR_IO, "Cannot prepare output paths: /: %s", strerror(errno));
    ct_status s = CT_OK;
    const char *p = abs;
    char comp[NAME_MAX + 1];
    while (s == CT_OK && *p) {
        while (*p == '/') p++;
        size_t len = strcspn(p, "/");
        if (len == 0) break;
        if (len > NAME_MAX) {
            s = ct_fail(CT_ERR_IO, "Cannot prepare output paths: %s: %s", abs, strerror(ENAMETOOLONG));
            break;
        }
        memcpy(comp, p, len);
        comp[len] = '\0';
        p += len;
        int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT) {
            if (mkdirat(fd, comp, 0777) != 0 && errno != EEXIST) {
                s = ct_fail(CT_ERR_IO, "Cannot prepare output paths: %s: cannot create %s: %s", abs, comp, strerror(errno));
                break;
            }
            next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (next < 0) {
            s = ct_fail(CT_ERR_IO, "Cannot prepare output paths: %s: %s: %s", abs, comp,
                        errno == ELOOP ? "a symbolic link appeared while creating the folder" : strerror(errno));
            break;
        }
        close(fd);
        fd = next;
    }
    close(fd);
    return s;
}

/* Resolve a supplied parent folder: inside the root before and after it is
 * created (a symlinked sub-folder pointing out of the root is refused). */
static ct_status bind_parent(const char *supplied, const char *root, char **out, struct stat *st) {
    *out = NULL;
    char *loose = NULL;
    ct_status s = ct_path_resolve_loose(supplied, &loose);
    if (s != CT_OK) return ct_fail_wrap(CT_ERR_IO, "Cannot prepare output paths: %s", supplied);
    if (root && !inside(root, loose)) {
        s = ct_fail(CT_ERR_INVALID_ARG, "Output directory escapes output root: %s -> %s", supplied, loose);
        free(loose);
        return s;
    }
    s = mkdirs_nofollow(loose);
    if (s != CT_OK) {
        free(loose);
        return s;
    }
    char *real = realpath(loose, NULL);
    free(loose);
    if (!real) return ct_fail(CT_ERR_IO, "Cannot prepare output paths: %s: %s", supplied, strerror(errno));
    if (root && !inside(root, real)) {
        s = ct_fail(CT_ERR_INVALID_ARG, "Output directory escapes output root: %s -> %s", supplied, real);
        free(real);
        return s;
    }
    if (stat(real, st) != 0 || !S_ISDIR(st->st_mode)) {
        s = ct_fail(CT_ERR_IO, "Cannot prepare output paths: %s: not a directory", real);
        free(real);
        return s;
    }
    *out = real;
    return CT_OK;
}

/* The profile: its own path must not be a link or non-regular; its folder
 * is created; the key compared with inputs/outputs is folder-resolved. */
static ct_status plan_profile(const char *raw, char **out) {
    *out = NULL;
    if (!ct_utf8_valid(raw)) return ct_fail(CT_ERR_INVALID_ARG, "profile_json path must contain valid UTF-8");
    char *expanded = NULL;
    CT_TRY(ct_path_expand(raw, &expanded));
    ct_status s = CT_OK;
    char *slash = strrchr(expanded, '/');
    char *dir = slash == expanded ? strdup("/") : strndup(expanded, (size_t)(slash - expanded));
    char *resolved_dir = NULL;
    if (!dir || !*(slash + 1)) {
        s = ct_fail(CT_ERR_INVALID_ARG, "Profile path is not a regular file: %s", expanded);
        goto done;
    }
    if (ct_fs_mkdirs(dir) != CT_OK) {
        s = ct_fail(CT_ERR_IO, "Cannot prepare profile output path %s: %s", expanded, ct_last_error());
        goto done;
    }
    resolved_dir = realpath(dir, NULL);
    if (!resolved_dir) {
        s = ct_fail(CT_ERR_IO, "Cannot prepare profile output path %s: %s", expanded, strerror(errno));
        goto done;
    }
    *out = xasprintf("%s%s%s", resolved_dir, strcmp(resolved_dir, "/") ? "/" : "", slash + 1);
    if (!*out) {
        s = ct_fail(CT_ERR_OOM, "Cannot prepare profile output path %s: out of memory", expanded);
        goto done;
    }
    int k = entry_kind(*out);
    if (k < 0) {
        s = k == -1 ? ct_fail(CT_ERR_INVALID_ARG, "Profile path is not a regular file: %s", *out)
                    : ct_fail(CT_ERR_IO, "Cannot prepare profile output path %s: %s", *out, strerror(errno));
        free(*out);
        *out = NULL;
    }
done:
    free(resolved_dir);
    free(dir);
    free(expanded);
    return s;
}

/* stem = basename(relative) minus its last extension */
static char *make_stem(const char *relative) {
    const char *base = strrchr(relative, '/');
    base = base ? base + 1 : relative;
    const char *ext = ct_path_extname(base);
    return ext ? strndup(base, (size_t)(ext - base)) : strdup(base);
}

/* Fill f's paths (no checks yet). */
static ct_status fill_paths(ct_planned_file *f, const ct_plan_options *o) {
    const char *sep = strcmp(f->parent, "/") ? "/" : "";
    f->identity = xasprintf("%s%s%s", f->parent, sep, f->stem);
    f->manifest_name = xasprintf(".%s.cohere-transcribe.manifest.json", f->stem);
    f->checkpoint_name = xasprintf(".%s.cohere-transcribe.asr.json", f->stem);
    if (!f->identity || !f->manifest_name || !f->checkpoint_name)
        return ct_fail(CT_ERR_OOM, "Cannot prepare output paths: out of memory");
    f->manifest_path = xasprintf("%s%s%s", f->parent, sep, f->manifest_name);
    f->checkpoint_path = xasprintf("%s%s%s", f->parent, sep, f->checkpoint_name);
    if (!f->manifest_path || !f->checkpoint_path)
        return ct_fail(CT_ERR_OOM, "Cannot prepare output paths: out of memory");
    int seen[CT_FORMAT_COUNT] = {0};
    for (int i = 0; i < o->n_formats; i++) {
        ct_format fmt = o->formats[i];
        if ((unsigned)fmt >= CT_FORMAT_COUNT)
            return ct_fail(CT_ERR_INVALID_ARG, "output planning: unknown format %d", (int)fmt);
        if (seen[fmt]) continue;
        seen[fmt] = 1;
        int k = f->n_outputs++;
        f->formats[k] = fmt;
        f->output_names[k] = xasprintf("%s.%s", f->stem, k_ext[fmt]);
        if (!f->output_names[k]) return ct_fail(CT_ERR_OOM, "Cannot prepare output paths: out of memory");
        f->output_paths[k] = xasprintf("%s%s%s", f->parent, sep, f->output_names[k]);
        if (!f->output_paths[k]) return ct_fail(CT_ERR_OOM, "Cannot prepare output paths: out of memory");
    }
    return CT_OK;
}

static const char *const k_reserved_label[3] = {"", "State marker", "ASR checkpoint"};
static const char *const k_reserved_profile[3] = {"", "state marker", "asr checkpoint"};

/* The checks of one planned file against everything planned before it. */
static ct_status check_file(const ct_plan *p, size_t idx, smap *claims) {
    const ct_planned_file *f = &p->files[idx];
    for (int i = 0; i < f->n_outputs; i++) {
        const char *out = f->output_paths[i];
        int k = entry_kind(out);
        if (k == -1) return ct_fail(CT_ERR_INVALID_ARG, "Output path is not a regular file: %s", out);
        if (k == -2) return ct_fail(CT_ERR_IO, "Cannot prepare output paths: %s: %s", out, strerror(errno));
        const smap_entry *e = smap_get(claims, out);
        if (e && e->kind == 3)
            return ct_fail(CT_ERR_INVALID_ARG, "Output path for %s collides with an input: %s", f->source, out);
        if (e && e->kind == 0 && e->owner != idx)
            return ct_fail(CT_ERR_INVALID_ARG, "Output collision between %s and %s: %s",
                           p->files[e->owner].source, f->source, out);
        if (e && (e->kind == 1 || e->kind == 2))
            return ct_fail(CT_ERR_INVALID_ARG, "%s collides with an input or output: %s",
                           k_reserved_label[e->kind], out);
        if (p->profile_path && strcmp(p->profile_path, out) == 0)
            return ct_fail(CT_ERR_INVALID_ARG, "Profile path collides with a transcript output: %s", out);
        if (!e) CT_TRY(smap_put(claims, out, idx, 0));
    }
    const char *reserved[3] = {NULL, f->manifest_path, f->checkpoint_path};
    for (int kind = 1; kind <= 2; kind++) {
        const char *r = reserved[kind];
        int k = entry_kind(r);
        if (k == -1) return ct_fail(CT_ERR_INVALID_ARG, "%s is not a regular file: %s", k_reserved_label[kind], r);
        if (k == -2) return ct_fail(CT_ERR_IO, "Cannot prepare output paths: %s: %s", r, strerror(errno));
        const smap_entry *e = smap_get(claims, r);
        /* the same stem in the same folder was an output collision above, so
         * a claim here is an input or another set's transcript output */
        if (e && (e->kind == 3 || e->kind == 0))
            return ct_fail(CT_ERR_INVALID_ARG, "%s collides with an input or output: %s", k_reserved_label[kind], r);
        if (p->profile_path && strcmp(p->profile_path, r) == 0)
            return ct_fail(CT_ERR_INVALID_ARG, "Profile path collides with a reserved %s: %s",
                           k_reserved_profile[kind], r);
        if (!e) CT_TRY(smap_put(claims, r, idx, kind));
    }
    return CT_OK;
}

/* The original lists every existing output; a message must fit the error
 * buffer with its advice line, so the first CT_PLAN_LIST_MAX are named and
 * the rest counted (docs/USAGE.md, differences). */
#define CT_PLAN_LIST_MAX 10

static ct_status existing_error(const ct_plan *p) {
    size_t total = 0, shown = 0;
    char list[2048];
    size_t w = 0;
    list[0] = 0;
    for (size_t i = 0; i < p->n; i++)
        for (int j = 0; j < p->files[i].n_outputs; j++) {
            if (!p->files[i].output_exists[j]) continue;
            total++;
            const char *path = p->files[i].output_paths[j];
            if (shown < CT_PLAN_LIST_MAX && w + strlen(path) + 4 < sizeof list) {
                w += (size_t)snprintf(list + w, sizeof list - w, "\n  %s", path);
                shown++;
            }
        }
    if (total == 0) return CT_OK;
    char more[64] = "";
    if (total > shown) snprintf(more, sizeof more, "\n  ... and %zu more", total - shown);
    return ct_fail(CT_ERR_INVALID_ARG, "Output already exists:%s%s\nUse existing: 'overwrite' or existing: 'skip'.",
                   list, more);
}

static ct_status plan_all(const ct_input_list *in, const ct_plan_options *o, ct_plan *p, smap *claims) {
    if (o->n_formats < 1) return ct_fail(CT_ERR_INVALID_ARG, "output planning: no output format requested");
    if (o->output_dir) {
        if (!ct_utf8_valid(o->output_dir))
            return ct_fail(CT_ERR_INVALID_ARG, "output_dir path must contain valid UTF-8");
        char *expanded = NULL;
        CT_TRY(ct_path_expand(o->output_dir, &expanded));
        ct_status s = ct_fs_mkdirs(expanded);
        if (s == CT_OK && !(p->output_root = realpath(expanded, NULL)))
            s = ct_fail(CT_ERR_IO, "%s: %s", expanded, strerror(errno));
        free(expanded);
        if (s != CT_OK) return ct_fail_wrap(CT_ERR_IO, "Cannot prepare output paths");
    }
    if (o->profile_json) CT_TRY(plan_profile(o->profile_json, &p->profile_path));
    for (size_t i = 0; i < in->n; i++) {
        CT_TRY(smap_put(claims, in->files[i].path, i, 3));
        if (p->profile_path && strcmp(p->profile_path, in->files[i].path) == 0)
            return ct_fail(CT_ERR_INVALID_ARG, "Profile path collides with an input audio file: %s", p->profile_path);
    }
    p->files = calloc(in->n ? in->n : 1, sizeof *p->files);
    if (!p->files) return ct_fail(CT_ERR_OOM, "Cannot prepare output paths: out of memory");
    char *last_supplied = NULL; /* inputs come sorted: consecutive files share parents */
    const ct_planned_file *last = NULL;
    ct_status s = CT_OK;
    for (size_t i = 0; s == CT_OK && i < in->n; i++) {
        ct_planned_file *f = &p->files[i];
        p->n = i + 1;
        const ct_input_file *src = &in->files[i];
        f->source = strdup(src->path);
        f->relative = strdup(src->relative);
        f->stem = make_stem(src->relative);
        char *supplied = NULL;
        if (p->output_root) {
            const char *slash = strrchr(src->relative, '/');
            supplied = slash ? xasprintf("%s/%.*s", p->output_root, (int)(slash - src->relative), src->relative)
                             : strdup(p->output_root);
        } else {
            const char *slash = strrchr(src->path, '/');
            supplied = slash == src->path ? strdup("/") : strndup(src->path, (size_t)(slash - src->path));
        }
        if (!f->source || !f->relative || !f->stem || !supplied) {
            free(supplied);
            s = ct_fail(CT_ERR_OOM, "Cannot prepare output paths: out of memory");
            break;
        }
        if (last && strcmp(last_supplied, supplied) == 0) {
            f->parent = strdup(last->parent);
            f->parent_dev = last->parent_dev;
            f->parent_ino = last->parent_ino;
            free(supplied);
            if (!f->parent) s = ct_fail(CT_ERR_OOM, "Cannot prepare output paths: out of memory");
        } else {
            struct stat st;
            s = bind_parent(supplied, p->output_root, &f->parent, &st);
            free(last_supplied);
            last_supplied = supplied;
            if (s == CT_OK) {
                f->parent_dev = (uint64_t)st.st_dev;
                f->parent_ino = (uint64_t)st.st_ino;
                last = f;
            } else {
                last = NULL;
            }
        }
        if (s == CT_OK) s = fill_paths(f, o);
        if (s == CT_OK) s = check_file(p, i, claims);
        for (int j = 0; s == CT_OK && j < f->n_outputs; j++) {
            f->output_exists[j] = entry_kind(f->output_paths[j]) == 1;
            f->n_existing += f->output_exists[j];
        }
    }
    free(last_supplied);
    if (s == CT_OK && o->existing == CT_EXISTING_ERROR) s = existing_error(p);
    return s;
}

ct_status ct_plan_outputs(const ct_input_list *in, const ct_plan_options *o, ct_plan *out) {
    memset(out, 0, sizeof *out);
    smap claims = {0};
    ct_status s = plan_all(in, o, out, &claims);
    free(claims.e);
    if (s != CT_OK) ct_plan_free(out);
    return s;
}

ct_status ct_plan_recheck(const ct_plan *p) {
    for (size_t i = 0; i < p->n; i++) {
        const ct_planned_file *f = &p->files[i];
        if (i > 0 && strcmp(f->parent, p->files[i - 1].parent) == 0) continue;
        char *real = realpath(f->parent, NULL);
        struct stat st;
        int same = real && strcmp(real, f->parent) == 0 && stat(real, &st) == 0 && S_ISDIR(st.st_mode) &&
                   (uint64_t)st.st_dev == f->parent_dev && (uint64_t)st.st_ino == f->parent_ino;
        free(real);
        if (!same)
            return ct_fail(CT_ERR_IO, "Publication parent identity changed between planning passes: %s", f->parent);
    }
    return CT_OK;
}
