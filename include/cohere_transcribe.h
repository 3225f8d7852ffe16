/* cohere_transcribe.h — the public C API of cohere-transcribe.
 *
 * This header is the contract: anything not declared here is internal and may
 * change. Every function that can fail returns a ct_status; on failure a
 * human-readable message describing the cause is available from
 * ct_last_error() on the same thread until that thread's next failing call.
 * The library never calls exit() or abort() on bad input and never prints to
 * stdout; diagnostics go through the log callback (default: stderr).
 *
 * Lifecycles: every object has a constructor that writes the handle through an
 * OUT parameter and returns a status, and a _free() function; _free(NULL) is
 * a no-op.
 *
 * The transcriber (below the logging section) is the product: options with a
 * defaults function, an opaque reusable handle, runs over paths with
 * per-file results read through accessors, run statistics, a progress
 * callback and cancellation. A minimal use (examples/transcribe.c):
 *
 *     ct_transcriber_options o = ct_transcriber_default_options();
 *     o.language = "en";
 *     ct_transcriber *t;
 *     if (ct_transcriber_create(&o, &t) != CT_OK) { puts(ct_last_error()); ... }
 *     const char *paths[] = {"talk.mp3"};
 *     ct_run *run;
 *     if (ct_transcriber_run(t, paths, 1, &run) == CT_OK)
 *         puts(ct_file_text(ct_run_file(run, 0)));
 *     ct_run_free(run);
 *     ct_transcriber_free(t);
 */
#ifndef COHERE_TRANSCRIBE_H
#define COHERE_TRANSCRIBE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CT_API __attribute__((visibility("default")))
#else
#define CT_API
#endif

#define CT_VERSION_MAJOR 0
#define CT_VERSION_MINOR 1
#define CT_VERSION_PATCH 0
#define CT_VERSION_NUMBER (CT_VERSION_MAJOR * 10000 + CT_VERSION_MINOR * 100 + CT_VERSION_PATCH)

/* Result codes. CT_OK is 0, failures are positive and < 100, non-error
 * outcomes (none yet) would be >= 100. New codes may be added. */
typedef enum ct_status {
    CT_OK = 0,
    CT_ERR_INVALID_ARG = 1, /* a caller passed a bad value (option, size, NULL) */
    CT_ERR_IO = 2,          /* the OS refused a read/write/open/mmap */
    CT_ERR_FORMAT = 3,      /* a file's contents are malformed or inconsistent */
    CT_ERR_OOM = 4,         /* host or device memory could not be had */
    CT_ERR_DEVICE = 5,      /* a GPU call failed (not an allocation) */
    CT_ERR_UNSUPPORTED = 6, /* valid, but not supported by this build/model */
    CT_ERR_ABORTED = 7,     /* cancelled by the caller or a deadline */
    CT_ERR_MISUSE = 8,      /* API used out of order (use after close, ...) */
    CT_ERR_NOT_FOUND = 9,   /* a file, tensor, token or Hub object is missing */
    CT_ERR_NETWORK = 10,    /* a network transfer failed after retries */
    CT_ERR_AUTH = 11,       /* the Hub refused access (gated or bad token) */
    CT_ERR_LIMIT = 12,      /* input exceeds a configured cap (memory, length) */
    CT_ERR_INTERNAL = 13,   /* a broken invariant: a bug in this library */
    CT_ERR_BUSY = 14        /* a lock is held by another process */
} ct_status;

/* Static name of a status ("CT_ERR_FORMAT", ...); never NULL. */
CT_API const char *ct_status_str(ct_status s);

/* The message of this thread's most recent failure ("" when none). The
 * pointer stays valid until the thread's next failing call. */
CT_API const char *ct_last_error(void);

/* Library version string, e.g. "0.1.0", and the number it was built as. */
CT_API const char *ct_version(void);
CT_API int ct_version_number(void);

/* Whether the CUDA backend was compiled in (it may still find no device). */
CT_API int ct_have_cuda(void);

typedef enum ct_log_level {
    CT_LOG_ERROR = 0,
    CT_LOG_WARN = 1,
    CT_LOG_INFO = 2,
    CT_LOG_DEBUG = 3
} ct_log_level;

/* Log sink: receives one message without a trailing newline. */
typedef void (*ct_log_fn)(ct_log_level level, const char *msg, void *user_data);

/* Replace the process-wide log sink (NULL restores the stderr default) and
 * set the most verbose level that is delivered (default CT_LOG_WARN, or the
 * level named by the CT_LOG environment variable: error|warn|info|debug).
 * The sink is called by one thread at a time, whichever thread logs. Once
 * ct_log_set returns, the previous sink is not running on another thread and
 * is never called again, so its user_data may be freed. A sink may call
 * ct_log_set, ct_log_set_level or library functions that log: a message
 * logged from inside the sink goes to stderr, not back into the sink. A sink
 * must not wait for another thread that may log (that thread waits for the
 * sink to return). */
CT_API void ct_log_set(ct_log_fn fn, void *user_data);
CT_API void ct_log_set_level(ct_log_level level);

/* ======================================================================
 * The transcriber
 * ====================================================================== */

typedef enum ct_device { CT_DEVICE_AUTO = 0, CT_DEVICE_CPU = 1, CT_DEVICE_CUDA = 2, CT_DEVICE_MPS = 3 } ct_device;
/* INT8 is ours (CPU only): int8 weights with per-channel scales and int8
 * activations on VNNI (docs/PERFORMANCE.md, "int8"). */
typedef enum ct_precision {
    CT_PRECISION_AUTO = 0,
    CT_PRECISION_BF16 = 1,
    CT_PRECISION_FP16 = 2,
    CT_PRECISION_FP32 = 3,
    CT_PRECISION_INT8 = 4
} ct_precision;
typedef enum ct_vad_policy { CT_VAD_MODE_SILERO = 0, CT_VAD_MODE_AUDITOK = 1, CT_VAD_MODE_NONE = 2 } ct_vad_policy;
/* Accepted for compatibility with the original (its Silero executors); the
 * network always runs natively. Recorded in the outputs as requested. */
typedef enum ct_vad_engine { CT_VAD_ENGINE_AUTO = 0, CT_VAD_ENGINE_TORCH = 1, CT_VAD_ENGINE_ONNX = 2, CT_VAD_ENGINE_JIT = 3 } ct_vad_engine;
/* torchcodec means ffmpeg and librosa means auto, as in the original. */
typedef enum ct_audio_decoder {
    CT_AUDIO_AUTO = 0, CT_AUDIO_FFMPEG = 1, CT_AUDIO_SNDFILE = 2, CT_AUDIO_TORCHCODEC = 3, CT_AUDIO_LIBROSA = 4
} ct_audio_decoder;
/* How the libsndfile backend resamples (FFmpeg always uses libswresample):
 * auto is fir where the rate allows (every common rate), else sinc. */
typedef enum ct_resampler_kind { CT_RESAMPLER_AUTO = 0, CT_RESAMPLER_FIR = 1, CT_RESAMPLER_SINC = 2 } ct_resampler_kind;
/* In which order prepared files go through the model (ours; docs/PREP.md,
 * "Feeding a GPU"). Results are finished, published and reported in input
 * order either way. input: the model waits for each file in turn. ready: it
 * takes files as preparation finishes them, so short files run while a long
 * one is still being decoded; which files share a batch then depends on
 * timing. auto: ready on cuda (input order with word alignment, which keeps
 * each file's audio until it is published), input on the CPU. */
typedef enum ct_file_order { CT_FILE_ORDER_AUTO = 0, CT_FILE_ORDER_INPUT = 1, CT_FILE_ORDER_READY = 2 } ct_file_order;
/* How the CPU engine's idle OpenMP threads wait (ours; docs/USAGE.md
 * "--cpu-wait"): auto leaves libgomp its default (spin a while, then
 * sleep), the fastest on cores of its own; passive sleeps at once
 * (OMP_WAIT_POLICY=passive), the fastest when the cores are shared with
 * other work, where spinning can halve the speed, and up to 2.4× slower on
 * free cores; active spins (OMP_WAIT_POLICY=active). */
typedef enum ct_cpu_wait { CT_CPU_WAIT_PASSIVE = 0, CT_CPU_WAIT_ACTIVE = 1, CT_CPU_WAIT_AUTO = 2 } ct_cpu_wait;
typedef enum ct_existing { CT_EXISTING_ERROR = 0, CT_EXISTING_OVERWRITE = 1, CT_EXISTING_SKIP = 2 } ct_existing;
typedef enum ct_alignment { CT_ALIGN_SEGMENT = 0, CT_ALIGN_WORD = 1, CT_ALIGN_NONE = 2 } ct_alignment;
typedef enum ct_truncation { CT_TRUNCATION_RETRY = 0, CT_TRUNCATION_WARN = 1 } ct_truncation;
typedef enum ct_format { CT_FORMAT_TXT = 0, CT_FORMAT_SRT = 1, CT_FORMAT_VTT = 2, CT_FORMAT_JSON = 3 } ct_format;
#define CT_FORMAT_COUNT 4

/* Every option of the command line (docs/USAGE.md), by the same name with
 * '_' for '-'. Strings are borrowed for the duration of ct_transcriber_create
 * (they are copied). Numbers left at their "unset" value (0, or -1 where
 * said) take the documented automatic value. */
typedef struct ct_transcriber_options {
    /* model */
    const char *model;            /* Hub repo id, local directory or .gguf file; NULL: the default model */
    const char *model_revision;   /* NULL: the pinned commit for the default model, else "main" */
    const char *adapter;          /* parsed and refused: adapters are not supported */
    const char *adapter_revision;
    const char *language;         /* "ar" (default) or any language the model's config lists */
    int punctuation;              /* 1 (default): <|pnc|>; 0: <|nopnc|> */
    /* outputs */
    int publish;                  /* 1 (default): write output sets beside the audio / under output_dir;
                                   * 0: results only, nothing written */
    ct_format formats[CT_FORMAT_COUNT]; /* in the order given; n_formats == 0: txt srt vtt (txt with
                                   * alignment none) */
    int n_formats;
    const char *output_dir;       /* NULL: beside each source */
    int recursive;                /* 1 (default) */
    ct_existing existing;         /* CT_EXISTING_ERROR (default) */
    const char *profile_json;     /* NULL: no run profile */
    /* device and audio */
    ct_device device;             /* auto */
    int device_index;             /* CUDA device ordinal, 0 */
    ct_precision dtype;           /* auto: fp32 on cpu, bf16 (else fp16) on cuda */
    int threads;                  /* CPU threads for the model, 0: all cores */
    ct_cpu_wait cpu_wait;         /* auto; OpenMP reads it at process start: ct_cpu_wait_exec */
    ct_audio_decoder audio_backend;
    ct_resampler_kind resampler;  /* auto (ours; the original decodes through FFmpeg only) */
    double audio_memory_gb;       /* 4.0: decoded PCM cap per file / prepared group */
    int preprocess_workers;       /* 0: automatic */
    int pipeline_preparation;     /* 1 */
    ct_file_order file_order;     /* auto */
    /* segmentation */
    ct_vad_policy vad;                /* silero */
    ct_vad_engine vad_engine;     /* auto */
    const char *vad_weights;      /* silero_vad.onnx v6.2; NULL: the installed copy (docs/USAGE.md) */
    int vad_batch_size;           /* 16 */
    int vad_block_frames;         /* 512 */
    int vad_threads;              /* 0: unset */
    int vad_merge;                /* 0 */
    double min_dur, max_dur;      /* 0.5, 30.0 s */
    double max_silence;           /* 0.6 s (auditok) */
    double energy_threshold;      /* 50 dB (auditok) */
    double vad_threshold;         /* 0.5 (silero) */
    int min_silence_ms;           /* 300 (silero) */
    int speech_pad_ms;            /* 60 (silero) */
    /* transcription */
    int batch_size;               /* 0: device default (cuda 24, cpu 4) */
    int batch_max_size;           /* 0: unset; needs adaptive_batch */
    double batch_audio_seconds;   /* 0: unset */
    double batch_vram_target;     /* 0.9 */
    int adaptive_batch;           /* 0 */
    int pin_memory;               /* 0; accepted, pinned buffers are used where they help */
    int max_new_tokens;           /* 445 */
    int max_retry_tokens;         /* 896 */
    ct_truncation truncation_policy; /* retry */
    int stop_repetition_loops;    /* 1 */
    /* timing and cues */
    ct_alignment alignment;       /* segment */
    int text_only;                /* alias for alignment none (an error together with alignment word) */
    int align_batch_size;         /* 4 */
    ct_precision align_dtype;     /* fp32 */
    const char *aligner_model;    /* word timing's CTC aligner: a Hub repo or local folder; NULL: the
                                   * original's MahmoudAshraf/mms-300m-1130-forced-aligner (CC-BY-NC-4.0) */
    const char *aligner_revision; /* NULL: the pinned commit for the default aligner, else "main" */
    int max_chars;                /* 80 */
    double max_cue_dur;           /* 6.0 s */
    double max_gap;               /* 0.6 s */
    /* Messages name options by their field here (max_dur); a command-line
     * front end sets this to have them named as its flags (--max-dur). */
    int cli_option_names;
    /* Benchmarks only (ours; docs/USAGE.md): > 0 makes every segment decode
     * exactly ceil(rate x its seconds) tokens (capped by max_new_tokens and
     * the decoder context) with EOS ignored, no repetition guard and no
     * token-limit retry, so a run on random weights does a fixed amount of
     * work. Outputs are still written; their text means nothing. 0: off. */
    double benchmark_tokens_per_second;
    /* Diagnostics (ours): NULL, or a file to write a timeline of each run
     * to (Chrome trace-event JSON: the preparation workers' decode and VAD,
     * the model load, every engine call, each publication; docs/USAGE.md).
     * One run records at a time in a process. */
    const char *trace_path;
} ct_transcriber_options;

CT_API ct_transcriber_options ct_transcriber_default_options(void);

/* OpenMP's wait policy is read once, when the OpenMP runtime starts with the
 * process, so cpu_wait takes effect only through a process start. A program
 * that runs the CPU engine calls this first thing in main (or from a
 * .preinit_array hook, as the cohere-transcribe tools do), before any
 * thread: when OMP_WAIT_POLICY is unset it re-executes /proc/self/exe once
 * with OMP_WAIT_POLICY set to w (a guard keyed to the process id makes a
 * second re-exec impossible); CT_CPU_WAIT_AUTO re-executes nothing. An OMP_WAIT_POLICY the user set is kept. It
 * does nothing under valgrind (the child would escape it). envp: the
 * environment to pass on (NULL: environ). Returns only when it did not
 * re-execute. */
CT_API void ct_cpu_wait_exec(ct_cpu_wait w, char **argv, char **envp);
/* The wait policy this process's OpenMP runtime got and where it came from,
 * e.g. "passive (OMP_WAIT_POLICY=passive, set at start for cpu_wait
 * passive)"; into buf, returned. */
CT_API const char *ct_cpu_wait_describe(char *buf, size_t cap);

/* Check options without creating anything (the rules of docs/USAGE.md).
 * CT_ERR_INVALID_ARG / CT_ERR_UNSUPPORTED with a message naming the option. */
CT_API ct_status ct_transcriber_options_check(const ct_transcriber_options *o);

/* Progress: stage CT_PROGRESS_MESSAGE carries text; the counters carry
 * current/total (files: inputs; asr: segments of the current file;
 * alignment: segments aligned). Called from the thread running
 * ct_transcriber_run. */
typedef enum ct_progress_stage {
    CT_PROGRESS_MESSAGE = 0, CT_PROGRESS_FILES = 1, CT_PROGRESS_ASR = 2, CT_PROGRESS_ALIGNMENT = 3,
    CT_PROGRESS_STAGE = 4,  /* a new stage of the run began: text is its name */
    CT_PROGRESS_BATCH = 5   /* an ASR batch finished: the running totals moved */
} ct_progress_stage;
typedef struct ct_progress {
    ct_progress_stage stage;
    const char *text;        /* message or stage name, else NULL */
    const char *path;        /* the file concerned, or NULL */
    long long current, total;
    /* running totals for live displays */
    int files_done, files_total, files_prepared;
    long long segments_done, segments_total; /* over the files prepared so far */
    double audio_seconds_done;               /* audio of the files finished */
    double elapsed_seconds;
} ct_progress;
typedef void (*ct_progress_fn)(const ct_progress *p, void *user_data);

typedef struct ct_transcriber ct_transcriber;

/* Validate the options and make a transcriber. Nothing heavy happens here:
 * the model is loaded by the first run that needs it (a run whose inputs are
 * all skipped loads nothing), and kept for the next runs. */
CT_API ct_status ct_transcriber_create(const ct_transcriber_options *o, ct_transcriber **out);
CT_API void ct_transcriber_set_progress(ct_transcriber *t, ct_progress_fn fn, void *user_data);
/* The message of this handle's most recent failure ("" when none). */
CT_API const char *ct_transcriber_errmsg(const ct_transcriber *t);
/* Ask the running call to stop (any thread, and async-signal-safe: it only
 * sets a flag). The run rolls back the output commit in progress and returns
 * CT_ERR_ABORTED; files published before stay published. */
CT_API void ct_transcriber_cancel(ct_transcriber *t);
/* Release the model; later calls fail with CT_ERR_MISUSE. */
CT_API void ct_transcriber_close(ct_transcriber *t);
/* close + free the handle. */
CT_API void ct_transcriber_free(ct_transcriber *t);

typedef struct ct_run ct_run;
typedef struct ct_file_result ct_file_result;

/* Transcribe paths (files or directories, PRODUCT.md §4) and, when
 * publishing, write every file's output set. Calls on one handle are
 * serialized. CT_OK: the run happened, even if some files failed (see each
 * file's status); a failure (bad inputs, planning refusal, model load, a
 * cancel) returns its code with the message, and *out may still hold the
 * files finished before it (or NULL). */
CT_API ct_status ct_transcriber_run(ct_transcriber *t, const char *const *paths, size_t n, ct_run **out);
CT_API void ct_run_free(ct_run *run);

typedef struct ct_run_stats {
    double elapsed_seconds, audio_seconds, rtfx;
    int files_completed, files_failed, files_skipped;
    double seconds_validation, seconds_preparation_wait, seconds_asr_load, seconds_asr,
           seconds_alignment, seconds_publication;
    int batches, oom_retries, truncation_retries;
    long long generated_tokens;
    int model_loaded; /* 1 if this run loaded or used the ASR model */
} ct_run_stats;
CT_API void ct_run_get_stats(const ct_run *run, ct_run_stats *st);
/* Run-level errors that did not stop the run (e.g. the profile could not be
 * written): count and messages. */
CT_API size_t ct_run_error_count(const ct_run *run);
CT_API const char *ct_run_error(const ct_run *run, size_t i);
CT_API size_t ct_run_file_count(const ct_run *run);
CT_API const ct_file_result *ct_run_file(const ct_run *run, size_t i);

/* BUSY: another process holds the file's output-set lock; the set is left
 * to it (ct_file_error says so) and the run goes on with the others. */
typedef enum ct_file_status {
    CT_FILE_COMPLETED = 0, CT_FILE_FAILED = 1, CT_FILE_SKIPPED = 2, CT_FILE_BUSY = 3
} ct_file_status;
typedef enum ct_timing_source {
    CT_TIMING_CTC = 0, CT_TIMING_UNIFORM_SEGMENT = 1, CT_TIMING_UNIFORM_SPEECH_SPANS = 2,
    CT_TIMING_UNIFORM_FALLBACK = 3
} ct_timing_source;
CT_API const char *ct_timing_source_name(ct_timing_source s); /* "ctc", "uniform_segment", ... */

typedef struct ct_segment { int index; double start, end; const char *text; int generated_tokens; } ct_segment;
typedef struct ct_word {
    double start, end; const char *text; int segment_index, segment_word_index; ct_timing_source source;
} ct_word;
typedef struct ct_cue { double start, end; const char *text; } ct_cue;

CT_API ct_file_status ct_file_get_status(const ct_file_result *f);
CT_API const char *ct_file_path(const ct_file_result *f);       /* canonical source path */
CT_API const char *ct_file_error(const ct_file_result *f);      /* "" unless failed/skipped reason */
CT_API const char *ct_file_text(const ct_file_result *f);       /* segment texts joined by "\n" */
CT_API double ct_file_duration(const ct_file_result *f);
CT_API size_t ct_file_segment_count(const ct_file_result *f);    /* every ASR segment, empty ones too */
CT_API ct_segment ct_file_segment(const ct_file_result *f, size_t i);
CT_API size_t ct_file_word_count(const ct_file_result *f);
CT_API ct_word ct_file_word(const ct_file_result *f, size_t i);
CT_API size_t ct_file_cue_count(const ct_file_result *f);
CT_API ct_cue ct_file_cue(const ct_file_result *f, size_t i);
CT_API size_t ct_file_output_count(const ct_file_result *f);
CT_API const char *ct_file_output(const ct_file_result *f, size_t i);
/* Provenance: what produced the result. */
typedef struct ct_provenance {
    const char *model_id, *model_revision, *model_format; /* "dense" */
    const char *device, *dtype;                           /* resolved: "cpu"/"cuda", "fp32"/"bf16"/... */
    const char *decode_backend;                           /* "ffmpeg", "libsndfile" or NULL */
    const char *vad_engine;                               /* actual: "onnx" (native Silero), "auditok", ... */
    int resumed_from_checkpoint;
    int fallback_alignment_segments;
    size_t n_repetition_stopped, n_truncation_retried, n_token_limit;
    const int *repetition_stopped, *truncation_retried, *token_limit; /* segment indices */
} ct_provenance;
CT_API ct_provenance ct_file_provenance(const ct_file_result *f);

#ifdef __cplusplus
}
#endif
#endif /* COHERE_TRANSCRIBE_H */
