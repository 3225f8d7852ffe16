/* str.h — small string predicates the parsers and path checks share. */
#ifndef CT_CORE_STR_H
#define CT_CORE_STR_H

#include <string.h>

/* 1 if s ends with suffix (every string ends with ""), else 0. */
static inline int ct_str_ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

#endif
