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
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { CACHE = 48, EDGE = 64 };

typedef struct entry {
    int used; /* 0: empty slot */
    ct_dnnl_kind kind;
    int M, N, K;
    int has_bias, act, accumulate; /* the fused epilogue's form */
    int packed;                    /* weights in wmd's blocked layout (else plain "ba") */
    dnnl_memory_desc_t wmd;
    float alpha;
    unsigned long long stamp; /* last use, for eviction */
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t prim;
    dnnl_memory_t a, w, c, b; /* b: the bias, when fused */
} entry;

/* One weight's packed copy (state 1), or the decision to keep it plain
 * (state -1: the policy, oneDNN's choice of the plain layout, the budget or
 * a failed reorder). The first and last EDGE bytes of the plain matrix are
 * kept to tell a different matrix at a recycled address (those pages are
 * never dropped: only whole pages inside the matrix are). */
typedef struct packed {
    const void *key, *src;
    ct_dnnl_kind kind;
    int N, K, state, owned;
    unsigned char head[EDGE], tail[EDGE];
    dnnl_memory_desc_t md;
    void *data;
    size_t bytes;
} packed;

struct ct_dnnl {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    pthread_mutex_t lock;
    unsigned long long clock;
    entry cache[CACHE];
    ct_dnnl_pack_mode pack;
    int amx; /* -1 not asked yet; 1 when the bf16 kernel oneDNN picks is AMX's */
    packed *packs;
    int npacks, cap_packs;
    size_t owned_bytes; /* packed copies of owned weights, against the budget */
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
    d->pack = CT_DNNL_PACK_AUTO;
    d->amx = -1;
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
    for (int i = 0; i < d->npacks; i++) free(d->packs[i].data);
    free(d->packs);
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

/* wmd: the packed weights' layout, or NULL for the plain (N,K) rows. */
static ct_status make(ct_dnnl *d, entry *e, ct_dnnl_kind kind, int M, int N, int K, const ct_dnnl_epilogue *ep,
                      const dnnl_memory_desc_t *wmd) {
    dnnl_data_type_t ta, tw, tc;
    types(kind, &ta, &tw, &tc);
    dnnl_memory_desc_t ma, mw, mc, mb;
    dnnl_dims_t da = {M, K}, dw = {K, N}, dc = {M, N}, db = {1, N};
    DN_TRY(dnnl_memory_desc_init_by_tag(&ma, 2, da, ta, dnnl_ab), "source descriptor");
    if (wmd) mw = *wmd;
    else DN_TRY(dnnl_memory_desc_init_by_tag(&mw, 2, dw, tw, dnnl_ba), "weight descriptor"); /* (N,K) rows */
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
    e->packed = wmd != NULL;
    if (wmd) e->wmd = *wmd;
    return CT_OK;
}

/* The cached entry for the shape, made if missing (evicting the least
 * recently used). Called with d->lock held. */
static ct_status lookup(ct_dnnl *d, ct_dnnl_kind kind, int M, int N, int K, const ct_dnnl_epilogue *ep,
                        const dnnl_memory_desc_t *wmd, entry **out) {
    entry *victim = &d->cache[0];
    for (int i = 0; i < CACHE; i++) {
        entry *e = &d->cache[i];
        if (e->used && e->kind == kind && e->M == M && e->N == N && e->K == K && same_form(e, ep) &&
            e->packed == (wmd != NULL) && (!wmd || dnnl_memory_desc_equal(&e->wmd, wmd))) {
            e->stamp = ++d->clock;
            *out = e;
            return CT_OK;
        }
        if (!e->used || (victim->used && e->stamp < victim->stamp)) victim = e;
    }
    drop(victim);
    CT_TRY(make(d, victim, kind, M, N, K, ep, wmd));
    victim->stamp = ++d->clock;
    *out = victim;
    return CT_OK;
}

static ct_status check_args(ct_dnnl_kind kind, int K, const ct_dnnl_epilogue *ep) {
    if (K <= 0 || (unsigned)kind >= CT_DNNL_KINDS) return ct_fail(CT_ERR_INVALID_ARG, "oneDNN matmul: K %d", K);
    if (kind == CT_DNNL_U8S8 && ep != &no_epilogue)
        return ct_fail(CT_ERR_INVALID_ARG, "oneDNN matmul: no fused epilogue on int32 results");
    if (ep->act < 0 || ep->act > 2) return ct_fail(CT_ERR_INVALID_ARG, "oneDNN matmul: activation %d", ep->act);
    return CT_OK;
}

/* One product on the cached primitive for (kind, shape, epilogue, weight
 * layout); w is plain rows (wmd NULL) or a packed copy in wmd's layout.
 * Called with d->lock held. */
static ct_status run(ct_dnnl *d, ct_dnnl_kind kind, void *c, const void *a, const void *w,
                     const dnnl_memory_desc_t *wmd, int M, int N, int K, const ct_dnnl_epilogue *ep) {
    entry *e;
    CT_TRY(lookup(d, kind, M, N, K, ep, wmd, &e));
    dnnl_status_t s = dnnl_memory_set_data_handle(e->a, (void *)a);
    if (s == dnnl_success) s = dnnl_memory_set_data_handle(e->w, (void *)w);
    if (s == dnnl_success) s = dnnl_memory_set_data_handle(e->c, c);
    if (s == dnnl_success && e->b) s = dnnl_memory_set_data_handle(e->b, (void *)ep->bias);
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, e->a}, {DNNL_ARG_WEIGHTS, e->w}, {DNNL_ARG_DST, e->c},
                               {DNNL_ARG_BIAS, e->b}};
    if (s == dnnl_success) s = dnnl_primitive_execute(e->prim, d->stream, e->b ? 4 : 3, args);
    if (s == dnnl_success) s = dnnl_stream_wait(d->stream);
    return s == dnnl_success ? CT_OK : dnnl_err(s, "matmul");
}

ct_status ct_dnnl_matmul_ep(ct_dnnl *d, ct_dnnl_kind kind, void *c, const void *a, const void *w, int M, int N, int K,
                            const ct_dnnl_epilogue *ep) {
    if (M <= 0 || N <= 0) return CT_OK;
    if (!ep) ep = &no_epilogue;
    CT_TRY(check_args(kind, K, ep));
    pthread_mutex_lock(&d->lock);
    ct_status st = run(d, kind, c, a, w, NULL, M, N, K, ep);
    pthread_mutex_unlock(&d->lock);
    return st;
}

/* ---- pre-packed weights ---- */

static size_t elem_size(ct_dnnl_kind k) { return k == CT_DNNL_F32 ? 4 : k == CT_DNNL_BF16 ? 2 : 1; }

void ct_dnnl_set_pack(ct_dnnl *d, ct_dnnl_pack_mode mode) {
    pthread_mutex_lock(&d->lock);
    d->pack = mode;
    pthread_mutex_unlock(&d->lock);
}

/* Whether the bf16 product runs on AMX here (the CPUs the policy was
 * measured on). Called with d->lock held. */
static int on_amx(ct_dnnl *d) {
    if (d->amx < 0) {
        entry *e;
        const char *impl = NULL;
        d->amx = 0;
        if (lookup(d, CT_DNNL_BF16, 32, 64, 64, &no_epilogue, NULL, &e) == CT_OK &&
            dnnl_primitive_desc_query(e->pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl)
            d->amx = strstr(impl, "amx") != NULL;
        ct_error_clear();
    }
    return d->amx;
}

/* The policy: which (kind, N, K) get a packed copy. AUTO follows the
 * measurements on Sapphire Rapids (docs/PERFORMANCE.md "Pre-packed
 * weights"): one weight at a time (bench_gemm), packed bf16 ran 1.2–1.3×
 * faster in wall time where N ≥ K and 0.7× for FF out, but per CPU-second
 * only 1.05–1.12×; in the whole encoder (96 FF-in weights streaming from
 * memory) and in the fp32 aligner the interleaved A/B showed no gain, and
 * owned copies add to the resident set. So AUTO packs nothing for now:
 * the AMX test below is where a shape that measures faster would go. */
static int pack_wanted(ct_dnnl *d, ct_dnnl_kind kind, int N, int K) {
    (void)kind, (void)N, (void)K;
    if (d->pack == CT_DNNL_PACK_ALWAYS) return 1;
    if (d->pack != CT_DNNL_PACK_AUTO) return 0;
    return on_amx(d) && 0; /* no shape measured faster end to end */
}

static void edges(const void *src, size_t bytes, unsigned char *head, unsigned char *tail) {
    const size_t n = bytes < EDGE ? bytes : EDGE;
    memset(head, 0, EDGE), memset(tail, 0, EDGE);
    memcpy(head, src, n);
    memcpy(tail, (const unsigned char *)src + bytes - n, n);
}

static void drop_record(packed *p) {
    free(p->data);
    memset(p, 0, sizeof *p);
}

/* Whole pages strictly inside [p, p + n) go back to the page cache. */
static void release_pages(const void *p, size_t n) {
    const long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) return;
    const uintptr_t a = ((uintptr_t)p + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
    const uintptr_t e = ((uintptr_t)p + n) & ~((uintptr_t)pg - 1);
    if (e > a) (void)madvise((void *)a, e - a, MADV_DONTNEED);
}

/* Reorder w's plain rows into the layout a primitive for (kind, M, N, K)
 * asks for. Sets p->state: 1 with p->data, or -1 (keep plain). Called with
 * d->lock held. */
static void pack_one(ct_dnnl *d, packed *p, const ct_dnnl_weight *w, int M) {
    p->state = -1;
    dnnl_data_type_t ta, tw, tc;
    types(p->kind, &ta, &tw, &tc);
    dnnl_memory_desc_t ma, mw, many, mc;
    dnnl_dims_t da = {M, p->K}, dw = {p->K, p->N}, dc = {M, p->N};
    if (dnnl_memory_desc_init_by_tag(&ma, 2, da, ta, dnnl_ab) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&mw, 2, dw, tw, dnnl_ba) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&many, 2, dw, tw, dnnl_format_tag_any) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&mc, 2, dc, tc, dnnl_ab) != dnnl_success)
        return;
    dnnl_matmul_desc_t md;
    dnnl_primitive_desc_t pd = NULL, rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_memory_t from = NULL, to = NULL;
    if (dnnl_matmul_desc_init(&md, &ma, &many, NULL, &mc) != dnnl_success ||
        dnnl_primitive_desc_create(&pd, &md, NULL, d->engine, NULL) != dnnl_success)
        return;
    const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const size_t bytes = want ? dnnl_memory_desc_get_size(want) : 0;
    const size_t plain = (size_t)p->N * p->K * elem_size(p->kind);
    void *buf = NULL;
    if (!want || dnnl_memory_desc_equal(want, &mw) || bytes == 0 || (p->owned && d->owned_bytes + bytes > CT_DNNL_PACK_OWNED_BYTES))
        goto done;
    /* 2 MiB aligned so that the kernel can back it with huge pages */
    if (posix_memalign(&buf, bytes >= (2u << 20) ? (size_t)2 << 20 : 64, bytes) != 0) {
        buf = NULL;
        goto done;
    }
    if (dnnl_memory_create(&from, &mw, d->engine, (void *)w->data) != dnnl_success ||
        dnnl_memory_create(&to, want, d->engine, buf) != dnnl_success ||
        dnnl_reorder_primitive_desc_create(&rpd, &mw, d->engine, want, d->engine, NULL) != dnnl_success ||
        dnnl_primitive_create(&reorder, rpd) != dnnl_success)
        goto done;
    dnnl_exec_arg_t rargs[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    if (dnnl_primitive_execute(reorder, d->stream, 2, rargs) != dnnl_success || dnnl_stream_wait(d->stream) != dnnl_success)
        goto done;
    p->md = *want, p->data = buf, p->bytes = bytes, p->state = 1;
    buf = NULL;
    if (p->owned) d->owned_bytes += bytes;
    else if (w->file_backed) release_pages(w->data, plain);
done:
    free(buf);
    if (reorder) dnnl_primitive_destroy(reorder);
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (from) dnnl_memory_destroy(from);
    if (to) dnnl_memory_destroy(to);
    dnnl_primitive_desc_destroy(pd);
}

/* The record for w (made, and packed if the policy says so, when missing).
 * NULL: keep plain without a record (no key, or no memory for one). Called
 * with d->lock held. */
static packed *find_pack(ct_dnnl *d, ct_dnnl_kind kind, const ct_dnnl_weight *w, int M, int N, int K) {
    const size_t plain = (size_t)N * K * elem_size(kind);
    unsigned char head[EDGE], tail[EDGE];
    edges(w->data, plain, head, tail);
    packed *slot = NULL;
    for (int i = 0; i < d->npacks; i++) {
        packed *p = &d->packs[i];
        if (!p->key) {
            if (!slot) slot = p;
            continue;
        }
        if (p->key != w->key || p->kind != kind || p->N != N || p->K != K) continue;
        if (p->src == w->data && !memcmp(p->head, head, EDGE) && !memcmp(p->tail, tail, EDGE)) return p;
        if (p->owned && p->state == 1) d->owned_bytes -= p->bytes;
        drop_record(p); /* another matrix at a recycled address */
        if (!slot) slot = p;
    }
    if (M < CT_DNNL_PACK_ROWS) return NULL; /* decide on the first call that has the rows */
    if (!slot) {
        if (d->npacks == d->cap_packs) {
            const int cap = d->cap_packs ? 2 * d->cap_packs : 256;
            packed *np = realloc(d->packs, sizeof *np * (size_t)cap);
            if (!np) return NULL;
            d->packs = np, d->cap_packs = cap;
        }
        slot = &d->packs[d->npacks++];
    }
    memset(slot, 0, sizeof *slot);
    slot->key = w->key, slot->src = w->data, slot->kind = kind, slot->N = N, slot->K = K;
    slot->owned = !w->file_backed;
    memcpy(slot->head, head, EDGE), memcpy(slot->tail, tail, EDGE);
    slot->state = -1;
    if (pack_wanted(d, kind, N, K)) pack_one(d, slot, w, M);
    return slot;
}

ct_status ct_dnnl_matmul_w(ct_dnnl *d, ct_dnnl_kind kind, void *c, const void *a, const ct_dnnl_weight *w, int M, int N,
                           int K, const ct_dnnl_epilogue *ep) {
    if (M <= 0 || N <= 0) return CT_OK;
    if (!ep) ep = &no_epilogue;
    CT_TRY(check_args(kind, K, ep));
    pthread_mutex_lock(&d->lock);
    packed *p = w->key && d->pack != CT_DNNL_PACK_OFF ? find_pack(d, kind, w, M, N, K) : NULL;
    ct_status st;
    if (p && p->state == 1) {
        st = run(d, kind, c, a, p->data, &p->md, M, N, K, ep);
        /* a row count whose primitive will not take this layout: plain rows */
        if (st == CT_ERR_UNSUPPORTED) {
            ct_error_clear();
            st = run(d, kind, c, a, w->data, NULL, M, N, K, ep);
        }
    } else {
        st = run(d, kind, c, a, w->data, NULL, M, N, K, ep);
    }
    pthread_mutex_unlock(&d->lock);
    return st;
}

void ct_dnnl_forget(ct_dnnl *d, const void *key) {
    if (!d || !key) return;
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < d->npacks; i++) {
        packed *p = &d->packs[i];
        if (p->key != key) continue;
        if (p->owned && p->state == 1) d->owned_bytes -= p->bytes;
        drop_record(p);
    }
    pthread_mutex_unlock(&d->lock);
}

void ct_dnnl_pack_stats(ct_dnnl *d, int *count, size_t *bytes) {
    int n = 0;
    size_t b = 0;
    pthread_mutex_lock(&d->lock);
    for (int i = 0; i < d->npacks; i++)
        if (d->packs[i].key && d->packs[i].state == 1) n++, b += d->packs[i].bytes;
    pthread_mutex_unlock(&d->lock);
    if (count) *count = n;
    if (bytes) *bytes = b;
}

ct_status ct_dnnl_matmul(ct_dnnl *d, ct_dnnl_kind kind, void *c, const void *a, const void *w, int M, int N, int K) {
    return ct_dnnl_matmul_ep(d, kind, c, a, w, M, N, K, NULL);
}

ct_status ct_dnnl_probe(ct_dnnl *d, ct_dnnl_kind kind) {
    pthread_mutex_lock(&d->lock);
    entry *e;
    const char *impl = "";
    ct_status st = lookup(d, kind, 32, 64, 64, &no_epilogue, NULL, &e);
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
    if (lookup(d, kind, M, N, K, &no_epilogue, NULL, &e) == CT_OK &&
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
void ct_dnnl_set_pack(ct_dnnl *d, ct_dnnl_pack_mode mode) { (void)d, (void)mode; }
ct_status ct_dnnl_matmul_w(ct_dnnl *d, ct_dnnl_kind kind, void *c, const void *a, const ct_dnnl_weight *w, int M, int N,
                           int K, const ct_dnnl_epilogue *ep) {
    (void)d, (void)kind, (void)c, (void)a, (void)w, (void)M, (void)N, (void)K, (void)ep;
    return ct_fail(CT_ERR_UNSUPPORTED, "this build has no oneDNN");
}
void ct_dnnl_forget(ct_dnnl *d, const void *key) { (void)d, (void)key; }
void ct_dnnl_pack_stats(ct_dnnl *d, int *count, size_t *bytes) {
    (void)d;
    if (count) *count = 0;
    if (bytes) *bytes = 0;
}
#endif
