/* uroman_table.h — the romanisation data generated from uroman 1.3.1.1
 * (src/align/uroman_table.c, made by tools/reference/make_uroman_table.py):
 * per-code-point letters and the context rules whose letters differ from
 * those of their characters taken one by one. */
#ifndef CT_ALIGN_UROMAN_TABLE_H
#define CT_ALIGN_UROMAN_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* Rule conditions (uroman's rule flags). */
#define CT_UR_START_ONLY 1u
#define CT_UR_NOT_START 2u
#define CT_UR_END_ONLY 4u
#define CT_UR_NOT_END 8u
#define CT_UR_WHOLE_WORD 16u
/* Language bits of a rule limited to languages (0 = every language). */
#define CT_UR_LANG_ARA 1u
#define CT_UR_LANG_ENG 2u

#define CT_UROMAN_MAX_RULE 4

/* Letters ([a-z'] only, "" for none) of every code point first..last. */
typedef struct ct_uroman_block {
    uint32_t first, last;
    const char *const *letters;
} ct_uroman_block;

typedef struct ct_uroman_rule {
    uint32_t s[CT_UROMAN_MAX_RULE];
    int len;
    const char *letters;
    unsigned flags, langs;
    int n_restr; /* uroman's priority among rules for one string: highest valid wins */
} ct_uroman_rule;

extern const ct_uroman_block ct_uroman_blocks[]; /* sorted, disjoint */
extern const size_t ct_uroman_n_blocks;
extern const ct_uroman_rule ct_uroman_rules[]; /* grouped by source string */
extern const size_t ct_uroman_n_rules;

#endif
