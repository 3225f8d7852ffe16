/* cpu_dnnl.c — oneDNN 2.x matmul primitives behind ct_dnnl_matmul: created
 * on first use of a shape, kept in a small least-recently-used cache (a
 * primitive costs about a millisecond to make; the encoder reuses a handful
 * of shapes per batch), executed on the backend's stream. Weights stay in
 * the checkpoint's (N,K) layout, described to oneDNN as the transposed
 * (K,N) matrix (tag "ba"); docs/PERFORMANCE.md has the measurement that
 * made plain weights the choice over a packed copy. */
#include "compute/cpu/cpu_dnnl.h"

#ifdef CT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { CACHE = 48 };

typedef struct entry {
    int used; /* 0: empty slot */
    ct_dnnl_kind kind;
    int M, N, K;
    int has_bias, act, accumulate; /* the fused epilogue's form */
    float alpha;
    unsigned long long stamp; /* last use, for eviction */
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t a, w, c, b; /* b: the bias, when fused */
} entry;

struct ct_dnnl {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    pthread_mutex_t lock;
    unsigned long long clock;
    entry cache[CACHE];
};

static ct_status dnnl_err(dnnl_status_t s, const char *what) {
    return ct_fail(s == dnnl_out_of_memory ? CT_ERR_OOM : s == dnnl_unimplemented ? CT_ERR_UNSUPPORTED : CT_ERR_INTERNAL,
                   "oneDNN: %s failed (status %d)", what, (int)s);
}
#define DN_TRY(call, what)                               \
    do {                                                 \
        dnnl_status_t s_ = (call);                       \
        if (s_ != dnnl_success) return dnnl_err(s_, what); \
    } while (0)

int ct_dnnl_built(void) { return 1; }

ct_status ct_dnnl_create(ct_dnnl **out) {
    *out = NULL;
    ct_dnnl *d = calloc(1, sizeof *d);
    if (!d) return ct_fail(CT_ERR_OOM, "oneDNN context");
    dnnl_status_t s = dnnl_engine_create(&d->engine, dnnl_cpu, 0);
    if (s == dnnl_success) s = dnnl_stream_create(&d->stream, d->engine, dnnl_stream_default_flags);
    if (s != dnnl_success) {
        if (d->engine) dnnl_engine_destroy(d->engine);
        free(d);
        return dnnl_err(s, "engine");
    }
    pthread_mutex_init(&d->lock, NULL);
    *out = d;
    return CT_OK;
}

static void drop(entry *e) {
    if (e->a) dnnl_memory_destroy(e->a);
    if (e->w) dnnl_memory_destroy(e->w);
    if (e->c) dnnl_memory_destroy(e->c);
    if (e->b) dnnl_memory_destroy(e->b);
    if (e->prim) dnnl_primitive_destroy(e->prim);
    if (e->pd) dnnl_primitive_desc_destroy(e->pd);
    memset(e, 0, sizeof *e);
}

void ct_dnnl_free(ct_dnnl *d) {
    if (!d) return;
    for (int i = 0; i < CACHE; i++) drop(&d->cache[i]);
    dnnl_stream_destroy(d->stream);
    dnnl_engine_destroy(d->engine);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

static void types(ct_dnnl_kind k, dnnl_data_type_t *ta, dnnl_data_type_t *tw, dnnl_data_type_t *tc) {
    switch (k) {
    case CT_DNNL_BF16: *ta = dnnl_bf16, *tw = dnnl_bf16, *tc = dnnl_f32; break;
    case CT_DNNL_U8S8: *ta = dnnl_u8, *tw = dnnl_s8, *tc = dnnl_s32; break;
    default: *ta = dnnl_f32, *tw = dnnl_f32, *tc = dnnl_f32; break;
    }
}

static const ct_dnnl_epilogue no_epilogue = {NULL, 0, 1.0f, 0};

static int same_form(const entry *e, const ct_dnnl_epilogue *ep) {
    return e->has_bias == (ep->bias != NULL) && e->act == ep->act && e->alpha == ep->alpha &&
           e->accumulate == ep->accumulate;
}

/* The epilogue as oneDNN post-ops, in the order ct_ref_matmul applies it:
 * the bias is the primitive's own (added to the accumulator), then
 * alpha·act(·) as one eltwise (its scale is alpha; linear for no
 * activation), then sum (c_old + ·). Empty when there is nothing to do. */
static dnnl_status_t post_ops(const ct_dnnl_epilogue *ep, dnnl_primitive_attr_t *attr) {
    *attr = NULL;
    if (ep->act == 0 && ep->alpha == 1.0f && !ep->accumulate) return dnnl_success;
    dnnl_post_ops_t po;
    dnnl_status_t s = dnnl_post_ops_create(&po);
    if (s != dnnl_success) return s;
    if (ep->act == 2) s = dnnl_post_ops_append_eltwise(po, ep->alpha, dnnl_eltwise_swish, 1.0f, 0.0f);
    else if (ep->act == 1) s = dnnl_post_ops_append_eltwise(po, ep->alpha, dnnl_eltwise_relu, 0.0f, 0.0f);
    else if (ep->alpha != 1.0f) s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, ep->alpha, 0.0f);
    if (s == dnnl_success && ep->accumulate) s = dnnl_post_ops_append_sum(po, 1.0f);
    if (s == dnnl_success) s = dnnl_primitive_attr_create(attr);
    if (s == dnnl_success) s = dnnl_primitive_attr_set_post_ops(*attr, po);
    dnnl_post_ops_destroy(po);
    if (s != dnnl_success && *attr) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    return s;
}

static ct_status make(ct_dnnl *d, entry *e, ct_dnnl_kind kind, int M, int N, int K, const ct_dnnl_epilogue *ep) {
    dnnl_data_type_t ta, tw, tc;
    types(kind, &ta, &tw, &tc);
    dnnl_memory_desc_t ma, mw, mc, mb;
    dnnl_dims_t da = {M, K}, dw = {K, N}, dc = {M, N}, db = {1, N};
    DN_TRY(dnnl_memory_desc_init_by_tag(&ma, 2, da, ta, dnnl_ab), "source descriptor");
    DN_TRY(dnnl_memory_desc_init_by_tag(&mw, 2, dw, tw, dnnl_ba), "weight descriptor"); /* (N,K) rows */
    DN_TRY(dnnl_memory_desc_init_by_tag(&mc, 2, dc, tc, dnnl_ab), "result descriptor");
    DN_TRY(dnnl_memory_desc_init_by_tag(&mb, 2, db, dnnl_f32, dnnl_ab), "bias descriptor");
    dnnl_matmul_desc_t md;
    DN_TRY(dnnl_matmul_desc_init(&md, &ma, &mw, ep->bias ? &mb : NULL, &mc), "matmul descriptor");
    dnnl_primitive_attr_t attr;
    DN_TRY(post_ops(ep, &attr), "matmul post-ops");
    memset(e, 0, sizeof *e);
    dnnl_status_t s = dnnl_primitive_desc_create(&e->pd, &md, attr, d->engine, NULL);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (s == dnnl_success) s = dnnl_primitive_create(&e->prim, e->pd);
    if (s == dnnl_success) s = dnnl_memory_create(&e->a, &ma, d->engine, DNNL_MEMORY_NONE);
    if (s == dnnl_success) s = dnnl_memory_create(&e->w, &mw, d->engine, DNNL_MEMORY_NONE);
    if (s == dnnl_success) s = dnnl_memory_create(&e->c, &mc, d->engine, DNNL_MEMORY_NONE);
    if (s == dnnl_success && ep->bias) s = dnnl_memory_create(&e->b, &mb, d->engine, DNNL_MEMORY_NONE);
    if (s != dnnl_success) {
        drop(e);
        return dnnl_err(s, "matmul primitive");
    }
    e->used = 1, e->kind = kind, e->M = M, e->N = N, e->K = K;
    e->has_bias = ep->bias != NULL, e->act = ep->act, e->alpha = ep->alpha, e->accumulate = ep->accumulate;
    return CT_OK;
}

/* The cached entry for the shape, made if missing (evicting the least
 * recently used). Called with d->lock held. */
static ct_status lookup(ct_dnnl *d, ct_dnnl_kind kind, int M, int N, int K, const ct_dnnl_epilogue *ep,
                        entry **out) {
    entry *victim = &d->cache[0];
    for (int i = 0; i < CACHE; i++) {
        entry *e = &d->cache[i];
        if (e->used && e->kind == kind && e->M == M && e->N == N && e->K == K && same_form(e, ep)) {
            e->stamp = ++d->clock;
            *out = e;
            return CT_OK;
        }
        if (!e->used || (victim->used && e->stamp < victim->stamp)) victim = e;
    }
    drop(victim);
    CT_TRY(make(d, victim, kind, M, N, K, ep));
    victim->stamp = ++d->clock;
    *out = victim;
    return CT_OK;
}

ct_status ct_dnnl_matmul_ep(ct_dnnl *d, ct_dnnl_kind kind, void *c, const void *a, const void *w, int M, int N, int K,
                            const ct_dnnl_epilogue *ep) {
    if (M <= 0 || N <= 0) return CT_OK;
    if (K <= 0 || (unsigned)kind >= CT_DNNL_KINDS) return ct_fail(CT_ERR_INVALID_ARG, "oneDNN matmul: K %d", K);
    if (!ep) ep = &no_epilogue;
    if (kind == CT_DNNL_U8S8 && ep != &no_epilogue)
        return ct_fail(CT_ERR_INVALID_ARG, "oneDNN matmul: no fused epilogue on int32 results");
    if (ep->act < 0 || ep->act > 2) return ct_fail(CT_ERR_INVALID_ARG, "oneDNN matmul: activation %d", ep->act);
    pthread_mutex_lock(&d->lock);
    entry *e;
    ct_status st = lookup(d, kind, M, N, K, ep, &e);
    if (st == CT_OK) {
        dnnl_status_t s = dnnl_memory_set_data_handle(e->a, (void *)a);
        if (s == dnnl_success) s = dnnl_memory_set_data_handle(e->w, (void *)w);
        if (s == dnnl_success) s = dnnl_memory_set_data_handle(e->c, c);
        if (s == dnnl_success && e->b) s = dnnl_memory_set_data_handle(e->b, (void *)ep->bias);
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, e->a}, {DNNL_ARG_WEIGHTS, e->w}, {DNNL_ARG_DST, e->c},
                                   {DNNL_ARG_BIAS, e->b}};
        if (s == dnnl_success) s = dnnl_primitive_execute(e->prim, d->stream, e->b ? 4 : 3, args);
        if (s == dnnl_success) s = dnnl_stream_wait(d->stream);
        if (s != dnnl_success) st = dnnl_err(s, "matmul");
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

ct_status ct_dnnl_matmul(ct_dnnl *d, ct_dnnl_kind kind, void *c, const void *a, const void *w, int M, int N, int K) {
    return ct_dnnl_matmul_ep(d, kind, c, a, w, M, N, K, NULL);
}

ct_status ct_dnnl_probe(ct_dnnl *d, ct_dnnl_kind kind) {
    pthread_mutex_lock(&d->lock);
    entry *e;
    const char *impl = "";
    ct_status st = lookup(d, kind, 32, 64, 64, &no_epilogue, &e);
    if (st == CT_OK && dnnl_primitive_desc_query(e->pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success) impl = "";
    if (st == CT_OK && (!impl || !strncmp(impl, "ref", 3)))
        st = ct_fail(CT_ERR_UNSUPPORTED, "oneDNN: only the reference implementation (%s) for this product here",
                     impl ? impl : "?");
    pthread_mutex_unlock(&d->lock);
    return st;
}

const char *ct_dnnl_impl(ct_dnnl *d, ct_dnnl_kind kind, int M, int N, int K) {
    const char *impl = "";
    pthread_mutex_lock(&d->lock);
    entry *e;
    if (lookup(d, kind, M, N, K, &no_epilogue, &e) == CT_OK &&
        dnnl_primitive_desc_query(e->pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success)
        impl = "";
    pthread_mutex_unlock(&d->lock);
    return impl; /* owned by the primitive descriptor, valid while it is cached */
}

#else /* no oneDNN in this build: the backend keeps OpenBLAS for everything */

int ct_dnnl_built(void) { return 0; }
ct_status ct_dnnl_create(ct_dnnl **out) {
    *out = NULL;
    return ct_fail(CT_ERR_UNSUPPORTED, "this build has no oneDNN (CT_DNNL=OFF or libdnnl-dev missing)");
}
void ct_dnnl_free(ct_dnnl *d) { (void)d; }
ct_status ct_dnnl_matmul(ct_dnnl *d, ct_dnnl_kind kind, void *c, const void *a, const void *w, int M, int N, int K) {
    (void)d, (void)kind, (void)c, (void)a, (void)w, (void)M, (void)N, (void)K;
    return ct_fail(CT_ERR_UNSUPPORTED, "this build has no oneDNN");
}
ct_status ct_dnnl_matmul_ep(ct_dnnl *d, ct_dnnl_kind kind, void *c, const void *a, const void *w, int M, int N, int K,
                            const ct_dnnl_epilogue *ep) {
    (void)d, (void)kind, (void)c, (void)a, (void)w, (void)M, (void)N, (void)K, (void)ep;
    return ct_fail(CT_ERR_UNSUPPORTED, "this build has no oneDNN");
}
ct_status ct_dnnl_probe(ct_dnnl *d, ct_dnnl_kind kind) {
    (void)d, (void)kind;
    return ct_fail(CT_ERR_UNSUPPORTED, "this build has no oneDNN");
}
const char *ct_dnnl_impl(ct_dnnl *d, ct_dnnl_kind kind, int M, int N, int K) {
    (void)d, (void)kind, (void)M, (void)N, (void)K;
    return "";
}
#endif
