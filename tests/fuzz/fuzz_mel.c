/* fuzz_mel.c — libFuzzer target for the frontend and the long-audio split
 * on arbitrary float samples (NaN, Inf, huge, subnormal). Byte 0 picks
 * dither and where the input is cut into two clips; the rest is float32
 * samples. On success the valid-frame counts must be n/160, every feature
 * finite and padding zero; the split's spans must tile [0, n). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "asr/chunk.h"
#include "asr/mel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ct_mel *mel;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    if (!mel) {
        ct_mel_options o = ct_mel_default_options();
        o.threads = 1;
        if (ct_mel_create(&o, &mel) != CT_OK) abort();
    }
    int dither = data[0] & 1;
    size_t n = (size - 1) / 4;
    float *x = malloc(sizeof(float) * (n ? n : 1));
    if (n) memcpy(x, data + 1, n * 4);
    size_t cut = n * (size_t)(data[0] >> 1) / 127;
    if (cut > n) cut = n;
    const float *clips[2] = {x, x + cut};
    size_t lens[2] = {cut, n - cut};
    int T = (int)ct_mel_frames(mel, n);
    float *out = malloc(sizeof(float) * 2 * (size_t)T * 128);
    int vf[2];
    if (ct_mel_compute_batch(mel, clips, lens, 2, dither, out, T, vf) == CT_OK) {
        for (int b = 0; b < 2; b++) {
            if (vf[b] != (int)(lens[b] / 160)) abort();
            const float *r = out + (size_t)b * T * 128;
            for (size_t k = 0; k < (size_t)T * 128; k++) {
                if (!isfinite(r[k])) abort();
                if (k >= (size_t)vf[b] * 128 && r[k] != 0.0f) abort();
            }
        }
    }
    /* a small geometry so that short inputs are split too */
    ct_chunk_options co = ct_chunk_default_options();
    co.max_clip_s = 0.05;  /* 800 samples */
    co.overlap_s = 0.02;   /* 320-sample search */
    co.energy_window = 64;
    ct_chunk_span *sp = NULL;
    size_t cnt = 0;
    if (ct_chunk_split(&co, x, n, &sp, &cnt) == CT_OK) {
        size_t at = 0;
        for (size_t k = 0; k < cnt; k++) {
            if (sp[k].start != at || sp[k].end <= sp[k].start || sp[k].end - sp[k].start > 800) abort();
            at = sp[k].end;
        }
        if (at != n) abort();
    }
    free(sp);
    free(out);
    free(x);
    return 0;
}
