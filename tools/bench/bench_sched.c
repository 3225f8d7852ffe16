/* bench_sched.c — N clips of mixed length (2–35 s white noise, fixed seed)
 * through the batch scheduler (ct_sched_run) into ct_asr_transcribe on any
 * device, each clip forced to round(3.3 · seconds) tokens (ignore_eos, a
 * budget per row): the product's batching without its I/O.
 *   bench_sched --model DIR [--device cuda] [--dtype bf16] [--clips 500]
 *               [--rows 128] [--audio-seconds S] [--runs 2]
 * --rows caps the rows per batch, --audio-seconds the padded audio per batch
 * (default rows × 35 s): with more rows than the audio cap needs at 35 s,
 * batches of short clips carry as much audio as batches of long ones.
 * One JSON line per run (the first warms the arenas and GEMM plans). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/asr.h"
#include "asr/scheduler.h"
#include "core/fs.h"
#include "bench_util.h"

typedef struct {
    ct_asr *asr;
    float **pcm;
    size_t *ns;
    int *ntok;
    long tokens;
} ctx;

static ct_status exec(void *vp, const int *idx, int n) {
    ctx *x = vp;
    const float **pcm = malloc(sizeof(float *) * (size_t)n);
    size_t *ns = malloc(sizeof(size_t) * (size_t)n);
    int *rn = malloc(sizeof(int) * (size_t)n), mx = 1;
    if (!pcm || !ns || !rn) {
        free(pcm), free(ns), free(rn);
        return ct_fail(CT_ERR_OOM, "bench_sched: batch");
    }
    for (int i = 0; i < n; i++) {
        pcm[i] = x->pcm[idx[i]], ns[i] = x->ns[idx[i]], rn[i] = x->ntok[idx[i]];
        if (rn[i] > mx) mx = rn[i];
    }
    ct_asr_request rq = ct_asr_default_request();
    rq.max_new_tokens = mx;
    rq.ignore_eos = 1;
    rq.row_max_new_tokens = rn;
    ct_asr_result res;
    ct_status s = ct_asr_transcribe(x->asr, pcm, ns, n, &rq, &res);
    for (int i = 0; i < n && s == CT_OK; i++) {
        if (res.clips[i].n_tokens != rn[i])
            s = ct_fail(CT_ERR_INTERNAL, "row made %d of %d tokens", res.clips[i].n_tokens, rn[i]);
        x->tokens += res.clips[i].n_tokens;
    }
    if (s == CT_OK) ct_asr_result_free(&res);
    free(pcm), free(ns), free(rn);
    return s;
}

int main(int argc, char **argv) {
    const char *model = NULL, *device = "cuda", *dtype = "bf16";
    int clips = 500, rows = 128, runs = 2;
    double audio_cap = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model")) model = argv[i + 1];
        else if (!strcmp(argv[i], "--device")) device = argv[i + 1];
        else if (!strcmp(argv[i], "--dtype")) dtype = argv[i + 1];
        else if (!strcmp(argv[i], "--clips")) clips = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--rows")) rows = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--audio-seconds")) audio_cap = atof(argv[i + 1]);
        else model = NULL, i = argc;
    }
    if (!model || clips < 1 || rows < 1 || runs < 1 || !(audio_cap >= 0)) {
        fprintf(stderr, "usage: bench_sched --model DIR [--device D] [--dtype bf16|fp16|fp32] [--clips N] [--rows N] "
                        "[--audio-seconds S] [--runs N]\n");
        return 2;
    }
    ct_asr_options o = ct_asr_default_options();
    o.device = device;
    o.weight_dtype = bench_weight_dtype(dtype);
    ctx x = {0};
    if (ct_asr_open(model, &o, &x.asr) != CT_OK) {
        fprintf(stderr, "bench_sched: %s\n", ct_last_error());
        return 1;
    }
    double *sec = malloc(sizeof(double) * (size_t)clips), audio = 0;
    x.pcm = malloc(sizeof(float *) * (size_t)clips);
    x.ns = malloc(sizeof(size_t) * (size_t)clips);
    x.ntok = malloc(sizeof(int) * (size_t)clips);
    ct_status *st = malloc(sizeof(ct_status) * (size_t)clips);
    uint64_t r = 20261202;
    for (int i = 0; i < clips; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        sec[i] = 2.0 + 33.0 * (double)(r >> 11) / 9007199254740992.0;
        x.ns[i] = (size_t)llround(sec[i] * 16000);
        x.ntok[i] = (int)lround(3.3 * sec[i]);
        x.pcm[i] = malloc(sizeof(float) * x.ns[i]);
        for (size_t k = 0; k < x.ns[i]; k++) {
            r ^= r << 13, r ^= r >> 7, r ^= r << 17;
            x.pcm[i][k] = (float)((double)(r >> 40) / (double)(1u << 24) - 0.5) * 0.2f;
        }
        audio += sec[i];
    }
    int rc = 0;
    for (int run = 0; run < runs; run++) {
        ct_sched_opts so;
        ct_sched_default_options(&so);
        so.max_rows = so.max_rows_limit = rows;
        so.max_audio_s = audio_cap > 0 ? audio_cap : rows * 35.0;
        ct_breaker br;
        ct_breaker_init(&br);
        ct_sched_stats ss;
        x.tokens = 0;
        double t0 = ct_now();
        ct_status s = ct_sched_run(sec, clips, &so, exec, &x, &br, st, &ss);
        double wall = ct_now() - t0;
        printf("{\"what\":\"sched\",\"device\":\"%s\",\"run\":%d,\"clips\":%d,\"rows\":%d,\"audio_cap_s\":%.0f,"
               "\"status\":\"%s\",\"audio_s\":%.1f,\"wall_s\":%.3f,\"rtfx\":%.1f,\"tokens\":%ld,\"batches\":%d,"
               "\"max_batch\":%d}\n",
               device, run, clips, rows, so.max_audio_s, ct_status_str(s), audio, wall, audio / wall, x.tokens,
               ss.batches, ss.max_batch);
        fflush(stdout);
        if (s != CT_OK) {
            fprintf(stderr, "bench_sched: %s\n", ss.first_error);
            rc = 1;
            break;
        }
    }
    for (int i = 0; i < clips; i++) free(x.pcm[i]);
    free(x.pcm), free(x.ns), free(x.ntok), free(sec), free(st);
    ct_asr_free(x.asr);
    return rc;
}
