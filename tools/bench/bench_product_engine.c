/* bench_product_engine.c — the engine alone over the segments a
 * `cohere-transcribe` run transcribed, for tools/bench/bench_product.sh: reads
 * the run's profile (file order, batch history) and each file's ASR
 * checkpoint (segment times, generated tokens), rebuilds the product's file
 * groups and batches, and times ct_asr_transcribe on them with the recorded
 * token counts forced (ignore_eos), each row its own count. Under the
 * product's benchmark mode (the profile's configuration names
 * benchmark_tokens_per_second) every row's count is the mode's formula
 * (ct_benchmark_token_count), checked against what the product recorded.
 * --device cuda runs the GPU engine: the bound tools/device/product_bench.sh
 * compares the product with. --dump DIR writes the segments' PCM and the
 * batches as run (segments.f32, plan.json) for the transformers baseline over
 * the same work (tools/device/tf_product_bench.py). How the work is
 * reproduced, and where it can differ: docs/PERFORMANCE.md, "Product vs engine". */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/asr.h"
#include "asr/breaker.h"
#include "asr/guards.h"
#include "asr/scheduler.h"
#include "audio/audio.h"
#include "core/fs.h"
#include "pipeline/pipeline_internal.h"

typedef struct {
    const float *pcm;
    size_t n;
    int steps;   /* decode steps the product's engine call ran for this row (upper bound when unknown);
                  * this row's exact budget here (row_max_new_tokens) */
    int tokens;  /* generated tokens the product recorded */
    int exact;   /* steps known exactly (EOS or token limit), not a repetition stop */
} seg;

typedef struct {
    ct_asr *asr;
    seg *segs;     /* this group's */
    int max_new;   /* the product's --max-new-tokens */
    json_t *hist;  /* the product's batch_history */
    size_t next_call;
    int mismatches, oom_replayed;
    double seconds, seconds_oom, seconds_mel, seconds_enc, seconds_dec;
    long long row_steps_engine, row_steps_product, rows, calls;
    json_t *dump_batches; /* --dump: each successful call's segment numbers (over the whole run) */
    size_t seg_base;      /* this group's first segment number */
} ctx;

static double round_half_even(double x) { return x - floor(x) == 0.5 ? 2.0 * floor(x / 2.0 + 0.5) : floor(x + 0.5); }

static ct_status exec_batch(void *vx, const int *idx, int m) {
    ctx *x = vx;
    const float **clips = malloc(sizeof *clips * (size_t)m);
    size_t *ns = malloc(sizeof *ns * (size_t)m);
    const char **langs = malloc(sizeof *langs * (size_t)m);
    int *budget = malloc(sizeof *budget * (size_t)m);
    int steps = 1, tokens = 0;
    size_t longest = 0;
    for (int i = 0; i < m; i++) {
        const seg *s = &x->segs[idx[i]];
        clips[i] = s->pcm, ns[i] = s->n, langs[i] = "en";
        budget[i] = s->steps; /* the decoder drops each row at its own count, as the product's did */
        if (s->steps > steps) steps = s->steps;
        if (s->n > longest) longest = s->n;
        tokens += s->tokens;
    }
    /* the product's record of this call, to check the rebuilt batch against it */
    json_t *h = json_array_get(x->hist, x->next_call++);
    double padded = (double)m * (double)longest / 16000.0;
    if (h && json_object_get(h, "event")) {
        /* The product's call ran out of memory here. Run the same call (the
         * engine's arenas grow with the largest batch attempted, so skipping
         * it leaves the engine in another state: a later 3-row call then
         * failed where the product's did not), time it apart, and fail it
         * the same way so the scheduler takes the same split and cap. */
        int same = json_integer_value(json_object_get(h, "segments")) == m;
        ct_asr_request rq = ct_asr_default_request();
        rq.languages = langs, rq.dither = 1, rq.ignore_eos = 1, rq.max_new_tokens = steps;
        rq.row_max_new_tokens = budget;
        ct_asr_result res;
        double t0 = ct_now();
        ct_status st = ct_asr_transcribe(x->asr, clips, ns, m, &rq, &res);
        x->seconds_oom += ct_now() - t0;
        if (st == CT_OK) ct_asr_result_free(&res);
        fprintf(stderr, "  (product call %zu: out of memory at %d rows; here: %s, %.2f s)\n", x->next_call - 1, m,
                st == CT_OK ? "succeeded" : ct_last_error(), ct_now() - t0);
        free(clips), free(ns), free(langs), free(budget);
        if (!same || st != CT_ERR_OOM) x->mismatches++;
        x->oom_replayed++;
        return ct_fail(CT_ERR_OOM, "replayed out-of-memory");
    }
    for (int i = 0; i < m; i++) x->row_steps_product += x->segs[idx[i]].steps; /* successful calls only */
    if (!h || json_integer_value(json_object_get(h, "segments")) != m ||
        json_integer_value(json_object_get(h, "generated_tokens")) != tokens ||
        fabs(json_real_value(json_object_get(h, "padded_audio_seconds")) - padded) > 1e-6) {
        fprintf(stderr, "batch %zu: rebuilt %d rows, %d tokens, %.3f padded s; the product's: %s\n", x->next_call - 1, m,
                tokens, padded, h ? json_dumps(h, JSON_COMPACT) : "(none)");
        x->mismatches++;
    }
    ct_asr_request rq = ct_asr_default_request();
    rq.languages = langs;
    rq.dither = 1; /* as the product (PRODUCT-DETAILS: the processor dithers) */
    rq.ignore_eos = 1;
    rq.max_new_tokens = steps;
    rq.row_max_new_tokens = budget;
    ct_asr_result res;
    double t0 = ct_now();
    ct_status st = ct_asr_transcribe(x->asr, clips, ns, m, &rq, &res);
    double dt = ct_now() - t0;
    if (st == CT_OK) {
        x->seconds += dt, x->seconds_mel += res.seconds_mel, x->seconds_enc += res.seconds_encoder;
        x->seconds_dec += res.seconds_decoder;
        for (int i = 0; i < m; i++) x->row_steps_engine += res.clips[i].n_tokens;
        x->rows += m, x->calls++;
        if (x->dump_batches) {
            json_t *b = json_array();
            for (int i = 0; i < m; i++) json_array_append_new(b, json_integer((json_int_t)(x->seg_base + (size_t)idx[i])));
            json_array_append_new(x->dump_batches, b);
        }
        ct_asr_result_free(&res);
        fprintf(stderr, "  call %lld: %d rows, %.2f s audio padded, %d steps: %.2f s\n", x->calls, m, padded, steps, dt);
    }
    free(clips), free(ns), free(langs), free(budget);
    return st;
}

static int in_list(json_t *a, size_t k) {
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) if ((size_t)json_integer_value(v) == k) return 1;
    return 0;
}

int main(int argc, char **argv) {
    const char *model = NULL, *profile = NULL, *outdir = NULL, *dtype = "bf16", *device = "cpu", *dump = NULL;
    int threads = 2, batch = 4;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--model")) model = argv[i + 1];
        else if (!strcmp(argv[i], "--profile")) profile = argv[i + 1];
        else if (!strcmp(argv[i], "--out-dir")) outdir = argv[i + 1];
        else if (!strcmp(argv[i], "--dtype")) dtype = argv[i + 1];
        else if (!strcmp(argv[i], "--device")) device = argv[i + 1];
        else if (!strcmp(argv[i], "--dump")) dump = argv[i + 1];
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch-size")) batch = atoi(argv[i + 1]);
        else return fprintf(stderr, "unknown option %s\n", argv[i]), 2;
    }
    if (!model || !profile || !outdir) {
        fprintf(stderr, "usage: bench_product_engine --model DIR --profile P.json --out-dir DIR [--dtype bf16|fp32] "
                        "[--threads N] [--batch-size N] [--device cpu|cuda] [--dump DIR]\n");
        return 2;
    }
    json_error_t je;
    json_t *prof = json_load_file(profile, 0, &je);
    if (!prof) return fprintf(stderr, "%s: %s\n", profile, je.text), 1;
    json_t *files = json_object_get(prof, "files");
    json_t *hist = json_object_get(json_object_get(prof, "asr"), "batch_history");
    json_t *conf = json_object_get(prof, "configuration");
    int max_new = (int)json_integer_value(json_object_get(conf, "max_new_tokens"));
    double rate = json_number_value(json_object_get(conf, "benchmark_tokens_per_second")); /* 0: not set */
    /* transcriber.c's group rule: ct_pipe_group_segments (one batch of
     * segments, then two, then four), or the PCM group cap (half the audio
     * memory, at most 512 MiB, when preparation overlaps) */
    double mem_gb = json_number_value(json_object_get(conf, "audio_memory_gb"));
    uint64_t cap = mem_gb > 0 ? (uint64_t)floor(mem_gb * 1073741824.0) : 4ull << 30;
    int pipelined = json_is_true(json_object_get(conf, "pipeline_preparation")) && json_array_size(files) > 1;
    uint64_t group_cap = pipelined ? (cap / 2 > 0 ? cap / 2 : 1) : cap;
    if (pipelined && group_cap > 512ull << 20) group_cap = 512ull << 20;
    size_t nf = json_array_size(files);
    ct_audio **audio = calloc(nf, sizeof *audio);
    json_t **ck = calloc(nf, sizeof *ck);
    double t_dec = ct_now(), audio_s = 0;
    for (size_t i = 0; i < nf; i++) { /* decode outside the timed part: the engine takes PCM */
        const char *path = json_string_value(json_object_get(json_array_get(files, i), "path"));
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        char stem[512], cp[4096];
        snprintf(stem, sizeof stem, "%s", base);
        char *dot = strrchr(stem, '.');
        if (dot && dot != stem) *dot = 0;
        snprintf(cp, sizeof cp, "%s/.%s.cohere-transcribe.asr.json", outdir, stem);
        json_t *j = json_load_file(cp, 0, &je);
        if (!j) return fprintf(stderr, "%s: %s\n", cp, je.text), 1;
        ck[i] = json_object_get(json_object_get(j, "payload"), "checkpoint");
        /* the decoder the product used for this file (their resamplers differ in the last bits) */
        ct_audio_options dopt = ct_audio_default_options();
        const char *used = json_string_value(json_object_get(ck[i], "decode_backend"));
        if (used) dopt.backend = !strcmp(used, "libsndfile") ? CT_AUDIO_BACKEND_SNDFILE : CT_AUDIO_BACKEND_FFMPEG;
        if (ct_audio_decode(path, &dopt, &audio[i]) != CT_OK) return fprintf(stderr, "%s\n", ct_last_error()), 1;
        audio_s += audio[i]->duration;
    }
    t_dec = ct_now() - t_dec;
    ct_asr_options ao = ct_asr_default_options();
    ao.weight_dtype = !strcmp(dtype, "bf16") ? CT_DTYPE_BF16 : CT_DTYPE_F32;
    ao.threads = threads;
    ao.device = device;
    ctx x = {.max_new = max_new, .hist = hist};
    double t0 = ct_now();
    if (ct_asr_open(model, &ao, &x.asr) != CT_OK) return fprintf(stderr, "%s\n", ct_last_error()), 1;
    double t_load = ct_now() - t0;
    int32_t prompt[64];
    int P = 0;
    if (ct_tokenizer_prompt(ct_asr_tokenizer(x.asr), "en", 1, prompt, 64, &P) != CT_OK)
        return fprintf(stderr, "%s\n", ct_last_error()), 1;
    int capacity = ct_generation_capacity(ct_asr_model_weights(x.asr)->hp.max_pos, P);
    int eff = max_new < capacity ? max_new : capacity; /* asr_run.c's first-pass limit */
    int formula_mismatch = 0;
    FILE *pcm_out = NULL;
    json_t *dump_segs = NULL;
    long long pcm_at = 0;
    if (dump) {
        char pp[4096];
        snprintf(pp, sizeof pp, "%s/segments.f32", dump);
        if (!(pcm_out = fopen(pp, "wb"))) return perror(pp), 1;
        x.dump_batches = json_array(), dump_segs = json_array();
    }
    ct_breaker br;
    ct_breaker_init(&br);
    int unknown = 0;
    for (size_t g0 = 0, groups = 0; g0 < nf; groups++) {
        size_t want = ct_pipe_group_segments(batch, groups);
        size_t g1 = g0, total = 0;
        uint64_t bytes = 0;
        while (g1 < nf && total < want && bytes < group_cap) {
            bytes += (uint64_t)audio[g1]->n * sizeof(float);
            total += json_array_size(json_object_get(ck[g1++], "segment_times"));
        }
        seg *segs = calloc(total ? total : 1, sizeof *segs);
        double *sec = calloc(total ? total : 1, sizeof *sec);
        ct_status *stat = calloc(total ? total : 1, sizeof *stat);
        size_t k = 0;
        for (size_t f = g0; f < g1; f++) {
            json_t *times = json_object_get(ck[f], "segment_times"), *gen = json_object_get(ck[f], "generated_tokens");
            json_t *rep = json_object_get(ck[f], "repetition_stopped_segments");
            json_t *lim = json_object_get(ck[f], "token_limit_segments");
            for (size_t j = 0; j < json_array_size(times); j++, k++) {
                json_t *t = json_array_get(times, j);
                int64_t s = (int64_t)round_half_even(json_real_value(json_array_get(t, 0)) * 16000.0);
                int64_t e = (int64_t)round_half_even(json_real_value(json_array_get(t, 1)) * 16000.0);
                if (s < 0) s = 0;
                if (e > (int64_t)audio[f]->n) e = (int64_t)audio[f]->n;
                if (e < s) e = s;
                segs[k].pcm = audio[f]->samples + s, segs[k].n = (size_t)(e - s);
                int tok = -1;
                for (size_t r = 0; r < json_array_size(gen); r++)
                    if ((size_t)json_integer_value(json_array_get(json_array_get(gen, r), 0)) == j)
                        tok = (int)json_integer_value(json_array_get(json_array_get(gen, r), 1));
                segs[k].tokens = tok;
                if (rate > 0) { /* benchmark mode: the formula, which the product must have followed */
                    segs[k].steps = ct_benchmark_token_count(rate, segs[k].n, eff), segs[k].exact = 1;
                    if (tok != segs[k].steps) formula_mismatch++;
                } else if (in_list(rep, j)) { /* the guard cut the text; the decoder ran on to EOS or the limit */
                    segs[k].steps = max_new, unknown++;
                } else if (in_list(lim, j)) {
                    segs[k].steps = tok, segs[k].exact = 1;
                } else {
                    segs[k].steps = tok + 1, segs[k].exact = 1; /* + the EOS step */
                }
                sec[k] = (double)segs[k].n / 16000.0;
                if (pcm_out) { /* float32 little-endian, the segments one after another */
                    if (fwrite(segs[k].pcm, sizeof(float), segs[k].n, pcm_out) != segs[k].n)
                        return fprintf(stderr, "--dump: write failed\n"), 1;
                    json_t *d = json_object();
                    json_object_set_new(d, "offset", json_integer(pcm_at));
                    json_object_set_new(d, "samples", json_integer((json_int_t)segs[k].n));
                    json_object_set_new(d, "tokens", json_integer(segs[k].steps));
                    json_array_append_new(dump_segs, d);
                    pcm_at += (long long)segs[k].n;
                }
            }
        }
        ct_sched_opts so; /* asr_run.c's first pass: row cap = --batch-size, no audio budget, not adaptive */
        ct_sched_default_options(&so);
        so.max_rows = batch, so.max_rows_limit = batch, so.max_audio_s = 0, so.adaptive = 0;
        ct_sched_stats ss;
        x.segs = segs;
        ct_status st = ct_sched_run(sec, (int)total, &so, exec_batch, &x, &br, stat, &ss);
        x.seg_base += total;
        free(segs), free(sec), free(stat);
        if (st != CT_OK) return fprintf(stderr, "engine: %s\n", ct_last_error()), 1;
        g0 = g1;
    }
    if (x.next_call != json_array_size(hist)) {
        fprintf(stderr, "rebuilt %zu calls, the product made %zu\n", x.next_call, json_array_size(hist));
        x.mismatches++;
    }
    printf("engine_audio_decode_seconds %.3f (not timed as engine work)\n", t_dec);
    printf("engine_audio_seconds %.3f\n", audio_s);
    printf("engine_load_seconds %.3f\n", t_load);
    printf("engine_transcribe_seconds %.3f\n", x.seconds);
    printf("engine_rtfx %.2f (file audio / transcribe seconds); with load %.2f\n", x.seconds > 0 ? audio_s / x.seconds : 0,
           audio_s / (x.seconds + t_load));
    printf("benchmark_tokens_per_second %g formula_mismatches %d\n", rate, formula_mismatch);
    printf("engine_mel_encoder_decoder_seconds %.3f %.3f %.3f\n", x.seconds_mel, x.seconds_enc, x.seconds_dec);
    printf("engine_calls %lld rows %lld\n", x.calls, x.rows);
    printf("engine_row_steps %lld product_row_steps %lld (repetition-stopped rows counted at the limit: %d)\n",
           x.row_steps_engine, x.row_steps_product, unknown);
    printf("oom_replayed %d seconds %.3f\n", x.oom_replayed, x.seconds_oom);
    printf("batch_mismatches %d\n", x.mismatches);
    if (dump) {
        json_t *plan = json_object(), *pr = json_array();
        for (int i = 0; i < P; i++) json_array_append_new(pr, json_integer(prompt[i]));
        json_object_set_new(plan, "prompt", pr);
        json_object_set_new(plan, "file_audio_seconds", json_real(audio_s));
        json_object_set_new(plan, "benchmark_tokens_per_second", json_real(rate));
        json_object_set_new(plan, "segments", dump_segs);
        json_object_set_new(plan, "batches", x.dump_batches);
        char pp[4096];
        snprintf(pp, sizeof pp, "%s/plan.json", dump);
        if (fclose(pcm_out) || json_dump_file(plan, pp, JSON_INDENT(1)))
            return fprintf(stderr, "--dump: %s not written\n", pp), 1;
        json_decref(plan);
    }
    ct_asr_free(x.asr);
    for (size_t i = 0; i < nf; i++) ct_audio_free(audio[i]);
    return x.mismatches || formula_mismatch ? 3 : 0;
}
