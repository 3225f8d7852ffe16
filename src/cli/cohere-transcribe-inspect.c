/* cohere-transcribe-inspect — developer tool: runs WAV clips through the
 * engine as one padded batch and writes every intermediate a parity check
 * needs (features, encoder output, tokens, logits) to a safetensors file,
 * printing one JSON line per clip with its text.
 *
 *   cohere-transcribe-inspect --model DIR|OWNER/NAME [--model-revision R]
 *       [--device cpu|cuda] [--dtype fp32|bf16|fp16|int8|q8_0]
 *       [--dither on|off] [--languages L1,L2,...] [--max-new-tokens N]
 *       [--cpu-wait auto|passive|active]
 *       --out OUT.safetensors A.wav B.wav ...
 *
 * --dtype defaults to fp32 on cpu and bf16 on cuda (cuda multiplies bf16 or
 * fp16 weights). Kept features and logits take the CPU mel and the host
 * decoding loop (asr.h), on cuda too.
 *
 * Input must be 16 kHz mono WAV (read with libsndfile); anything else is an
 * error here (the product's decoder resamples; this tool must not).
 * Exit status: 0 success, 1 failure, 2 usage error.
 */
#include <jansson.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blas_preinit.h" /* OpenBLAS inside ulimit -v: before main */
#include "asr/asr.h"
#include "compute/cpu/cpu_state.h"
#include "core/cpu_wait.h"
#include "core/fs.h"
#include "model/resolve.h"
#include "model/safetensors.h"

#define MAX_CLIPS 4096

static void usage(FILE *f) {
    fprintf(f, "usage: cohere-transcribe-inspect --model DIR|OWNER/NAME [--model-revision R]\n"
               "           [--device cpu|cuda] [--dtype fp32|bf16|fp16|int8|q8_0]\n"
               "           [--dither on|off] [--languages L1,L2,...] [--max-new-tokens N]\n"
               "           [--cpu-wait auto|passive|active]\n"
               "           --out OUT.safetensors A.wav B.wav ...\n");
}

static int read_wav(const char *path, float **samples, size_t *n) {
    SF_INFO info;
    memset(&info, 0, sizeof info);
    int fd;
    if (ct_fs_open_input(path, &fd, NULL) != CT_OK) { /* a FIFO or device is refused, never waited on */
        fprintf(stderr, "cohere-transcribe-inspect: %s\n", ct_last_error());
        return -1;
    }
    SNDFILE *sf = sf_open_fd(fd, SFM_READ, &info, 1);
    if (!sf) {
        fprintf(stderr, "cohere-transcribe-inspect: %s: %s\n", path, sf_strerror(NULL));
        close(fd);
        return -1;
    }
    if ((info.format & SF_FORMAT_TYPEMASK) != SF_FORMAT_WAV && (info.format & SF_FORMAT_TYPEMASK) != SF_FORMAT_WAVEX) {
        fprintf(stderr, "cohere-transcribe-inspect: %s: not a WAV file\n", path);
        sf_close(sf);
        return -1;
    }
    if (info.samplerate != 16000 || info.channels != 1) {
        fprintf(stderr, "cohere-transcribe-inspect: %s: %d Hz, %d channel(s); 16000 Hz mono required\n", path,
                info.samplerate, info.channels);
        sf_close(sf);
        return -1;
    }
    *n = (size_t)info.frames;
    *samples = malloc(sizeof(float) * (*n ? *n : 1));
    if (!*samples) {
        fprintf(stderr, "cohere-transcribe-inspect: %s: out of memory for %zu samples\n", path, *n);
        sf_close(sf);
        return -1;
    }
    if (sf_readf_float(sf, *samples, (sf_count_t)*n) != (sf_count_t)*n) {
        fprintf(stderr, "cohere-transcribe-inspect: %s: short read (the file is shorter than its header says)\n", path);
        sf_close(sf);
        return -1;
    }
    sf_close(sf);
    return 0;
}

static int fail(const char *what) {
    fprintf(stderr, "cohere-transcribe-inspect: %s: %s\n", what, ct_last_error());
    return 1;
}

/* Write the four tensors per clip in order: declare all, then the bytes. */
static ct_status write_out(const char *path, const ct_asr_result *r, const ct_asr_weights *w, char **names) {
    ct_st_writer *wr;
    CT_TRY(ct_st_writer_create(path, &wr));
    ct_status s = CT_OK;
    char nm[64];
    for (int i = 0; i < r->n && s == CT_OK; i++) {
        const ct_asr_clip *c = &r->clips[i];
        int64_t fshape[2] = {c->feature_frames, w->hp.n_mels}, eshape[2] = {c->encoder_frames, w->hp.d_enc};
        int64_t tshape[1] = {c->n_tokens}, lshape[2] = {c->n_tokens, w->hp.vocab};
        snprintf(nm, sizeof nm, "features.%d", i);
        s = ct_st_writer_add(wr, nm, CT_DTYPE_F32, 2, fshape);
        snprintf(nm, sizeof nm, "encoder.%d", i);
        if (s == CT_OK) s = ct_st_writer_add(wr, nm, CT_DTYPE_F32, 2, eshape);
        snprintf(nm, sizeof nm, "tokens.%d", i);
        if (s == CT_OK) s = ct_st_writer_add(wr, nm, CT_DTYPE_I32, 1, tshape);
        snprintf(nm, sizeof nm, "logits.%d", i);
        if (s == CT_OK && c->logits) s = ct_st_writer_add(wr, nm, CT_DTYPE_F32, 2, lshape);
        snprintf(nm, sizeof nm, "file.%d", i);
        if (s == CT_OK) s = ct_st_writer_set_metadata(wr, nm, names[i]);
    }
    for (int i = 0; i < r->n && s == CT_OK; i++) {
        const ct_asr_clip *c = &r->clips[i];
        s = ct_st_writer_write(wr, c->features);
        if (s == CT_OK) s = ct_st_writer_write(wr, c->encoder);
        if (s == CT_OK) s = ct_st_writer_write(wr, c->tokens);
        if (s == CT_OK && c->logits) s = ct_st_writer_write(wr, c->logits);
    }
    if (s == CT_OK) s = ct_st_writer_finish(wr);
    ct_st_writer_free(wr);
    return s;
}

int main(int argc, char **argv) {
    const char *model = NULL, *revision = NULL, *out = NULL, *device = "cpu", *dtype = NULL, *dither = "off", *langs = NULL,
               *cpu_wait = "auto";
    long max_new = 0;
    char *files[MAX_CLIPS];
    int nfiles = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = !strcmp(a, "--model") ? &model : !strcmp(a, "--out") ? &out
                         : !strcmp(a, "--device") ? &device : !strcmp(a, "--dtype") ? &dtype
                         : !strcmp(a, "--dither") ? &dither : !strcmp(a, "--languages") ? &langs
                         : !strcmp(a, "--model-revision") ? &revision : !strcmp(a, "--cpu-wait") ? &cpu_wait
                         : NULL;
        if (dst || !strcmp(a, "--max-new-tokens")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "cohere-transcribe-inspect: %s needs a value\n", a);
                usage(stderr);
                return 2;
            }
            if (dst) {
                *dst = argv[++i];
            } else {
                char *end;
                max_new = strtol(argv[++i], &end, 10);
                if (*end || max_new <= 0 || max_new > 100000) {
                    fprintf(stderr, "cohere-transcribe-inspect: --max-new-tokens: '%s' is not a positive count\n", argv[i]);
                    return 2;
                }
            }
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "cohere-transcribe-inspect: unknown option %s\n", a);
            usage(stderr);
            return 2;
        } else if (nfiles < MAX_CLIPS) {
            files[nfiles++] = argv[i];
        } else {
            fprintf(stderr, "cohere-transcribe-inspect: more than %d clips\n", MAX_CLIPS);
            return 2;
        }
    }
    if (!model || !out || nfiles == 0) {
        fprintf(stderr, "cohere-transcribe-inspect: --model, --out and at least one WAV are required\n");
        usage(stderr);
        return 2;
    }
    if (ct_fs_check_output(out) != CT_OK) { /* --out '' or a device/FIFO/dir/symlink: before the run */
        fprintf(stderr, "cohere-transcribe-inspect: --out: %s\n", ct_last_error());
        return out[0] ? 1 : 2;
    }
    const int wait = ct_cpu_wait_parse(cpu_wait);
    if (wait < 0) {
        fprintf(stderr, "cohere-transcribe-inspect: --cpu-wait: '%s' (auto, passive or active)\n", cpu_wait);
        return 2;
    }
    ct_cpu_wait_exec((ct_cpu_wait)wait, argv, NULL); /* before any OpenMP thread; returns if no re-exec */
    ct_asr_options o = ct_asr_default_options();
    if (strcmp(device, "cpu") && strcmp(device, "cuda")) {
        fprintf(stderr, "cohere-transcribe-inspect: --device: '%s' (cpu or cuda)\n", device);
        return 2;
    }
    o.device = device;
    if (!dtype) dtype = strcmp(device, "cuda") ? "fp32" : "bf16";
    if (!strcmp(dtype, "fp32")) o.weight_dtype = CT_DTYPE_F32;
    else if (!strcmp(dtype, "bf16")) o.weight_dtype = CT_DTYPE_BF16;
    else if (!strcmp(dtype, "fp16")) o.weight_dtype = CT_DTYPE_F16;
    else if (!strcmp(dtype, "int8")) o.weight_dtype = ct_cpu_int8_dtype(NULL); /* CPU only: as the transcriber */
    else if (!strcmp(dtype, "q8_0")) o.weight_dtype = CT_DTYPE_Q8_0; /* CPU only: per-block int8 */
    else {
        fprintf(stderr, "cohere-transcribe-inspect: --dtype: '%s' (fp32, bf16, fp16, int8 or q8_0)\n", dtype);
        return 2;
    }
    ct_asr_request rq = ct_asr_default_request();
    if (!strcmp(dither, "on")) rq.dither = 1;
    else if (strcmp(dither, "off")) {
        fprintf(stderr, "cohere-transcribe-inspect: --dither: '%s' (on or off)\n", dither);
        return 2;
    }
    rq.max_new_tokens = (int)max_new;
    rq.keep_features = rq.keep_encoder = 1;
    rq.keep_logits = 1;
    rq.punctuation = 1;
    /* languages: one for all clips, or one per clip */
    const char *lang_of[MAX_CLIPS];
    char *lang_buf = langs ? strdup(langs) : NULL;
    int nl = 0;
    if (lang_buf) {
        for (char *save = NULL, *t = strtok_r(lang_buf, ",", &save); t && nl < MAX_CLIPS; t = strtok_r(NULL, ",", &save))
            lang_of[nl++] = t;
        if (nl != 1 && nl != nfiles) {
            fprintf(stderr, "cohere-transcribe-inspect: --languages has %d entries for %d clips\n", nl, nfiles);
            free(lang_buf);
            return 2;
        }
        for (int i = nl; i < nfiles; i++) lang_of[i] = lang_of[0];
        rq.languages = lang_of;
    }
    int rc = 1;
    float **clips = calloc((size_t)nfiles, sizeof(float *));
    size_t *n = calloc((size_t)nfiles, sizeof(size_t));
    ct_asr *asr = NULL;
    ct_asr_result res = {0};
    char *model_dir = NULL; /* a Hub id resolves through the cache (model/resolve.h) */
    for (int i = 0; i < nfiles; i++)
        if (read_wav(files[i], &clips[i], &n[i]) != 0) goto done;
    if (ct_model_resolve(model, revision, NULL, &model_dir) != CT_OK) {
        rc = fail(model);
        goto done;
    }
    if (ct_asr_open(model_dir, &o, &asr) != CT_OK) {
        rc = fail(model);
        goto done;
    }
    if (ct_asr_transcribe(asr, (const float *const *)clips, n, nfiles, &rq, &res) != CT_OK) {
        rc = fail("transcribe");
        goto done;
    }
    if (write_out(out, &res, ct_asr_model_weights(asr), files) != CT_OK) {
        rc = fail(out);
        goto done;
    }
    for (int i = 0; i < res.n; i++) {
        const ct_asr_clip *c = &res.clips[i];
        json_t *j = json_pack("{s:i, s:s, s:s, s:i, s:s}", "index", i, "file", files[i], "text", c->text ? c->text : "",
                              "n_tokens", c->n_tokens, "stop", ct_stop_reason_name(c->stop));
        char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
        if (!line) {
            fprintf(stderr, "cohere-transcribe-inspect: clip %d: text is not valid UTF-8\n", i);
            json_decref(j);
            goto done;
        }
        printf("%s\n", line);
        free(line);
        json_decref(j);
    }
    fprintf(stderr, "cohere-transcribe-inspect: %d clips, %.2f s audio: mel %.3f s, encoder %.3f s, decoder %.3f s\n",
            res.n, res.audio_seconds, res.seconds_mel, res.seconds_encoder, res.seconds_decoder);
    rc = 0;
done:
    ct_asr_result_free(&res);
    ct_asr_free(asr);
    for (int i = 0; i < nfiles; i++) free(clips[i]);
    free(clips);
    free(n);
    free(lang_buf);
    free(model_dir);
    return rc;
}
