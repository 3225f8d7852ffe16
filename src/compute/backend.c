/* backend.c — creating backends by name and arenas over backend memory.
 * The only place in the library that knows which backends were compiled in. */
#include "compute/backend.h"

#include <stdlib.h>
#include <string.h>

ct_status ct_cpu_backend_create(const ct_backend_ops *ops, const ct_backend_options *opts, ct_backend **out);
#ifdef CT_HAVE_CUDA
ct_status ct_cuda_backend_create(const ct_backend_options *opts, ct_backend **out);
int ct_cuda_available(const char **why);
#endif

ct_backend_options ct_backend_default_options(void) {
    ct_backend_options o = {.threads = 0, .device_index = 0, .act_dtype = CT_DTYPE_F32, .isa_limit = 0, .dnnl_bf16 = 0, .dnnl_pack = 0};
    return o;
}

ct_status ct_backend_create(const char *name, const ct_backend_options *opts, ct_backend **out) {
    *out = NULL;
    ct_backend_options def = ct_backend_default_options();
    if (!opts) opts = &def;
    int cpu = !name || !strcmp(name, "cpu") || !strcmp(name, "cpu-ref");
    if (cpu && opts->act_dtype != CT_DTYPE_F32)
        return ct_fail(CT_ERR_UNSUPPORTED, "backend %s: activations are float32 only (asked for %s)", name ? name : "cpu",
                       ct_dtype_name(opts->act_dtype));
    if (!name || !strcmp(name, "cpu")) return ct_cpu_backend_create(ct_cpu_fast_ops(), opts, out);
    if (!strcmp(name, "cpu-ref")) return ct_cpu_backend_create(ct_cpu_ref_ops(), opts, out);
    if (!strcmp(name, "cuda")) {
#ifdef CT_HAVE_CUDA
        return ct_cuda_backend_create(opts, out);
#else
        return ct_fail(CT_ERR_UNSUPPORTED, "backend cuda: this build has no CUDA support");
#endif
    }
    return ct_fail(CT_ERR_INVALID_ARG, "backend '%s': unknown (cpu, cpu-ref, cuda)", name);
}

int ct_backend_available(const char *name, const char **why) {
    const char *dummy;
    if (!why) why = &dummy;
    *why = "";
    if (!name || !strcmp(name, "cpu") || !strcmp(name, "cpu-ref")) return 1;
    if (strcmp(name, "cuda")) {
        *why = "unknown backend";
        return 0;
    }
#ifdef CT_HAVE_CUDA
    return ct_cuda_available(why);
#else
    *why = "built without CUDA";
    return 0;
#endif
}

void ct_backend_free(ct_backend *be) {
    if (be && be->ops && be->ops->destroy) be->ops->destroy(be);
}

ct_status ct_backend_arena_create(ct_backend *be, size_t bytes, ct_arena *out) {
    memset(out, 0, sizeof *out);
    size_t cap = (bytes + CT_ARENA_ALIGN - 1) / CT_ARENA_ALIGN * CT_ARENA_ALIGN;
    if (cap == 0) return CT_OK;
    void *p = NULL;
    CT_TRY(be->ops->alloc(be, cap, &p));
    /* ct_arena only does address arithmetic, so it can carve device memory too. */
    out->base = p;
    out->cap = cap;
    return CT_OK;
}

void ct_backend_arena_free(ct_backend *be, ct_arena *a) {
    if (!a) return;
    if (a->base) be->ops->free(be, a->base);
    memset(a, 0, sizeof *a);
}
