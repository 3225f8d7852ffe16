/* bench_corpus.c — the product benchmark's corpus (issue 15): expands a seed
 * folder of short speech files (tools/device/make_corpus_seed.sh: espeak-ng
 * sentences) into --hours of speech-like audio, deterministically. Files of
 * --min-seconds to --max-seconds (log-uniform), each a run of utterances with
 * their own gain and tempo between pauses of every length (phrase gaps that
 * Silero bridges, sentence gaps it splits at, long silences), over a faint
 * noise floor; written through libsndfile as WAV, FLAC, MP3 (LAME) or Ogg
 * Opus, mono or stereo, 8-48 kHz, and listed in manifest.json.
 *
 * Same seed folder, seed and arguments: the same bytes, whatever --jobs.
 * libsndfile's one source of chance, the Ogg stream serial (from the clock),
 * is rewritten afterwards with the page checksums. Not made: m4a/AAC
 * (libsndfile has no AAC encoder, and the device build decodes through
 * libsndfile alone). Needs nothing the product's build does not: it runs on
 * the device from the carried libraries (tools/device/product_bench.sh). */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <omp.h>
#include <samplerate.h>
#include <sndfile.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SR 16000 /* the seed's and the master's rate */

/* ---- deterministic randomness (splitmix64) ---------------------------- */
typedef struct { uint64_t s; } rng;
static uint64_t next_u64(rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double u01(rng *r) { return (double)(next_u64(r) >> 11) * (1.0 / 9007199254740992.0); }
static double uni(rng *r, double a, double b) { return a + (b - a) * u01(r); }
static rng rng_for(uint64_t seed, uint64_t stream) {
    rng r = {seed * 0x2545f4914f6cdd1dull + stream};
    next_u64(&r);
    return r;
}

/* ---- the seed: every utterance as 16 kHz mono float ------------------- */
typedef struct { float *x; size_t n; char *name; } utt;

static int has_ext(const char *s, const char *e) {
    size_t a = strlen(s), b = strlen(e);
    return a > b && !strcmp(s + a - b, e);
}
static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int load_utt(const char *path, utt *u) {
    SF_INFO si = {0};
    SNDFILE *f = sf_open(path, SFM_READ, &si);
    if (!f) return fprintf(stderr, "%s: %s\n", path, sf_strerror(NULL)), 1;
    float *buf = malloc(sizeof(float) * (size_t)si.frames * (size_t)si.channels + 1);
    float *mono = malloc(sizeof(float) * (size_t)si.frames + 1);
    if (!buf || !mono) return fprintf(stderr, "%s: out of memory\n", path), 1;
    sf_count_t got = sf_readf_float(f, buf, si.frames);
    sf_close(f);
    for (sf_count_t i = 0; i < got; i++) {
        double s = 0;
        for (int c = 0; c < si.channels; c++) s += buf[i * si.channels + c];
        mono[i] = (float)(s / si.channels);
    }
    free(buf);
    u->x = mono, u->n = (size_t)got;
    if (si.samplerate != SR) { /* a seed at another rate: bring it to 16 kHz once */
        size_t m = (size_t)((double)got * SR / si.samplerate) + 16;
        float *y = malloc(sizeof(float) * m);
        SRC_DATA d = {.data_in = mono, .input_frames = got, .data_out = y, .output_frames = (long)m,
                      .src_ratio = (double)SR / si.samplerate};
        int e = y ? src_simple(&d, SRC_SINC_MEDIUM_QUALITY, 1) : 1;
        if (e) return fprintf(stderr, "%s: resampling: %s\n", path, y ? src_strerror(e) : "out of memory"), 1;
        free(mono);
        u->x = y, u->n = (size_t)d.output_frames_gen;
    }
    return u->n < 160 ? fprintf(stderr, "%s: shorter than 10 ms\n", path), 1 : 0;
}

/* ---- codecs ------------------------------------------------------------ */
typedef struct {
    const char *name, *ext;
    int format;
    int rates[6];
    double qlo, qhi; /* libsndfile compression levels drawn from (opus: (1 - level) x 256 kbit/s) */
} codec;
static const codec CODECS[] = {
    {"wav", "wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, {8000, 16000, 22050, 44100, 48000, 0}, 0, 0},
    {"flac", "flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, {8000, 16000, 32000, 44100, 48000, 0}, 0, 0},
    {"mp3", "mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III, {16000, 22050, 24000, 44100, 48000, 0}, 0.4, 0.9},
    {"opus", "opus", SF_FORMAT_OGG | SF_FORMAT_OPUS, {8000, 12000, 16000, 24000, 48000, 0}, 0.75, 0.92},
    {"vorbis", "ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS, {16000, 22050, 32000, 44100, 48000, 0}, 0.4, 0.9},
};
#define N_CODECS (int)(sizeof CODECS / sizeof *CODECS)

/* ---- Ogg: a fixed stream serial, page checksums recomputed ------------- */
static uint32_t crc_tab[256]; /* made once in main, before the workers */
static void ogg_crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t r = i << 24;
        for (int k = 0; k < 8; k++) r = r & 0x80000000u ? (r << 1) ^ 0x04c11db7u : r << 1;
        crc_tab[i] = r;
    }
}
static uint32_t ogg_crc(const unsigned char *p, size_t n) { /* Ogg's: polynomial 0x04c11db7, MSB first, init 0 */
    const uint32_t *tab = crc_tab;
    uint32_t c = 0;
    for (size_t i = 0; i < n; i++) c = (c << 8) ^ tab[((c >> 24) ^ p[i]) & 0xff];
    return c;
}

static int ogg_set_serial(const char *path, uint32_t serial) {
    FILE *f = fopen(path, "r+b");
    if (!f) return perror(path), 1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    unsigned char *b = malloc((size_t)n + 1);
    rewind(f);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) return fclose(f), fprintf(stderr, "%s: read\n", path), 1;
    long at = 0;
    while (at < n) {
        if (at + 27 > n || memcmp(b + at, "OggS", 4)) return fclose(f), fprintf(stderr, "%s: not an Ogg page at %ld\n", path, at), 1;
        int segs = b[at + 26];
        long len = 27 + segs;
        for (int i = 0; i < segs && at + 27 + i < n; i++) len += b[at + 27 + i];
        if (at + len > n) return fclose(f), fprintf(stderr, "%s: truncated page at %ld\n", path, at), 1;
        for (int i = 0; i < 4; i++) b[at + 14 + i] = (unsigned char)(serial >> (8 * i)), b[at + 22 + i] = 0;
        uint32_t c = ogg_crc(b + at, (size_t)len);
        for (int i = 0; i < 4; i++) b[at + 22 + i] = (unsigned char)(c >> (8 * i));
        at += len;
    }
    rewind(f);
    int bad = fwrite(b, 1, (size_t)n, f) != (size_t)n;
    bad |= fclose(f) != 0;
    free(b);
    return bad ? fprintf(stderr, "%s: write\n", path), 1 : 0;
}

/* ---- one file ------------------------------------------------------------ */
typedef struct {
    double seconds; /* planned */
    const codec *c;
    int rate, channels;
    double quality; /* libsndfile compression level for mp3/opus/vorbis */
    /* results */
    char name[64];
    long long frames;
    int utterances;
    double speech_seconds;
    int failed;
} plan;

/* The 16 kHz master: utterances (random choice, tempo 0.85-1.2 by
 * resampling, gain -14..+4 dB) between pauses, over noise at -62 dBFS. */
static float *make_master(const utt *u, int nu, size_t n, rng *r, plan *p) {
    float *m = malloc(sizeof(float) * (n ? n : 1));
    if (!m) return NULL;
    const double floor_amp = pow(10.0, -62.0 / 20.0);
    for (size_t i = 0; i < n; i++) m[i] = (float)(floor_amp * (u01(r) + u01(r) - 1.0));
    size_t pos = (size_t)(uni(r, 0.1, 1.5) * SR);
    while (pos < n) {
        const utt *x = &u[next_u64(r) % (uint64_t)nu];
        double tempo = uni(r, 0.85, 1.2), gain = pow(10.0, uni(r, -14.0, 4.0) / 20.0);
        size_t cap = (size_t)((double)x->n / tempo) + 64;
        float *y = malloc(sizeof(float) * cap);
        SRC_DATA d = {.data_in = x->x, .input_frames = (long)x->n, .data_out = y, .output_frames = (long)cap,
                      .src_ratio = 1.0 / tempo};
        if (!y || src_simple(&d, SRC_SINC_FASTEST, 1)) {
            free(y), free(m);
            return NULL;
        }
        size_t k = (size_t)d.output_frames_gen;
        if (k > n - pos) k = n - pos;
        for (size_t i = 0; i < k; i++) m[pos + i] += (float)(gain * y[i]);
        free(y);
        p->utterances++;
        p->speech_seconds += (double)k / SR;
        pos += k;
        /* the pause after it: phrase gaps under Silero's 300 ms (bridged, so
         * segments grow to tens of seconds), sentence gaps, turns, silences */
        double q = u01(r);
        double gap = q < 0.45 ? uni(r, 0.08, 0.28) : q < 0.75 ? uni(r, 0.3, 0.9) : q < 0.95 ? uni(r, 0.9, 2.5)
                                                                                         : uni(r, 3.0, 12.0);
        pos += (size_t)(gap * SR);
    }
    return m;
}

static int write_file(const char *dir, const float *m, size_t n, plan *p, uint32_t serial) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, p->name);
    SF_INFO si = {.samplerate = p->rate, .channels = p->channels, .format = p->c->format};
    SNDFILE *f = sf_open(path, SFM_WRITE, &si);
    if (!f) return fprintf(stderr, "%s: %s\n", path, sf_strerror(NULL)), 1;
    sf_command(f, SFC_SET_CLIPPING, NULL, SF_TRUE);
    if ((p->c->format & SF_FORMAT_SUBMASK) != SF_FORMAT_PCM_16) {
        double q = p->quality;
        sf_command(f, SFC_SET_COMPRESSION_LEVEL, &q, sizeof q);
    }
    enum { CH = 65536 };
    double ratio = (double)p->rate / SR;
    SRC_STATE *st = NULL;
    int err = 0;
    if (p->rate != SR && !(st = src_new(SRC_SINC_FASTEST, 1, &err))) return sf_close(f), 1;
    size_t ocap = (size_t)(CH * ratio) + 64;
    float *out = malloc(sizeof(float) * ocap), *inter = malloc(sizeof(float) * ocap * 2);
    float hist[7] = {0}; /* the right channel: the left, 7 samples late, -2.5 dB */
    int bad = !out || !inter;
    for (size_t at = 0; !bad && (at < n || st);) {
        size_t take = n - at < CH ? n - at : CH;
        long got;
        if (st) {
            SRC_DATA d = {.data_in = m + at, .input_frames = (long)take, .data_out = out, .output_frames = (long)ocap,
                          .src_ratio = ratio, .end_of_input = at + take >= n};
            if ((err = src_process(st, &d))) break;
            at += (size_t)d.input_frames_used;
            got = d.output_frames_gen;
            if (d.end_of_input && got == 0 && at >= n) {
                src_delete(st);
                st = NULL;
            }
        } else {
            memcpy(out, m + at, sizeof(float) * take);
            got = (long)take;
            at += take;
        }
        const float *w = out;
        if (p->channels == 2) {
            for (long i = 0; i < got; i++) {
                inter[2 * i] = out[i];
                inter[2 * i + 1] = 0.75f * hist[0];
                memmove(hist, hist + 1, sizeof hist - sizeof *hist);
                hist[6] = out[i];
            }
            w = inter;
        }
        if (got > 0 && sf_writef_float(f, w, got) != got) bad = 1;
        p->frames += got;
    }
    if (st) src_delete(st);
    free(out), free(inter);
    bad |= err != 0;
    if (sf_close(f)) bad = 1;
    if (!bad && (p->c->format & SF_FORMAT_TYPEMASK) == SF_FORMAT_OGG) bad = ogg_set_serial(path, serial);
    if (bad) fprintf(stderr, "%s: writing failed%s%s\n", path, err ? ": " : "", err ? src_strerror(err) : "");
    return bad;
}

static void usage(void) {
    fprintf(stderr, "usage: bench_corpus --seed-dir DIR --out DIR --hours H [--seed N] [--min-seconds S] "
                    "[--max-seconds S] [--codecs wav,flac,mp3,opus[,vorbis]] [--jobs N]\n");
}

int main(int argc, char **argv) {
    const char *seed_dir = NULL, *out = NULL, *codecs = "wav,flac,mp3,opus";
    double hours = 0, min_s = 10, max_s = 1800;
    unsigned long long seed = 1;
    int jobs = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage(), 2;
        if (!strcmp(a, "--seed-dir")) seed_dir = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--hours")) hours = atof(v);
        else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--min-seconds")) min_s = atof(v);
        else if (!strcmp(a, "--max-seconds")) max_s = atof(v);
        else if (!strcmp(a, "--codecs")) codecs = v;
        else if (!strcmp(a, "--jobs")) jobs = atoi(v);
        else return usage(), 2;
        i++;
    }
    if (!seed_dir || !out || !(hours > 0) || !(min_s >= 1) || !(max_s >= min_s) || hours > 1000)
        return usage(), fprintf(stderr, "need --seed-dir, --out, 0 < --hours <= 1000, 1 <= --min-seconds <= --max-seconds\n"), 2;
    const codec *use[N_CODECS];
    int nc = 0;
    for (const char *s = codecs; *s;) {
        size_t len = strcspn(s, ",");
        int k = 0;
        while (k < N_CODECS && !(strlen(CODECS[k].name) == len && !strncmp(CODECS[k].name, s, len))) k++;
        if (k == N_CODECS || nc == N_CODECS) return fprintf(stderr, "--codecs: unknown or repeated: %.*s\n", (int)len, s), 2;
        use[nc++] = &CODECS[k];
        s += len + (s[len] == ',');
    }
    if (!nc) return fprintf(stderr, "--codecs: empty\n"), 2;
    /* the seed, in name order */
    DIR *d = opendir(seed_dir);
    if (!d) return perror(seed_dir), 1;
    char **names = NULL;
    int nn = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.' && (has_ext(e->d_name, ".opus") || has_ext(e->d_name, ".ogg") ||
                                    has_ext(e->d_name, ".flac") || has_ext(e->d_name, ".wav"))) {
            names = realloc(names, sizeof *names * (size_t)(nn + 1));
            names[nn++] = strdup(e->d_name);
        }
    closedir(d);
    if (!nn) return fprintf(stderr, "%s: no .opus/.ogg/.flac/.wav files\n", seed_dir), 1;
    qsort(names, (size_t)nn, sizeof *names, by_name);
    utt *u = calloc((size_t)nn, sizeof *u);
    double seed_s = 0;
    for (int i = 0; i < nn; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", seed_dir, names[i]);
        if (load_utt(p, &u[i])) return 1;
        u[i].name = names[i];
        seed_s += (double)u[i].n / SR;
    }
    /* the plan: durations until the hours are reached, formats in turn */
    rng pr = rng_for(seed, 0);
    double target = hours * 3600.0, total = 0;
    plan *pl = NULL;
    int np = 0;
    while (total < target) {
        double s = exp(uni(&pr, log(min_s), log(max_s)));
        if (total + s > target) s = target - total < min_s ? min_s : target - total;
        pl = realloc(pl, sizeof *pl * (size_t)(np + 1));
        plan *p = &pl[np];
        memset(p, 0, sizeof *p);
        p->seconds = s;
        p->c = use[np % nc];
        int nr = 0;
        while (nr < 6 && p->c->rates[nr]) nr++;
        p->rate = p->c->rates[next_u64(&pr) % (uint64_t)nr];
        p->channels = u01(&pr) < 0.35 ? 2 : 1;
        p->quality = uni(&pr, p->c->qlo, p->c->qhi);
        snprintf(p->name, sizeof p->name, "f%04d.%s", np, p->c->ext);
        total += s;
        np++;
    }
    if (mkdir(out, 0777) && errno != EEXIST) return perror(out), 1;
    ogg_crc_init();
    if (jobs > 0) omp_set_num_threads(jobs);
    int failed = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : failed)
    for (int i = 0; i < np; i++) {
        plan *p = &pl[i];
        rng r = rng_for(seed, 1000003ull + (uint64_t)i);
        size_t n = (size_t)llround(p->seconds * SR);
        float *m = make_master(u, nn, n, &r, p);
        if (!m || write_file(out, m, n, p, (uint32_t)(next_u64(&r) >> 32))) p->failed = 1, failed++;
        free(m);
    }
    /* the manifest */
    json_t *j = json_object(), *files = json_array();
    double made = 0, speech = 0;
    for (int i = 0; i < np; i++) {
        const plan *p = &pl[i];
        json_t *f = json_object();
        json_object_set_new(f, "name", json_string(p->name));
        json_object_set_new(f, "codec", json_string(p->c->name));
        json_object_set_new(f, "container", json_string(p->c->format & SF_FORMAT_OGG ? "ogg" : p->c->ext));
        json_object_set_new(f, "sample_rate", json_integer(p->rate));
        json_object_set_new(f, "channels", json_integer(p->channels));
        json_object_set_new(f, "frames", json_integer(p->frames));
        json_object_set_new(f, "duration_seconds", json_real((double)p->frames / p->rate));
        json_object_set_new(f, "utterances", json_integer(p->utterances));
        json_object_set_new(f, "speech_seconds", json_real(p->speech_seconds));
        json_array_append_new(files, f);
        made += (double)p->frames / p->rate;
        speech += p->speech_seconds;
    }
    json_object_set_new(j, "generator", json_string("tools/bench/bench_corpus.c"));
    json_object_set_new(j, "seed", json_integer((json_int_t)seed));
    json_object_set_new(j, "hours", json_real(hours));
    json_object_set_new(j, "seed_utterances", json_integer(nn));
    json_object_set_new(j, "seed_seconds", json_real(seed_s));
    json_object_set_new(j, "total_seconds", json_real(made));
    json_object_set_new(j, "speech_seconds", json_real(speech));
    json_object_set_new(j, "files", files);
    char mp[4096];
    snprintf(mp, sizeof mp, "%s/manifest.json", out);
    if (json_dump_file(j, mp, JSON_INDENT(1)) || failed)
        return fprintf(stderr, "%d files failed%s\n", failed, failed ? "" : "; manifest not written"), 1;
    printf("%d files, %.1f s (%.2f h), speech %.1f s, from %d seed utterances (%.1f s) -> %s\n", np, made,
           made / 3600, speech, nn, seed_s, out);
    json_decref(j);
    for (int i = 0; i < nn; i++) free(u[i].x), free(u[i].name);
    free(u), free(names), free(pl);
    return 0;
}
