/* asr.c — the batch entry point: opens a checkpoint (config, weights,
 * tokenizer) on a backend (cpu, cpu-ref, cuda: one model definition), then
 * runs mel → encoder → greedy decoding for a padded batch, keeping
 * per-batch arenas between calls. Rows may have different prompts of one
 * length (each language's prompt has the same length). */
#include "asr/asr.h"

#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/encoder.h"
#include "asr/mel.h"
#include "asr/mel_device.h"
#include "core/fs.h"
#include "core/trace.h"
#include "model/checkpoint.h"

struct ct_asr {
    ct_backend *be;
    ct_checkpoint *ck;
    ct_tokenizer *tok;
    ct_mel *mel;
    ct_mel_device *meldev; /* the backend's mel op (CUDA), or NULL: the CPU mel */
    ct_asr_weights w;
    ct_model_config cfg;
    int32_t eos_id;
    int threads;
    ct_arena act, ws; /* grown on demand, kept between calls */
};

ct_asr_options ct_asr_default_options(void) {
    ct_asr_options o = {.device = "cpu", .weight_dtype = CT_DTYPE_F32, .threads = 0, .isa_limit = 0, .dnnl_bf16 = 0};
    return o;
}

ct_asr_request ct_asr_default_request(void) {
    ct_asr_request r = {.languages = NULL, .punctuation = 1, .dither = 0, .max_new_tokens = 0};
    return r;
}

/* The checkpoint's open on a thread of its own, beside the backend's
 * creation (cuda): creating a CUDA context and the cuBLASLt handle took
 * 0.25 s and the open with its NaN scan 0.27 s, one after the other, before
 * the first upload (docs/PERFORMANCE.md, "Session 10"). ct_fail's message
 * is per thread, so the opener's is carried back. */
typedef struct opener {
    const char *dir;
    int scan;
    ct_checkpoint *ck;
    ct_status status;
    double t0, t1;
    char error[512];
} opener;

static void *open_checkpoint(void *arg) {
    opener *o = arg;
    o->t0 = ct_now();
    o->status = (o->scan ? ct_checkpoint_open : ct_checkpoint_open_unchecked)(o->dir, &o->ck);
    o->t1 = ct_now();
    if (o->status != CT_OK) snprintf(o->error, sizeof o->error, "%s", ct_last_error());
    return NULL;
}

ct_status ct_asr_open(const char *dir, const ct_asr_options *opts, ct_asr **out) {
    *out = NULL;
    ct_asr_options def = ct_asr_default_options();
    if (!opts) opts = &def;
    ct_asr *a = calloc(1, sizeof *a);
    if (!a) return ct_fail(CT_ERR_OOM, "asr");
    ct_status s;
    ct_backend_options bo = ct_backend_default_options();
    bo.threads = opts->threads;
    bo.device_index = opts->device_index;
    bo.act_dtype = opts->act_dtype;
    bo.attn_variant = opts->attn_variant;
    bo.isa_limit = opts->isa_limit;
    bo.dnnl_bf16 = opts->dnnl_bf16;
    bo.dnnl_pack = opts->dnnl_pack;
    a->threads = opts->threads;
    const char *dev = opts->device ? opts->device : "cpu";
    int cuda = !strcmp(dev, "cuda");
    /* refused before any file is read: no CUDA, no device, or weights the
     * cuda backend does not multiply */
    if ((s = ct_asr_device_check(dev, opts->weight_dtype)) != CT_OK) goto fail;
    /* cuda: activations in the weights' 16-bit type unless asked otherwise
     * (the table multiplies weights of its activation type only) */
    if (cuda && bo.act_dtype == CT_DTYPE_F32) bo.act_dtype = opts->weight_dtype;
    /* CPU: the weight loader refuses NaN/infinity as it reads each tensor,
     * so the file is read once. cuda: the whole checkpoint is scanned at
     * open, in one parallel pass over the tensors, as the old whole-model
     * engine did, and the uploads then only copy: a scan per tensor is an
     * OpenMP region per tensor, ~700 of them, each waiting for cores that
     * the preparation workers hold (the load: 3.5 s after the one-engine
     * switch, 2.7 s with this pass; docs/PERFORMANCE.md, "Session 10").
     * On cuda the open runs beside the backend's creation. */
    opener op = {.dir = dir, .scan = cuda};
    pthread_t opener_thread;
    int opening = cuda && pthread_create(&opener_thread, NULL, open_checkpoint, &op) == 0;
    /* the load's parts in the run's timeline (--trace): where a slow load goes */
    double t0 = ct_now();
    s = ct_backend_create(dev, &bo, &a->be);
    double t1 = ct_now();
    if (opening) pthread_join(opener_thread, NULL);
    else if (s == CT_OK) open_checkpoint(&op); /* after the backend: its failure's message stays */
    a->ck = op.ck;
    if (s != CT_OK) goto fail;
    ct_trace_span("backend", t0, t1, dev, NULL);
    if ((s = op.status) != CT_OK) {
        ct_fail(s, "%s", op.error);
        goto fail;
    }
    ct_trace_span("checkpoint", op.t0, op.t1, NULL, "\"scanned\":%d", cuda);
    t0 = ct_now();
    a->cfg = *ct_checkpoint_config(a->ck);
    /* a directory's tokenizer.json, or a .gguf file's own vocabulary */
    if ((s = ct_tokenizer_load_model(ct_checkpoint_dir(a->ck), &a->tok)) != CT_OK) goto fail;
    if ((s = ct_asr_weights_map_checkpoint_plan(a->be, a->ck, opts->weight_dtype, &opts->q8, &a->w)) != CT_OK)
        goto fail;
    t1 = ct_now();
    ct_trace_span("weights", t0, t1, NULL, "\"bytes\":%zu", a->w.bytes);
    const ct_asr_hparams hp = a->w.hp;
    /* the converter runs the same check before it writes a GGUF */
    if ((s = ct_tokenizer_check_model(a->tok, hp.vocab, a->cfg.eos_id, dir, &a->eos_id)) != CT_OK) goto fail;
    ct_mel_options mo = ct_mel_default_options();
    mo.n_mels = hp.n_mels;
    mo.threads = opts->threads;
    if ((s = ct_mel_create(&mo, &a->mel)) != CT_OK) goto fail;
    if ((s = ct_mel_device_create(a->mel, &mo, a->be, &a->meldev)) != CT_OK) goto fail;
    ct_trace_span("tokenizer, mel", t1, ct_now(), NULL, NULL);
    /* weights already in the compute dtype are views of the mapping (CPU),
     * so the checkpoint lives until ct_asr_free (after the weights) */
    *out = a;
    return CT_OK;
fail:
    ct_asr_free(a);
    return s;
}

void ct_asr_free(ct_asr *a) {
    if (!a) return;
    if (a->be) {
        ct_backend_arena_free(a->be, &a->act);
        ct_backend_arena_free(a->be, &a->ws);
    }
    ct_asr_weights_free(&a->w);
    ct_mel_device_free(a->meldev);
    ct_mel_free(a->mel);
    ct_tokenizer_free(a->tok);
    ct_checkpoint_free(a->ck);
    ct_backend_free(a->be);
    free(a);
}

const ct_model_config *ct_asr_config(const ct_asr *a) { return &a->cfg; }
const ct_tokenizer *ct_asr_tokenizer(const ct_asr *a) { return a->tok; }
const ct_asr_weights *ct_asr_model_weights(const ct_asr *a) { return &a->w; }
ct_backend *ct_asr_backend(ct_asr *a) { return a->be; }

/* Make sure an arena holds at least `bytes` (contents are not kept). */
static ct_status reserve(ct_backend *be, ct_arena *a, size_t bytes) {
    if (a->cap >= bytes) {
        ct_arena_reset(a);
        return CT_OK;
    }
    ct_backend_arena_free(be, a);
    return ct_backend_arena_create(be, bytes, a);
}

void ct_asr_result_free(ct_asr_result *r) {
    if (!r) return;
    for (int b = 0; b < r->n && r->clips; b++) {
        ct_asr_clip *c = &r->clips[b];
        free(c->text);
        free(c->tokens);
        free(c->features);
        free(c->encoder);
        free(c->logits);
    }
    free(r->clips);
    memset(r, 0, sizeof *r);
}

static ct_status copy_out(ct_backend *be, float **dst, const float *src, size_t n) {
    *dst = malloc(sizeof(float) * (n ? n : 1));
    if (!*dst) return ct_fail(CT_ERR_OOM, "asr: result of %zu floats", n);
    return be->ops->to_host(be, *dst, src, sizeof(float) * n);
}

ct_status ct_asr_transcribe(ct_asr *a, const float *const *clips, const size_t *n_samples, int B,
                            const ct_asr_request *req, ct_asr_result *out) {
    memset(out, 0, sizeof *out);
    ct_asr_request def = ct_asr_default_request();
    if (!req) req = &def;
    if (B <= 0) return ct_fail(CT_ERR_INVALID_ARG, "asr: batch of %d clips", B);
    if (req->forced && req->max_new_tokens <= 0)
        return ct_fail(CT_ERR_INVALID_ARG, "asr: forced tokens need max_new_tokens (their row stride)");
    /* per-row budgets are a benchmark feature (exact counts), taken only
     * together with ignore_eos */
    if (req->row_max_new_tokens && !req->ignore_eos)
        return ct_fail(CT_ERR_INVALID_ARG, "asr: per-clip token budgets need ignore_eos");
    for (int b = 0; req->row_max_new_tokens && b < B; b++) /* before any work */
        if (req->row_max_new_tokens[b] < 1 || (req->max_new_tokens > 0 && req->row_max_new_tokens[b] > req->max_new_tokens))
            return ct_fail(CT_ERR_INVALID_ARG, "asr: clip %d: token budget %d outside 1..max_new_tokens (%d)", b,
                           req->row_max_new_tokens[b], req->max_new_tokens);
    const ct_asr_hparams *hp = &a->w.hp;
    ct_backend *be = a->be;
    ct_status s = CT_OK;
    out->n = B;
    out->clips = calloc((size_t)B, sizeof *out->clips);
    int32_t *prompts = malloc(sizeof(int32_t) * (size_t)B * 64);
    int *feat_len = calloc((size_t)B, sizeof(int)), *enc_len = calloc((size_t)B, sizeof(int));
    float *feats_host = NULL, *dpcm = NULL, **dclips = NULL; /* dclips: the dithered rows for the device mel */
    ct_generate_row *rows = calloc((size_t)B, sizeof *rows);
    ct_decoder_state dst = {0};
    if (!out->clips || !prompts || !feat_len || !enc_len || !rows) {
        s = ct_fail(CT_ERR_OOM, "asr: batch of %d", B);
        goto done;
    }
    /* prompts: one per row, all of the same length */
    int P = 0;
    for (int b = 0; b < B; b++) {
        const char *lang = req->languages && req->languages[b] ? req->languages[b] : "en";
        int n = 0;
        s = ct_asr_prompt(&a->cfg, a->tok, lang, req->punctuation, prompts + (size_t)b * 64, 64, &n);
        if (s != CT_OK) {
            ct_fail_wrap(s, "clip %d", b);
            goto done;
        }
        if (b > 0 && n != P) {
            s = ct_fail(CT_ERR_UNSUPPORTED, "clip %d: prompt of %d tokens, others %d", b, n, P);
            goto done;
        }
        P = n;
        if (P != 64)
            for (int i = 0; i < P; i++) prompts[(size_t)b * P + i] = prompts[(size_t)b * 64 + i];
    }
    int max_new = req->max_new_tokens > 0 ? req->max_new_tokens : hp->max_pos - P;
    /* mel, one padded batch: on the host (asr/mel.c) or the backend (mel_device.c) */
    double t0 = ct_now(), c0 = ct_cpu_now();
    size_t nmax = 0;
    for (int b = 0; b < B; b++) {
        if (n_samples[b] > nmax) nmax = n_samples[b];
        out->audio_seconds += (double)n_samples[b] / 16000.0;
    }
    int T = (int)ct_mel_frames(a->mel, nmax);
    /* the backend's mel where it has one (CUDA), except for kept features
     * (host copies); with dither the rows are dithered on the host first
     * (ct_mel_dither_batch: the CPU mel's torch-exact noise), so the mel
     * stays on the device */
    int dev_mel = a->meldev && !req->keep_features;
    for (int b = 0; dev_mel && b < B; b++) dev_mel = n_samples[b] >= 320;
    if (dev_mel && req->dither) {
        if ((s = ct_mel_dither_batch(a->mel, clips, n_samples, B, &dpcm, &dclips)) != CT_OK) goto done;
        clips = (const float *const *)dclips;
        ct_trace_span("dither", t0, ct_now(), NULL, "\"rows\":%d", B);
    }
    if (!dev_mel) {
        feats_host = malloc(sizeof(float) * (size_t)B * T * hp->n_mels);
        if (!feats_host) {
            s = ct_fail(CT_ERR_OOM, "asr: features of %d x %d frames", B, T);
            goto done;
        }
        if ((s = ct_mel_compute_batch(a->mel, clips, n_samples, B, req->dither, feats_host, T, feat_len)) != CT_OK)
            goto done;
    }
    double t1 = ct_now(), c1 = ct_cpu_now(); /* the device mel's end is taken below */
    /* arenas: encoder activations + decoder state in act; op scratch in ws */
    int Te = ct_encoder_frames(T);
    int Smax = ct_generate_cache_positions(hp, P, max_new);
    size_t feat_bytes = sizeof(float) * (size_t)B * T * hp->n_mels + 2 * CT_ARENA_ALIGN;
    size_t act_b = feat_bytes + ct_encoder_act_bytes(hp, B, T) + ct_decoder_state_bytes(hp, B, Te, Smax);
    /* per-thread scratch of the CPU ops is sized for the threads OpenMP will use now */
    int nth = omp_get_max_threads();
    if (a->threads > nth) nth = a->threads;
    size_t ws_e = ct_encoder_ws_bytes(hp, B, T, nth);
    size_t ws_d = ct_decoder_step_bytes(hp, B, P, Te, Smax, nth) + ct_generate_ws_bytes(hp, B, max_new) + 4096;
    size_t ws_m = dev_mel ? ct_mel_device_ws_bytes(B, T, nmax) : 0;
    if (ws_d > ws_e) ws_e = ws_d;
    if (ws_m > ws_e) ws_e = ws_m;
    if ((s = reserve(be, &a->act, act_b)) != CT_OK || (s = reserve(be, &a->ws, ws_e)) != CT_OK) goto done;
    out->arena_bytes = a->act.cap + a->ws.cap;
    float *feats = ct_arena_alloc(&a->act, feat_bytes - 2 * CT_ARENA_ALIGN);
    if (!feats) {
        s = ct_fail_wrap(CT_ERR_OOM, "asr: features");
        goto done;
    }
    if (dev_mel) {
        if ((s = ct_mel_device_compute(a->meldev, clips, n_samples, B, T, feats, feat_len, &a->ws)) != CT_OK ||
            (s = be->ops->synchronize(be)) != CT_OK)
            goto done;
        t1 = ct_now(), c1 = ct_cpu_now();
    } else if ((s = be->ops->to_device(be, feats, feats_host, sizeof(float) * (size_t)B * T * hp->n_mels)) != CT_OK) {
        goto done;
    }
    out->seconds_mel = t1 - t0;
    out->cpu_mel = c1 - c0;
    ct_trace_span("mel", t0, t1, NULL, "\"device\":%d,\"dither\":%d,\"rows\":%d", dev_mel, req->dither, B);
    float *enc;
    int Te_got;
    if ((s = ct_encoder_forward(&a->w, be, &a->act, &a->ws, feats, feat_len, B, T, &enc, enc_len, &Te_got)) != CT_OK)
        goto done;
    if ((s = be->ops->synchronize(be)) != CT_OK) goto done;
    double t2 = ct_now(), c2 = ct_cpu_now();
    out->seconds_encoder = t2 - t1;
    out->cpu_encoder = c2 - c1;
    ct_trace_span("encoder", t1, t2, NULL, "\"rows\":%d,\"frames\":%d", B, T);
    for (int b = 0; b < B; b++) {
        ct_asr_clip *c = &out->clips[b];
        c->feature_frames = feat_len[b];
        c->encoder_frames = enc_len[b];
        if (req->keep_features) {
            c->features = malloc(sizeof(float) * ((size_t)feat_len[b] * hp->n_mels + 1));
            if (!c->features) {
                s = ct_fail(CT_ERR_OOM, "asr: features copy");
                goto done;
            }
            memcpy(c->features, feats_host + (size_t)b * T * hp->n_mels, sizeof(float) * feat_len[b] * hp->n_mels);
        }
        if (req->keep_encoder &&
            (s = copy_out(be, &c->encoder, enc + (size_t)b * Te_got * hp->d_enc, (size_t)enc_len[b] * hp->d_enc)) != CT_OK)
            goto done;
    }
    if ((s = ct_decoder_prepare(&a->w, be, &a->act, &a->ws, enc, enc_len, B, Te_got, Smax, &dst)) != CT_OK) goto done;
    ct_generate_options go = {.max_new_tokens = max_new, .eos_id = a->eos_id, .ignore_eos = req->ignore_eos,
                              .keep_logits = req->keep_logits, .row_max_new_tokens = req->row_max_new_tokens,
                              .forced = req->forced, .loop = req->decode_loop};
    if ((s = ct_generate_greedy(&a->w, be, &dst, &a->ws, prompts, P, &go, rows)) != CT_OK) goto done;
    if ((s = be->ops->synchronize(be)) != CT_OK) goto done;
    out->seconds_decoder = ct_now() - t2;
    out->cpu_decoder = ct_cpu_now() - c2;
    ct_trace_span("decoder", t2, t2 + out->seconds_decoder, NULL, "\"rows\":%d,\"max_new_tokens\":%d", B, max_new);
    for (int b = 0; b < B; b++) {
        ct_asr_clip *c = &out->clips[b];
        c->tokens = rows[b].tokens;
        c->n_tokens = rows[b].n_tokens;
        c->stop = rows[b].stop;
        c->logits = rows[b].logits;
        rows[b].tokens = NULL;
        rows[b].logits = NULL;
        if ((s = ct_tokenizer_decode(a->tok, c->tokens, c->n_tokens, &c->text)) != CT_OK) goto done;
    }
done:
    ct_decoder_state_free(&dst);
    if (rows) ct_generate_rows_free(rows, B);
    free(rows);
    free(prompts);
    free(feat_len);
    free(enc_len);
    free(feats_host);
    free(dpcm);
    free(dclips);
    if (s != CT_OK) ct_asr_result_free(out);
    return s;
}

ct_status ct_asr_device_check(const char *device, ct_dtype weight_dtype) {
    if (!device || !strcmp(device, "cpu") || !strcmp(device, "cpu-ref")) return CT_OK;
    if (strcmp(device, "cuda")) return ct_fail(CT_ERR_UNSUPPORTED, "device %s is not supported (cpu, cuda)", device);
    const char *why = "";
    if (!ct_backend_available("cuda", &why)) {
        if (!strcmp(why, "built without CUDA"))
            return ct_fail(CT_ERR_UNSUPPORTED, "device cuda: this build has no CUDA support (built without CUDA)");
        return ct_fail(CT_ERR_UNSUPPORTED, "device cuda: no CUDA device found (%s)", why);
    }
    /* the cuda table multiplies 16-bit weights in their own type (fp32 accumulation) */
    if (weight_dtype != CT_DTYPE_BF16 && weight_dtype != CT_DTYPE_F16)
        return ct_fail(CT_ERR_UNSUPPORTED, "device cuda: weights in %s are not supported (bf16 or f16)",
                       ct_dtype_name(weight_dtype));
    return CT_OK;
}
