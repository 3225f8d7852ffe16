/* args.c — the option parser of args.h: classify every token as argparse
 * does (option, positional, `--`), resolve prefixes, then walk the tokens in
 * order writing values into the caller's struct; plus the --help layout and
 * Python's int()/float() syntax. Nothing here prints: the caller gets the
 * action and the message. */
#include "common/args.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ---- numbers: Python int() / float() syntax ------------------------------ */

/* Python's str.isspace() set (PRODUCT-DETAILS, conventions). */
static int py_space(int32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

static int is_nd(int32_t c) {
    return c >= 0 && c <= 0x10FFFF && utf8proc_get_property(c)->category == UTF8PROC_CATEGORY_ND;
}

/* The value of a decimal digit of any script, or -1. Unicode encodes every
 * Nd digit in runs of ten, 0 to 9, so a digit's value is its distance from
 * the start of its contiguous Nd range, modulo 10 (adjacent runs, like the
 * mathematical digits, are still multiples of ten). */
static int digit_value(int32_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c < 0x80 || !is_nd(c)) return -1;
    int32_t start = c;
    while (start > 0 && is_nd(start - 1)) start--;
    return (int)((c - start) % 10);
}

/* s with surrounding Python whitespace removed and every decimal digit made
 * ASCII, into buf; 0 when s holds another non-ASCII character, is not UTF-8,
 * or does not fit. */
static int numeric_ascii(const char *s, char *buf, size_t cap) {
    const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
    utf8proc_ssize_t left = (utf8proc_ssize_t)strlen(s);
    size_t n = 0, last_non_space = 0;
    int started = 0;
    while (left > 0) {
        int32_t c;
        utf8proc_ssize_t k = utf8proc_iterate(p, left, &c);
        if (k <= 0) return 0;
        p += k;
        left -= k;
        /* int()/float() strip ASCII " \t\n\v\f\r" and the non-ASCII
         * Python whitespace (U+001C..U+001F are not stripped there) */
        if (c < 0x80 ? (c == ' ' || (c >= 0x09 && c <= 0x0D)) : py_space(c)) {
            if (started && n + 1 < cap) buf[n++] = ' '; /* kept only between characters */
            continue;
        }
        int ch;
        if (c < 0x80) {
            ch = (int)c;
        } else {
            int v = digit_value(c);
            if (v < 0) return 0;
            ch = '0' + v;
        }
        if (n + 1 >= cap) return 0;
        buf[n++] = (char)ch;
        last_non_space = n;
        started = 1;
    }
    buf[last_non_space] = '\0';
    return 1;
}

/* digit ('_'? digit)* at *p; advances; the underscores are dropped into out. */
static int digitpart(const char **p, char *out, size_t *n) {
    const char *s = *p;
    if (*s < '0' || *s > '9') return 0;
    while (1) {
        out[(*n)++] = *s++;
        if (*s >= '0' && *s <= '9') continue;
        if (*s == '_' && s[1] >= '0' && s[1] <= '9') {
            s++;
            continue;
        }
        break;
    }
    *p = s;
    return 1;
}

int ct_args_parse_int(const char *s, int *out) {
    char buf[512], dig[512];
    if (!numeric_ascii(s, buf, sizeof buf)) return 0;
    const char *p = buf;
    int neg = 0;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    size_t n = 0;
    if (!digitpart(&p, dig, &n) || *p) return 0;
    long long v = 0;
    for (size_t i = 0; i < n; i++) {
        v = v * 10 + (dig[i] - '0');
        if (v > (long long)INT_MAX + 1) v = (long long)INT_MAX + 1; /* saturate, keep scanning */
    }
    if (neg) v = -v;
    *out = v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v;
    return 1;
}

static int ieq(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        int x = *a >= 'A' && *a <= 'Z' ? *a + 32 : *a;
        if (x != *b) return 0;
    }
    return *a == *b;
}

int ct_args_parse_float(const char *s, double *out) {
    char buf[512], num[520];
    if (!numeric_ascii(s, buf, sizeof buf)) return 0;
    const char *p = buf;
    int neg = 0;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    if (ieq(p, "inf") || ieq(p, "infinity")) {
        *out = neg ? -INFINITY : INFINITY;
        return 1;
    }
    if (ieq(p, "nan")) {
        *out = neg ? -NAN : NAN;
        return 1;
    }
    size_t n = 0;
    num[n++] = neg ? '-' : '+';
    int intpart = digitpart(&p, num, &n);
    if (*p == '.') {
        num[n++] = *p++;
        int frac = digitpart(&p, num, &n);
        if (!intpart && !frac) return 0;
    } else if (!intpart) {
        return 0;
    }
    if (*p == 'e' || *p == 'E') {
        num[n++] = *p++;
        if (*p == '+' || *p == '-') num[n++] = *p++;
        if (!digitpart(&p, num, &n)) return 0;
    }
    if (*p) return 0;
    num[n] = '\0';
    errno = 0;
    /* The syntax is checked above; strtod only converts (overflow gives
     * ±inf and underflow 0 or a subnormal, as Python's float does). */
    *out = strtod(num, NULL);
    return 1;
}

/* One code point of s at *p that is a Unicode decimal digit. */
static int take_digit(const char **p) {
    int32_t c;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)*p, -1, &c);
    if (k <= 0 || digit_value(c) < 0) return 0;
    *p += k;
    return 1;
}

int ct_args_is_negative_number(const char *s) {
    if (s[0] != '-') return 0;
    const char *p = s + 1;
    int before = 0;
    while (take_digit(&p)) before++;
    if (!*p) return before > 0;
    if (*p != '.') return 0;
    p++;
    int after = 0;
    while (take_digit(&p)) after++;
    return !*p && after > 0;
}

/* ---- option lookup ------------------------------------------------------- */

int ct_args_lookup(const ct_args_spec *spec, const char *name, size_t len) {
    for (int i = 0; i < spec->n_options; i++) {
        const ct_arg_option *o = &spec->options[i];
        if ((strlen(o->name) == len && !strncmp(o->name, name, len)) ||
            (o->short_name && strlen(o->short_name) == len && !strncmp(o->short_name, name, len)))
            return i;
    }
    if (len < 2 || strncmp(name, "--", 2) != 0) return -1;
    int orig = -1, n_orig = 0, add = -1, n_add = 0;
    for (int i = 0; i < spec->n_options; i++) {
        const ct_arg_option *o = &spec->options[i];
        if (strncmp(o->name, name, len) != 0) continue;
        if (o->flags & CT_ARG_ADDITION) {
            add = i;
            n_add++;
        } else {
            orig = i;
            n_orig++;
        }
    }
    if (n_orig) return n_orig == 1 ? orig : -2;
    if (n_add) return n_add == 1 ? add : -2;
    return -1;
}

/* ---- token classes -------------------------------------------------------- */

enum { TOK_POS, TOK_DDASH, TOK_OPT, TOK_UNKNOWN };

typedef struct token {
    int cls;
    int extra;            /* a positional after the run: "unrecognized" */
    int opt;              /* TOK_OPT: option index */
    const char *explicit; /* TOK_OPT: the value after '=' (or after a short name), else NULL */
} token;

/* argparse's _parse_optional, in its order. 0, or -2 when ambiguous. */
static int classify(const ct_args_spec *spec, const char *s, token *t) {
    t->cls = TOK_POS;
    t->extra = 0;
    t->opt = -1;
    t->explicit = NULL;
    if (s[0] != '-') return 0;
    int i = ct_args_lookup(spec, s, strlen(s));
    if (i >= 0 && !strcmp(s, spec->options[i].name)) goto found;
    if (i >= 0 && spec->options[i].short_name && !strcmp(s, spec->options[i].short_name)) goto found;
    if (!s[1]) return 0; /* a lone '-' is a value */
    const char *eq = strchr(s, '=');
    if (s[1] == '-') {
        size_t len = eq ? (size_t)(eq - s) : strlen(s);
        i = ct_args_lookup(spec, s, len);
        if (i == -2) return -2;
        if (i >= 0) {
            t->explicit = eq ? eq + 1 : NULL;
            goto found;
        }
    } else {
        /* "-hX": a short option with text stuck to it */
        for (int k = 0; k < spec->n_options; k++) {
            const char *sn = spec->options[k].short_name;
            if (sn && !strncmp(s, sn, strlen(sn))) {
                i = k;
                t->explicit = s + strlen(sn) + (s[strlen(sn)] == '=');
                goto found;
            }
        }
    }
    if (ct_args_is_negative_number(s)) return 0;
    if (strchr(s, ' ')) return 0;
    t->cls = TOK_UNKNOWN;
    return 0;
found:
    t->cls = TOK_OPT;
    t->opt = i;
    return 0;
}

/* ---- messages -------------------------------------------------------------- */

static ct_args_action fail(ct_args_result *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
    r->action = CT_ARGS_ERROR;
    return CT_ARGS_ERROR;
}

/* Ruby's String#inspect for the common cases: quotes, backslashes and
 * control characters escaped, everything else as is. */
static void quote(const char *s, char *buf, size_t cap) {
    size_t n = 0;
    if (cap < 8) return;
    buf[n++] = '"';
    for (; *s && n + 6 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            buf[n++] = '\\';
            buf[n++] = (char)c;
        } else if (c == '\n') {
            buf[n++] = '\\', buf[n++] = 'n';
        } else if (c == '\t') {
            buf[n++] = '\\', buf[n++] = 't';
        } else if (c == '\r') {
            buf[n++] = '\\', buf[n++] = 'r';
        } else if (c < 0x20 || c == 0x7F) {
            n += (size_t)snprintf(buf + n, cap - n, "\\x%02X", c);
        } else {
            buf[n++] = (char)c;
        }
    }
    buf[n++] = '"';
    buf[n] = '\0';
}

static void choices_text(const ct_arg_option *o, char *buf, size_t cap) {
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < o->n_choices && n < cap; i++)
        if (!o->choices[i].extension)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", o->choices[i].name);
}

static int choice_value(const ct_arg_option *o, const char *v, int *out) {
    for (int i = 0; i < o->n_choices; i++)
        if (!strcmp(o->choices[i].name, v)) {
            *out = o->choices[i].value;
            return 1;
        }
    return 0;
}

/* ---- storing a value -------------------------------------------------------- */

#define FIELD(T, target, off) ((T *)((char *)(target) + (off)))

static ct_args_action store_value(const ct_args_spec *spec, const ct_arg_option *o, const char *typed,
                                  const char *v, void *target, ct_args_result *r) {
    char q[600];
    switch (o->kind) {
    case CT_ARG_STRING:
        *FIELD(const char *, target, o->offset) = v;
        return CT_ARGS_RUN;
    case CT_ARG_INT: {
        int x;
        if (!ct_args_parse_int(v, &x)) {
            quote(v, q, sizeof q);
            return fail(r, "invalid argument: invalid integer value: %s", q);
        }
        if ((o->flags & CT_ARG_ZERO_SET) && x == 0) x = -1;
        *FIELD(int, target, o->offset) = x;
        return CT_ARGS_RUN;
    }
    case CT_ARG_FLOAT: {
        double x;
        if (!ct_args_parse_float(v, &x)) {
            quote(v, q, sizeof q);
            return fail(r, "invalid argument: invalid float value: %s", q);
        }
        if ((o->flags & CT_ARG_ZERO_SET) && x == 0) x = -1;
        *FIELD(double, target, o->offset) = x;
        return CT_ARGS_RUN;
    }
    case CT_ARG_CHOICE: {
        int x;
        if (!choice_value(o, v, &x)) {
            char c[400];
            if (spec->plain_choice_errors)
                return typed ? fail(r, "invalid argument: %s", typed)
                             : fail(r, "invalid argument: %s %s", o->name, v);
            quote(v, q, sizeof q);
            choices_text(o, c, sizeof c);
            /* 0.1.3's wording, the option named twice (sic) */
            return fail(r, "invalid argument: %s %s: invalid choice %s; choose from %s", o->name,
                        o->name, q, c);
        }
        *FIELD(int, target, o->offset) = x;
        return CT_ARGS_RUN;
    }
    default:
        return fail(r, "internal error: %s takes no single value", o->name);
    }
}

/* CHOICE_LIST: values v[0..n), checked together (every unsupported one is
 * named, in the order given, once), then stored deduplicated in order. */
static ct_args_action store_list(const ct_arg_option *o, char *const *v, int n, void *target,
                                 ct_args_result *r) {
    char bad[CT_ARGS_ERROR_MAX];
    size_t nb = 0;
    bad[0] = '\0';
    for (int i = 0; i < n; i++) {
        int x;
        if (choice_value(o, v[i], &x)) continue;
        int dup = 0;
        for (int j = 0; j < i; j++) dup |= !strcmp(v[j], v[i]);
        if (!dup && nb < sizeof bad)
            nb += (size_t)snprintf(bad + nb, sizeof bad - nb, "%s%s", nb ? ", " : "", v[i]);
    }
    if (nb) return fail(r, "invalid argument: %s: %s", o->list_error ? o->list_error : "unsupported values", bad);
    int *arr = FIELD(int, target, o->offset);
    int *count = FIELD(int, target, o->count_offset);
    int k = 0;
    for (int i = 0; i < n; i++) {
        int x = 0, dup = 0;
        choice_value(o, v[i], &x);
        for (int j = 0; j < k; j++) dup |= arr[j] == x;
        if (!dup && k < o->n_choices) arr[k++] = x;
    }
    *count = k;
    return CT_ARGS_RUN;
}

/* ---- the parse ---------------------------------------------------------------- */

static ct_args_action parse(const ct_args_spec *spec, int argc, char *const *argv, void *target,
                            ct_args_result *r, token *tok) {
    int n = argc > 1 ? argc - 1 : 0;
    char *const *a = argv + 1;
    if (spec->n_options > CT_ARGS_MAX_OPTIONS) return fail(r, "internal error: too many options");

    /* Pass 1: classify every token (ambiguity is an error before anything
     * runs, as in argparse). */
    int ddash = 0, ca = -1, cb = -1, seen_a = 0, seen_b = 0;
    if (spec->conflict_a) ca = ct_args_lookup(spec, spec->conflict_a, strlen(spec->conflict_a));
    if (spec->conflict_b) cb = ct_args_lookup(spec, spec->conflict_b, strlen(spec->conflict_b));
    for (int i = 0; i < n; i++) {
        tok[i].extra = 0;
        if (ddash) {
            tok[i].cls = TOK_POS;
            continue;
        }
        if (!strcmp(a[i], "--")) {
            tok[i].cls = TOK_DDASH;
            ddash = 1;
            continue;
        }
        if (classify(spec, a[i], &tok[i]) == -2) return fail(r, "ambiguous option: %s", a[i]);
    }

    /* Pass 2: in order. */
    int run = 0; /* positional run: 0 not begun, 1 in it, 2 over */
    int first_unknown = -1, first_extra = -1;
    for (int i = 0; i < n; i++) {
        const token *t = &tok[i];
        if (t->cls == TOK_DDASH) {
            /* argparse: a "--" that cannot begin or continue the positional
             * run is itself left over */
            if (run == 2) {
                tok[i].extra = 1;
                if (first_extra < 0) first_extra = i;
            }
            continue;
        }
        if (t->cls == TOK_POS) {
            if (run < 2) {
                r->positionals[r->n_positionals++] = a[i];
                run = 1;
            } else {
                tok[i].extra = 1;
                if (first_extra < 0) first_extra = i;
            }
            continue;
        }
        if (run == 1) run = 2;
        if (t->cls == TOK_UNKNOWN) {
            if (first_unknown < 0) first_unknown = i;
            continue;
        }
        const ct_arg_option *o = &spec->options[t->opt];
        r->given[t->opt] = 1;
        /* the second of a conflicting pair is an error where it stands: after
         * both, even with --alignment none; a help before it wins */
        seen_a |= t->opt == ca;
        seen_b |= t->opt == cb;
        if (ca >= 0 && cb >= 0 && seen_a && seen_b)
            return fail(r, "invalid option: %s conflicts with %s", spec->conflict_a, spec->conflict_b);
        switch (o->kind) {
        case CT_ARG_HELP:
        case CT_ARG_VERSION:
        case CT_ARG_FLAG:
            if (t->explicit) return fail(r, "needless argument: %s", a[i]);
            if (o->kind == CT_ARG_HELP) return r->action = CT_ARGS_HELP;
            if (o->kind == CT_ARG_VERSION) return r->action = CT_ARGS_VERSION;
            *FIELD(int, target, o->offset) = o->flag_value;
            break;
        case CT_ARG_CHOICE_LIST: {
            if (t->explicit) {
                if (store_list(o, (char *const *)&t->explicit, 1, target, r) != CT_ARGS_RUN)
                    return CT_ARGS_ERROR;
                break;
            }
            int k = 0;
            while (i + 1 + k < n && tok[i + 1 + k].cls == TOK_POS)
                k++;
            if (!k) return fail(r, "missing argument: %s", o->name);
            if (store_list(o, a + i + 1, k, target, r) != CT_ARGS_RUN) return CT_ARGS_ERROR;
            i += k;
            break;
        }
        default: {
            const char *v = t->explicit, *typed = t->explicit ? a[i] : NULL;
            if (!v) {
                if (i + 1 >= n || tok[i + 1].cls != TOK_POS) return fail(r, "missing argument: %s", o->name);
                v = a[++i];
            }
            if (store_value(spec, o, typed, v, target, r) != CT_ARGS_RUN) return CT_ARGS_ERROR;
        }
        }
    }
    if (first_unknown >= 0) return fail(r, "invalid option: %s", a[first_unknown]);
    if (!spec->positional_name) {
        /* extras exist only after a run, so the run's first is the first */
        if (r->n_positionals)
            return fail(r, "invalid argument: unexpected positional argument: %s", r->positionals[0]);
        return r->action = CT_ARGS_RUN;
    }
    if (!r->n_positionals) return fail(r, "missing argument: %s", spec->positional_name);
    if (first_extra >= 0) {
        char buf[CT_ARGS_ERROR_MAX];
        size_t m = 0;
        buf[0] = '\0';
        /* named without a "--" left over, unless that is all there is */
        for (int pass = 0; pass < 2 && !m; pass++)
            for (int i = first_extra; i < n && m < sizeof buf; i++)
                if (tok[i].extra && (pass || tok[i].cls != TOK_DDASH))
                    m += (size_t)snprintf(buf + m, sizeof buf - m, "%s%s", m ? " " : "", a[i]);
        return fail(r, "invalid argument: unrecognized arguments: %s", buf);
    }
    return r->action = CT_ARGS_RUN;
}

ct_args_action ct_args_parse(const ct_args_spec *spec, int argc, char *const *argv, void *target,
                             ct_args_result *out) {
    memset(out, 0, sizeof *out);
    int n = argc > 1 ? argc - 1 : 0;
    token *tok = calloc((size_t)n + 1, sizeof *tok);
    out->positionals = calloc((size_t)n + 1, sizeof *out->positionals);
    ct_args_action act;
    if (!tok || !out->positionals)
        act = fail(out, "out of memory");
    else
        act = parse(spec, argc, argv, target, out, tok);
    free(tok);
    return act;
}

void ct_args_result_free(ct_args_result *r) {
    if (!r) return;
    free(r->positionals);
    r->positionals = NULL;
    r->n_positionals = 0;
}

/* ---- help ------------------------------------------------------------------------ */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void sb_add(sbuf *b, const char *s, size_t len) {
    if (b->oom) return;
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->n + len + 1 > cap) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = '\0';
}

static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

#define HELP_INDENT 4
#define HELP_WIDTH 32

char *ct_args_help_text(const ct_args_spec *spec) {
    sbuf b = {0};
    sb_str(&b, spec->usage);
    sb_str(&b, "\n\n");
    if (spec->description) {
        sb_str(&b, spec->description);
        sb_str(&b, "\n\n");
    }
    const char *group = NULL;
    for (int i = 0; i < spec->n_options; i++) {
        const ct_arg_option *o = &spec->options[i];
        if (o->group && (!group || strcmp(group, o->group) != 0)) {
            sb_str(&b, "\n");
            sb_str(&b, o->group);
            sb_str(&b, ":\n");
        }
        group = o->group;
        /* OptionParser's switch field: "-h, --help" or 4 spaces then the
         * long name, then the metavar */
        char left[256];
        snprintf(left, sizeof left, "%s%s%s%s%s", o->short_name ? o->short_name : "    ",
                 o->short_name ? ", " : "", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
        char line[1024];
        size_t len = strlen(left);
        if (len > HELP_WIDTH)
            snprintf(line, sizeof line, "%*s%s\n%*s %s\n", HELP_INDENT, "", left, HELP_INDENT + HELP_WIDTH, "",
                     o->help);
        else
            snprintf(line, sizeof line, "%*s%-*s %s\n", HELP_INDENT, "", HELP_WIDTH, left, o->help);
        sb_str(&b, line);
    }
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
