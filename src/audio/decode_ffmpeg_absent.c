/* decode_ffmpeg_absent.c — the FFmpeg backend of a build made without the
 * FFmpeg libraries (CMake -DCT_FFMPEG=OFF, or AUTO where they are missing,
 * as on the GPU machine's image): every FFmpeg call says so, and says it as
 * "cannot open", so that --audio-backend auto goes on to libsndfile (WAV,
 * FLAC, Ogg Vorbis/Opus, MP3 with libsndfile 1.1+) and records why. */
#ifndef CT_HAVE_FFMPEG
#include <stdio.h>

#include "audio/audio_internal.h"

#define ABSENT "this build has no FFmpeg (libsndfile only)"

ct_status ct_audio_ffmpeg_probe(ct_audio_input *in, const ct_audio_options *opts, ct_audio_info *info,
                                int *cannot_open) {
    (void)opts, (void)info;
    *cannot_open = 1;
    return ct_fail(CT_ERR_UNSUPPORTED, "%s: %s", in->name, ABSENT);
}

ct_status ct_audio_ffmpeg_decode(ct_audio_input *in, ct_audio_job *job, ct_audio *out, int *cannot_open) {
    (void)job, (void)out;
    *cannot_open = 1;
    return ct_fail(CT_ERR_UNSUPPORTED, "%s: %s", in->name, ABSENT);
}

const char *ct_audio_ffmpeg_describe(char *buf, size_t cap) {
    snprintf(buf, cap, "FFmpeg: not in this build");
    return buf;
}
#endif
