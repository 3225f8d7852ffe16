/* encoder.h — the Conformer encoder (MODEL.md "Encoder"): subsampling with
 * per-conv length masks, 48 blocks of macaron FF / rel-pos MHSA / conv module /
 * FF / norm. Runs a padded batch on one backend; activations come from the
 * caller's arena (sized with ct_encoder_act_bytes / ct_encoder_ws_bytes).
 */
#ifndef CT_ASR_ENCODER_H
#define CT_ASR_ENCODER_H

#include "asr/weights.h"

/* Encoder frames for T mel frames (each stride-2 conv: L ← (L−1) div 2 + 1,
 * floor division, so 0 stays 0). */
int ct_encoder_frames(int T);

/* Bytes of activation arena (including the output) and of op workspace a
 * batch of B rows × T mel frames needs. */
size_t ct_encoder_act_bytes(const ct_asr_hparams *hp, int B, int T);
size_t ct_encoder_ws_bytes(const ct_asr_hparams *hp, int B, int T, int threads);

/* feats (B,T,n_mels) in backend memory, zero beyond feat_len[b];
 * out: *y (B,Te,d_enc) carved from act (stays allocated), enc_len (B) valid
 * encoder frames per row, *Te = ct_encoder_frames(T). Rows ≥ enc_len are
 * unspecified. */
ct_status ct_encoder_forward(const ct_asr_weights *w, ct_backend *be, ct_arena *act, ct_arena *ws,
                             const float *feats, const int *feat_len, int B, int T, float **y, int *enc_len,
                             int *Te);

#endif
