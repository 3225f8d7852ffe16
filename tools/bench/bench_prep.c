/* bench_prep.c — throughput of audio preparation (decode + Silero VAD) for a
 * folder of files: the sequential loop (ct_prep_file one file after another,
 * the same-run baseline) against the pool (src/prep) with 1, 2, ... workers.
 * Reports files/s, audio seconds per wall second (× real time) and the
 * process CPU time (user + system) of each run, best wall time of `repeats`.
 * The consumer frees each item at once, so this measures preparation alone.
 * Input: tools/bench/bench_prep_setup.sh DIR (20 × 60 s mp3/flac), or a
 * bench_corpus folder (wav/flac/opus/ogg, 8-48 kHz, up to 30 min).
 *   usage: bench_prep DIR silero_vad.onnx [repeats] [max_workers]
 *                     [--backend auto|ffmpeg|sndfile] [--resampler auto|fir|sinc]
 *                     [--split N] [--ab]
 * --split N: split helpers of the pool (-1 none, 0 automatic; prep.h).
 * --ab: instead of the worker sweep, the pool with max_workers workers in
 * two configurations alternated `repeats` times: A = libsamplerate, no
 * split helpers (the code before issue 15's preparation work); B = the
 * options given (default: FIR, automatic split). */
#include <dirent.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fs.h"
#include "prep/prep.h"
#include "vad/silero.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef struct {
    double wall, cpu, audio_s, decode_s, vad_s;
    int ok;
} run_result;

/* workers == 0: the sequential loop. */
static int run_once(char **paths, size_t n, const ct_prep_options *base, int workers, run_result *r) {
    memset(r, 0, sizeof *r);
    double c0 = ct_cpu_now(), t0 = ct_now();
    if (workers == 0) {
        for (size_t i = 0; i < n; i++) {
            ct_prep_item *it;
            if (ct_prep_file(paths[i], i, base, base->silero, &it) != CT_OK) return -1;
            if (it->status == CT_OK) r->ok++, r->audio_s += it->audio->duration;
            r->decode_s += it->decode_seconds;
            r->vad_s += it->vad_seconds;
            ct_prep_item_free(it);
        }
    } else {
        ct_prep_options o = *base;
        o.workers = workers;
        ct_prep *p;
        if (ct_prep_create((const char *const *)paths, n, &o, &p) != CT_OK) return -1;
        for (;;) {
            ct_prep_item *it;
            if (ct_prep_next(p, &it) != CT_OK) return -1;
            if (!it) break;
            if (it->status == CT_OK) r->ok++, r->audio_s += it->audio->duration;
            r->decode_s += it->decode_seconds;
            r->vad_s += it->vad_seconds;
            ct_prep_item_free(it);
        }
        ct_prep_free(p);
    }
    r->wall = ct_now() - t0;
    r->cpu = ct_cpu_now() - c0;
    return 0;
}

int main(int argc, char **argv) {
    ct_prep_options o = ct_prep_default_options();
    int ab = 0, npos = 0;
    const char *pos[4] = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ab")) {
            ab = 1;
        } else if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            if (ct_audio_backend_parse(argv[++i], &o.backend) != CT_OK) return 2;
        } else if (!strcmp(argv[i], "--resampler") && i + 1 < argc) {
            if (ct_audio_resampler_parse(argv[++i], &o.resampler) != CT_OK) return 2;
        } else if (!strcmp(argv[i], "--split") && i + 1 < argc) {
            o.split_threads = atoi(argv[++i]);
        } else if (npos < 4) {
            pos[npos++] = argv[i];
        } else {
            fprintf(stderr, "bench_prep: unexpected argument %s\n", argv[i]);
            return 2;
        }
    }
    if (npos < 2) {
        fprintf(stderr, "usage: bench_prep DIR silero_vad.onnx [repeats] [max_workers] [--backend B] "
                        "[--resampler R] [--split N] [--ab]\n");
        return 2;
    }
    const char *dir = pos[0], *onnx = pos[1];
    int reps = npos > 2 ? atoi(pos[2]) : 3;
    int maxw = npos > 3 ? atoi(pos[3]) : 2;
    if (reps < 1) reps = 1;
    if (maxw < 1) maxw = 1;
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "bench_prep: cannot open %s\n", dir);
        return 1;
    }
    char **paths = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *dot = strrchr(e->d_name, '.');
        static const char *const ext[] = {".mp3", ".flac", ".wav", ".opus", ".ogg", ".oga", ".m4a"};
        int want = 0;
        for (size_t k = 0; dot && k < sizeof ext / sizeof *ext; k++) want |= !strcasecmp(dot, ext[k]);
        if (!want) continue;
        char **np = realloc(paths, (n + 1) * sizeof *paths);
        if (!np) return 1;
        paths = np;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        paths[n] = malloc(len);
        snprintf(paths[n++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (!n) {
        fprintf(stderr, "bench_prep: no .mp3/.flac files in %s\n", dir);
        return 1;
    }
    qsort(paths, n, sizeof *paths, cmp_str);
    ct_silero *s;
    if (ct_silero_load(onnx, &s) != CT_OK) {
        fprintf(stderr, "bench_prep: %s\n", ct_last_error());
        return 1;
    }
    o.silero = s;
    char load[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(load, sizeof load, f)) snprintf(load, sizeof load, "?");
        fclose(f);
        load[strcspn(load, "\n")] = 0;
    }
    printf("files: %zu in %s; repeats %d (best wall); load average at start: %s\n\n", n, dir, reps, load);
    printf("| run | wall s | files/s | x real time | CPU s (user+sys) | CPU/wall | decode s (sum) | VAD s (sum) |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    if (ab) {
        ct_prep_options a = o;
        a.resampler = CT_AUDIO_RESAMPLER_SINC;
        a.split_threads = -1;
        for (int k = 0; k < reps; k++) {
            for (int c = 0; c < 2; c++) {
                run_result r;
                if (run_once(paths, n, c ? &o : &a, maxw, &r) != 0 || (size_t)r.ok != n) {
                    fprintf(stderr, "bench_prep: %s\n", ct_last_error());
                    return 1;
                }
                f = fopen("/proc/loadavg", "r");
                if (f) {
                    if (!fgets(load, sizeof load, f)) snprintf(load, sizeof load, "?");
                    fclose(f);
                    load[strcspn(load, "\n")] = 0;
                }
                printf("| %s rep %d, %d workers (load %s) | %.3f | %.2f | %.0f | %.3f | %.2f | %.3f | %.3f |\n",
                       c ? "B: --resampler/--split as given" : "A: sinc, no split", k + 1, maxw, load, r.wall,
                       n / r.wall, r.audio_s / r.wall, r.cpu, r.cpu / r.wall, r.decode_s, r.vad_s);
                fflush(stdout);
            }
        }
        maxw = -1; /* no sweep */
    }
    for (int w = 0; w <= maxw; w++) {
        run_result best = {.wall = 1e30};
        for (int k = 0; k < reps; k++) {
            run_result r;
            if (run_once(paths, n, &o, w, &r) != 0) {
                fprintf(stderr, "bench_prep: %s\n", ct_last_error());
                return 1;
            }
            if ((size_t)r.ok != n) {
                fprintf(stderr, "bench_prep: only %d of %zu files prepared\n", r.ok, n);
                return 1;
            }
            if (r.wall < best.wall) best = r;
        }
        char name[32];
        if (w == 0) snprintf(name, sizeof name, "sequential (baseline)");
        else snprintf(name, sizeof name, "pool, %d worker%s", w, w == 1 ? "" : "s");
        printf("| %s | %.3f | %.2f | %.0f | %.3f | %.2f | %.3f | %.3f |\n", name, best.wall, n / best.wall,
               best.audio_s / best.wall, best.cpu, best.cpu / best.wall, best.decode_s, best.vad_s);
        fflush(stdout);
    }
    ct_silero_free(s);
    for (size_t i = 0; i < n; i++) free(paths[i]);
    free(paths);
    return 0;
}
