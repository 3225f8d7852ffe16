/* text_internal.h — code point buffers shared by text.c and romanize.c. */
#ifndef CT_ALIGN_TEXT_INTERNAL_H
#define CT_ALIGN_TEXT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

typedef struct ct_cps {
    uint32_t *v;
    size_t n, cap;
} ct_cps;

ct_status ct_cps_reserve(ct_cps *s, size_t n);
ct_status ct_cps_push(ct_cps *s, uint32_t c);
void ct_cps_free(ct_cps *s);
ct_status ct_cps_from_utf8(ct_cps *s, const char *text, size_t len);
ct_status ct_cps_to_utf8(const ct_cps *s, char **out);
ct_status ct_align_normalize_cps(const char *text, size_t len, ct_cps *s);

#endif
