/* test_weights_upload.c — the model load over a device whose uploads land
 * late (backend.h version 7, to_device_async; asr/weights.c,
 * ct_tensor_upload_deferred): the cpu table posing as a device whose
 * background uploads fill their destination with NaN bytes and copy the
 * source only when something that may read device memory runs
 * (synchronize, to_host, copy, zero, free, to_device: the contract the
 * cuda uploader keeps). Loading the fixtures through it gives every tensor
 * the bytes of the same load with synchronous uploads, the load's own
 * steps that read uploaded weights (the packed q|k|v projections, the
 * reordered subsampling projection) included, and nothing is left pending
 * when the load returns. The fused ops are announced (never called) so
 * that those steps run, as on CUDA.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/weights.h"
#include "compute/backend.h"
#include "compute/ops.h"
#include "compute/ref/ops_ref.h"
#include "model/checkpoint.h"
#include "testutil.h"

enum { MAX_PENDING = 4096 };
static struct {
    void *dst;
    const void *src;
    size_t n;
} g_pending[MAX_PENDING];
static int g_n_pending, g_async_calls;
static const ct_backend_ops *g_host;
static ct_backend_ops g_lazy, g_eager;

static void land(void) {
    for (int i = 0; i < g_n_pending; i++) memcpy(g_pending[i].dst, g_pending[i].src, g_pending[i].n);
    g_n_pending = 0;
}
static void *dev_stream(ct_backend *be) {
    (void)be;
    return &g_lazy; /* any non-NULL: device memory to the loader */
}
static ct_status lazy_async(ct_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (g_n_pending == MAX_PENDING) return ct_fail(CT_ERR_LIMIT, "test: too many pending uploads");
    memset(dst, 0xff, bytes); /* NaN in every float type until it lands */
    g_pending[g_n_pending].dst = dst, g_pending[g_n_pending].src = src, g_pending[g_n_pending].n = bytes;
    g_n_pending++, g_async_calls++;
    return CT_OK;
}
static ct_status lazy_sync(ct_backend *be) {
    land();
    return g_host->synchronize(be);
}
static ct_status lazy_to_host(ct_backend *be, void *dst, const void *src, size_t bytes) {
    land();
    return g_host->to_host(be, dst, src, bytes);
}
static ct_status lazy_copy(ct_backend *be, void *dst, const void *src, size_t bytes) {
    land();
    return g_host->copy(be, dst, src, bytes);
}
static ct_status lazy_zero(ct_backend *be, void *dst, size_t bytes) {
    land();
    return g_host->zero(be, dst, bytes);
}
static ct_status lazy_to_device(ct_backend *be, void *dst, const void *src, size_t bytes) {
    land();
    return g_host->to_device(be, dst, src, bytes);
}
static void lazy_free(ct_backend *be, void *p) {
    land();
    g_host->free(be, p);
}
static ct_backend *make(int lazy) {
    ct_backend *be;
    CT_ASSERT_OK(ct_backend_create("cpu", NULL, &be));
    g_host = be->ops;
    ct_backend_ops *o = lazy ? &g_lazy : &g_eager;
    *o = *be->ops;
    o->stream = dev_stream;
    /* the fused entries' presence is what the loader asks
     * (ct_backend_has_fused_*): the references, which a load never calls */
    o->layer_norm2 = ct_ref_layer_norm2, o->glu_dwconv1d = ct_ref_glu_dwconv1d;
    o->attn_relpos_qkv = ct_ref_attn_relpos_qkv, o->attn_causal_qkv_dev = ct_ref_attn_causal_qkv_dev;
    o->subsample = ct_ref_subsample;
    if (lazy) {
        o->to_device_async = lazy_async, o->synchronize = lazy_sync, o->to_host = lazy_to_host;
        o->copy = lazy_copy, o->zero = lazy_zero, o->to_device = lazy_to_device, o->free = lazy_free;
    } else {
        o->to_device_async = NULL;
    }
    be->ops = o;
    assert_true(ct_backend_has_fused_encoder(be) && ct_backend_has_fused_decoder(be) &&
                ct_backend_has_fused_subsample(be));
    return be;
}

static void unmake(ct_backend *be) {
    be->ops = g_host;
    ct_backend_free(be);
}

static int g_compared;
static void same(const ct_tensor *a, const ct_tensor *b, const char *what, int i) {
    assert_int_equal(a->nbytes, b->nbytes);
    assert_int_equal(a->dtype, b->dtype);
    if (!a->nbytes) return;
    if (memcmp(a->data, b->data, a->nbytes)) fail_msg("%s (layer %d): the deferred load's bytes differ", what, i);
    g_compared++;
}
/* Every tensor of the two loads, by the spans of ct_asr_weights_free */
static void same_span(const ct_tensor *a0, const ct_tensor *a1, const ct_tensor *b0, const char *what, int i) {
    for (const ct_tensor *a = a0, *b = b0; a <= a1; a++, b++) same(a, b, what, i);
}

static void load_both(const char *dir, ct_dtype wdt) {
    ct_checkpoint *ck;
    CT_ASSERT_OK(ct_checkpoint_open(dir, &ck));
    ct_backend *eager = make(0), *lazy = make(1);
    ct_asr_weights we, wl;
    CT_ASSERT_OK(ct_asr_weights_map_checkpoint(eager, ck, wdt, &we));
    g_async_calls = g_n_pending = 0;
    CT_ASSERT_OK(ct_asr_weights_map_checkpoint(lazy, ck, wdt, &wl));
    assert_int_equal(g_n_pending, 0); /* the load synchronized before it returned */
    assert_true(g_async_calls > 20);  /* and took the deferred path */
    const ct_asr_hparams *hp = &we.hp;
    g_compared = 0;
    same_span(&wl.c0_w, &wl.sub_w_cl, &we.c0_w, "subsampling", -1);
    assert_true(wl.sub_w_cl.nbytes > 0); /* reordered from a deferred upload */
    same_span(&wl.proj_w, &wl.emb_ln_b, &we.proj_w, "projection, embeddings", -1);
    same_span(&wl.final_ln_g, &wl.head_b, &we.final_ln_g, "head", -1);
    for (int i = 0; i < hp->enc_layers; i++) {
        same_span(&wl.enc[i].ln_ff1_g, &wl.enc[i].pos_c, &we.enc[i].ln_ff1_g, "encoder", i);
        assert_true(wl.enc[i].wqkv.nbytes > 0); /* packed from deferred uploads */
    }
    for (int i = 0; i < hp->dec_layers; i++) {
        same_span(&wl.dec[i].ln1_g, &wl.dec[i].sqkv_b, &we.dec[i].ln1_g, "decoder", i);
        assert_true(wl.dec[i].sqkv_w.nbytes > 0);
    }
    printf("  %s %s: %d tensors equal, %d deferred uploads\n", dir, ct_dtype_name(wdt), g_compared, g_async_calls);
    assert_true(wl.bytes == we.bytes);
    ct_asr_weights_free(&wl);
    assert_int_equal(g_n_pending, 0);
    ct_asr_weights_free(&we);
    unmake(lazy);
    unmake(eager);
    ct_checkpoint_free(ck);
}

static void test_deferred_f32(void **state) {
    (void)state;
    load_both(CT_FIXTURE("tiny-hf"), CT_DTYPE_F32);
}
static void test_deferred_bf16(void **state) {
    (void)state;
    load_both(CT_FIXTURE("tiny-nemo"), CT_DTYPE_BF16);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deferred_f32),
        cmocka_unit_test(test_deferred_bf16),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
