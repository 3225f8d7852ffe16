/* bench_vad.c — throughput of the native Silero VAD (probabilities only) on
 * one core: OpenBLAS is held to one thread. Reads a 16 kHz mono file with
 * libsndfile and runs it as `batch` files advancing together, `reps` times.
 *   bench_vad WEIGHTS AUDIO [batch=8] [reps=3]
 * Prints seconds of audio per second of wall time and per second of this
 * process's CPU time (× real time; CPU time is the per-core figure that
 * stays meaningful on a shared, loaded machine). The same-run
 * baseline is tools/bench/bench_vad_ort.py (ONNX Runtime, one thread).
 */
#include <cblas.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/fs.h"
#include "vad/silero.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s WEIGHTS AUDIO [batch] [reps]\n", argv[0]);
        return 2;
    }
    int batch = argc > 3 ? atoi(argv[3]) : 8, reps = argc > 4 ? atoi(argv[4]) : 3;
    if (batch < 1 || reps < 1) return 2;
    openblas_set_num_threads(1);
    ct_silero *s;
    if (ct_silero_load(argv[1], &s) != CT_OK) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 1;
    }
    SF_INFO info = {0};
    SNDFILE *f = sf_open(argv[2], SFM_READ, &info);
    if (!f || info.channels != 1 || info.samplerate != 16000) {
        fprintf(stderr, "%s: need a 16 kHz mono file\n", argv[2]);
        return 1;
    }
    size_t n = (size_t)info.frames;
    float *a = malloc(n * sizeof(float));
    if (!a || sf_readf_float(f, a, info.frames) != info.frames) return 1;
    sf_close(f);
    const float **clips = malloc((size_t)batch * sizeof *clips);
    size_t *lens = malloc((size_t)batch * sizeof *lens);
    float **probs = malloc((size_t)batch * sizeof *probs);
    for (int b = 0; b < batch; b++) {
        clips[b] = a;
        lens[b] = n;
        probs[b] = malloc(ct_silero_frame_count(n) * sizeof(float));
    }
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; r < reps; r++) {
        double c0 = ct_cpu_now(), t0 = ct_now();
        if (ct_silero_probs_batch(s, clips, lens, batch, probs) != CT_OK) {
            fprintf(stderr, "%s\n", ct_last_error());
            return 1;
        }
        double t = ct_now() - t0, cpu = ct_cpu_now() - c0;
        if (t < best) best = t;
        if (cpu < best_cpu) best_cpu = cpu;
    }
    double audio_s = (double)n * batch / 16000.0;
    printf("native silero: batch %d, %.1f s of audio: wall %.3f s = %.0fx real time, CPU %.3f s = %.0fx real "
           "time per core (best of %d)\n",
           batch, audio_s, best, audio_s / best, best_cpu, audio_s / best_cpu, reps);
    for (int b = 0; b < batch; b++) free(probs[b]);
    free(probs);
    free(lens);
    free(clips);
    free(a);
    ct_silero_free(s);
    return 0;
}
