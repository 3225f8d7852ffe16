/* fuzz_audio.c — libFuzzer target: arbitrary bytes through both decoder
 * backends from memory (FFmpeg via our AVIOContext over the buffer,
 * libsndfile via virtual I/O), plus the WAV/Ogg container checks. The first
 * byte picks the backend and the file-name extension used as FFmpeg's
 * probing hint; the rest is the file. Output: none (a quiet log sink). */
#include <stddef.h>
#include <stdint.h>

#include "audio/audio.h"
#include "core/log.h"

static void quiet(ct_log_level level, const char *msg, void *user) {
    (void)level;
    (void)msg;
    (void)user;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *names[] = {"in.wav", "in.mp3", "in.flac", "in.ogg",
                                  "in.m4a", "in.webm", "in.opus", "in"};
    static int init;
    if (!init) {
        ct_log_set(quiet, NULL);
        init = 1;
    }
    if (size < 1) return 0;
    ct_audio_options o = ct_audio_default_options();
    /* a small cap keeps a lying header from making the fuzzer itself OOM */
    o.memory_cap_bytes = 64u << 20;
    o.backend = (data[0] >> 3) % 3 == 2 ? CT_AUDIO_BACKEND_SNDFILE
              : (data[0] >> 3) % 3 == 1 ? CT_AUDIO_BACKEND_FFMPEG
                                        : CT_AUDIO_BACKEND_AUTO;
    ct_audio *a = NULL;
    if (ct_audio_decode_memory(data + 1, size - 1, names[data[0] & 7], &o, &a) == CT_OK) {
        /* touch every sample so ASan sees the whole buffer */
        volatile float acc = 0;
        for (size_t i = 0; i < a->n; i++) acc += a->samples[i];
        (void)acc;
    }
    ct_audio_free(a);
    return 0;
}
