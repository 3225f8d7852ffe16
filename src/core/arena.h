/* arena.h — bump allocator for per-batch memory.
 *
 * A batch's activations and scratch come from one arena sized up front; ops
 * never malloc. ct_arena_reset() releases everything at once for the next
 * batch. Allocation beyond the capacity fails with CT_ERR_OOM (it does not
 * grow) so memory use stays predictable; ct_arena_mark/rewind give scoped
 * scratch inside a batch. All blocks are 64-byte aligned (cache line, AVX-512).
 */
#ifndef CT_CORE_ARENA_H
#define CT_CORE_ARENA_H

#include <stddef.h>

#include "core/error.h"

typedef struct ct_arena {
    unsigned char *base;
    size_t cap;
    size_t used;
    size_t peak;
} ct_arena;

#define CT_ARENA_ALIGN 64

ct_status ct_arena_init(ct_arena *a, size_t capacity);
void ct_arena_free(ct_arena *a);
/* NULL and CT_ERR_OOM in *st (if st) when the arena is full. Zero bytes gives
 * a valid unique pointer. Memory is not zeroed (see ct_arena_calloc). */
void *ct_arena_alloc(ct_arena *a, size_t bytes);
void *ct_arena_calloc(ct_arena *a, size_t n, size_t size);
static inline size_t ct_arena_mark(const ct_arena *a) { return a->used; }
static inline void ct_arena_rewind(ct_arena *a, size_t mark) { a->used = mark; }
static inline void ct_arena_reset(ct_arena *a) { a->used = 0; }

#endif
