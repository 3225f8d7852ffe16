/* asr_gpu.c — the batch entry point on the GPU engine: checkpoint → engine,
 * and clips → per-row tokens, stop reasons, texts, timings, kept
 * intermediates. Rows are grouped by prompt (the engine takes one prompt per
 * batch); each group of ≤ 1024 rows is one engine call.
 *
 * Features: the engine's own GPU mel runs on the PCM. With dither, the
 * rows are dithered on the host first (ct_mel_dither: the CPU mel's
 * torch-exact noise, seeded by each clip's own length, so it does not depend
 * on the batch), threads over rows, and the GPU mel runs on them: the mel
 * stays on the GPU (issue 15), and the features are the CPU path's dithered
 * features up to the GPU mel's own rounding. The GPU mel needs ≥ 320
 * samples (two frames) per clip: a dithered batch with a shorter clip (the
 * last fixed window of a file, --vad none) takes the CPU mel for the whole
 * batch and each group's engine call starts from its rows' features; an
 * undithered one fails with the engine's message. Logits per step are not
 * kept by the engine: a request with keep_logits is refused. */
#include "asr/asr_gpu.h"

#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "core/trace.h"

enum { MAX_PROMPT = 64, MAX_ROWS = 1024 };

ct_status ct_asr_gpu_check(ct_dtype wdtype) {
    const char *why = "";
    if (!ct_gpu_engine_compiled())
        return ct_fail(CT_ERR_UNSUPPORTED, "device cuda: this build has no CUDA support (built without CUDA)");
    if (!ct_gpu_engine_device_present(&why))
        return ct_fail(CT_ERR_UNSUPPORTED, "device cuda: no CUDA device found (%s)", why);
    if (wdtype != CT_DTYPE_BF16)
        return ct_fail(CT_ERR_UNSUPPORTED, "device cuda: weights in %s are not supported (the GPU engine computes in bf16)",
                       ct_dtype_name(wdtype));
    return CT_OK;
}

static int lookup(void *ctx, const char *name, ct_gpu_weight *out) {
    const ct_st_tensor *t = ct_checkpoint_tensor(ctx, name);
    if (!t) return 0;
    out->dtype = t->dtype;
    out->ndim = t->ndim;
    for (int i = 0; i < t->ndim && i < 8; i++) out->shape[i] = t->shape[i];
    out->data = t->data;
    return 1;
}

ct_status ct_asr_gpu_open(const ct_checkpoint *ck, const ct_asr_hparams *hp, ct_gpu_engine **out) {
    /* the GPU engine converts float tensors to bf16; ggml's Q8_0 blocks
     * (a GGUF) are multiplied only by the CPU backend */
    for (size_t i = 0; i < ct_checkpoint_count(ck); i++)
        if (ct_checkpoint_at(ck, i)->dtype == CT_DTYPE_Q8_0)
            return ct_fail(CT_ERR_UNSUPPORTED,
                           "%s: tensor '%s' is Q8_0, which runs on the CPU only: use --device cpu, or convert the "
                           "safetensors checkpoint with cohere-transcribe-convert --dtype bf16 for the GPU",
                           ct_checkpoint_dir(ck), ct_checkpoint_at(ck, i)->name);
    ct_gpu_engine *e = NULL;
    ct_status s = ct_gpu_engine_create(lookup, (void *)ck, hp->dec_heads, &e);
    if (s != CT_OK) return ct_fail_wrap(s, "%s", ct_checkpoint_dir(ck));
    ct_gpu_dims d = ct_gpu_engine_dims(e);
    if (d.n_mels != hp->n_mels || d.d_enc != hp->d_enc || d.vocab != hp->vocab || d.max_pos != hp->max_pos) {
        ct_gpu_engine_free(e);
        return ct_fail(CT_ERR_FORMAT, "%s: GPU engine sizes (mels %d, d_enc %d, vocab %d, positions %d) differ from the config (%d, %d, %d, %d)",
                       ct_checkpoint_dir(ck), d.n_mels, d.d_enc, d.vocab, d.max_pos, hp->n_mels, hp->d_enc, hp->vocab,
                       hp->max_pos);
    }
    *out = e;
    return CT_OK;
}

/* The batch's features from the CPU mel, when the GPU mel cannot take a clip. */
typedef struct cpu_feats {
    const float *feats; /* (B, T, n_mels) for the whole batch, or NULL: the GPU mel */
    const int *len;     /* (B) valid frames */
    int T;
} cpu_feats;

/* One engine call for rows idx[0..n) that share a prompt. */
static ct_status run_group(const ct_asr_gpu_ctx *g, const float *const *clips, const size_t *n_samples, const int *idx,
                           int n, const int32_t *prompt, int P, int max_new, const ct_asr_request *req,
                           const cpu_feats *cf, ct_asr_result *out) {
    const int M = g->hp->n_mels, D = g->hp->d_enc;
    ct_status s = CT_OK;
    size_t nmax = 0;
    for (int i = 0; i < n; i++)
        if (n_samples[idx[i]] > nmax) nmax = n_samples[idx[i]];
    int T = cf->feats ? cf->T : ct_gpu_engine_feature_frames(nmax), Te = ct_gpu_engine_encoder_frames(T), W = P + max_new;
    const float **pcm = malloc(sizeof(float *) * (size_t)n);
    size_t *ns = malloc(sizeof(size_t) * (size_t)n);
    int *flen = malloc(sizeof(int) * (size_t)n), *elen = malloc(sizeof(int) * (size_t)n);
    int *ngen = malloc(sizeof(int) * (size_t)n);
    int *rowlim = req->row_max_new_tokens ? malloc(sizeof(int) * (size_t)n) : NULL;
    int32_t *tokens = malloc(sizeof(int32_t) * (size_t)n * W);
    float *feats = NULL, *enc = NULL;
    if (!pcm || !ns || !flen || !elen || !ngen || !tokens || (req->row_max_new_tokens && !rowlim)) {
        s = ct_fail(CT_ERR_OOM, "cuda: batch of %d rows", n);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        pcm[i] = clips[idx[i]];
        ns[i] = n_samples[idx[i]];
        /* the engine's per-row count is exact (it is a benchmark feature): cap it at the group's budget */
        if (rowlim) rowlim[i] = req->row_max_new_tokens[idx[i]] < max_new ? req->row_max_new_tokens[idx[i]] : max_new;
    }
    ct_gpu_request rq = {.batch = n, .prompt = prompt, .prompt_len = P, .max_new = max_new,
                         .force_max_new = req->ignore_eos, .row_new = rowlim,
                         .eos = g->eos_id, .pad = g->pad_id};
    ct_gpu_result res = {.tokens = tokens, .n_generated = ngen, .enc_lengths = elen};
    if (cf->feats || req->keep_features) {
        feats = malloc(sizeof(float) * (size_t)n * T * M);
        if (!feats) {
            s = ct_fail(CT_ERR_OOM, "cuda: features of %d x %d frames", n, T);
            goto done;
        }
    }
    if (cf->feats) { /* this group's rows of the batch's CPU features */
        for (int i = 0; i < n; i++) {
            flen[i] = cf->len[idx[i]];
            memcpy(feats + (size_t)i * T * M, cf->feats + (size_t)idx[i] * T * M, sizeof(float) * (size_t)T * M);
        }
        rq.features = feats;
        rq.feature_lengths = flen;
        rq.T_feat = T;
    } else {
        rq.pcm = pcm;
        rq.n_samples = ns;
        for (int i = 0; i < n; i++) flen[i] = (int)(ns[i] / 160);
        if (feats) {
            res.features_out = feats;
            res.T_feat_cap = T;
        }
    }
    if (req->keep_encoder) {
        enc = malloc(sizeof(float) * ((size_t)n * Te * D + 1));
        if (!enc) {
            s = ct_fail(CT_ERR_OOM, "cuda: encoder output of %d x %d frames", n, Te);
            goto done;
        }
        res.encoder_out = enc;
        res.T_enc_cap = Te;
    }
    double t0 = ct_now();
    if ((s = ct_gpu_engine_run(g->engine, &rq, &res)) != CT_OK) goto done;
    ct_trace_span("engine", t0, ct_now(), NULL, "\"rows\":%d,\"mel_s\":%.4f,\"encoder_s\":%.4f,\"decoder_s\":%.4f", n,
                  res.mel_s, res.encoder_s, res.decoder_s);
    out->seconds_mel += res.mel_s;
    out->seconds_encoder += res.encoder_s;
    out->seconds_decoder += res.decoder_s;
    /* the CPU path's stop-reason rule (asr.c, generate.c): a request beyond the position table stops there */
    int cap = g->hp->max_pos - P, requested = req->max_new_tokens > 0 ? req->max_new_tokens : cap;
    ct_stop_reason at_budget = requested <= cap ? CT_STOP_MAX_TOKENS : CT_STOP_POSITIONS;
    for (int i = 0; i < n && s == CT_OK; i++) {
        ct_asr_clip *c = &out->clips[idx[i]];
        c->feature_frames = flen[i];
        c->encoder_frames = elen[i];
        c->n_tokens = ngen[i];
        c->tokens = malloc(sizeof(int32_t) * (size_t)(ngen[i] + 1));
        if (!c->tokens) {
            s = ct_fail(CT_ERR_OOM, "cuda: tokens");
            break;
        }
        memcpy(c->tokens, tokens + (size_t)i * W + P, sizeof(int32_t) * (size_t)ngen[i]);
        int ended = ngen[i] > 0 && c->tokens[ngen[i] - 1] == g->eos_id && !req->ignore_eos;
        c->stop = ended ? CT_STOP_EOS : at_budget;
        if (req->keep_features) {
            c->features = malloc(sizeof(float) * ((size_t)flen[i] * M + 1));
            if (!c->features) {
                s = ct_fail(CT_ERR_OOM, "cuda: features copy");
                break;
            }
            memcpy(c->features, feats + (size_t)i * T * M, sizeof(float) * (size_t)flen[i] * M);
        }
        if (req->keep_encoder) {
            c->encoder = malloc(sizeof(float) * ((size_t)elen[i] * D + 1));
            if (!c->encoder) {
                s = ct_fail(CT_ERR_OOM, "cuda: encoder copy");
                break;
            }
            memcpy(c->encoder, enc + (size_t)i * Te * D, sizeof(float) * (size_t)elen[i] * D);
        }
        s = ct_tokenizer_decode(g->tok, c->tokens, c->n_tokens, &c->text);
    }
done:
    free(pcm);
    free(ns);
    free(flen);
    free(elen);
    free(ngen);
    free(rowlim);
    free(tokens);
    free(feats);
    free(enc);
    return s;
}

ct_status ct_asr_gpu_transcribe(const ct_asr_gpu_ctx *g, const float *const *clips, const size_t *n_samples, int B,
                                const ct_asr_request *req, ct_asr_result *out) {
    if (req->keep_logits)
        return ct_fail(CT_ERR_UNSUPPORTED, "device cuda: per-step logits are not kept by the GPU engine (keep_logits)");
    ct_status s = CT_OK;
    out->n = B;
    out->clips = calloc((size_t)B, sizeof *out->clips);
    int32_t *prompts = malloc(sizeof(int32_t) * (size_t)B * MAX_PROMPT);
    int *plen = malloc(sizeof(int) * (size_t)B), *group = malloc(sizeof(int) * (size_t)B);
    char *done_row = calloc((size_t)B, 1);
    float *dpcm = NULL, **dclips = NULL; /* the dithered rows, when req->dither */
    cpu_feats cf = {NULL, NULL, 0};
    float *cfeat = NULL;
    int *clen = NULL;
    if (!out->clips || !prompts || !plen || !group || !done_row) {
        s = ct_fail(CT_ERR_OOM, "asr: batch of %d", B);
        goto done;
    }
    for (int b = 0; b < B; b++) {
        const char *lang = req->languages && req->languages[b] ? req->languages[b] : "en";
        if ((s = ct_asr_prompt(g->cfg, g->tok, lang, req->punctuation, prompts + (size_t)b * MAX_PROMPT, MAX_PROMPT,
                               &plen[b])) != CT_OK) {
            ct_fail_wrap(s, "clip %d", b);
            goto done;
        }
        out->audio_seconds += (double)n_samples[b] / 16000.0;
    }
    int short_clip = 0;
    size_t nmax = 0;
    for (int b = 0; b < B; b++) {
        if (n_samples[b] < 320) short_clip = 1;
        if (n_samples[b] > nmax) nmax = n_samples[b];
    }
    if (req->dither && short_clip) { /* the CPU mel (torch-exact dither) for the whole batch */
        double t0 = ct_now(), c0 = ct_cpu_now();
        int T = ct_gpu_engine_feature_frames(nmax);
        if ((size_t)T < ct_mel_frames(g->mel, nmax)) {
            s = ct_fail(CT_ERR_INTERNAL, "cuda: mel frame counts disagree");
            goto done;
        }
        cfeat = malloc(sizeof(float) * (size_t)B * T * g->hp->n_mels);
        clen = malloc(sizeof(int) * (size_t)B);
        if (!cfeat || !clen) {
            s = ct_fail(CT_ERR_OOM, "asr: features of %d x %d frames", B, T);
            goto done;
        }
        if ((s = ct_mel_compute_batch(g->mel, clips, n_samples, B, 1, cfeat, T, clen)) != CT_OK) goto done;
        cf.feats = cfeat, cf.len = clen, cf.T = T;
        out->seconds_mel += ct_now() - t0;
        out->cpu_mel += ct_cpu_now() - c0;
    } else if (req->dither) { /* the CPU mel's noise added on the host, rows over threads; the GPU mel does the rest */
        double t0 = ct_now(), c0 = ct_cpu_now();
        if ((s = ct_mel_dither_batch(g->mel, clips, n_samples, B, &dpcm, &dclips)) != CT_OK) goto done;
        ct_trace_span("dither", t0, ct_now(), NULL, "\"rows\":%d", B);
        clips = (const float *const *)dclips;
        out->seconds_mel += ct_now() - t0;
        out->cpu_mel += ct_cpu_now() - c0;
    }
    for (int b = 0; b < B; b++) {
        if (done_row[b]) continue;
        const int32_t *p = prompts + (size_t)b * MAX_PROMPT;
        int P = plen[b], n = 0;
        for (int r = b; r < B && n < MAX_ROWS; r++)
            if (!done_row[r] && plen[r] == P && !memcmp(prompts + (size_t)r * MAX_PROMPT, p, sizeof(int32_t) * P)) {
                group[n++] = r;
                done_row[r] = 1;
            }
        int cap = g->hp->max_pos - P;
        if (cap < 1) {
            s = ct_fail(CT_ERR_INVALID_ARG, "clip %d: prompt of %d tokens leaves no decoder positions", b, P);
            goto done;
        }
        int max_new = req->max_new_tokens > 0 && req->max_new_tokens < cap ? req->max_new_tokens : cap;
        if ((s = run_group(g, clips, n_samples, group, n, p, P, max_new, req, &cf, out)) != CT_OK) goto done;
        b--; /* rows of this prompt beyond MAX_ROWS remain: look at row b again */
    }
done:
    free(prompts);
    free(plen);
    free(group);
    free(done_row);
    free(dpcm);
    free(dclips);
    free(cfeat);
    free(clen);
    if (s != CT_OK) ct_asr_result_free(out);
    return s;
}
