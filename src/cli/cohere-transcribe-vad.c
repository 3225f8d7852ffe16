/* cohere-transcribe-vad — developer tool: segment one audio file and print
 * one JSON object
 *   {"duration": s, "probabilities": [...], "speech_spans": [[s, e], ...],
 *    "segments": [[s, e], ...]}
 * ("probabilities": one per 512-sample frame, the last partial frame
 * zero-padded; Silero mode only). The audio is decoded by src/audio (any
 * format). Numbers are printed in their shortest
 * round-trip form (probabilities as binary32, times as binary64).
 *
 * Usage: cohere-transcribe-vad --mode silero|auditok|none [--weights
 *   silero_vad.onnx] [--vad-threshold P] [--min-silence-ms MS]
 *   [--speech-pad-ms MS] [--min-dur S] [--max-dur S] [--max-silence S]
 *   [--energy-threshold DB] [--vad-merge] AUDIO
 * --weights: a file, a folder holding silero_vad.onnx or a Hub repo id;
 * default $CT_VAD_WEIGHTS, then $CT_SILERO_VAD.
 * Exit status: 0 success, 1 the file or weights failed, 2 bad arguments.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blas_preinit.h" /* OpenBLAS inside ulimit -v: before main */
#include "core/error.h"
#include "model/hub.h"
#include "model/resolve.h"
#include "vad/silero.h"
#include "vad/vad.h"

#include "audio/audio.h"

static const char *USAGE =
    "usage: cohere-transcribe-vad --mode silero|auditok|none [--weights silero_vad.onnx]\n"
    "                             [--vad-threshold P] [--min-silence-ms MS] [--speech-pad-ms MS]\n"
    "                             [--min-dur S] [--max-dur S] [--max-silence S]\n"
    "                             [--energy-threshold DB] [--vad-merge] AUDIO\n";

static int usage_error(const char *fmt, const char *arg) {
    fputs(USAGE, stderr);
    fprintf(stderr, "cohere-transcribe-vad: error: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return 2;
}

static int parse_number(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno == ERANGE || !isfinite(v)) return 0;
    *out = v;
    return 1;
}

/* Decoded mono 16 kHz float samples of path (any format FFmpeg reads;
 * libsndfile as the fallback), as the product decodes it. */
static ct_status read_audio(const char *path, float **samples, size_t *n) {
    ct_audio *a;
    ct_audio_options ao = ct_audio_default_options();
    ao.cap_option = NULL; /* the cap is the default 4 GiB: this tool has no option for it */
    CT_TRY(ct_audio_decode(path, &ao, &a));
    *samples = a->samples;
    *n = a->n;
    a->samples = NULL;
    ct_audio_free(a);
    return CT_OK;
}

/* Shortest decimal that reads back as the same value (maxp 17 for doubles,
 * 9 for floats), written like Python's repr: positional unless the exponent
 * is below -4 or at least 16, and always with a '.' or an exponent. */
static void put_number(FILE *o, double v, int is_float) {
    char b[64];
    int p = 1;
    for (; p < (is_float ? 9 : 17); p++) {
        snprintf(b, sizeof b, "%.*e", p - 1, v);
        if (is_float ? strtof(b, NULL) == (float)v : strtod(b, NULL) == v) break;
    }
    snprintf(b, sizeof b, "%.*e", p - 1, v);
    int x = atoi(strchr(b, 'e') + 1);
    if (x >= -4 && x < 16) {
        int d = p - 1 - x;
        snprintf(b, sizeof b, "%.*f", d > 0 ? d : 0, v);
        if (!strchr(b, '.')) strcat(b, ".0");
    }
    fputs(b, o);
}

static void put_double(FILE *o, double v) { put_number(o, v, 0); }
static void put_float(FILE *o, float v) { put_number(o, (double)v, 1); }

static void put_spans(FILE *o, const ct_span *s, size_t n) {
    fputc('[', o);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ", [" : "[", o);
        put_double(o, s[i].start);
        fputs(", ", o);
        put_double(o, s[i].end);
        fputc(']', o);
    }
    fputc(']', o);
}

int main(int argc, char **argv) {
    ct_vad_options o = ct_vad_default_options();
    const char *mode = NULL, *weights = NULL, *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (strcmp(a, "--vad-merge") == 0) {
            o.merge = 1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0 || strcmp(a, "--") == 0) {
            if (strcmp(a, "--") == 0 && i + 1 < argc) a = argv[++i];
            if (path) return usage_error("unrecognized arguments: %s", a);
            path = a;
            continue;
        }
        /* --name value or --name=value */
        char name[64];
        const char *val = NULL, *eq = strchr(a, '=');
        if (eq) {
            size_t len = (size_t)(eq - a);
            if (len >= sizeof name) return usage_error("unrecognized arguments: %s", a);
            memcpy(name, a, len);
            name[len] = '\0';
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a);
            if (i + 1 >= argc) return usage_error("argument %s: expected one argument", a);
            val = argv[++i];
        }
        double *num = NULL;
        if (strcmp(name, "--mode") == 0) mode = val;
        else if (strcmp(name, "--weights") == 0) weights = val;
        else if (strcmp(name, "--vad-threshold") == 0) num = &o.threshold;
        else if (strcmp(name, "--min-silence-ms") == 0) num = &o.min_silence_ms;
        else if (strcmp(name, "--speech-pad-ms") == 0) num = &o.speech_pad_ms;
        else if (strcmp(name, "--min-dur") == 0) num = &o.min_dur;
        else if (strcmp(name, "--max-dur") == 0) num = &o.max_dur;
        else if (strcmp(name, "--max-silence") == 0) num = &o.max_silence;
        else if (strcmp(name, "--energy-threshold") == 0) num = &o.energy_threshold;
        else return usage_error("unrecognized arguments: %s", a);
        if (num && !parse_number(val, num)) return usage_error("invalid number: %s", val);
    }
    if (!mode) return usage_error("the following arguments are required: %s", "--mode");
    if (!path) return usage_error("the following arguments are required: %s", "AUDIO");
    if (strcmp(mode, "silero") == 0) o.mode = CT_VAD_SILERO;
    else if (strcmp(mode, "auditok") == 0) o.mode = CT_VAD_AUDITOK;
    else if (strcmp(mode, "none") == 0) o.mode = CT_VAD_NONE;
    else return usage_error("argument --mode: invalid choice: '%s' (choose from 'silero', 'auditok', 'none')", mode);
    if (ct_vad_check_options(&o) != CT_OK) {
        fprintf(stderr, "cohere-transcribe-vad: error: %s\n", ct_last_error());
        return 2;
    }
    if (o.mode == CT_VAD_SILERO && !weights && !getenv(CT_SILERO_WEIGHTS_ENV) && !getenv(CT_SILERO_WEIGHTS_ENV_ALT))
        return usage_error("%s", "--mode silero needs --weights silero_vad.onnx (or $" CT_SILERO_WEIGHTS_ENV ")");

    /* --weights: a file, a folder holding silero_vad.onnx or a Hub repo id,
     * resolved and checksummed (v6.2 only) as the product does. */
    ct_silero *model = NULL;
    if (o.mode == CT_VAD_SILERO) {
        ct_hub_options ho;
        ct_hub_default_options(&ho);
        char *wpath = NULL;
        if (ct_vad_weights_resolve(weights, &ho, &wpath) != CT_OK || ct_silero_load(wpath, &model) != CT_OK) {
            fprintf(stderr, "cohere-transcribe-vad: %s\n", ct_last_error());
            free(wpath);
            return 1;
        }
        free(wpath);
    }
    float *audio = NULL;
    size_t n = 0;
    ct_vad_result r;
    if (read_audio(path, &audio, &n) != CT_OK || ct_vad_segment(audio, n, &o, model, &r) != CT_OK) {
        fprintf(stderr, "cohere-transcribe-vad: %s\n", ct_last_error());
        free(audio);
        ct_silero_free(model);
        return 1;
    }
    FILE *out = stdout;
    fputs("{\"duration\": ", out);
    put_double(out, r.duration);
    if (r.probs) {
        fputs(", \"probabilities\": [", out);
        for (size_t i = 0; i < r.n_probs; i++) {
            if (i) fputs(", ", out);
            put_float(out, r.probs[i]);
        }
        fputc(']', out);
    }
    fputs(", \"speech_spans\": ", out);
    put_spans(out, r.spans, r.n_spans);
    fputs(", \"segments\": ", out);
    put_spans(out, r.segments, r.n_segments);
    fputs("}\n", out);
    int rc = fflush(out) == 0 && !ferror(out) ? 0 : 1;
    ct_vad_result_free(&r);
    free(audio);
    ct_silero_free(model);
    return rc;
}
