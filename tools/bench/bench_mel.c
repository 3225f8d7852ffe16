/* bench_mel.c — speed of the log-mel frontend (asr/mel.h).
 *
 * Times ct_mel_compute_batch on synthetic 16 kHz audio (a chirp plus noise;
 * speed does not depend on the values) and prints the real-time factor:
 * seconds of audio per second of compute. Run it on one core as
 *   OMP_NUM_THREADS=1 build/bin/bench_mel [seconds=30] [batch=1] [reps=20] [dither=1]
 * It also times the plain reference path once per clip (--plain) for scale;
 * --isa N runs a narrower kernel than the CPU has (0 baseline, 1 AVX2).
 * Besides wall time it reports process CPU time per call: on a shared
 * machine the wall clock also counts time spent waiting for a core, CPU time
 * does not (with one thread the two agree on an idle machine).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/mel.h"
#include "core/fs.h"
#include "asr/mel_internal.h"
#include "asr/torch_rng.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int plain = 0;
    double secs = 30.0;
    int batch = 1, reps = 20, dither = 1, pos = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--plain")) {
            plain = 1;
            continue;
        }
        if (!strcmp(argv[i], "--isa") && i + 1 < argc) {
            ct_mel__set_isa(atoi(argv[++i]));
            continue;
        }
        switch (pos++) {
        case 0: secs = atof(argv[i]); break;
        case 1: batch = atoi(argv[i]); break;
        case 2: reps = atoi(argv[i]); break;
        case 3: dither = atoi(argv[i]); break;
        default: break;
        }
    }
    if (secs <= 0 || batch <= 0 || reps <= 0) {
        fprintf(stderr, "usage: bench_mel [seconds] [batch] [reps] [dither] [--plain]\n");
        return 2;
    }
    ct_mel *mel = NULL;
    ct_mel_options o = ct_mel_default_options();
    if (ct_mel_create(&o, &mel) != CT_OK) {
        fprintf(stderr, "bench_mel: %s\n", ct_last_error());
        return 1;
    }
    size_t n = (size_t)(secs * o.sample_rate);
    float **clips = calloc((size_t)batch, sizeof(float *));
    size_t *lens = calloc((size_t)batch, sizeof(size_t));
    for (int b = 0; b < batch; b++) {
        lens[b] = n - (size_t)b * 7; /* distinct lengths, distinct dither seeds */
        clips[b] = malloc(sizeof(float) * lens[b]);
        ct_torch_randn(1234 + (uint64_t)b, lens[b], CT_RANDN_TORCH_AVX2, clips[b]);
        for (size_t i = 0; i < lens[b]; i++) {
            double t = (double)i / o.sample_rate;
            clips[b][i] = 0.01f * clips[b][i] + (float)(0.3 * sin(2 * M_PI * (200 + 100 * t) * t));
        }
    }
    int T = (int)ct_mel_frames(mel, n);
    float *out = malloc(sizeof(float) * (size_t)batch * (size_t)T * (size_t)o.n_mels);
    double *times = calloc((size_t)reps, sizeof(double));
    double *cpus = calloc((size_t)reps, sizeof(double));
    if (ct_mel_compute_batch(mel, (const float *const *)clips, lens, batch, dither, out, T, NULL)) {
        fprintf(stderr, "bench_mel: %s\n", ct_last_error());
        return 1;
    }
    for (int r = 0; r < reps; r++) {
        double t0 = ct_now(), c0 = ct_cpu_now();
        ct_mel_compute_batch(mel, (const float *const *)clips, lens, batch, dither, out, T, NULL);
        times[r] = ct_now() - t0;
        cpus[r] = ct_cpu_now() - c0;
    }
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    qsort(cpus, (size_t)reps, sizeof(double), cmp_double);
    double med = times[reps / 2], cmed = cpus[reps / 2], audio = secs * batch;
    static const char *isa_names[3] = {"baseline", "AVX2", "AVX-512"};
    printf("mel fast (%s kernel): %d x %.1f s clips, dither %d, %d reps: wall median %.3f ms (%.0fx real time), "
           "wall min %.3f ms (%.0fx), CPU median %.3f ms (%.0fx)\n",
           isa_names[ct_mel__isa()], batch, secs, dither, reps, 1e3 * med, audio / med, 1e3 * times[0], audio / times[0],
           1e3 * cmed, audio / cmed);
    if (plain) {
        double t0 = ct_now(), c0 = ct_cpu_now();
        for (int b = 0; b < batch; b++) ct_mel_compute_reference(mel, clips[b], lens[b], dither, out, T);
        double t = ct_now() - t0, c = ct_cpu_now() - c0;
        printf("mel plain: wall %.3f s (%.1fx real time), CPU %.3f s (%.1fx)\n", t, audio / t, c, audio / c);
    }
    for (int b = 0; b < batch; b++) free(clips[b]);
    free(clips);
    free(lens);
    free(out);
    free(times);
    free(cpus);
    ct_mel_free(mel);
    return 0;
}
