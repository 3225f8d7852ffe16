/* render.c — txt/srt/vtt bytes (render.h, PRODUCT-DETAILS §5.3–5.4):
 * half-even milliseconds, SRT always with hours and ',', VTT with hours only
 * where a timestamp has them, txt as stripped non-empty segment lines.
 */
#include "output/render.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "output/pytext.h"
#include "output/transcript_json.h"

long long ct_render_ms(double seconds) {
    double x = fmax(0.0, seconds) * 1000.0;
    if (!isfinite(x)) return 0;
    /* nearbyint rounds half to even in the default rounding mode. */
    return (long long)nearbyint(x);
}

void ct_render_timestamp(double seconds, int hours, char marker, char out[48]) {
    long long ms = ct_render_ms(seconds);
    long long h = ms / 3600000;
    ms %= 3600000;
    long long m = ms / 60000;
    ms %= 60000;
    long long s = ms / 1000;
    ms %= 1000;
    if (hours || h > 0)
        snprintf(out, 48, "%02lld:%02lld:%02lld%c%03lld", h, m, s, marker, ms);
    else
        snprintf(out, 48, "%02lld:%02lld%c%03lld", m, s, marker, ms);
}

ct_status ct_render_txt(const ct_file_record *r, ct_jbuf *out) {
    int any = 0;
    for (size_t i = 0; i < r->n_segments; i++) {
        const char *t = r->segments[i].text ? r->segments[i].text : "";
        size_t off, len;
        ct_py_strip_range(t, strlen(t), &off, &len);
        if (!len) continue;
        if (any) CT_TRY(ct_jbuf_put(out, "\n", 1));
        CT_TRY(ct_jbuf_put(out, t + off, len));
        any = 1;
    }
    return ct_jbuf_put(out, "\n", 1);
}

static ct_status put_cue(ct_jbuf *out, const ct_rec_cue *c, int hours, char marker) {
    char a[48], b[48];
    ct_render_timestamp(c->start, hours, marker, a);
    ct_render_timestamp(c->end, hours, marker, b);
    CT_TRY(ct_jbuf_puts(out, a));
    CT_TRY(ct_jbuf_puts(out, " --> "));
    CT_TRY(ct_jbuf_puts(out, b));
    CT_TRY(ct_jbuf_puts(out, "\n"));
    CT_TRY(ct_jbuf_puts(out, c->text ? c->text : ""));
    return ct_jbuf_puts(out, "\n\n");
}

ct_status ct_render_srt(const ct_file_record *r, ct_jbuf *out) {
    CT_TRY(ct_jbuf_put(out, "", 0));
    for (size_t i = 0; i < r->n_cues; i++) {
        char num[32];
        snprintf(num, sizeof num, "%zu\n", i + 1);
        CT_TRY(ct_jbuf_puts(out, num));
        CT_TRY(put_cue(out, &r->cues[i], 1, ','));
    }
    return CT_OK;
}

ct_status ct_render_vtt(const ct_file_record *r, ct_jbuf *out) {
    CT_TRY(ct_jbuf_puts(out, "WEBVTT\n\n"));
    for (size_t i = 0; i < r->n_cues; i++) CT_TRY(put_cue(out, &r->cues[i], 0, '.'));
    return CT_OK;
}

const char *ct_format_name(ct_format f) {
    switch (f) {
    case CT_FORMAT_TXT: return "txt";
    case CT_FORMAT_SRT: return "srt";
    case CT_FORMAT_VTT: return "vtt";
    case CT_FORMAT_JSON: return "json";
    }
    return "?";
}

ct_status ct_render_format(const ct_file_record *r, ct_format f, const ct_transcriber_options *o,
                           const struct ct_output_context *ctx, ct_jbuf *out) {
    switch (f) {
    case CT_FORMAT_TXT: return ct_render_txt(r, out);
    case CT_FORMAT_SRT: return ct_render_srt(r, out);
    case CT_FORMAT_VTT: return ct_render_vtt(r, out);
    case CT_FORMAT_JSON:
        if (!ctx) return ct_fail(CT_ERR_INVALID_ARG, "render: the JSON format needs the run context");
        return ct_transcript_json(r, o, ctx, out);
    }
    return ct_fail(CT_ERR_INVALID_ARG, "render: unknown format %d", (int)f);
}
