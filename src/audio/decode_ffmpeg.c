/* decode_ffmpeg.c — the FFmpeg backend: libavformat demuxes the first audio
 * stream from our own byte source (custom AVIOContext: a path is never read
 * as a protocol URL, nested opens such as playlists are refused), libavcodec
 * decodes it (send/receive with a flush at EOF), libswresample averages the
 * channels and resamples to 16 kHz float32. FFmpeg's log goes to ct_log. */
#ifdef CT_HAVE_FFMPEG
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio_internal.h"
#include "core/log.h"

#define IO_BUF_SIZE (64 * 1024)
/* libswresample's internal channel limit (its SWR_CH_MAX, not exported). */
#define MAX_CHANNELS 64

/* ---- logging --------------------------------------------------------------
 * FFmpeg logs through one process-wide callback. Ours formats the line into a
 * local buffer (av_log_format_line2 with a local prefix state, so threads do
 * not share one) and hands it to ct_log at debug level. The last
 * warning/error line of this thread is kept to explain failures, because the
 * AVERROR codes alone are vague ("Invalid data found when processing input"). */

static _Thread_local char t_last_av_msg[256];
static pthread_once_t g_log_once = PTHREAD_ONCE_INIT;

static void av_log_to_ct(void *avcl, int level, const char *fmt, va_list vl) {
    if (level > AV_LOG_VERBOSE) return;
    int keep = level <= AV_LOG_WARNING;
    if (!keep && !ct_log_enabled(CT_LOG_DEBUG)) return;
    /* "[mp3 @ 0x55d0...] " would put an address into error messages: use
     * the bare class item name instead. */
    char line[1024], body[900];
    int prefix = 0;
    av_log_format_line2(avcl, level, fmt, vl, body, sizeof body, &prefix);
    const AVClass *cls = avcl ? *(const AVClass **)avcl : NULL;
    const char *who = cls && cls->item_name ? cls->item_name(avcl) : NULL;
    snprintf(line, sizeof line, "%s%s%s", who ? who : "", who ? ": " : "", body);
    size_t l = strlen(line);
    while (l && (line[l - 1] == '\n' || line[l - 1] == '\r')) line[--l] = 0;
    if (!l) return;
    if (keep) snprintf(t_last_av_msg, sizeof t_last_av_msg, "%s", line);
    CT_LOGD("ffmpeg: %s", line);
}

static void install_log(void) { av_log_set_callback(av_log_to_ct); }

/* " (FFmpeg: <last line>)" or "" */
static const char *av_detail(char *buf, size_t cap) {
    if (!t_last_av_msg[0]) return "";
    snprintf(buf, cap, " (FFmpeg says: %s)", t_last_av_msg);
    return buf;
}

static const char *av_errstr(int err, char *buf, size_t cap) {
    if (av_strerror(err, buf, cap) < 0) snprintf(buf, cap, "error %d", err);
    return buf;
}

/* ---- state ---------------------------------------------------------------- */

typedef struct ff {
    ct_audio_input *in;
    ct_audio_job *job;
    AVIOContext *avio;
    AVFormatContext *fmt;
    AVCodecContext *dec;
    SwrContext *swr;
    AVPacket *pkt;
    AVFrame *frame;
    int stream;
    /* the input format swr is configured for */
    AVChannelLayout swr_layout;
    int swr_fmt, swr_rate;
    float *scratch; /* (scratch_cap,) one frame's 16 kHz output */
    int scratch_cap;
    double src_seconds; /* decoded source duration */
    long packets, bad_packets;
    int last_bad; /* the most recent packet (or the EOF flush) failed */
    double first_bad_at;
    char first_bad[160];
} ff;

static int io_read(void *opaque, uint8_t *buf, int size) {
    int64_t r = ct_audio_input_read(opaque, buf, size);
    if (r < 0) return AVERROR((int)-r);
    return r == 0 ? AVERROR_EOF : (int)r;
}

static int64_t io_seek(void *opaque, int64_t off, int whence) {
    ct_audio_input *in = opaque;
    if (whence & AVSEEK_SIZE) return in->size;
    int64_t r = ct_audio_input_seek(in, off, whence & ~AVSEEK_FORCE);
    return r < 0 ? AVERROR(EINVAL) : r;
}

static int io_interrupt(void *opaque) { return ct_audio_job_interrupted(opaque) != 0; }

/* Demuxers that open further URLs (HLS/DASH playlists, concat lists, mov
 * data references) would reach beyond the one file we were given. */
static int io_open_refuse(AVFormatContext *s, AVIOContext **pb, const char *url, int flags,
                          AVDictionary **options) {
    av_log(s, AV_LOG_ERROR, "refusing to open '%s' referenced from inside the file\n", url);
    return AVERROR(EPERM);
}

static void ff_close(ff *s) {
    swr_free(&s->swr);
    av_channel_layout_uninit(&s->swr_layout);
    avcodec_free_context(&s->dec);
    avformat_close_input(&s->fmt);
    if (s->avio) {
        av_freep(&s->avio->buffer);
        avio_context_free(&s->avio);
    }
    av_packet_free(&s->pkt);
    av_frame_free(&s->frame);
    av_free(s->scratch);
    s->scratch = NULL;
}

static ct_status interrupted_or(ff *s, ct_status code, int err, const char *what) {
    if (err == AVERROR_EXIT && ct_audio_job_interrupted(s->job)) return ct_audio_job_check(s->job);
    char e[128], d[300];
    if (err == AVERROR(ENOMEM)) return ct_fail(CT_ERR_OOM, "%s: out of memory %s", s->in->name, what);
    return ct_fail(code, "%s: %s: %s%s", s->in->name, what, av_errstr(err, e, sizeof e),
                   av_detail(d, sizeof d));
}

static const char *media_name(enum AVMediaType t) {
    const char *n = av_get_media_type_string(t);
    return n ? n : "unknown";
}

/* Open the input and find its first audio stream. */
static ct_status ff_open(ff *s, int *cannot_open) {
    pthread_once(&g_log_once, install_log);
    t_last_av_msg[0] = 0;
    s->stream = -1;
    uint8_t *iobuf = av_malloc(IO_BUF_SIZE);
    if (!iobuf) return ct_fail(CT_ERR_OOM, "%s: out of memory", s->in->name);
    s->avio = avio_alloc_context(iobuf, IO_BUF_SIZE, 0, s->in, io_read, NULL, io_seek);
    if (!s->avio) {
        av_free(iobuf);
        return ct_fail(CT_ERR_OOM, "%s: out of memory", s->in->name);
    }
    s->fmt = avformat_alloc_context();
    if (!s->fmt) return ct_fail(CT_ERR_OOM, "%s: out of memory", s->in->name);
    s->fmt->pb = s->avio;
    s->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    s->fmt->interrupt_callback.callback = io_interrupt;
    s->fmt->interrupt_callback.opaque = s->job;
    s->fmt->io_open = io_open_refuse;
    /* The name only serves as the extension hint when probing. */
    int r = avformat_open_input(&s->fmt, s->in->name, NULL, NULL);
    if (r < 0) { /* s->fmt was freed */
        *cannot_open = 1;
        return interrupted_or(s, CT_ERR_FORMAT, r, "FFmpeg cannot open it");
    }
    r = avformat_find_stream_info(s->fmt, NULL);
    if (r < 0) {
        *cannot_open = 1;
        return interrupted_or(s, CT_ERR_FORMAT, r, "cannot read the stream parameters");
    }
    for (unsigned i = 0; i < s->fmt->nb_streams; i++) {
        if (s->fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) {
            s->stream = (int)i;
            break;
        }
    }
    if (s->stream < 0) {
        char kinds[160] = "";
        size_t o = 0;
        for (unsigned i = 0; i < s->fmt->nb_streams && i < 8 && o < sizeof kinds; i++)
            o += (size_t)snprintf(kinds + o, sizeof kinds - o, "%s%s", i ? ", " : "",
                                  media_name(s->fmt->streams[i]->codecpar->codec_type));
        return ct_fail(CT_ERR_FORMAT, "%s: no audio stream (the %s container holds %u stream%s%s%s%s)",
                       s->in->name, s->fmt->iformat->name, s->fmt->nb_streams,
                       s->fmt->nb_streams == 1 ? "" : "s", s->fmt->nb_streams ? ": " : "", kinds,
                       s->fmt->nb_streams > 8 ? ", ..." : "");
    }
    for (unsigned i = 0; i < s->fmt->nb_streams; i++)
        if ((int)i != s->stream) s->fmt->streams[i]->discard = AVDISCARD_ALL;
    return CT_OK;
}

/* The container's claim: seconds (< 0 unknown) and whether it is a bitrate
 * guess rather than a count the container stores. */
static double ff_declared_seconds(const ff *s, int *estimated) {
    const AVStream *st = s->fmt->streams[s->stream];
    *estimated = s->fmt->duration_estimation_method == AVFMT_DURATION_FROM_BITRATE;
    if (st->duration != AV_NOPTS_VALUE && st->duration > 0 && st->time_base.den > 0)
        return (double)st->duration * av_q2d(st->time_base);
    if (s->fmt->duration != AV_NOPTS_VALUE && s->fmt->duration > 0)
        return (double)s->fmt->duration / AV_TIME_BASE;
    return -1;
}

static void fill_names(const ff *s, char *codec, size_t ccap, char *container, size_t kcap) {
    const AVCodecParameters *p = s->fmt->streams[s->stream]->codecpar;
    snprintf(codec, ccap, "%s", avcodec_get_name(p->codec_id));
    snprintf(container, kcap, "%s", s->fmt->iformat->name);
}

ct_status ct_audio_ffmpeg_probe(ct_audio_input *in, const ct_audio_options *opts,
                                ct_audio_info *info, int *cannot_open) {
    ct_audio_job job = {.name = in->name, .opts = opts, .t0 = 0};
    ff s = {.in = in, .job = &job};
    ct_status st = ff_open(&s, cannot_open);
    if (st == CT_OK) {
        const AVCodecParameters *p = s.fmt->streams[s.stream]->codecpar;
        info->duration = ff_declared_seconds(&s, &info->duration_estimated);
        info->sample_rate = p->sample_rate;
        info->channels = p->ch_layout.nb_channels;
        fill_names(&s, info->codec, sizeof info->codec, info->container, sizeof info->container);
        info->backend = CT_AUDIO_BACKEND_FFMPEG;
    }
    ff_close(&s);
    return st;
}

/* ---- resampling ----------------------------------------------------------- */

static ct_status ff_scratch(ff *s, int n) {
    if (n <= s->scratch_cap) return CT_OK;
    av_free(s->scratch);
    s->scratch = av_malloc_array((size_t)n, sizeof(float));
    s->scratch_cap = s->scratch ? n : 0;
    if (!s->scratch) return ct_fail(CT_ERR_OOM, "%s: out of memory", s->in->name);
    return CT_OK;
}

/* Push whatever the resampler still holds (its filter delay) to the output;
 * used at EOF and before a mid-stream format change. */
static ct_status ff_swr_drain(ff *s) {
    if (!s->swr) return CT_OK;
    for (;;) {
        int want = swr_get_out_samples(s->swr, 0);
        if (want <= 0) want = 256;
        CT_TRY(ff_scratch(s, want));
        uint8_t *out = (uint8_t *)s->scratch;
        int got = swr_convert(s->swr, &out, want, NULL, 0);
        if (got < 0) return interrupted_or(s, CT_ERR_INTERNAL, got, "flushing the resampler");
        if (got == 0) return CT_OK;
        CT_TRY(ct_audio_job_append(s->job, s->scratch, (size_t)got));
    }
}

/* (Re)configure swr for this frame's format: any layout → 1 channel whose
 * value is the plain mean of the input channels. We set the rematrix matrix
 * ourselves (one row, every coefficient 1/channels) because FFmpeg's own
 * downmix would weight the centre/surround channels by -3 dB and drop LFE,
 * which is not the channel average the product promises. */
static ct_status ff_swr_setup(ff *s, const AVFrame *f) {
    int nch = f->ch_layout.nb_channels;
    if (nch > MAX_CHANNELS)
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: %d channels (at most %d are supported)",
                       s->in->name, nch, MAX_CHANNELS);
    if (s->swr) {
        /* Mid-stream change of sample format, rate or layout (chained Ogg
         * streams, concatenated MP3s, ADTS with a new channel config): finish
         * the old resampler's output, then start a fresh one. */
        CT_LOGD("%s: audio format changes mid-stream (%d Hz %d ch -> %d Hz %d ch)", s->in->name,
                s->swr_rate, s->swr_layout.nb_channels, f->sample_rate, nch);
        CT_TRY(ff_swr_drain(s));
        swr_free(&s->swr);
        av_channel_layout_uninit(&s->swr_layout);
    }
    AVChannelLayout in_layout = {0}, mono = AV_CHANNEL_LAYOUT_MONO;
    int r = f->ch_layout.order == AV_CHANNEL_ORDER_UNSPEC
                ? (av_channel_layout_default(&in_layout, nch), 0)
                : av_channel_layout_copy(&in_layout, &f->ch_layout);
    if (r < 0) return interrupted_or(s, CT_ERR_OOM, r, "copying the channel layout");
    r = swr_alloc_set_opts2(&s->swr, &mono, AV_SAMPLE_FMT_FLT, CT_AUDIO_SAMPLE_RATE, &in_layout,
                            (enum AVSampleFormat)f->format, f->sample_rate, 0, NULL);
    if (r >= 0) {
        double matrix[MAX_CHANNELS];
        for (int c = 0; c < nch; c++) matrix[c] = 1.0 / nch;
        r = swr_set_matrix(s->swr, matrix, nch);
    }
    if (r >= 0) r = swr_init(s->swr);
    if (r < 0) {
        av_channel_layout_uninit(&in_layout);
        swr_free(&s->swr);
        char e[128];
        return ct_fail(CT_ERR_UNSUPPORTED,
                       "%s: cannot convert %s %d Hz %d-channel audio to 16 kHz mono: %s",
                       s->in->name, av_get_sample_fmt_name(f->format) ? av_get_sample_fmt_name(f->format) : "?",
                       f->sample_rate, nch, av_errstr(r, e, sizeof e));
    }
    s->swr_layout = in_layout; /* takes ownership */
    s->swr_fmt = f->format;
    s->swr_rate = f->sample_rate;
    return CT_OK;
}

static ct_status ff_frame(ff *s, const AVFrame *f) {
    if (f->nb_samples <= 0) return CT_OK;
    if (f->sample_rate <= 0 || f->ch_layout.nb_channels <= 0 || f->format < 0)
        return ct_fail(CT_ERR_FORMAT, "%s: the decoder produced a frame with %d Hz, %d channels",
                       s->in->name, f->sample_rate, f->ch_layout.nb_channels);
    if (!s->swr || f->format != s->swr_fmt || f->sample_rate != s->swr_rate ||
        (f->ch_layout.order == AV_CHANNEL_ORDER_UNSPEC
             ? f->ch_layout.nb_channels != s->swr_layout.nb_channels
             : av_channel_layout_compare(&f->ch_layout, &s->swr_layout) != 0))
        CT_TRY(ff_swr_setup(s, f));
    s->src_seconds += (double)f->nb_samples / f->sample_rate;
    int want = swr_get_out_samples(s->swr, f->nb_samples);
    if (want < 0) return interrupted_or(s, CT_ERR_INTERNAL, want, "sizing the resampler output");
    CT_TRY(ff_scratch(s, want + 16));
    uint8_t *out = (uint8_t *)s->scratch;
    int got = swr_convert(s->swr, &out, want + 16, (const uint8_t **)f->extended_data,
                          f->nb_samples);
    if (got < 0) return interrupted_or(s, CT_ERR_INTERNAL, got, "resampling");
    return ct_audio_job_append(s->job, s->scratch, (size_t)got);
}

/* ---- decoding ------------------------------------------------------------- */

static void note_bad(ff *s, int err) {
    if (s->bad_packets++ == 0) {
        char e[128], d[300];
        s->first_bad_at = s->src_seconds;
        snprintf(s->first_bad, sizeof s->first_bad, "%s%s", av_errstr(err, e, sizeof e),
                 av_detail(d, sizeof d));
    }
}

/* Receive every frame the decoder has ready. */
static ct_status ff_receive(ff *s) {
    for (;;) {
        int r = avcodec_receive_frame(s->dec, s->frame);
        if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return CT_OK;
        if (r == AVERROR(ENOMEM)) return ct_fail(CT_ERR_OOM, "%s: out of memory decoding", s->in->name);
        if (r < 0) {
            note_bad(s, r);
            return CT_OK;
        }
        ct_status st = ff_frame(s, s->frame);
        av_frame_unref(s->frame);
        CT_TRY(st);
    }
}

static ct_status ff_decode_all(ff *s, ct_audio *out, int *cannot_open) {
    CT_TRY(ff_open(s, cannot_open));
    AVStream *st = s->fmt->streams[s->stream];
    const AVCodec *codec = avcodec_find_decoder(st->codecpar->codec_id);
    if (!codec)
        return ct_fail(CT_ERR_UNSUPPORTED, "%s: this FFmpeg build has no decoder for the %s codec",
                       s->in->name, avcodec_get_name(st->codecpar->codec_id));
    int estimated;
    double declared = ff_declared_seconds(s, &estimated);
    CT_TRY(ct_audio_job_reserve(s->job, declared, estimated));

    s->dec = avcodec_alloc_context3(codec);
    s->pkt = av_packet_alloc();
    s->frame = av_frame_alloc();
    if (!s->dec || !s->pkt || !s->frame) return ct_fail(CT_ERR_OOM, "%s: out of memory", s->in->name);
    int r = avcodec_parameters_to_context(s->dec, st->codecpar);
    if (r < 0) return interrupted_or(s, CT_ERR_FORMAT, r, "bad codec parameters");
    s->dec->pkt_timebase = st->time_base;
    /* One thread per decode: decodes already run in parallel worker
     * threads, and it keeps FFmpeg's log lines on the calling thread. */
    s->dec->thread_count = 1;
    r = avcodec_open2(s->dec, codec, NULL);
    if (r < 0) return interrupted_or(s, CT_ERR_FORMAT, r, "cannot open the audio decoder");

    for (;;) {
        CT_TRY(ct_audio_job_check(s->job));
        r = av_read_frame(s->fmt, s->pkt);
        if (r == AVERROR_EOF) break;
        if (r < 0) {
            if (r == AVERROR_EXIT || r == AVERROR(ENOMEM))
                return interrupted_or(s, CT_ERR_FORMAT, r, "reading");
            /* A demuxer error mid-file: corrupt or cut short. */
            char what[96];
            snprintf(what, sizeof what, "corrupt or truncated: demuxing failed after %.3f s",
                     s->src_seconds);
            return interrupted_or(s, CT_ERR_FORMAT, r, what);
        }
        if (s->pkt->stream_index != s->stream) {
            av_packet_unref(s->pkt);
            continue;
        }
        s->packets++;
        long bad_before = s->bad_packets;
        /* EAGAIN: the decoder wants its output taken before it accepts this
         * packet; take it and offer the packet again (a decoder that keeps
         * refusing after that counts the packet as bad). */
        r = avcodec_send_packet(s->dec, s->pkt);
        for (int tries = 0; r == AVERROR(EAGAIN) && tries < 8; tries++) {
            CT_TRY(ff_receive(s));
            r = avcodec_send_packet(s->dec, s->pkt);
        }
        av_packet_unref(s->pkt);
        if (r == AVERROR(ENOMEM)) return ct_fail(CT_ERR_OOM, "%s: out of memory decoding", s->in->name);
        if (r < 0) note_bad(s, r);
        CT_TRY(ff_receive(s));
        s->last_bad = s->bad_packets > bad_before;
    }
    /* EOF: flush the decoder (codecs with delay hold frames back), then the
     * resampler. */
    long bad_before = s->bad_packets;
    r = avcodec_send_packet(s->dec, NULL);
    if (r < 0 && r != AVERROR_EOF) note_bad(s, r);
    CT_TRY(ff_receive(s));
    if (s->bad_packets > bad_before) s->last_bad = 1;
    CT_TRY(ff_swr_drain(s));

    const char *name = s->in->name, *cname = avcodec_get_name(st->codecpar->codec_id);
    if (s->job->n == 0 && s->bad_packets > 0)
        return ct_fail(CT_ERR_FORMAT,
                       "%s: corrupt %s audio: no samples decoded, %ld of %ld packets failed (first: %s)",
                       name, cname, s->bad_packets, s->packets, s->first_bad);
    if (s->job->n == 0)
        return ct_fail(CT_ERR_FORMAT, "%s: no audio samples (the %s stream %s)", name, cname,
                       s->packets ? "decodes to nothing" : "has no packets");
    /* Isolated bad packets (a damaged frame in a long recording) are
     * skipped, as players do; more than 1 % of them means the stream is not
     * what it claims to be. A bad last packet is what a cut-off file ends
     * in, so it does not count as damage when the file also comes up short
     * of its declared length: that file is reported as truncated. */
    int is_short = !estimated && ct_audio_is_truncated(declared, s->src_seconds);
    long bad_mid = s->bad_packets - (is_short && s->last_bad ? 1 : 0);
    if (bad_mid > 0 && bad_mid * 100 > s->packets)
        return ct_fail(CT_ERR_FORMAT,
                       "%s: corrupt %s audio: %ld of %ld packets failed to decode (first at %.3f s: "
                       "%s); %.3f s of audio decoded",
                       name, cname, s->bad_packets, s->packets, s->first_bad_at, s->first_bad,
                       s->src_seconds);
    if (is_short)
        return ct_fail(CT_ERR_FORMAT,
                       "%s: %s: the container declares %.3f s of audio but only %.3f s decode",
                       name, s->last_bad ? "truncated (its last packet is cut off)"
                                         : "truncated or damaged",
                       declared, s->src_seconds);
    if (s->bad_packets > 0)
        CT_LOGW("%s: skipped %ld damaged %s packet(s) of %ld (first at %.3f s: %s)", name,
                s->bad_packets, cname, s->packets, s->first_bad_at, s->first_bad);

    const AVCodecParameters *p = st->codecpar;
    out->source_sample_rate = p->sample_rate ? p->sample_rate : s->swr_rate;
    out->source_channels = p->ch_layout.nb_channels ? p->ch_layout.nb_channels
                                                    : s->swr_layout.nb_channels;
    fill_names(s, out->codec, sizeof out->codec, out->container, sizeof out->container);
    out->backend = CT_AUDIO_BACKEND_FFMPEG;
    return CT_OK;
}

ct_status ct_audio_ffmpeg_decode(ct_audio_input *in, ct_audio_job *job, ct_audio *out,
                                 int *cannot_open) {
    ff s = {.in = in, .job = job};
    ct_status st = ff_decode_all(&s, out, cannot_open);
    ff_close(&s);
    return st;
}

static void ver(char *buf, size_t cap, const char *name, unsigned v) {
    snprintf(buf, cap, "%s %u.%u.%u", name, v >> 16, (v >> 8) & 0xFF, v & 0xFF);
}

const char *ct_audio_ffmpeg_describe(char *buf, size_t cap) {
    char a[48], b[48], c[48];
    ver(a, sizeof a, "libavformat", avformat_version());
    ver(b, sizeof b, "libavcodec", avcodec_version());
    ver(c, sizeof c, "libswresample", swresample_version());
    snprintf(buf, cap, "%s, %s, %s", a, b, c);
    return buf;
}

#endif /* CT_HAVE_FFMPEG (else decode_ffmpeg_absent.c) */
