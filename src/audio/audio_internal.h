/* audio_internal.h — what audio.c shares with the two decoder backends:
 * the byte source (a file descriptor or a memory buffer, read through our own
 * callbacks so that FFmpeg never interprets a path as a protocol URL), the
 * capped output sink, and the cancellation/deadline check. Not public. */
#ifndef CT_AUDIO_INTERNAL_H
#define CT_AUDIO_INTERNAL_H

#include <stdint.h>

#include "audio/audio.h"

/* A seekable byte source. */
typedef struct ct_audio_input {
    const char *name;     /* path or caller's name, for messages and probing */
    int fd;               /* >= 0: a file; -1: mem */
    const uint8_t *mem;
    int64_t size;         /* total bytes */
    int64_t pos;
} ct_audio_input;

/* Bytes read (0 at end of input) or -errno. */
int64_t ct_audio_input_read(ct_audio_input *in, uint8_t *buf, int64_t n);
/* New position, or -1 for an invalid target. whence: SEEK_SET/CUR/END. */
int64_t ct_audio_input_seek(ct_audio_input *in, int64_t off, int whence);

/* One decode in progress: options, clock, and the growing output. */
typedef struct ct_audio_job {
    const char *name;
    const ct_audio_options *opts;
    double t0;             /* ct_now() at the start */
    float *buf;            /* (cap,) output so far */
    size_t n, cap;
    size_t max_samples;    /* memory_cap_bytes / sizeof(float) */
} ct_audio_job;

/* CT_ERR_ABORTED when the caller cancelled or the deadline passed. */
ct_status ct_audio_job_check(const ct_audio_job *job);
/* The same as a bare flag (for FFmpeg's interrupt callback, which must not
 * touch the thread's error message). */
int ct_audio_job_interrupted(const ct_audio_job *job);

/* Refuse up front when `seconds` of audio (a container's claim; estimated
 * when it came from a bitrate) would exceed the cap, then reserve room for it.
 * seconds < 0: unknown, reserve a little. */
ct_status ct_audio_job_reserve(ct_audio_job *job, double seconds, int estimated);

/* Append k samples at 16 kHz: fails on the cap (checked before growing), on
 * allocation failure and on a non-finite sample. */
ct_status ct_audio_job_append(ct_audio_job *job, const float *x, size_t k);

/* The backends. *cannot_open is set to 1 when the failure happened while
 * opening/recognising the input (AUTO may then try the other backend). On
 * success the samples move from job into out. */
ct_status ct_audio_ffmpeg_decode(ct_audio_input *in, ct_audio_job *job, ct_audio *out,
                                 int *cannot_open);
ct_status ct_audio_ffmpeg_probe(ct_audio_input *in, const ct_audio_options *opts,
                                ct_audio_info *info, int *cannot_open);
ct_status ct_audio_sndfile_decode(ct_audio_input *in, ct_audio_job *job, ct_audio *out,
                                  int *cannot_open);
ct_status ct_audio_sndfile_probe(ct_audio_input *in, ct_audio_info *info, int *cannot_open);

/* Truncated WAV (data chunk longer than the file) and Ogg (last page cut
 * off) files fail with CT_ERR_FORMAT; anything else passes. Leaves pos at 0. */
ct_status ct_audio_check_container(ct_audio_input *in);

/* Decoded samples that fall short of the container's declared duration by
 * more than this are a truncated file: max(0.25 s, 2 % of the declared
 * duration). Codec delay/padding differences are a few tens of ms. */
int ct_audio_is_truncated(double declared_s, double decoded_s);

#endif
