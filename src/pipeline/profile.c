/* profile.c — the run profile of --profile-json: what the pipeline measured,
 * handed to the output layer's writer (output/profile_json.h, the gem's
 * keys and order) and written once after all files through the atomic
 * writer. A failure to write it is a run error, not a failed run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/fs.h"
#include "output/profile_json.h"
#include "output/state.h"
#include "pipeline/options.h"
#include "pipeline/pipeline_internal.h"

static const char *cpu_name(char *buf, size_t cap) {
    buf[0] = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return buf;
    char line[512];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10)) {
            char *c = strchr(line, ':');
            if (c) {
                c++;
                while (*c == ' ') c++;
                c[strcspn(c, "\n")] = 0;
                snprintf(buf, cap, "%s", c);
            }
            break;
        }
    fclose(f);
    return buf;
}

ct_status ct_pipe_write_profile(ct_pipe *p) {
    const ct_run *run = p->run;
    const ct_asr_run_stats *a = &p->asr_stats;
    ct_profile_input in;
    memset(&in, 0, sizeof in);
    in.created_unix_seconds = ct_unix_now();
    in.ctx = ct_pipe_output_context(p);
    in.options = &p->t->o;
    in.model_requested = p->t->o.model;
    const char **audio = calloc(run->n_files ? run->n_files : 1, sizeof *audio);
    ct_profile_file *files = calloc(run->n_files ? run->n_files : 1, sizeof *files);
    ct_profile_batch *hist = calloc(a->n_calls ? a->n_calls : 1, sizeof *hist);
    if (!audio || !files || !hist) {
        free(audio), free(files), free(hist);
        return ct_fail(CT_ERR_OOM, "profile");
    }
    long long rows = 0;
    for (size_t i = 0; i < a->n_calls; i++) {
        const ct_asr_call *c = &a->calls[i];
        hist[i] = (ct_profile_batch){.oom = c->oom, .segments = c->rows, .processor_rows = c->rows,
                                     .max_new_tokens = c->max_new_tokens, .generated_tokens = c->generated_tokens,
                                     .generation_call_wall_seconds = c->seconds,
                                     .generate_device_seconds = c->seconds,
                                     .padded_audio_seconds = c->padded_audio_seconds};
        if (!c->oom) rows += c->rows;
    }
    int resumed = 0, written = 0;
    for (size_t i = 0; i < run->n_files; i++) {
        const ct_file_result *f = &run->files[i];
        audio[i] = f->path;
        int known = f->rec.source_path != NULL;
        files[i] = (ct_profile_file){.record = known ? &f->rec : NULL, .path = f->path,
                                     .relative_path = f->relative, .duration_known = known,
                                     .duration = f->rec.duration, .outputs = (const char *const *)f->outputs,
                                     .n_outputs = f->n_outputs,
                                     .published = f->status == CT_FILE_COMPLETED && p->t->o.publish,
                                     .error = f->status == CT_FILE_FAILED ? f->error : NULL, .status = f->status};
        resumed += f->rec.resumed;
        written += f->status == CT_FILE_COMPLETED && !f->rec.resumed;
    }
    in.audio = audio, in.n_audio = run->n_files;
    in.device = p->device == CT_DEVICE_CUDA ? "cuda" : "cpu";
    in.dtype = ct_opt_precision_name(p->dtype);
    char exe[4096], plat[512] = "", cpu[256];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[k > 0 ? k : 0] = 0;
    struct utsname u;
    int have_u = uname(&u) == 0;
    if (have_u) snprintf(plat, sizeof plat, "%s-%s-%s", u.sysname, u.release, u.machine);
    in.executable = exe, in.platform = plat, in.machine = have_u ? u.machine : "";
    in.processor = cpu_name(cpu, sizeof cpu);
    in.cpu_count = (int)sysconf(_SC_NPROCESSORS_ONLN);
    in.elapsed_seconds = run->st.elapsed_seconds;
    in.timings[CT_PT_INPUT_VALIDATION] = p->seconds_validation;
    in.timings[CT_PT_DECODE_WORKER] = p->seconds_decode;
    in.timings[CT_PT_VAD_WORKER] = p->seconds_vad;
    in.timings[CT_PT_VAD_INFERENCE] = p->seconds_vad;
    in.timings[CT_PT_PREPARATION_WAIT] = p->seconds_prep_wait;
    in.timings[CT_PT_ASR_LOAD] = p->seconds_asr_load;
    in.timings[CT_PT_ASR_WALL] = a->seconds;
    in.timings[CT_PT_ASR_FEATURE_WORKER] = a->seconds_mel;
    in.timings[CT_PT_ASR_GENERATION_CALL_WALL] = a->seconds;
    in.timings[CT_PT_ASR_GENERATE_DEVICE] = a->seconds_encoder + a->seconds_decoder;
    in.timings[CT_PT_ALIGNER_LOAD] = p->seconds_aligner_load;
    in.timings[CT_PT_EMISSIONS] = p->seconds_alignment;
    in.timings[CT_PT_PROGRESSIVE_OUTPUT] = p->seconds_publication;
    in.effective_block_frames = p->t->o.vad == CT_VAD_MODE_SILERO && p->vad_files ? 512 : 0;
    in.prepared_groups = (int)p->vad_files, in.model_calls = (int)p->vad_files;
    in.valid_frames = in.padded_frames = p->vad_frames;
    in.batches = a->batches, in.processor_rows = (int)rows, in.generated_tokens = a->generated_tokens;
    in.effective_batch_min = a->effective_batch_min, in.effective_batch_max = a->effective_batch_max;
    in.final_batch_size = p->batch_size, in.final_batch_cap = a->final_cap ? a->final_cap : p->batch_size;
    in.oom_retries = a->oom_retries, in.truncation_retries = a->truncation_retries;
    in.history = hist, in.n_history = a->n_calls;
    in.checkpoint_resumed_files = resumed, in.checkpoint_written_files = written;
    in.files = files, in.n_files = run->n_files;
    ct_jbuf b = {0};
    ct_status s = ct_profile_json(&in, &b);
    free(audio), free(files), free(hist);
    if (s == CT_OK) {
        const char *path = ct_pipe_profile_path(p);
        s = ct_fs_write_atomic(path, b.data, b.len);
        if (s != CT_OK) ct_fail_wrap(s, "Cannot write %s", path);
    }
    ct_jbuf_free(&b);
    return s;
}
