/* audio.h — decode one audio file to mono float32 PCM at 16 kHz.
 *
 * Two backends: the FFmpeg libraries (libavformat/libavcodec/libswresample;
 * every container and codec FFmpeg 5.1 supports) and libsndfile +
 * libsamplerate (WAV/AIFF/FLAC/Ogg and friends). The first audio stream is
 * decoded, its channels are averaged with equal weights, and the result is
 * resampled to 16 kHz. Decoded PCM is bounded by a memory cap before and
 * while decoding; NaN/Inf samples, empty, truncated, corrupt and non-audio
 * inputs fail with a message naming the file and the cause (a few damaged
 * packets, at most 1 %, are skipped with a warning; their samples are
 * dropped, not filled with silence). The module never
 * prints: FFmpeg's own log lines go to ct_log at debug level.
 *
 * Thread-safety: any number of decodes/probes may run at once in different
 * threads (no shared state besides the once-installed FFmpeg log callback).
 */
#ifndef CT_AUDIO_AUDIO_H
#define CT_AUDIO_AUDIO_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#define CT_AUDIO_SAMPLE_RATE 16000

typedef enum ct_audio_backend {
    /* FFmpeg first; libsndfile only when FFmpeg cannot open the input at all
     * (no demuxer recognises it, or the open itself fails). Once FFmpeg has
     * opened a file, its verdict stands (a video without audio, a corrupt
     * stream or a truncated file is not retried with libsndfile): FFmpeg
     * reads everything libsndfile reads, so a second opinion would only turn
     * a clear error into a vaguer one. */
    CT_AUDIO_BACKEND_AUTO = 0,
    CT_AUDIO_BACKEND_FFMPEG = 1,
    CT_AUDIO_BACKEND_SNDFILE = 2
} ct_audio_backend;

/* How the libsndfile backend resamples to 16 kHz (--resampler). FFmpeg
 * always uses libswresample, as the original product does through FFmpeg. */
typedef enum ct_audio_resampler {
    /* FIR when the rate reduces to at most CT_RESAMPLE_MAX_PHASES phases
     * (every common rate), else libsamplerate */
    CT_AUDIO_RESAMPLER_AUTO = 0,
    CT_AUDIO_RESAMPLER_FIR = 1,  /* audio/resample.h; other rates fail */
    CT_AUDIO_RESAMPLER_SINC = 2  /* libsamplerate SRC_SINC_MEDIUM_QUALITY */
} ct_audio_resampler;

/* "auto", "fir", "sinc" */
ct_status ct_audio_resampler_parse(const char *name, ct_audio_resampler *out);
const char *ct_audio_resampler_name(ct_audio_resampler r);

struct ct_tasks;

/* Cancellation callback: return nonzero to stop the decode. */
typedef int (*ct_audio_cancel_fn)(void *user);

typedef struct ct_audio_options {
    ct_audio_backend backend;     /* default AUTO */
    uint64_t memory_cap_bytes;    /* decoded float32 PCM per file; default 4 GiB */
    const atomic_int *cancel_flag; /* polled while decoding; nonzero = cancel (may be NULL) */
    ct_audio_cancel_fn cancel_fn; /* polled likewise (may be NULL) */
    void *cancel_user;
    double deadline_seconds;      /* wall-clock budget of one decode/probe; <= 0: none */
    const char *cap_option;       /* the caller's option that sets the cap, named in the
                                   * over-the-cap message; default "--audio-memory-gb",
                                   * NULL: none (a tool without such an option) */
    ct_audio_resampler resampler; /* libsndfile backend; default AUTO */
    /* Helpers for the FIR resampler's blocks (NULL: the calling thread does
     * them); the samples are the same either way. Borrowed. */
    struct ct_tasks *tasks;
    /* Each run of output samples (16 kHz mono) as the decoder appends it,
     * from the decoding thread: x[0..k) are samples first .. first+k of the
     * output. A consumer can start on them before the decode ends (the
     * pipeline's VAD does). A backend that starts over (AUTO falling back
     * from FFmpeg to libsndfile) starts again at first = 0. NULL: none. */
    void (*on_samples)(void *user, const float *x, size_t first, size_t k);
    void *on_samples_user;
} ct_audio_options;

/* backend AUTO, memory_cap_bytes 4 GiB (--audio-memory-gb 4.0), no
 * cancellation, no deadline. */
ct_audio_options ct_audio_default_options(void);

/* "auto", "ffmpeg", "sndfile" (also accepts "libsndfile"; the product's
 * compatibility names "torchcodec" = ffmpeg and "librosa" = auto). */
ct_status ct_audio_backend_parse(const char *name, ct_audio_backend *out);
/* "ffmpeg" / "libsndfile" / "auto": the names the transcript JSON records. */
const char *ct_audio_backend_name(ct_audio_backend b);

/* What a probe learns without decoding the stream. */
typedef struct ct_audio_info {
    double duration;          /* seconds; < 0 when the container does not say */
    int duration_estimated;   /* 1 when FFmpeg guessed it from the bitrate */
    int sample_rate;          /* source rate, Hz */
    int channels;             /* source channel count */
    char codec[48];           /* "pcm_s16le", "mp3", "opus", ... */
    char container[48];       /* "wav", "ogg", "mov,mp4,m4a,3gp,3g2,mj2", ... */
    ct_audio_backend backend; /* FFMPEG or SNDFILE: who answered */
} ct_audio_info;

typedef struct ct_audio {
    float *samples;      /* (n,) mono float32 at sample_rate */
    size_t n;
    int sample_rate;     /* always CT_AUDIO_SAMPLE_RATE */
    double duration;     /* n / sample_rate seconds */
    int source_sample_rate;
    int source_channels;
    char codec[48];
    char container[48];
    ct_audio_backend backend;  /* FFMPEG or SNDFILE: who decoded it */
    char fallback_reason[512]; /* why AUTO fell back to libsndfile ("" if it did not) */
} ct_audio;

/* Decode path. opts may be NULL (defaults). On success *out owns the samples
 * (free with ct_audio_free); on failure *out is NULL and the message names
 * the file. Statuses: CT_ERR_NOT_FOUND (no such file), CT_ERR_IO (unreadable),
 * CT_ERR_FORMAT (not audio, no audio stream, corrupt, truncated, empty,
 * NaN/Inf), CT_ERR_UNSUPPORTED (no decoder for the codec), CT_ERR_LIMIT (over
 * the memory cap), CT_ERR_ABORTED (cancelled or past the deadline), CT_ERR_OOM,
 * CT_ERR_INVALID_ARG. */
ct_status ct_audio_decode(const char *path, const ct_audio_options *opts, ct_audio **out);

/* The same from bytes in memory (fuzzing, embedding); name is used in
 * messages and as the extension hint for format probing. */
ct_status ct_audio_decode_memory(const void *data, size_t size, const char *name,
                                 const ct_audio_options *opts, ct_audio **out);

/* Duration and format without decoding the stream (FFmpeg reads headers and
 * at most a few packets; libsndfile reads the header). Backend choice as for
 * decoding (AUTO). */
ct_status ct_audio_probe(const char *path, ct_audio_info *info);

void ct_audio_free(ct_audio *a);

/* One line on each backend's libraries (for the doctor and provenance):
 * "libavformat 59.27.100, libavcodec 59.37.100, libswresample 4.7.100" and
 * "libsndfile-1.2.0, libsamplerate 0.2.2". Returns buf. */
const char *ct_audio_ffmpeg_describe(char *buf, size_t cap);
const char *ct_audio_sndfile_describe(char *buf, size_t cap);

#endif
