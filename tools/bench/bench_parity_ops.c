/* bench_parity_ops — the model code of src/asr (encoder.c, decoder.c) on a
 * backend against a transformers dump (tools/device/tf_bench.py --dump: a
 * mixed-length batch's features, encoder output and the logits after the
 * 10-token prompt, bf16 transformers on the GPU): relative L2 of the encoder
 * over valid frames and of those logits, the numbers issue 13's parity rule
 * bounds (≤ 2e-2).
 *
 *   bench_parity_ops --model DIR --parity FILE [--device cuda|cpu] [--dtype bf16|fp16|fp32]
 *
 * Prints one JSON line.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/asr.h"
#include "asr/decoder.h"
#include "asr/encoder.h"
#include "model/safetensors.h"

static const int32_t PROMPT[10] = {13764, 7, 4, 16, 62, 62, 5, 9, 11, 13}; /* tf_bench.py's */

static int die(const char *what) {
    fprintf(stderr, "bench_parity_ops: %s: %s\n", what, ct_last_error());
    return 1;
}

static float *tensor_f32(const ct_safetensors *st, const char *name, const ct_st_tensor **t) {
    *t = ct_st_find(st, name);
    if (!*t) return NULL;
    float *x = malloc(sizeof(float) * (size_t)(*t)->numel);
    if (x && ct_st_tensor_to_f32(*t, x, (size_t)(*t)->numel) != CT_OK) {
        free(x);
        return NULL;
    }
    return x;
}

int main(int argc, char **argv) {
    const char *model = NULL, *par = NULL, *device = "cuda", *dtype = "bf16";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model")) model = argv[i + 1];
        else if (!strcmp(argv[i], "--parity")) par = argv[i + 1];
        else if (!strcmp(argv[i], "--device")) device = argv[i + 1];
        else if (!strcmp(argv[i], "--dtype")) dtype = argv[i + 1];
        else model = NULL, i = argc;
    }
    if (!model || !par) {
        fprintf(stderr, "usage: bench_parity_ops --model DIR --parity FILE [--device cuda|cpu] "
                        "[--dtype bf16|fp16|fp32]\n");
        return 2;
    }
    ct_dtype wdt = !strcmp(dtype, "fp16") ? CT_DTYPE_F16 : !strcmp(dtype, "fp32") ? CT_DTYPE_F32 : CT_DTYPE_BF16;
    ct_asr_options o = ct_asr_default_options();
    o.device = device;
    o.weight_dtype = wdt;
    ct_asr *asr;
    if (ct_asr_open(model, &o, &asr) != CT_OK) return die("open");
    ct_backend *be = ct_asr_backend(asr);
    const ct_asr_weights *w = ct_asr_model_weights(asr);
    const ct_asr_hparams *hp = &w->hp;
    ct_safetensors *P;
    if (ct_st_open(par, &P) != CT_OK) return die("parity file");
    const ct_st_tensor *tf, *te, *tl, *tlen = ct_st_find(P, "feature_lengths");
    float *feats = tensor_f32(P, "features", &tf), *enc_ref = tensor_f32(P, "encoder_out", &te),
          *log_ref = tensor_f32(P, "logits_last_prompt", &tl);
    if (!feats || !enc_ref || !log_ref || !tlen) {
        fprintf(stderr, "bench_parity_ops: %s lacks features, feature_lengths, encoder_out or logits_last_prompt\n", par);
        return 1;
    }
    const int B = (int)tf->shape[0], T = (int)tf->shape[1], D = hp->d_enc, V = hp->vocab, Pn = 10;
    const int Te_ref = (int)te->shape[1];
    int *flen = malloc(sizeof(int) * B), *elen = malloc(sizeof(int) * B), slot[64];
    for (int b = 0; b < B; b++) flen[b] = ((const int32_t *)tlen->data)[b], slot[b] = b;
    int Te0 = ct_encoder_frames(T), Smax = Pn + 1, nth = omp_get_max_threads();
    size_t fb = sizeof(float) * (size_t)B * T * hp->n_mels;
    ct_arena act, ws;
    size_t wse = ct_encoder_ws_bytes(hp, B, T, nth),
           wsd = ct_decoder_step_bytes(hp, B, Pn, Te0, Smax, nth) + sizeof(float) * (size_t)B * V + 4096;
    if (ct_backend_arena_create(be, fb + 4096 + ct_encoder_act_bytes(hp, B, T) + ct_decoder_state_bytes(hp, B, Te0, Smax),
                                &act) != CT_OK ||
        ct_backend_arena_create(be, wse > wsd ? wse : wsd, &ws) != CT_OK)
        return die("arenas");
    float *dfeats = ct_arena_alloc(&act, fb), *enc, *logits;
    int Te;
    if (!dfeats || be->ops->to_device(be, dfeats, feats, fb) != CT_OK) return die("features");
    if (ct_encoder_forward(w, be, &act, &ws, dfeats, flen, B, T, &enc, elen, &Te) != CT_OK) return die("encoder");
    if (Te != Te_ref) {
        fprintf(stderr, "bench_parity_ops: %d encoder frames, the dump has %d\n", Te, Te_ref);
        return 1;
    }
    float *eh = malloc(sizeof(float) * (size_t)B * Te * D), *lh = malloc(sizeof(float) * (size_t)B * V);
    if (be->ops->to_host(be, eh, enc, sizeof(float) * (size_t)B * Te * D) != CT_OK) return die("encoder out");
    double num = 0, den = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < elen[b]; t++)
            for (int k = 0; k < D; k++) {
                size_t i = ((size_t)b * Te + t) * D + k;
                num += ((double)eh[i] - enc_ref[i]) * ((double)eh[i] - enc_ref[i]);
                den += (double)enc_ref[i] * enc_ref[i];
            }
    double e_enc = sqrt(num / den);
    ct_decoder_state st;
    if (ct_decoder_prepare(w, be, &act, &ws, enc, elen, B, Te, Smax, &st) != CT_OK) return die("decoder prepare");
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)B * Pn);
    for (int b = 0; b < B; b++) memcpy(ids + (size_t)b * Pn, PROMPT, sizeof PROMPT);
    logits = ct_arena_alloc(&ws, sizeof(float) * (size_t)B * V);
    if (!logits || ct_decoder_step(w, be, &st, &ws, ids, slot, B, Pn, 0, logits) != CT_OK) return die("decoder step");
    if (be->ops->to_host(be, lh, logits, sizeof(float) * (size_t)B * V) != CT_OK) return die("logits");
    num = den = 0;
    int same_argmax = 0;
    for (int b = 0; b < B; b++) {
        int a = 0, r = 0;
        for (int j = 0; j < V; j++) {
            size_t i = (size_t)b * V + j;
            num += ((double)lh[i] - log_ref[i]) * ((double)lh[i] - log_ref[i]);
            den += (double)log_ref[i] * log_ref[i];
            if (lh[i] > lh[(size_t)b * V + a]) a = j;
            if (log_ref[i] > log_ref[(size_t)b * V + r]) r = j;
        }
        same_argmax += a == r;
    }
    printf("{\"what\":\"parity_ops\",\"device\":\"%s\",\"dtype\":\"%s\",\"batch\":%d,\"enc_rel_l2\":%.3e,"
           "\"first_logits_rel_l2\":%.3e,\"first_argmax_same\":%d}\n",
           device, dtype, B, e_enc, sqrt(num / den), same_argmax);
    ct_decoder_state_free(&st);
    ct_backend_arena_free(be, &act);
    ct_backend_arena_free(be, &ws);
    ct_st_free(P);
    ct_asr_free(asr);
    free(feats), free(enc_ref), free(log_ref), free(flen), free(elen), free(eh), free(lh), free(ids);
    return 0;
}
