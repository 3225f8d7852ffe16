/* arena.c — see arena.h. */
#include "core/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

ct_status ct_arena_init(ct_arena *a, size_t capacity) {
    memset(a, 0, sizeof *a);
    if (capacity == 0) return CT_OK;
    size_t cap = (capacity + CT_ARENA_ALIGN - 1) / CT_ARENA_ALIGN * CT_ARENA_ALIGN;
    if (cap < capacity) return ct_fail(CT_ERR_OOM, "arena: capacity %zu overflows", capacity);
    void *p = NULL;
    if (posix_memalign(&p, CT_ARENA_ALIGN, cap) != 0)
        return ct_fail(CT_ERR_OOM, "arena: cannot allocate %zu bytes", cap);
    a->base = p;
    a->cap = cap;
    return CT_OK;
}

void ct_arena_free(ct_arena *a) {
    if (!a) return;
    free(a->base);
    memset(a, 0, sizeof *a);
}

void *ct_arena_alloc(ct_arena *a, size_t bytes) {
    size_t start = (a->used + CT_ARENA_ALIGN - 1) / CT_ARENA_ALIGN * CT_ARENA_ALIGN;
    size_t need = bytes ? bytes : 1;
    if (start > a->cap || need > a->cap - start) {
        ct_fail(CT_ERR_OOM, "arena: %zu bytes requested, %zu of %zu free", bytes,
                a->cap > start ? a->cap - start : 0, a->cap);
        return NULL;
    }
    a->used = start + need;
    if (a->used > a->peak) a->peak = a->used;
    return a->base + start;
}

void *ct_arena_calloc(ct_arena *a, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size) {
        ct_fail(CT_ERR_OOM, "arena: %zu x %zu bytes overflows", n, size);
        return NULL;
    }
    void *p = ct_arena_alloc(a, n * size);
    if (p) memset(p, 0, n * size);
    return p;
}
