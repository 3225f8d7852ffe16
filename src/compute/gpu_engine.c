/* gpu_engine.c — ct_gpu_engine over compute/cuda/cuda_asr.h when the build
 * has CUDA (CT_HAVE_CUDA), and the "built without CUDA" answers otherwise.
 * This is plain C: it calls the CUDA backend's C interface only, so no CUDA
 * header is needed here; only this file and compute/backend.c test the macro. */
#include "compute/gpu_engine.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

int ct_gpu_engine_feature_frames(size_t n) { return (int)(1 + n / 160); }

int ct_gpu_engine_encoder_frames(int t) {
    for (int i = 0; i < 3; i++) t = t > 0 ? (t - 1) / 2 + 1 : 0; /* three stride-2, pad-1, kernel-3 convs */
    return t;
}

#ifdef CT_HAVE_CUDA
#include "compute/cuda/cuda_asr.h"

struct ct_gpu_engine {
    const ct_gpu_engine_ops *ops; /* a wrapped (scripted) engine, else NULL */
    void *impl;
    ct_cuda *c;
    ct_cuda_asr *m;
};

int ct_gpu_engine_compiled(void) { return 1; }

int ct_gpu_engine_device_present(const char **why) { return ct_cuda_available(why); }

typedef struct {
    ct_gpu_weight_fn get;
    void *ctx;
} bridge;

static ct_status bridge_get(void *ctx, const char *name, ct_cuda_weight *out) {
    const bridge *b = ctx;
    ct_gpu_weight w;
    memset(&w, 0, sizeof w);
    if (!b->get(b->ctx, name, &w)) return CT_ERR_NOT_FOUND; /* quietly: the engine probes optional names */
    out->dtype = w.dtype;
    out->ndim = w.ndim;
    memcpy(out->shape, w.shape, sizeof out->shape);
    out->data = w.data;
    return CT_OK;
}

ct_status ct_gpu_engine_create(ct_gpu_weight_fn get, void *ctx, int dec_heads, ct_gpu_engine **out) {
    *out = NULL;
    const char *why = "";
    if (!ct_cuda_available(&why)) return ct_fail(CT_ERR_UNSUPPORTED, "cuda: no CUDA device found (%s)", why);
    ct_gpu_engine *e = calloc(1, sizeof *e);
    if (!e) return ct_fail(CT_ERR_OOM, "cuda: engine");
    ct_status s = ct_cuda_create(&e->c);
    bridge b = {get, ctx};
    if (s == CT_OK) s = ct_cuda_asr_create_heads(e->c, bridge_get, &b, dec_heads, &e->m);
    if (s != CT_OK) {
        ct_gpu_engine_free(e);
        return s;
    }
    *out = e;
    return CT_OK;
}

void ct_gpu_engine_free(ct_gpu_engine *e) {
    if (!e) return;
    ct_cuda_asr_free(e->m);
    ct_cuda_free(e->c);
    free(e);
}

ct_gpu_dims ct_gpu_engine_dims(const ct_gpu_engine *e) {
    if (e->ops) return e->ops->dims;
    const ct_cuda_asr_dims *d = ct_cuda_asr_get_dims(e->m);
    ct_gpu_dims g = {d->n_mels, d->d_enc, d->vocab, d->max_pos};
    return g;
}

size_t ct_gpu_engine_weight_bytes(const ct_gpu_engine *e) { return e->m ? ct_cuda_asr_weight_bytes(e->m) : 0; }

ct_status ct_gpu_engine_run(ct_gpu_engine *e, const ct_gpu_request *rq, ct_gpu_result *res) {
    if (rq->batch < 1 || rq->batch > 1024) return ct_fail(CT_ERR_INVALID_ARG, "cuda: batch of %d rows (1..1024)", rq->batch);
    if (e->ops) return e->ops->run(e->impl, rq, res);
    /* the engine's result carries fixed per-row arrays: keep it off the stack */
    ct_cuda_asr_result *r = calloc(1, sizeof *r);
    int *row_new = rq->force_max_new ? malloc(sizeof(int) * (size_t)rq->batch) : NULL;
    if (!r || (rq->force_max_new && !row_new)) {
        free(r);
        free(row_new);
        return ct_fail(CT_ERR_OOM, "cuda: batch of %d rows", rq->batch);
    }
    for (int b = 0; row_new && b < rq->batch; b++) row_new[b] = rq->row_new ? rq->row_new[b] : rq->max_new;
    ct_cuda_asr_request q;
    memset(&q, 0, sizeof q);
    q.batch = rq->batch;
    q.pcm = rq->pcm;
    q.n_samples = rq->n_samples;
    q.features = rq->pcm ? NULL : rq->features;
    q.feature_lengths = rq->feature_lengths;
    q.T_feat = rq->T_feat;
    q.prompt = rq->prompt;
    q.prompt_len = rq->prompt_len;
    q.max_new = rq->max_new;
    q.min_new = 0;
    q.row_new = row_new;
    q.eos = rq->eos;
    q.pad = rq->pad;
    q.use_graph = 1;
    r->tokens = res->tokens;
    r->n_generated = res->n_generated;
    r->encoder_out = res->encoder_out;
    r->T_enc_cap = res->T_enc_cap;
    r->features_out = res->features_out;
    r->T_feat_cap = res->T_feat_cap;
    ct_status s = ct_cuda_asr_run(e->m, &q, r);
    if (s == CT_OK) {
        res->T_feat = r->T_feat;
        res->T_enc = r->T_enc;
        if (res->enc_lengths) memcpy(res->enc_lengths, r->enc_lengths, sizeof(int) * (size_t)rq->batch);
        res->mel_s = r->mel_s;
        res->encoder_s = r->encoder_s;
        res->decoder_s = r->decoder_s;
    }
    free(row_new);
    free(r);
    return s;
}

#else /* !CT_HAVE_CUDA */

struct ct_gpu_engine {
    const ct_gpu_engine_ops *ops;
    void *impl;
};

int ct_gpu_engine_compiled(void) { return 0; }

int ct_gpu_engine_device_present(const char **why) {
    if (why) *why = "built without CUDA";
    return 0;
}

ct_status ct_gpu_engine_create(ct_gpu_weight_fn get, void *ctx, int dec_heads, ct_gpu_engine **out) {
    *out = NULL;
    return ct_fail(CT_ERR_UNSUPPORTED, "cuda: this build has no CUDA support (built without CUDA)");
}

void ct_gpu_engine_free(ct_gpu_engine *e) { free(e); }

ct_gpu_dims ct_gpu_engine_dims(const ct_gpu_engine *e) { return e->ops->dims; }

size_t ct_gpu_engine_weight_bytes(const ct_gpu_engine *e) { return 0; }

ct_status ct_gpu_engine_run(ct_gpu_engine *e, const ct_gpu_request *rq, ct_gpu_result *res) {
    if (e && e->ops) return e->ops->run(e->impl, rq, res);
    return ct_fail(CT_ERR_UNSUPPORTED, "cuda: this build has no CUDA support (built without CUDA)");
}

#endif

/* Both builds: the struct's first two fields are ops and impl. */
ct_status ct_gpu_engine_wrap(const ct_gpu_engine_ops *ops, void *impl, ct_gpu_engine **out) {
    *out = NULL;
    if (!ops || !ops->run) return ct_fail(CT_ERR_INVALID_ARG, "gpu engine: no run function");
    ct_gpu_engine *e = calloc(1, sizeof *e);
    if (!e) return ct_fail(CT_ERR_OOM, "gpu engine");
    e->ops = ops;
    e->impl = impl;
    *out = e;
    return CT_OK;
}
