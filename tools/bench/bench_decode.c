/* bench_decode.c — decode speed of ct_audio_decode, one thread, in multiples
 * of real time (audio seconds / wall seconds), per format and backend, with
 * the ffmpeg CLI decoding the same file to f32le 16 kHz mono (-threads 1) as
 * the baseline measured in the same run. Input: the files made by
 * tools/bench/bench_decode_setup.sh DIR (10 minutes of speech).
 *   usage: bench_decode DIR [repeats]      (best of `repeats`, default 3) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio/audio.h"
#include "core/fs.h"

static double time_ours(const char *path, ct_audio_backend b, int reps, double *audio_s) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        ct_audio_options o = ct_audio_default_options();
        o.backend = b;
        ct_audio *a;
        double t = ct_now();
        ct_status s = ct_audio_decode(path, &o, &a);
        t = ct_now() - t;
        if (s != CT_OK) {
            fprintf(stderr, "bench_decode: %s\n", ct_last_error());
            return -1;
        }
        *audio_s = a->duration;
        ct_audio_free(a);
        if (t < best) best = t;
    }
    return best;
}

static double time_cli(const char *path, int reps) {
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -hide_banner -loglevel error -threads 1 -filter_threads 1 -i '%s' "
             "-ac 1 -ar 16000 -f f32le -y /dev/null",
             path);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t = ct_now();
        if (system(cmd) != 0) return -1;
        t = ct_now() - t;
        if (t < best) best = t;
    }
    return best;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_decode DIR [repeats]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    if (reps < 1) reps = 1;
    static const struct { const char *file; int sndfile; } files[] = {
        {"bench.wav", 1}, {"bench_44k_stereo.wav", 1}, {"bench.flac", 1},
        {"bench.mp3", 0}, {"bench.opus", 1},           {"bench.m4a", 0}};
    printf("| file | audio s | ffmpeg backend x RT | libsndfile backend x RT | ffmpeg CLI x RT (baseline) |\n");
    printf("|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[4096];
        if (ct_path_join(path, sizeof path, argv[1], files[i].file) != CT_OK) {
            fprintf(stderr, "bench_decode: %s\n", ct_last_error());
            return 1;
        }
        double audio = 0, sf_audio = 0;
        double t_ff = time_ours(path, CT_AUDIO_BACKEND_FFMPEG, reps, &audio);
        double t_sf = files[i].sndfile ? time_ours(path, CT_AUDIO_BACKEND_SNDFILE, reps, &sf_audio) : -1;
        double t_cli = time_cli(path, reps);
        if (t_ff < 0) return 1;
        char sf[32] = "n/a (MPEG/AAC)", cli[32] = "failed";
        if (t_sf > 0) snprintf(sf, sizeof sf, "%.0f", sf_audio / t_sf);
        if (t_cli > 0) snprintf(cli, sizeof cli, "%.0f", audio / t_cli);
        printf("| %s | %.1f | %.0f | %s | %s |\n", files[i].file, audio, audio / t_ff, sf, cli);
        fflush(stdout);
    }
    return 0;
}
