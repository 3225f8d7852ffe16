/* decode_sndfile.c — the fallback backend: libsndfile reads the file through
 * virtual I/O over our byte source (float frames, integer formats scaled to
 * [-1, 1)), channels are averaged with equal weights here, and the mono
 * stream is resampled to 16 kHz in chunks, so only the 16 kHz output is ever
 * held whole: by our FIR resampler (audio/resample.h; its blocks run on the
 * caller's task pool when there is one) or by libsamplerate (sinc, medium
 * quality), as --resampler says. */
#include <math.h>
#include <samplerate.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio_internal.h"
#include "audio/resample_stream.h"
#include "core/log.h"

#define CHUNK_FRAMES 4096

typedef struct vio_state {
    ct_audio_input *in;
    int io_error; /* errno of a failed read, 0 if none */
} vio_state;

static sf_count_t vio_len(void *u) { return ((vio_state *)u)->in->size; }

static sf_count_t vio_seek(sf_count_t off, int whence, void *u) {
    int64_t r = ct_audio_input_seek(((vio_state *)u)->in, off, whence);
    return r < 0 ? -1 : r;
}

static sf_count_t vio_read(void *ptr, sf_count_t count, void *u) {
    vio_state *v = u;
    int64_t r = ct_audio_input_read(v->in, ptr, count);
    if (r < 0) {
        v->io_error = (int)-r;
        return 0;
    }
    return r;
}

static sf_count_t vio_write(const void *ptr, sf_count_t count, void *u) { return 0; }
static sf_count_t vio_tell(void *u) { return ((vio_state *)u)->in->pos; }

static const char *subtype_codec(int subtype) {
    switch (subtype) {
    case SF_FORMAT_PCM_S8: return "pcm_s8";
    case SF_FORMAT_PCM_U8: return "pcm_u8";
    case SF_FORMAT_PCM_16: return "pcm_s16";
    case SF_FORMAT_PCM_24: return "pcm_s24";
    case SF_FORMAT_PCM_32: return "pcm_s32";
    case SF_FORMAT_FLOAT: return "pcm_f32";
    case SF_FORMAT_DOUBLE: return "pcm_f64";
    case SF_FORMAT_ULAW: return "pcm_mulaw";
    case SF_FORMAT_ALAW: return "pcm_alaw";
    case SF_FORMAT_IMA_ADPCM: return "adpcm_ima";
    case SF_FORMAT_MS_ADPCM: return "adpcm_ms";
    case SF_FORMAT_GSM610: return "gsm";
    case SF_FORMAT_VORBIS: return "vorbis";
    case SF_FORMAT_OPUS: return "opus";
    case SF_FORMAT_MPEG_LAYER_I: return "mp1";
    case SF_FORMAT_MPEG_LAYER_II: return "mp2";
    case SF_FORMAT_MPEG_LAYER_III: return "mp3";
    default: return "other";
    }
}

static void fill_names(SNDFILE *sf, const SF_INFO *si, char *codec, size_t ccap, char *container,
                       size_t kcap) {
    SF_FORMAT_INFO fi = {.format = si->format & SF_FORMAT_TYPEMASK};
    if (sf_command(sf, SFC_GET_FORMAT_INFO, &fi, sizeof fi) == 0 && fi.extension)
        snprintf(container, kcap, "%s", fi.extension);
    else
        snprintf(container, kcap, "0x%x", (unsigned)(si->format & SF_FORMAT_TYPEMASK));
    /* FLAC's subtype is its bit depth; call the codec flac like FFmpeg does. */
    if ((si->format & SF_FORMAT_TYPEMASK) == SF_FORMAT_FLAC)
        snprintf(codec, ccap, "flac");
    else
        snprintf(codec, ccap, "%s", subtype_codec(si->format & SF_FORMAT_SUBMASK));
}

/* libsndfile reads MPEG audio through libmpg123, which writes its warnings
 * straight to stderr ("Xing stream size off ..."); the library must not
 * print, so MPEG audio (an ID3v2 tag or a frame sync at the start) is left
 * to FFmpeg. */
static int looks_like_mpeg(ct_audio_input *in) {
    uint8_t m[4] = {0};
    in->pos = 0;
    int64_t r = ct_audio_input_read(in, m, 4);
    in->pos = 0;
    if (r < 3) return 0;
    if (!memcmp(m, "ID3", 3)) return 1;
    return r == 4 && m[0] == 0xFF && (m[1] & 0xE0) == 0xE0 && (m[1] & 0x06) != 0;
}

/* Opened handle + the checks every use needs. */
static ct_status sf_open_checked(vio_state *v, SF_VIRTUAL_IO *io, SF_INFO *si, SNDFILE **out,
                                 int *cannot_open) {
    const char *name = v->in->name;
    memset(si, 0, sizeof *si);
    *out = NULL;
    if (looks_like_mpeg(v->in)) {
        *cannot_open = 1;
        return ct_fail(CT_ERR_UNSUPPORTED,
                       "%s: MPEG audio is decoded by the FFmpeg backend only (libsndfile's MP3 "
                       "decoder prints to stderr)",
                       name);
    }
    *out = sf_open_virtual(io, SFM_READ, si, v);
    if (!*out) {
        *cannot_open = 1;
        if (v->io_error)
            return ct_fail(CT_ERR_IO, "%s: read error: %s", name, strerror(v->io_error));
        /* sf_error(NULL)'s code is process-wide; the text is only advisory. */
        return ct_fail(CT_ERR_FORMAT, "%s: libsndfile cannot read it: %s", name,
                       sf_error_number(sf_error(NULL)));
    }
    if (si->channels <= 0 || si->samplerate <= 0) {
        *cannot_open = 1;
        return ct_fail(CT_ERR_FORMAT, "%s: invalid header (%d channels, %d Hz)", name,
                       si->channels, si->samplerate);
    }
    return CT_OK;
}

static SF_VIRTUAL_IO make_io(void) {
    SF_VIRTUAL_IO io = {.get_filelen = vio_len, .seek = vio_seek, .read = vio_read,
                        .write = vio_write, .tell = vio_tell};
    return io;
}

ct_status ct_audio_sndfile_probe(ct_audio_input *in, ct_audio_info *info, int *cannot_open) {
    vio_state v = {.in = in};
    SF_VIRTUAL_IO io = make_io();
    SF_INFO si;
    SNDFILE *sf = NULL;
    ct_status s = sf_open_checked(&v, &io, &si, &sf, cannot_open);
    if (s == CT_OK) {
        info->duration = si.frames >= 0 && si.frames < SF_COUNT_MAX
                             ? (double)si.frames / si.samplerate
                             : -1;
        info->sample_rate = si.samplerate;
        info->channels = si.channels;
        fill_names(sf, &si, info->codec, sizeof info->codec, info->container,
                   sizeof info->container);
        info->backend = CT_AUDIO_BACKEND_SNDFILE;
    }
    if (sf) sf_close(sf);
    return s;
}

typedef struct sfd {
    ct_audio_input *in;
    ct_audio_job *job;
    vio_state v;
    SNDFILE *sf;
    SRC_STATE *src;
    ct_resampler *fir;
    ct_rs_stream *rs;
    float *frames; /* (CHUNK_FRAMES, channels) */
    float *mono;   /* (CHUNK_FRAMES,) */
    float *out;    /* (out_cap,) resampled */
    long out_cap;
} sfd;

/* Feed n mono samples (n == 0 with eoi: flush) through the resampler. */
static ct_status resample(sfd *d, const float *x, long n, int eoi, double ratio) {
    SRC_DATA sd = {0};
    sd.data_in = x;
    sd.input_frames = n;
    sd.src_ratio = ratio;
    sd.end_of_input = eoi;
    for (;;) {
        sd.data_out = d->out;
        sd.output_frames = d->out_cap;
        int e = src_process(d->src, &sd);
        if (e) return ct_fail(CT_ERR_INTERNAL, "%s: libsamplerate: %s", d->in->name, src_strerror(e));
        CT_TRY(ct_audio_job_append(d->job, d->out, (size_t)sd.output_frames_gen));
        sd.data_in += sd.input_frames_used;
        sd.input_frames -= sd.input_frames_used;
        if (sd.input_frames == 0 && (!eoi || sd.output_frames_gen == 0)) return CT_OK;
    }
}

static ct_status sfd_run(sfd *d, ct_audio *out, int *cannot_open) {
    const char *name = d->in->name;
    SF_VIRTUAL_IO io = make_io();
    SF_INFO si;
    d->v.in = d->in;
    CT_TRY(sf_open_checked(&d->v, &io, &si, &d->sf, cannot_open));
    int ch = si.channels;
    double ratio = (double)CT_AUDIO_SAMPLE_RATE / si.samplerate;
    if (!src_is_valid_ratio(ratio))
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: cannot resample %d Hz to 16 kHz", name,
                       si.samplerate);
    int known = si.frames > 0 && si.frames < SF_COUNT_MAX;
    double declared = known ? (double)si.frames / si.samplerate : -1;
    CT_TRY(ct_audio_job_reserve(d->job, declared, 0));

    d->frames = malloc((size_t)CHUNK_FRAMES * (size_t)ch * sizeof(float));
    d->mono = malloc(CHUNK_FRAMES * sizeof(float));
    d->out_cap = (long)(CHUNK_FRAMES * ratio) + 64;
    d->out = malloc((size_t)d->out_cap * sizeof(float));
    if (!d->frames || !d->mono || !d->out) return ct_fail(CT_ERR_OOM, "%s: out of memory", name);
    ct_audio_resampler rk = d->job->opts->resampler;
    if (si.samplerate != CT_AUDIO_SAMPLE_RATE && rk != CT_AUDIO_RESAMPLER_SINC) {
        ct_status fs = ct_resampler_new(si.samplerate, CT_AUDIO_SAMPLE_RATE, &d->fir);
        if (fs == CT_OK) {
            CT_TRY(ct_rs_stream_new(d->fir, d->job->opts->tasks, d->job, &d->rs));
        } else if (rk == CT_AUDIO_RESAMPLER_FIR) {
            return ct_fail_wrap(fs, "%s: --resampler fir", name);
        } /* AUTO: libsamplerate below */
    }
    if (si.samplerate != CT_AUDIO_SAMPLE_RATE && !d->rs) {
        int e = 0;
        d->src = src_new(SRC_SINC_MEDIUM_QUALITY, 1, &e);
        if (!d->src) return ct_fail(CT_ERR_OOM, "%s: libsamplerate: %s", name, src_strerror(e));
    }
    /* Keep integer formats scaled to [-1, 1) (libsndfile's default for
     * float reads) and do not let it clip floats. */
    sf_command(d->sf, SFC_SET_NORM_FLOAT, NULL, SF_TRUE);
    sf_command(d->sf, SFC_SET_CLIPPING, NULL, SF_FALSE);
    sf_count_t total = 0;
    const float inv = 1.0f / (float)ch;
    for (;;) {
        CT_TRY(ct_audio_job_check(d->job));
        sf_count_t got = sf_readf_float(d->sf, d->frames, CHUNK_FRAMES);
        if (got <= 0) break;
        total += got;
        /* Channel average: equal weights, as in the FFmpeg backend. */
        for (sf_count_t i = 0; i < got; i++) {
            const float *f = d->frames + i * ch;
            float acc = 0;
            for (int c = 0; c < ch; c++) acc += f[c];
            d->mono[i] = ch == 1 ? acc : acc * inv;
        }
        if (d->rs)
            CT_TRY(ct_rs_stream_feed(d->rs, d->mono, (size_t)got));
        else if (d->src)
            CT_TRY(resample(d, d->mono, (long)got, 0, ratio));
        else
            CT_TRY(ct_audio_job_append(d->job, d->mono, (size_t)got));
    }
    if (d->v.io_error)
        return ct_fail(CT_ERR_IO, "%s: read error: %s", name, strerror(d->v.io_error));
    int err = sf_error(d->sf);
    if (err)
        return ct_fail(CT_ERR_FORMAT, "%s: corrupt or truncated after %.3f s: %s", name,
                       (double)total / si.samplerate, sf_strerror(d->sf));
    if (d->rs) CT_TRY(ct_rs_stream_finish(d->rs));
    if (d->src) CT_TRY(resample(d, d->mono, 0, 1, ratio));
    if (d->job->n == 0) return ct_fail(CT_ERR_FORMAT, "%s: no audio samples", name);
    if (known && ct_audio_is_truncated(declared, (double)total / si.samplerate))
        return ct_fail(CT_ERR_FORMAT,
                       "%s: truncated: the header declares %.3f s of audio but the data ends "
                       "after %.3f s",
                       name, declared, (double)total / si.samplerate);
    out->source_sample_rate = si.samplerate;
    out->source_channels = ch;
    fill_names(d->sf, &si, out->codec, sizeof out->codec, out->container, sizeof out->container);
    out->backend = CT_AUDIO_BACKEND_SNDFILE;
    return CT_OK;
}

ct_status ct_audio_sndfile_decode(ct_audio_input *in, ct_audio_job *job, ct_audio *out,
                                  int *cannot_open) {
    sfd d = {.in = in, .job = job};
    ct_status s = sfd_run(&d, out, cannot_open);
    if (d.sf) sf_close(d.sf);
    if (d.src) src_delete(d.src);
    ct_rs_stream_free(d.rs);
    ct_resampler_free(d.fir);
    free(d.frames);
    free(d.mono);
    free(d.out);
    return s;
}

const char *ct_audio_sndfile_describe(char *buf, size_t cap) {
    /* libsamplerate's version string reads "libsamplerate-0.2.2 (c) ..." */
    const char *src = src_get_version();
    size_t n = strcspn(src, " ");
    snprintf(buf, cap, "%s, %.*s", sf_version_string(), (int)n, src);
    return buf;
}
