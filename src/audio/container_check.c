/* container_check.c — catches truncated WAV and Ogg files, which both
 * decoders accept silently: FFmpeg and libsndfile clamp a WAV data chunk to
 * the bytes present, and FFmpeg's Ogg demuxer drops a cut-off last page and
 * takes the stream's length from the last complete one. Reads only headers
 * (a few hundred bytes per Ogg page); other containers are left to the
 * decoders, whose declared durations catch truncation there. */
#include <stdio.h>
#include <string.h>

#include "audio/audio_internal.h"

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* Read exactly n bytes at off; 0 if the input ends first or on error. */
static int read_at(ct_audio_input *in, int64_t off, uint8_t *buf, int64_t n) {
    if (ct_audio_input_seek(in, off, SEEK_SET) < 0) return 0;
    int64_t got = 0;
    while (got < n) {
        int64_t r = ct_audio_input_read(in, buf + got, n - got);
        if (r <= 0) return 0;
        got += r;
    }
    return 1;
}

static void fmt_seconds(char *buf, size_t cap, double s) {
    if (s >= 3600)
        snprintf(buf, cap, "%.1f s (%.1f h)", s, s / 3600);
    else
        snprintf(buf, cap, "%.3f s", s);
}

static ct_status check_riff(ct_audio_input *in) {
    uint8_t h[16];
    uint32_t byte_rate = 0;
    int64_t pos = 12;
    for (int i = 0; i < 64 && read_at(in, pos, h, 8); i++) {
        uint32_t size = le32(h + 4);
        if (!memcmp(h, "fmt ", 4) && size >= 16 && read_at(in, pos + 8, h, 16)) {
            byte_rate = le32(h + 8);
            if (le16(h + 12) == 0) byte_rate = 0; /* block_align 0: nonsense */
        } else if (!memcmp(h, "data", 4)) {
            /* 0 and 0xFFFFFFFF are what streaming writers leave behind when
             * they never come back to fill the size in: no claim. */
            if (!byte_rate || size == 0 || size == 0xFFFFFFFFu) return CT_OK;
            int64_t held_bytes = in->size - (pos + 8);
            if (held_bytes < 0) held_bytes = 0;
            double declared = (double)size / byte_rate, held = (double)held_bytes / byte_rate;
            if (ct_audio_is_truncated(declared, held)) {
                char d[64], hs[64];
                fmt_seconds(d, sizeof d, declared);
                fmt_seconds(hs, sizeof hs, held);
                return ct_fail(CT_ERR_FORMAT,
                               "%s: truncated: the WAV header declares %s of audio but the file "
                               "holds %s",
                               in->name, d, hs);
            }
            return CT_OK;
        }
        pos += 8 + (int64_t)size + (size & 1);
    }
    return CT_OK; /* no data chunk found: the decoders will say what is wrong */
}

static ct_status check_ogg(ct_audio_input *in) {
    uint8_t h[27 + 255];
    int64_t pos = 0;
    for (;;) {
        int64_t left = in->size - pos;
        if (left == 0) return CT_OK;
        if (left < 27) { /* a page header cut off by the end of the file? */
            int64_t k = left < 4 ? left : 4;
            if (read_at(in, pos, h, k) && !memcmp(h, "OggS", (size_t)k)) break;
            return CT_OK;
        }
        /* Not a page where one must start: junk or a damaged file; the
         * decoder judges it. */
        if (!read_at(in, pos, h, 27) || memcmp(h, "OggS", 4)) return CT_OK;
        int nseg = h[26];
        if (!read_at(in, pos + 27, h + 27, nseg)) break;
        int64_t body = 0;
        for (int i = 0; i < nseg; i++) body += h[27 + i];
        int64_t end = pos + 27 + nseg + body;
        if (end > in->size) break;
        pos = end;
    }
    return ct_fail(CT_ERR_FORMAT,
                   "%s: truncated: the last Ogg page (at byte %lld) is cut off by the end of the "
                   "file (%lld bytes)",
                   in->name, (long long)pos, (long long)in->size);
}

ct_status ct_audio_check_container(ct_audio_input *in) {
    uint8_t magic[12];
    ct_status s = CT_OK;
    if (read_at(in, 0, magic, 12)) {
        if (!memcmp(magic, "RIFF", 4) && !memcmp(magic + 8, "WAVE", 4))
            s = check_riff(in);
        else if (!memcmp(magic, "OggS", 4))
            s = check_ogg(in);
    }
    in->pos = 0;
    return s;
}
