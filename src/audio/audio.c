/* audio.c — the backend-independent half of decoding: options, the byte
 * source, the capped output buffer, cancellation/deadline, and the AUTO
 * policy (FFmpeg, then libsndfile only when FFmpeg cannot open the input).
 * The backends live in decode_ffmpeg.c and decode_sndfile.c. */
#include "audio/audio_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "core/log.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

ct_audio_options ct_audio_default_options(void) {
    ct_audio_options o;
    memset(&o, 0, sizeof o);
    o.backend = CT_AUDIO_BACKEND_AUTO;
    o.memory_cap_bytes = (uint64_t)4 << 30;
    o.cap_option = "--audio-memory-gb";
    return o;
}

ct_status ct_audio_backend_parse(const char *name, ct_audio_backend *out) {
    if (!name || !out) return ct_fail(CT_ERR_INVALID_ARG, "audio backend: NULL argument");
    if (!strcmp(name, "auto") || !strcmp(name, "librosa"))
        *out = CT_AUDIO_BACKEND_AUTO;
    else if (!strcmp(name, "ffmpeg") || !strcmp(name, "torchcodec"))
        *out = CT_AUDIO_BACKEND_FFMPEG;
    else if (!strcmp(name, "sndfile") || !strcmp(name, "libsndfile"))
        *out = CT_AUDIO_BACKEND_SNDFILE;
    else
        return ct_fail(CT_ERR_INVALID_ARG,
                       "--audio-backend: '%s' is not one of auto, ffmpeg, sndfile", name);
    return CT_OK;
}

const char *ct_audio_backend_name(ct_audio_backend b) {
    switch (b) {
    case CT_AUDIO_BACKEND_FFMPEG: return "ffmpeg";
    case CT_AUDIO_BACKEND_SNDFILE: return "libsndfile";
    default: return "auto";
    }
}

ct_status ct_audio_resampler_parse(const char *name, ct_audio_resampler *out) {
    if (!name || !out) return ct_fail(CT_ERR_INVALID_ARG, "resampler: NULL argument");
    if (!strcmp(name, "auto")) *out = CT_AUDIO_RESAMPLER_AUTO;
    else if (!strcmp(name, "fir")) *out = CT_AUDIO_RESAMPLER_FIR;
    else if (!strcmp(name, "sinc")) *out = CT_AUDIO_RESAMPLER_SINC;
    else return ct_fail(CT_ERR_INVALID_ARG, "--resampler: '%s' is not one of auto, fir, sinc", name);
    return CT_OK;
}

const char *ct_audio_resampler_name(ct_audio_resampler r) {
    switch (r) {
    case CT_AUDIO_RESAMPLER_FIR: return "fir";
    case CT_AUDIO_RESAMPLER_SINC: return "sinc";
    default: return "auto";
    }
}

/* ---- byte source ------------------------------------------------------- */

int64_t ct_audio_input_read(ct_audio_input *in, uint8_t *buf, int64_t n) {
    if (n <= 0 || in->pos >= in->size) return 0;
    if (n > in->size - in->pos) n = in->size - in->pos;
    if (in->fd < 0) {
        memcpy(buf, in->mem + in->pos, (size_t)n);
        in->pos += n;
        return n;
    }
    for (;;) {
        ssize_t r = pread(in->fd, buf, (size_t)n, (off_t)in->pos);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return -(int64_t)errno;
        in->pos += r;
        return r;
    }
}

int64_t ct_audio_input_seek(ct_audio_input *in, int64_t off, int whence) {
    int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? in->pos : in->size;
    if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return -1;
    if ((off > 0 && base > INT64_MAX - off)) return -1;
    int64_t p = base + off;
    if (p < 0) return -1;
    in->pos = p; /* past the end is allowed (reads then return 0) */
    return p;
}

/* ---- the job ------------------------------------------------------------ */

int ct_audio_job_interrupted(const ct_audio_job *job) {
    const ct_audio_options *o = job->opts;
    if (o->cancel_flag && atomic_load(o->cancel_flag)) return 1;
    if (o->cancel_fn && o->cancel_fn(o->cancel_user)) return 1;
    if (o->deadline_seconds > 0 && ct_now() - job->t0 > o->deadline_seconds) return 2;
    return 0;
}

ct_status ct_audio_job_check(const ct_audio_job *job) {
    int r = ct_audio_job_interrupted(job);
    if (r == 1) return ct_fail(CT_ERR_ABORTED, "%s: decoding cancelled", job->name);
    if (r == 2)
        return ct_fail(CT_ERR_ABORTED, "%s: decoding exceeded its deadline of %g s", job->name,
                       job->opts->deadline_seconds);
    return CT_OK;
}

static ct_status limit_error(const ct_audio_job *job, double seconds, const char *how) {
    double bytes = seconds * CT_AUDIO_SAMPLE_RATE * sizeof(float);
    const char *opt = job->opts->cap_option;
    return ct_fail(CT_ERR_LIMIT,
                   "%s: decoded audio would need %.1f MiB (%s %.1f s at 16 kHz mono float32), "
                   "over the audio memory cap of %.1f MiB (%.3g GiB%s%s)",
                   job->name, bytes / MIB, how, seconds,
                   (double)job->opts->memory_cap_bytes / MIB,
                   (double)job->opts->memory_cap_bytes / GIB, opt && *opt ? ", " : "", opt && *opt ? opt : "");
}

static ct_status job_grow(ct_audio_job *job, size_t need) {
    if (need <= job->cap) return CT_OK;
    /* Geometric growth (x2), clamped to the cap so that the buffer itself
     * never exceeds it. */
    size_t c = job->cap ? job->cap : CT_AUDIO_SAMPLE_RATE;
    while (c < need) c = c > SIZE_MAX / 2 ? SIZE_MAX : c * 2;
    if (c > job->max_samples) c = job->max_samples;
    if (c < need) c = need; /* only when need itself is within the cap */
    float *p = realloc(job->buf, c * sizeof(float));
    if (!p)
        return ct_fail(CT_ERR_OOM, "%s: out of memory growing the decoded buffer to %.1f MiB",
                       job->name, (double)c * sizeof(float) / MIB);
    job->buf = p;
    job->cap = c;
    return CT_OK;
}

ct_status ct_audio_job_reserve(ct_audio_job *job, double seconds, int estimated) {
    if (!(seconds >= 0) || !isfinite(seconds)) return job_grow(job, CT_AUDIO_SAMPLE_RATE);
    double need = ceil(seconds * CT_AUDIO_SAMPLE_RATE);
    if (need > (double)job->max_samples)
        return limit_error(job, seconds,
                           estimated ? "the container's duration, estimated from its bitrate, is"
                                     : "the container declares");
    /* Room for the claim plus a little slack for codec padding, never over
     * the cap. A lying claim costs at most the cap. */
    double want = need * 1.01 + CT_AUDIO_SAMPLE_RATE / 10.0;
    if (want > (double)job->max_samples) want = (double)job->max_samples;
    return job_grow(job, (size_t)want);
}

ct_status ct_audio_job_append(ct_audio_job *job, const float *x, size_t k) {
    if (k == 0) return CT_OK;
    if (k > job->max_samples - job->n)
        return limit_error(job, (double)(job->n + k) / CT_AUDIO_SAMPLE_RATE,
                           "decoding reached more than");
    CT_TRY(job_grow(job, job->n + k));
    float *dst = job->buf + job->n;
    for (size_t i = 0; i < k; i++) {
        float v = x[i];
        if (!isfinite(v))
            return ct_fail(CT_ERR_FORMAT, "%s: the audio contains %s sample (at %.3f s)",
                           job->name, isnan(v) ? "a NaN" : "an infinite",
                           (double)(job->n + i) / CT_AUDIO_SAMPLE_RATE);
        dst[i] = v;
    }
    job->n += k;
    if (job->opts->on_samples) job->opts->on_samples(job->opts->on_samples_user, dst, job->n - k, k);
    return CT_OK;
}

int ct_audio_is_truncated(double declared_s, double decoded_s) {
    if (!(declared_s > 0)) return 0;
    double tol = declared_s * 0.02;
    if (tol < 0.25) tol = 0.25;
    return decoded_s < declared_s - tol;
}

/* ---- entry points ------------------------------------------------------- */

/* "name: cause" → "cause" (for combining two backends' messages). */
static const char *cause_of(const char *msg, const char *name) {
    size_t l = strlen(name);
    if (!strncmp(msg, name, l) && msg[l] == ':' && msg[l + 1] == ' ') return msg + l + 2;
    return msg;
}

static ct_status run_backends(ct_audio_input *in, const ct_audio_options *opts,
                              ct_audio **out) {
    ct_audio *a = calloc(1, sizeof *a);
    if (!a) return ct_fail(CT_ERR_OOM, "%s: out of memory", in->name);
    ct_status cs = ct_audio_check_container(in);
    if (cs != CT_OK) {
        free(a);
        return cs;
    }
    ct_audio_job job = {.name = in->name, .opts = opts, .t0 = ct_now()};
    job.max_samples = (size_t)(opts->memory_cap_bytes / sizeof(float));
    ct_status s;
    int cannot_open = 0;
    if (opts->backend == CT_AUDIO_BACKEND_SNDFILE) {
        s = ct_audio_sndfile_decode(in, &job, a, &cannot_open);
    } else {
        s = ct_audio_ffmpeg_decode(in, &job, a, &cannot_open);
        if (s != CT_OK && cannot_open && opts->backend == CT_AUDIO_BACKEND_AUTO &&
            s != CT_ERR_ABORTED && s != CT_ERR_OOM) {
            char ff[512];
            snprintf(ff, sizeof ff, "%s", cause_of(ct_last_error(), in->name));
            CT_LOGD("%s: FFmpeg cannot open it (%s); trying libsndfile", in->name, ff);
            free(job.buf);
            job.buf = NULL;
            job.n = job.cap = 0;
            in->pos = 0;
            cannot_open = 0;
            s = ct_audio_sndfile_decode(in, &job, a, &cannot_open);
            if (s == CT_OK) {
                snprintf(a->fallback_reason, sizeof a->fallback_reason, "%s", ff);
            } else if (cannot_open && s != CT_ERR_ABORTED && s != CT_ERR_OOM) {
                char sf[512];
                snprintf(sf, sizeof sf, "%s", cause_of(ct_last_error(), in->name));
                s = ct_fail(CT_ERR_FORMAT,
                            "%s: not a readable audio file (ffmpeg: %s; libsndfile: %s)",
                            in->name, ff, sf);
            }
        }
    }
    if (s != CT_OK) {
        free(job.buf);
        free(a);
        return s;
    }
    /* Give back a large unused tail (the reservation followed the
     * container's claim plus slack). */
    if (job.cap > job.n + job.n / 4 + CT_AUDIO_SAMPLE_RATE) {
        float *p = realloc(job.buf, (job.n ? job.n : 1) * sizeof(float));
        if (p) job.buf = p;
    }
    a->samples = job.buf;
    a->n = job.n;
    a->sample_rate = CT_AUDIO_SAMPLE_RATE;
    a->duration = (double)job.n / CT_AUDIO_SAMPLE_RATE;
    *out = a;
    return CT_OK;
}

static ct_status check_opts(const ct_audio_options *o, const char *name) {
    if (o->backend != CT_AUDIO_BACKEND_AUTO && o->backend != CT_AUDIO_BACKEND_FFMPEG &&
        o->backend != CT_AUDIO_BACKEND_SNDFILE)
        return ct_fail(CT_ERR_INVALID_ARG, "%s: unknown audio backend %d", name, (int)o->backend);
    if (o->memory_cap_bytes < sizeof(float))
        return ct_fail(CT_ERR_INVALID_ARG, "%s: audio memory cap must be positive", name);
    if (isnan(o->deadline_seconds))
        return ct_fail(CT_ERR_INVALID_ARG, "%s: decode deadline is NaN", name);
    return CT_OK;
}

static ct_status open_input(const char *path, ct_audio_input *in) {
    memset(in, 0, sizeof *in);
    in->name = path;
    in->fd = -1;
    struct stat st;
    CT_TRY(ct_fs_open_input(path, &in->fd, &st)); /* refuses FIFOs, devices, directories unopened-blocking */
    in->size = st.st_size;
    return CT_OK;
}

ct_status ct_audio_decode(const char *path, const ct_audio_options *opts, ct_audio **out) {
    if (!out) return ct_fail(CT_ERR_INVALID_ARG, "ct_audio_decode: NULL output");
    *out = NULL;
    if (!path) return ct_fail(CT_ERR_INVALID_ARG, "ct_audio_decode: NULL path");
    ct_audio_options def = ct_audio_default_options();
    if (!opts) opts = &def;
    CT_TRY(check_opts(opts, path));
    ct_audio_input in;
    CT_TRY(open_input(path, &in));
    ct_status s = in.size == 0 ? ct_fail(CT_ERR_FORMAT, "%s: the file is empty (0 bytes)", path)
                               : run_backends(&in, opts, out);
    close(in.fd);
    return s;
}

ct_status ct_audio_decode_memory(const void *data, size_t size, const char *name,
                                 const ct_audio_options *opts, ct_audio **out) {
    if (!out) return ct_fail(CT_ERR_INVALID_ARG, "ct_audio_decode_memory: NULL output");
    *out = NULL;
    if (!name) name = "<memory>";
    if (!data && size) return ct_fail(CT_ERR_INVALID_ARG, "%s: NULL data", name);
    ct_audio_options def = ct_audio_default_options();
    if (!opts) opts = &def;
    CT_TRY(check_opts(opts, name));
    if (size == 0) return ct_fail(CT_ERR_FORMAT, "%s: the input is empty (0 bytes)", name);
    if (size > (size_t)INT64_MAX) return ct_fail(CT_ERR_LIMIT, "%s: input too large", name);
    ct_audio_input in = {.name = name, .fd = -1, .mem = data, .size = (int64_t)size};
    return run_backends(&in, opts, out);
}

ct_status ct_audio_probe(const char *path, ct_audio_info *info) {
    if (!path || !info) return ct_fail(CT_ERR_INVALID_ARG, "ct_audio_probe: NULL argument");
    memset(info, 0, sizeof *info);
    ct_audio_input in;
    CT_TRY(open_input(path, &in));
    ct_status s;
    if (in.size == 0) {
        s = ct_fail(CT_ERR_FORMAT, "%s: the file is empty (0 bytes)", path);
    } else {
        ct_audio_options opts = ct_audio_default_options();
        int cannot_open = 0;
        s = ct_audio_ffmpeg_probe(&in, &opts, info, &cannot_open);
        if (s != CT_OK && cannot_open && s != CT_ERR_OOM) {
            char ff[512];
            snprintf(ff, sizeof ff, "%s", cause_of(ct_last_error(), path));
            in.pos = 0;
            memset(info, 0, sizeof *info);
            s = ct_audio_sndfile_probe(&in, info, &cannot_open);
            if (s != CT_OK && cannot_open) {
                char sf[512];
                snprintf(sf, sizeof sf, "%s", cause_of(ct_last_error(), path));
                s = ct_fail(CT_ERR_FORMAT,
                            "%s: not a readable audio file (ffmpeg: %s; libsndfile: %s)", path,
                            ff, sf);
            }
        }
    }
    close(in.fd);
    return s;
}

void ct_audio_free(ct_audio *a) {
    if (!a) return;
    free(a->samples);
    free(a);
}
