/* fuzz_paths.c — libFuzzer target for the path text handling of discovery,
 * planning and locks: Ruby-style expansion and lexical cleaning
 * (ct_path_expand), UTF-8 validation and case folding, extension parsing
 * and the lock-name lower-casing, on arbitrary bytes. Checks the cleaned
 * path's invariants (absolute, no empty, "." or ".." segment, no trailing
 * slash) and traps on a violation. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "output/lock.h"
#include "pipeline/discover.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_clean(const char *p) {
    size_t n = strlen(p);
    if (n == 0 || p[0] != '/') __builtin_trap();
    if (n > 1 && p[n - 1] == '/') __builtin_trap();
    for (const char *s = p + 1; n > 1 && *s;) {
        const char *e = strchr(s, '/');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == 0 || (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.')) __builtin_trap();
        s += len + (e ? 1 : 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 2);
    if (!s) return 0;
    /* an absolute path, so neither the working directory nor HOME matter */
    s[0] = '/';
    memcpy(s + 1, data, size);
    s[size + 1] = '\0';
    char *e = NULL;
    if (ct_path_expand(s, &e) == CT_OK) {
        check_clean(e);
        char *again = NULL;
        if (ct_path_expand(e, &again) != CT_OK || strcmp(again, e) != 0) __builtin_trap(); /* idempotent */
        free(again);
    }
    free(e);
    const char *body = s + 1;
    int valid = ct_utf8_valid(body);
    char *f = ct_utf8_casefold(body);
    if (valid && strlen(body) == size && !f) __builtin_trap();
    free(f);
    const char *base = strrchr(body, '/');
    base = base ? base + 1 : body;
    const char *ext = ct_path_extname(base);
    if (ext && (*ext != '.' || ext < base)) __builtin_trap();
    (void)ct_is_audio_name(base);
    char name[70];
    if (ct_output_lock_name(body, name) == CT_OK && strlen(name) != 69) __builtin_trap();
    free(s);
    return 0;
}
