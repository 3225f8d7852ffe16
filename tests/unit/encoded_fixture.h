/* encoded_fixture.h — the greedy-loop tests' one copy of their setup
 * (test_generate_forced, test_generate_device): the tiny fixture model on a
 * backend, arenas the caller sizes for its decoding, and a padded batch of
 * pseudo-random features already encoded. Header-only like engine_run.h. */
#ifndef CT_TEST_ENCODED_FIXTURE_H
#define CT_TEST_ENCODED_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "asr/encoder.h"
#include "model/checkpoint.h"
#include "testutil.h"

enum { CT_TEST_ENC_ROWS = 2, CT_TEST_ENC_T = 120 };

typedef struct ct_test_encoded {
    ct_backend *be;
    ct_asr_weights w;
    ct_arena act, ws;
    float *enc; /* (rows, Te, d_enc) in backend memory */
    int enc_len[CT_TEST_ENC_ROWS], Te;
} ct_test_encoded;

/* The tiny fixture model on `backend`; f->w.hp then sizes the caller's
 * decoding for ct_test_encoded_encode. */
static void ct_test_encoded_load(ct_test_encoded *f, const char *backend) {
    memset(f, 0, sizeof *f);
    CT_ASSERT_OK(ct_backend_create(backend, NULL, &f->be));
    ct_checkpoint *ck;
    CT_ASSERT_OK(ct_checkpoint_open(CT_FIXTURE("tiny-hf"), &ck));
    CT_ASSERT_OK(ct_asr_weights_from_checkpoint(f->be, ck, ct_backend_act_dtype(f->be), &f->w));
    ct_checkpoint_free(ck);
}

/* act_extra / ws_dec: the caller's decoding needs beyond the encoder's
 * (activation arena; workspace, which is the larger of the two times
 * ws_factor); seed: the features' LCG seed. Rows are 120 and 77 frames. */
static void ct_test_encoded_encode(ct_test_encoded *f, size_t act_extra, size_t ws_dec, int ws_factor, unsigned seed) {
    const int B = CT_TEST_ENC_ROWS, T = CT_TEST_ENC_T;
    int feat_len[CT_TEST_ENC_ROWS] = {120, 77};
    const ct_asr_hparams *hp = &f->w.hp;
    const size_t fb = sizeof(float) * B * T * hp->n_mels;
    CT_ASSERT_OK(ct_backend_arena_create(f->be, 2 * fb + ct_encoder_act_bytes(hp, B, T) + act_extra, &f->act));
    size_t wse = ct_encoder_ws_bytes(hp, B, T, 8);
    CT_ASSERT_OK(ct_backend_arena_create(f->be, (size_t)ws_factor * (wse > ws_dec ? wse : ws_dec), &f->ws));
    float *feats = malloc(fb);
    assert_non_null(feats);
    unsigned s = seed;
    for (int i = 0; i < B * T * hp->n_mels; i++) {
        s = s * 1664525u + 1013904223u;
        feats[i] = (float)((s >> 8) / 8388608.0 - 1.0);
    }
    float *dfeats = ct_arena_alloc(&f->act, fb); /* backend memory (the device on cuda) */
    assert_non_null(dfeats);
    CT_ASSERT_OK(f->be->ops->to_device(f->be, dfeats, feats, fb));
    CT_ASSERT_OK(
        ct_encoder_forward(&f->w, f->be, &f->act, &f->ws, dfeats, feat_len, B, T, &f->enc, f->enc_len, &f->Te));
    free(feats);
}

static void ct_test_encoded_teardown(ct_test_encoded *f) {
    ct_backend_arena_free(f->be, &f->act);
    ct_backend_arena_free(f->be, &f->ws);
    ct_asr_weights_free(&f->w);
    ct_backend_free(f->be);
}

#endif
