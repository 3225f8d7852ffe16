/* doctor.c — installation checks 1-6 of cohere-transcribe-doctor (package
 * version, Silero weights file and smoke run, libraries / CPU / CUDA, word
 * alignment, audio decoders) and the order they run in. Results go to the
 * caller's callback; nothing is printed. The model checks (7) are in
 * doctor_model.c. */
#include <dlfcn.h>
#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cblas.h>
#include <curl/curl.h>
#include <gnu/libc-version.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <utf8proc.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "align/text.h"
#include "align/viterbi.h"
#include "asr/mel_internal.h"
#include "audio/audio.h"
#include "compute/cpu/cpu_state.h"
#include "compute/backend.h"
#include "core/fs.h"
#include "model/digest.h"
#include "model/resolve.h"
#include "pipeline/doctor.h"
#include "pipeline/doctor_internal.h"
#include "vad/silero.h"

void ct_doctor_say(ct_doctor_report_fn fn, void *user, ct_doctor_level lv, const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fn(user, lv, msg);
}
#define SAY ct_doctor_say

void ct_doctor_default_options(ct_doctor_options *o) { memset(o, 0, sizeof *o); }

int ct_doctor_model_access_wanted(const ct_doctor_options *o) {
    return o->model_access || (o->model && strcmp(o->model, CT_DEFAULT_MODEL) != 0) || o->model_revision ||
           o->adapter || o->adapter_revision;
}

/* The folder of the running executable, no trailing '/' (0: unknown). */
static int exe_dir(char *buf, size_t cap) {
    char p[4096];
    ssize_t n = readlink("/proc/self/exe", p, sizeof p - 1);
    if (n <= 0) return 0;
    p[n] = 0;
    char *slash = strrchr(p, '/');
    if (!slash || slash == p) return 0;
    *slash = 0;
    return (size_t)snprintf(buf, cap, "%s", p) < cap;
}

/* ---- 1. package metadata -------------------------------------------------- */

/* The Version: of an installed pkg-config file beside the executable's
 * prefix (<prefix>/lib*, lib/<multiarch>, or the configured libdir). */
static int installed_version(char *ver, size_t cap, char *where, size_t wcap) {
    char dir[4096];
    if (!exe_dir(dir, sizeof dir)) return 0;
    const char *pats[] = {"%s/../lib*/pkgconfig/cohere[-_]transcribe.pc", "%s/../lib/*/pkgconfig/cohere[-_]transcribe.pc"};
    int found = 0;
    for (size_t i = 0; i < sizeof pats / sizeof *pats && !found; i++) {
        char pat[4200];
        snprintf(pat, sizeof pat, pats[i], dir);
        glob_t g;
        if (glob(pat, 0, NULL, &g) != 0) continue;
        for (size_t k = 0; k < g.gl_pathc && !found; k++) {
            FILE *f = fopen(g.gl_pathv[k], "r");
            if (!f) continue;
            char line[512];
            while (fgets(line, sizeof line, f)) {
                if (strncmp(line, "Version:", 8) != 0) continue;
                char *v = line + 8;
                while (*v == ' ' || *v == '\t') v++;
                v[strcspn(v, "\r\n")] = 0;
                snprintf(ver, cap, "%s", v);
                snprintf(where, wcap, "%s", g.gl_pathv[k]);
                found = 1;
                break;
            }
            fclose(f);
        }
        globfree(&g);
    }
    return found;
}

void ct_doctor_check_package(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user) {
    char ver[128], where[4096];
    const char *rt = ct_version();
    if (!installed_version(ver, sizeof ver, where, sizeof where))
        SAY(fn, user, CT_DOCTOR_WARN, "package metadata is unavailable; running from a source checkout");
    else if (strcmp(ver, rt) == 0)
        SAY(fn, user, CT_DOCTOR_OK, "package metadata version: %s", ver);
    else
        SAY(fn, user, CT_DOCTOR_FAIL, "package metadata is %s, runtime is %s", ver, rt);
    /* a shared library older or newer than the header the program was built with */
    if (o->built_version && strcmp(o->built_version, rt) != 0)
        SAY(fn, user, CT_DOCTOR_FAIL, "the program was built against cohere-transcribe %s, runtime is %s",
            o->built_version, rt);
}

/* ---- 2. the Silero weights file ------------------------------------------- */

/* Hub-looking spec ("owner/name[@rev]") rather than a path. */
static int hub_like(const char *s) {
    if (s[0] == '/' || s[0] == '.' || s[0] == '~') return 0;
    char repo[256];
    size_t n = strcspn(s, "@");
    if (n == 0 || n >= sizeof repo) return 0;
    snprintf(repo, sizeof repo, "%.*s", (int)n, s);
    int ok = strchr(repo, '/') && ct_hub_validate_repo_id(repo) == CT_OK;
    ct_error_clear();
    return ok;
}

ct_status ct_doctor_silero_path(const ct_doctor_options *o, char *buf, size_t cap, const char **from) {
    const char *spec = o->vad_weights;
    *from = "--vad-weights";
    if (!spec || !*spec) {
        spec = getenv(CT_SILERO_WEIGHTS_ENV);
        *from = "$" CT_SILERO_WEIGHTS_ENV;
    }
    if (!spec || !*spec) {
        spec = getenv(CT_SILERO_WEIGHTS_ENV_ALT);
        *from = "$" CT_SILERO_WEIGHTS_ENV_ALT;
    }
    if (!spec || !*spec) {
        *from = "found by the default search";
        return ct_silero_default_path(buf, cap);
    }
    if (ct_fs_is_dir(spec)) return ct_path_join(buf, cap, spec, CT_SILERO_WEIGHTS_FILE);
    if (ct_fs_is_file(spec) || !hub_like(spec)) {
        if ((size_t)snprintf(buf, cap, "%s", spec) >= cap) return ct_fail(CT_ERR_LIMIT, "%s: path too long", spec);
        return CT_OK;
    }
    /* a Hub repo hosting the file: fetched into the shared cache (and its
     * sha256 refused there when it is not v6.2) */
    char *path;
    CT_TRY(ct_vad_weights_resolve(spec, o->hub, &path));
    int fits = (size_t)snprintf(buf, cap, "%s", path) < cap;
    free(path);
    return fits ? CT_OK : ct_fail(CT_ERR_LIMIT, "%s: path too long", spec);
}

void ct_doctor_check_silero_asset(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user) {
    char path[4096];
    const char *from;
    ct_status st = ct_doctor_silero_path(o, path, sizeof path, &from);
    if (st == CT_ERR_NOT_FOUND && !strcmp(from, "found by the default search")) {
        SAY(fn, user, CT_DOCTOR_FAIL, "missing Silero ONNX asset: %s", ct_last_error());
        return;
    }
    if (st != CT_OK) {
        SAY(fn, user, CT_DOCTOR_FAIL, "cannot validate packaged assets: %s: %s", ct_status_str(st), ct_last_error());
        return;
    }
    if (!ct_fs_is_file(path)) {
        SAY(fn, user, CT_DOCTOR_FAIL, "missing Silero ONNX asset: %s", path);
        return;
    }
    SAY(fn, user, CT_DOCTOR_OK, "Silero ONNX asset: %s (%s)", path, from);
    char hex[65];
    st = ct_file_sha256(path, hex);
    if (st != CT_OK)
        SAY(fn, user, CT_DOCTOR_FAIL, "cannot validate packaged assets: %s: %s", ct_status_str(st), ct_last_error());
    else if (strcmp(hex, CT_SILERO_SHA256_V62) == 0)
        SAY(fn, user, CT_DOCTOR_OK, "Silero ONNX asset integrity: %s", hex);
    else
        SAY(fn, user, CT_DOCTOR_FAIL, "Silero ONNX checksum mismatch: expected %s, found %s", CT_SILERO_SHA256_V62,
            hex);
}

/* ---- 3. common runtime ------------------------------------------------------ */

const char *ct_doctor_auto_device(int cuda_usable) { return cuda_usable ? "cuda" : "cpu"; }

const char *ct_doctor_auto_dtype(const char *device) {
    if (strcmp(device, "cuda") == 0) return "bf16";
    const char *why;
    return ct_cpu_auto_dtype(&why) == CT_DTYPE_BF16 ? "bf16" : "fp32";
}

static void cpu_model(char *buf, size_t cap) {
    snprintf(buf, cap, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        char *v = strchr(line, ':');
        if (!v) break;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\r\n")] = 0;
        snprintf(buf, cap, "%s", v);
        break;
    }
    fclose(f);
}

static void report_cpu(ct_doctor_report_fn fn, void *user) {
    char model[256];
    cpu_model(model, sizeof model);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char *core = openblas_get_corename();
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2"), fma = __builtin_cpu_supports("fma");
    int avx512 = __builtin_cpu_supports("avx512f");
    int bf16 = __builtin_cpu_supports("avx512bf16"), vnni = __builtin_cpu_supports("avx512vnni");
    SAY(fn, user, CT_DOCTOR_OK, "CPU: %s, %ld cores online; AVX2 %s, FMA %s, AVX-512F %s, AVX-512 BF16 %s, AVX-512 VNNI %s",
        model, cores, avx2 ? "yes" : "no", fma ? "yes" : "no", avx512 ? "yes" : "no", bf16 ? "yes" : "no",
        vnni ? "yes" : "no");
    static const char *const mel[] = {"baseline", "AVX2", "AVX-512"};
    int isa = ct_mel__isa();
    char plan[400];
    ct_cpu_dispatch_plan(plan, sizeof plan);
    SAY(fn, user, CT_DOCTOR_OK, "CPU kernels: mel spectrogram %s, dither RNG %s, matrix products OpenBLAS (%s core)%s; %s",
        mel[isa >= 0 && isa <= 2 ? isa : 0], avx2 && fma ? "AVX2+FMA" : "scalar", core ? core : "unknown",
        ct_dnnl_built() ? " and oneDNN" : "", plan);
#else
    SAY(fn, user, CT_DOCTOR_OK, "CPU: %s, %ld cores online (not x86-64: portable kernels)", model, cores);
    SAY(fn, user, CT_DOCTOR_OK, "CPU kernels: portable C, matrix products OpenBLAS (%s core)", core ? core : "unknown");
#endif
}

void ct_doctor_check_runtime(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user) {
    (void)o;
#if defined(__clang__)
    const char *cc = "clang " __clang_version__;
#elif defined(__GNUC__)
    const char *cc = "GCC " __VERSION__;
#else
    const char *cc = "an unknown compiler";
#endif
    SAY(fn, user, CT_DOCTOR_OK, "C runtime: glibc %s, built with %s", gnu_get_libc_version(), cc);
    int omp_threads = 1;
#ifdef _OPENMP
    omp_threads = omp_get_max_threads();
#endif
    SAY(fn, user, CT_DOCTOR_OK, "numeric runtime: %s; %d OpenMP threads", openblas_get_config(), omp_threads);
    char wait[256];
    SAY(fn, user, CT_DOCTOR_OK, "CPU wait policy: %s", ct_cpu_wait_describe(wait, sizeof wait));
    char ff[256], sf[256];
    SAY(fn, user, CT_DOCTOR_OK, "audio libraries: %s; %s", ct_audio_ffmpeg_describe(ff, sizeof ff),
        ct_audio_sndfile_describe(sf, sizeof sf));
    const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
    SAY(fn, user, CT_DOCTOR_OK, "support libraries: jansson %s, utf8proc %s, %s, libcurl %s (%s)", jansson_version_str(),
        utf8proc_version(), OpenSSL_version(OPENSSL_VERSION), cv && cv->version ? cv->version : "?",
        cv && cv->ssl_version ? cv->ssl_version : "no TLS");
    /* where the engine's code lives: the shared library, or this program when linked statically */
    Dl_info di;
    const char *lib = dladdr((void *)ct_version, &di) && di.dli_fname ? di.dli_fname : NULL;
    char *real = lib ? realpath(lib, NULL) : NULL;
    SAY(fn, user, CT_DOCTOR_OK, "native Cohere ASR runtime: %s (cohere-transcribe %s)",
        real ? real : lib ? lib : "(unknown location)", ct_version());
    free(real);
    report_cpu(fn, user);

    const char *why = "";
    int usable = ct_backend_available("cuda", &why);
    int compiled = usable || strcmp(why, "built without CUDA");
    if (!compiled)
        SAY(fn, user, CT_DOCTOR_OK, "CUDA: not compiled into this build (the cuda backend needs a build with nvcc)");
    else if (!usable)
        SAY(fn, user, CT_DOCTOR_OK, "CUDA: compiled in; CUDA devices: none found (%s)", why && *why ? why : "no device");
    else
        SAY(fn, user, CT_DOCTOR_OK, "CUDA: compiled in; CUDA device 0 is usable (compute capability 9.0 or newer)");
    const char *dev = ct_doctor_auto_device(usable);
    SAY(fn, user, CT_DOCTOR_OK, "native inference devices: cpu%s; auto resolves to %s", usable ? ", cuda" : "", dev);
    SAY(fn, user, CT_DOCTOR_OK, "automatic settings: device auto resolves to %s, dtype auto to %s", dev,
        ct_doctor_auto_dtype(dev));
    if (!strcmp(dev, "cpu")) { /* ours: why, since the original always runs fp32 on the CPU */
        const char *because;
        ct_dtype dt = ct_cpu_auto_dtype(&because);
        SAY(fn, user, CT_DOCTOR_OK, "dtype auto on the CPU: %s, because %s", dt == CT_DTYPE_BF16 ? "bf16" : "fp32",
            because);
    }
    if (usable)
        SAY(fn, user, CT_DOCTOR_OK, "accelerator: CUDA available through native runtime; BF16 operations supported");
    else
        SAY(fn, user, CT_DOCTOR_WARN, "accelerator: CPU only; the 2B model will be substantially slower");
}

/* ---- 4. Silero smoke ---------------------------------------------------------- */

void ct_doctor_check_silero_smoke(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user) {
    char path[4096];
    const char *from;
    ct_silero *s = NULL;
    ct_status st = ct_doctor_silero_path(o, path, sizeof path, &from);
    if (st == CT_OK) st = ct_silero_load(path, &s);
    if (st != CT_OK) {
        SAY(fn, user, CT_DOCTOR_FAIL, "Silero ONNX smoke: %s: %s", ct_status_str(st), ct_last_error());
        return;
    }
    enum { N = 1024 };
    static const float zeros[N];
    const float *audio[1] = {zeros};
    size_t n[1] = {N};
    float p[2] = {NAN, NAN}, ref[2] = {NAN, NAN};
    float *probs[1] = {p};
    size_t frames = ct_silero_frame_count(N);
    st = frames == 2 ? ct_silero_probs_batch(s, audio, n, 1, probs) : ct_fail(CT_ERR_INTERNAL, "frame count %zu", frames);
    if (st == CT_OK) st = ct_silero_probs_ref(s, zeros, N, ref);
    ct_silero_free(s);
    if (st != CT_OK) {
        SAY(fn, user, CT_DOCTOR_FAIL, "Silero ONNX smoke: %s: %s", ct_status_str(st), ct_last_error());
        return;
    }
    int valid = 1;
    for (int i = 0; i < 2; i++) valid &= isfinite(p[i]) && p[i] >= 0.0f && p[i] <= 1.0f;
    if (!valid) {
        SAY(fn, user, CT_DOCTOR_FAIL, "Silero ONNX smoke returned invalid probabilities: [%.9g, %.9g]", p[0], p[1]);
        return;
    }
    /* the batched kernels against the direct-loop definition of the network */
    double d = fmax(fabs((double)p[0] - ref[0]), fabs((double)p[1] - ref[1]));
    if (!(d <= 1e-4))
        SAY(fn, user, CT_DOCTOR_FAIL, "Silero ONNX smoke: batched and reference paths differ by %.3g ([%.9g, %.9g] vs [%.9g, %.9g])",
            d, p[0], p[1], ref[0], ref[1]);
    else
        SAY(fn, user, CT_DOCTOR_OK, "Silero ONNX smoke: 2 finite probability frames");
}

/* ---- 5. word alignment ------------------------------------------------------- */

/* PRODUCT-DETAILS §11 step 5: the CTC smoke (emissions [[4,0],[0,4]], target
 * [1], blank 0 must give the path [0,1]) and the romanisation smoke ("مرحبا
 * بكم في العالم" must give the §9.3 tokens), both through src/align. */
static int romanization_smoke(char *why, size_t cap) {
    static const char *const words[4] = {"مرحبا", "بكم", "في", "العالم"};
    static const char *const want[4] = {"m r h b a", "b k m", "f y", "a l ' a l m"};
    for (int i = 0; i < 4; i++) {
        char *got = NULL;
        if (ct_align_romanize(words[i], strlen(words[i]), CT_ALIGN_LANG_ARA, &got) != CT_OK) {
            snprintf(why, cap, "romanize(%s): %s", words[i], ct_last_error());
            return 0;
        }
        int same = strcmp(got, want[i]) == 0;
        if (!same) snprintf(why, cap, "romanize(%s) gave \"%s\", expected \"%s\"", words[i], got, want[i]);
        free(got);
        if (!same) return 0;
    }
    return 1;
}

void ct_doctor_check_word_alignment(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user) {
    (void)o;
    const float logp[4] = {4, 0, 0, 4};
    const int32_t target[1] = {1};
    int32_t path[2] = {-1, -1};
    char why[512] = "";
    ct_status s = ct_ctc_forced_align(path, logp, 2, 2, target, 1, 0);
    if (s != CT_OK || path[0] != 0 || path[1] != 1) {
        SAY(fn, user, CT_DOCTOR_FAIL, "word alignment: CTC smoke gave %s (expected the path [0, 1])",
            s != CT_OK ? ct_last_error() : "another path");
        return;
    }
    if (!romanization_smoke(why, sizeof why)) {
        SAY(fn, user, CT_DOCTOR_FAIL, "word alignment: romanization smoke: %s", why);
        return;
    }
    SAY(fn, user, CT_DOCTOR_OK, "word alignment: native MMS CTC Viterbi and Arabic romanization smokes execute");
    SAY(fn, user, CT_DOCTOR_OK,
        "word aligner: %s@%s (CC-BY-NC-4.0: non-commercial use only), float32 on the CPU, bounded per-segment "
        "uniform fallback",
        CT_DEFAULT_ALIGNER, CT_DEFAULT_ALIGNER_COMMIT);
}

/* ---- 6. audio decoders ------------------------------------------------------- */

void ct_doctor_audio_verdict(const char *backend, int ffmpeg_ok, const char *ffmpeg_diag, int sndfile_ok,
                             const char *sndfile_diag, ct_doctor_report_fn fn, void *user) {
    char ff[256], sf[256];
    ct_audio_ffmpeg_describe(ff, sizeof ff);
    ct_audio_sndfile_describe(sf, sizeof sf);
    if (!backend) backend = "auto";
    int is_auto = !strcmp(backend, "auto"), librosa = !strcmp(backend, "librosa");
    if (!strcmp(backend, "sndfile")) {
        if (sndfile_ok)
            SAY(fn, user, CT_DOCTOR_OK, "native libsndfile decoder: %s", sf);
        else
            SAY(fn, user, CT_DOCTOR_FAIL, "native libsndfile decoder unavailable: %s", sndfile_diag);
        return;
    }
    if (!is_auto && !librosa && strcmp(backend, "ffmpeg") != 0 && strcmp(backend, "torchcodec") != 0) {
        SAY(fn, user, CT_DOCTOR_FAIL, "audio decoder configuration: unsupported audio backend: %s", backend);
        return;
    }
    const char *label = librosa ? "librosa compatibility fallback" : "native audio decoder fallback";
    if (ffmpeg_ok) {
        SAY(fn, user, CT_DOCTOR_OK, "native FFmpeg decoder: %s", ff);
        if (librosa || !strcmp(backend, "torchcodec"))
            SAY(fn, user, CT_DOCTOR_WARN, "%s compatibility mode uses FFmpeg through the native C ABI", backend);
        /* auto (and librosa = auto) hand files FFmpeg cannot open to libsndfile */
        if (is_auto || librosa) {
            if (sndfile_ok)
                SAY(fn, user, CT_DOCTOR_OK, "%s: libsndfile ABI (%s)", label, sf);
            else
                SAY(fn, user, CT_DOCTOR_WARN, "%s unavailable: %s", label, sndfile_diag);
        }
    } else if ((is_auto || librosa) && sndfile_ok) {
        SAY(fn, user, CT_DOCTOR_OK, "%s: libsndfile ABI (%s)", label, sf);
        SAY(fn, user, CT_DOCTOR_WARN, "native FFmpeg decoder unavailable: %s", ffmpeg_diag);
    } else {
        SAY(fn, user, CT_DOCTOR_FAIL, "native FFmpeg decoder unavailable: %s", ffmpeg_diag);
    }
}

static void put_le(unsigned char *p, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Decode a generated 0.1 s 16 kHz 16-bit WAV tone with one library: 1 when
 * the samples come back as written, else 0 with the reason in diag. */
static int decode_probe(ct_audio_backend b, char *diag, size_t cap) {
    enum { RATE = 16000, N = 1600 };
    static unsigned char wav[44 + 2 * N];
    memcpy(wav, "RIFF", 4);
    put_le(wav + 4, 36 + 2 * N, 4);
    memcpy(wav + 8, "WAVEfmt ", 8);
    put_le(wav + 16, 16, 4);
    put_le(wav + 20, 1, 2);        /* PCM */
    put_le(wav + 22, 1, 2);        /* mono */
    put_le(wav + 24, RATE, 4);
    put_le(wav + 28, RATE * 2, 4); /* bytes per second */
    put_le(wav + 32, 2, 2);
    put_le(wav + 34, 16, 2);
    memcpy(wav + 36, "data", 4);
    put_le(wav + 40, 2 * N, 4);
    for (int i = 0; i < N; i++) /* a 500 Hz square-ish tone: exact in 16 bits */
        put_le(wav + 44 + 2 * i, (uint16_t)(int16_t)((i / 16) % 2 ? 8192 : -8192), 2);
    ct_audio_options opt = ct_audio_default_options();
    opt.backend = b;
    ct_audio *a = NULL;
    ct_status st = ct_audio_decode_memory(wav, sizeof wav, "doctor-probe.wav", &opt, &a);
    if (st != CT_OK) {
        snprintf(diag, cap, "%s: %s", ct_status_str(st), ct_last_error());
        return 0;
    }
    int ok = a->n == N;
    for (size_t i = 0; ok && i < a->n; i++) ok = a->samples[i] == ((i / 16) % 2 ? 0.25f : -0.25f);
    if (!ok) snprintf(diag, cap, "the probe WAV decoded to %zu samples, not the %d written", a->n, N);
    ct_audio_free(a);
    return ok;
}

void ct_doctor_check_audio(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user) {
    char fd[1024] = "", sd[1024] = "";
    int ff = decode_probe(CT_AUDIO_BACKEND_FFMPEG, fd, sizeof fd);
    int sf = decode_probe(CT_AUDIO_BACKEND_SNDFILE, sd, sizeof sd);
    ct_doctor_audio_verdict(o->audio_backend, ff, fd, sf, sd, fn, user);
}

/* ---- all of them ----------------------------------------------------------- */

void ct_doctor_run(const ct_doctor_options *o, ct_doctor_report_fn fn, void *user) {
    ct_doctor_check_package(o, fn, user);
    ct_doctor_check_silero_asset(o, fn, user);
    ct_doctor_check_runtime(o, fn, user);
    ct_doctor_check_silero_smoke(o, fn, user);
    if (o->word_mode) ct_doctor_check_word_alignment(o, fn, user);
    ct_doctor_check_audio(o, fn, user);
    if (ct_doctor_model_access_wanted(o)) ct_doctor_check_model(o, fn, user);
}
