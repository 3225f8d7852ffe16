/* decoder.h — the Transformer decoder (MODEL.md "Decoder and generation"):
 * encoder→decoder projection and cross-attention K/V computed once per batch,
 * then steps of pre-LN self-attention over a KV cache, cross-attention, ReLU
 * FFN, final norm and head. Rows are addressed by slot (their index in the
 * batch), so finished rows drop out of a step without moving any cache.
 */
#ifndef CT_ASR_DECODER_H
#define CT_ASR_DECODER_H

#include "asr/weights.h"

typedef struct ct_decoder_state {
    int slots;    /* batch rows */
    int Tenc;     /* padded encoder frames */
    int Smax;     /* KV cache positions (≤ max_pos) */
    int *enc_len; /* (slots) host */
    ct_dtype act;     /* element type of the caches: the backend's activation type */
    void **ck, **cv;  /* per layer (slots, Tenc, d_dec): cross K/V */
    void **sk, **sv;  /* per layer (slots, Smax, d_dec): self-attention cache */
    void **ptrs;      /* storage of the four pointer tables */
    int32_t *positions; /* (slots · Smax) host scratch for a step's positions */
} ct_decoder_state;

/* Bytes of weights one decoding step multiplies by (every layer's self q, k,
 * v, o, cross q, o, both FFN matrices, and the head): the step's memory
 * traffic floor, as the cross K/V are made once per batch. */
size_t ct_decoder_weight_bytes(const ct_asr_weights *w);

size_t ct_decoder_state_bytes(const ct_asr_hparams *hp, int B, int Tenc, int Smax);
size_t ct_decoder_step_bytes(const ct_asr_hparams *hp, int n, int S, int Tenc, int Smax, int threads);

/* Project the encoder output and compute every layer's cross K/V; the state's
 * tensors come from `act` (they live as long as the batch).
 * enc (B, Tenc, d_enc) float32 backend memory; enc_len (B) host. */
ct_status ct_decoder_prepare(const ct_asr_weights *w, ct_backend *be, ct_arena *act, ct_arena *ws,
                             const float *enc, const int *enc_len, int B, int Tenc, int Smax,
                             ct_decoder_state *st);
void ct_decoder_state_free(ct_decoder_state *st);

/* One step for n rows: tokens ids (n, S) at positions pos0..pos0+S−1 of the
 * slots in slot (n); writes the logits of each row's last position to
 * logits (n, vocab) float32 in backend memory. Scratch from ws (rewound). */
ct_status ct_decoder_step(const ct_asr_weights *w, ct_backend *be, ct_decoder_state *st, ct_arena *ws,
                          const int32_t *ids, const int *slot, int n, int S, int pos0, float *logits);
/* The same for one position (S = 1) whose ids (n) and position (1) are
 * int32 backend memory (ct_greedy_state's ids and pos): the step the
 * device loop (generate_dev.c) replays as a graph. The caller keeps the
 * position inside the cache and the ids inside the vocabulary. */
ct_status ct_decoder_step_dev(const ct_asr_weights *w, ct_backend *be, ct_decoder_state *st, ct_arena *ws,
                              const int32_t *ids_dev, const int32_t *pos_dev, const int *slot, int n, float *logits);

#endif
