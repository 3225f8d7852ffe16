/* convert.c — safetensors directory ↔ GGUF (tensors and config keys; the
 * vocabulary is convert_tokenizer.c's); see convert.h. Float tensors follow
 * CrispASR's dtype rule, convert exactly when widening and round to nearest
 * even when narrowing; the I64 BatchNorm counters are not carried into GGUF
 * (CrispASR drops them) and are written back as zeros; fe.* are made when the
 * checkpoint has none. */
#include "model/convert.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fs.h"
#include "core/str.h"
#include "core/log.h"
#include "asr/mel.h"
#include "compute/quant.h"
#include "model/checkpoint.h"
#include "model/convert_internal.h"
#include "model/gguf.h"
#include "model/safetensors.h"

#define KEY(k) "cohere_transcribe." k

static int is_float(ct_dtype d) {
    return d == CT_DTYPE_F32 || d == CT_DTYPE_F16 || d == CT_DTYPE_BF16 || d == CT_DTYPE_Q8_0;
}

/* Convert n elements of src (dtype from) into dst (dtype to). Q8_0 (n a
 * multiple of 32; its blocks are contiguous along the rows, so the n
 * elements are one run of blocks): made by ct_q80_quantize_row (ggml's
 * rounding), read back exactly through f32. */
static ct_status convert_elems(void *dst, ct_dtype to, const void *src, ct_dtype from, size_t n) {
    const uint8_t *s = src;
    uint8_t *d = dst;
    if (from == to) {
        memcpy(dst, src, ct_dtype_nbytes(from, n));
        return CT_OK;
    }
    if (to == CT_DTYPE_Q8_0) { /* the checkpoint was checked finite at open */
        (void)ct_q80_quantize_row(dst, src, from, (int64_t)n);
        return CT_OK;
    }
    if (from == CT_DTYPE_Q8_0) {
        float *f = to == CT_DTYPE_F32 ? dst : malloc(sizeof(float) * (n ? n : 1));
        if (!f) return ct_fail(CT_ERR_OOM, "convert: out of memory");
        ct_q80_dequantize_row(f, src, (int64_t)n);
        if (f != dst) {
            (void)convert_elems(dst, to, f, CT_DTYPE_F32, n);
            free(f);
        }
        return CT_OK;
    }
    for (size_t i = 0; i < n; i++) {
        float f;
        uint16_t h;
        if (from == CT_DTYPE_F32) memcpy(&f, s + 4 * i, 4);
        else {
            memcpy(&h, s + 2 * i, 2);
            f = from == CT_DTYPE_BF16 ? ct_bf16_to_f32(h) : ct_f16_to_f32(h);
        }
        if (to == CT_DTYPE_F32) memcpy(d + 4 * i, &f, 4);
        else {
            h = to == CT_DTYPE_BF16 ? ct_f32_to_bf16(f) : ct_f32_to_f16(f);
            memcpy(d + 2 * i, &h, 2);
        }
    }
    return CT_OK;
}

/* ---- safetensors directory → GGUF --------------------------------------- */

/* Every key is written with the type CrispASR writes and reads it with
 * (docs/GGUF.md, "Metadata keys"): sizes and ids u32, max_clip_s u32 too. */
static ct_status put_meta(ct_gguf_writer *w, const ct_model_config *c, const ct_convert_vocab *v) {
    CT_TRY(ct_gguf_writer_set_str(w, "general.architecture", "cohere-transcribe"));
    CT_TRY(ct_gguf_writer_set_str(w, "general.name", "cohere-transcribe"));
    struct {
        const char *k;
        int v;
    } u[] = {
        {KEY("vocab_size"), c->vocab_size},      {KEY("encoder.n_layers"), c->enc_layers},
        {KEY("encoder.d_model"), c->enc_d_model}, {KEY("encoder.n_heads"), c->enc_heads},
        {KEY("encoder.head_dim"), c->enc_d_model / c->enc_heads}, {KEY("encoder.ffn_dim"), c->enc_ff},
        {KEY("encoder.conv_kernel"), c->enc_conv_kernel}, {KEY("decoder.n_layers"), c->dec_layers},
        {KEY("decoder.d_model"), c->dec_d_model}, {KEY("decoder.n_heads"), c->dec_heads},
        {KEY("decoder.head_dim"), c->dec_d_model / c->dec_heads}, {KEY("decoder.ffn_dim"), c->dec_ff},
        {KEY("decoder.max_ctx"), c->dec_max_positions}, {KEY("audio.sample_rate"), c->sample_rate},
        {KEY("audio.n_mels"), c->n_mels},         {KEY("audio.n_fft"), c->n_fft},
        {KEY("audio.hop_length"), c->hop_length}, {KEY("audio.win_length"), c->win_length},
    };
    for (size_t i = 0; i < sizeof u / sizeof u[0]; i++) CT_TRY(ct_gguf_writer_set_u32(w, u[i].k, (uint32_t)u[i].v));
    if (c->max_audio_clip_s > 0) {
        /* CrispASR's key is a whole number of seconds */
        double r = floor(c->max_audio_clip_s + 0.5);
        if (r > 86400.0) return ct_fail(CT_ERR_FORMAT, "convert: max_audio_clip_s %g is out of range", c->max_audio_clip_s);
        if (r != c->max_audio_clip_s)
            ct_log(CT_LOG_WARN, "convert: max_audio_clip_s %g is stored as %.0f (the GGUF key is an integer)",
                   c->max_audio_clip_s, r);
        CT_TRY(ct_gguf_writer_set_u32(w, KEY("audio.max_clip_s"), (uint32_t)r));
    }
    if (c->n_languages > 0) {
        const char *l[CT_CONFIG_MAX_LANGS];
        for (int i = 0; i < c->n_languages; i++) l[i] = c->languages[i];
        CT_TRY(ct_gguf_writer_set_str_array(w, KEY("supported_languages"), l, (size_t)c->n_languages));
    }
    if (c->decoder_start_id >= 0) CT_TRY(ct_gguf_writer_set_u32(w, KEY("decoder_start_token_id"), (uint32_t)c->decoder_start_id));
    if (c->bos_id >= 0) CT_TRY(ct_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)c->bos_id));
    if (c->eos_id >= 0) CT_TRY(ct_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)c->eos_id));
    if (c->pad_id >= 0) CT_TRY(ct_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)c->pad_id));
    return ct_convert_vocab_put(w, v);
}

/* CrispASR's dtype rule (docs/GGUF.md, "Dtypes"): every 1-D tensor and
 * attn.pos_bias_u/v stay F32 whatever is asked, because CrispASR reads them
 * (BatchNorm folding among others) as float32 without looking at the type;
 * the other float tensors (matrices, conv kernels, fe.mel_fb, dec.emb,
 * dec.pos, dec.head.weight) get `dtype`, or keep theirs. */
static ct_dtype gguf_dtype(const char *gguf_name, int ndim, const int64_t *shape, ct_dtype stored, int dtype) {
    if (!is_float(stored)) return stored;
    if (ndim <= 1 || ct_str_ends_with(gguf_name, ".attn.pos_bias_u") || ct_str_ends_with(gguf_name, ".attn.pos_bias_v"))
        return CT_DTYPE_F32;
    /* q8_0 as CrispASR's quantizer (and tools/reference/make_gguf_fixture.py
     * --q8_0) applies it: the 2-D matrices whose rows are a multiple of 32
     * long; the other narrowed tensors (conv kernels, the [out, in, 1]
     * pointwise convs, whose GGUF rows are 1 long, fe.mel_fb) are f16 */
    if (dtype == CT_DTYPE_Q8_0) return ndim == 2 && shape[1] % CT_Q8_0_BLOCK == 0 ? CT_DTYPE_Q8_0 : CT_DTYPE_F16;
    return dtype == CT_CONVERT_KEEP_DTYPE ? stored : (ct_dtype)dtype;
}

/* A tensor made here rather than read from the checkpoint (float32 data). */
typedef struct extra {
    const char *name; /* GGUF name */
    int ndim;
    int64_t shape[3];
    float *data;
    size_t n;
} extra;

/* fe.mel_fb [1, n_mels, n_fft/2+1] and fe.window [win_length] for a
 * checkpoint that lacks them (the transformers layout): CrispASR takes its
 * frontend from these tensors and crashes without them. They are the
 * engine's own frontend tables (asr/mel.h: librosa's slaney filterbank in
 * float32, torch.hann_window(win, periodic=False)), the values the Hub
 * release stores (MODEL.md). */
static ct_status make_frontend(const ct_checkpoint *ck, extra *ex, int *n_ex) {
    *n_ex = 0;
    int need_fb = !ct_checkpoint_tensor(ck, "preprocessor.featurizer.fb");
    int need_win = !ct_checkpoint_tensor(ck, "preprocessor.featurizer.window");
    if (!need_fb && !need_win) return CT_OK;
    const ct_model_config *c = ct_checkpoint_config(ck);
    ct_mel_options o = ct_mel_default_options();
    o.sample_rate = c->sample_rate, o.n_fft = c->n_fft, o.win_length = c->win_length;
    o.hop_length = c->hop_length, o.n_mels = c->n_mels, o.threads = 1;
    ct_mel *m;
    CT_TRY(ct_mel_create(&o, &m));
    int bins = o.n_fft / 2 + 1;
    ct_status s = CT_OK;
    if (need_fb) {
        extra *e = &ex[(*n_ex)++];
        *e = (extra){"fe.mel_fb", 3, {1, o.n_mels, bins}, NULL, (size_t)o.n_mels * (size_t)bins};
        if (!(e->data = malloc(e->n * sizeof(float)))) s = ct_fail(CT_ERR_OOM, "convert: out of memory");
        else memcpy(e->data, ct_mel_filterbank(m), e->n * sizeof(float));
    }
    if (need_win && s == CT_OK) {
        extra *e = &ex[(*n_ex)++];
        *e = (extra){"fe.window", 1, {o.win_length}, NULL, (size_t)o.win_length};
        /* the mel window is n_fft long with the Hann window centred in it */
        if (!(e->data = malloc(e->n * sizeof(float)))) s = ct_fail(CT_ERR_OOM, "convert: out of memory");
        else memcpy(e->data, ct_mel_window(m) + (o.n_fft - o.win_length) / 2, e->n * sizeof(float));
    }
    ct_mel_free(m);
    return s;
}

/* Stream every tensor of ck (then the extras) through a declare/convert/write
 * cycle. */
typedef ct_status (*declare_fn)(void *w, const char *name, ct_dtype dt, int ndim, const int64_t *shape);
typedef ct_status (*write_fn)(void *w, const void *data);

static ct_status stream_tensors(const ct_checkpoint *ck, void *w, declare_fn decl, write_fn wr, int dtype,
                                int to_gguf, const extra *ex, int n_ex) {
    size_t n = ct_checkpoint_count(ck), maxb = 0;
    ct_status s = CT_OK;
    for (int pass = 0; pass < 2 && s == CT_OK; pass++) {
        void *tmp = NULL;
        if (pass == 1 && !(tmp = malloc(maxb ? maxb : 1))) return ct_fail(CT_ERR_OOM, "convert: out of memory");
        for (size_t i = 0; i < n && s == CT_OK; i++) {
            const ct_st_tensor *t = ct_checkpoint_at(ck, i);
            char name[300];
            ct_dtype dt;
            if (to_gguf) {
                if (ct_str_ends_with(t->name, ".num_batches_tracked")) continue;
                if (ct_gguf_name_from_nemo(t->name, name, sizeof name) != CT_OK) {
                    if (pass == 0) ct_log(CT_LOG_WARN, "convert: tensor '%s' has no GGUF name: skipped", t->name);
                    continue;
                }
                dt = gguf_dtype(name, t->ndim, t->shape, t->dtype, dtype);
            } else {
                if (strncmp(t->name, "preprocessor.", 13) == 0) continue;
                snprintf(name, sizeof name, "%s%s", strncmp(t->name, "log_softmax.", 12) ? "model." : "", t->name);
                dt = is_float(t->dtype) ? (ct_dtype)dtype : t->dtype;
            }
            if (pass == 0) {
                s = decl(w, name, dt, t->ndim, t->shape);
                size_t b = ct_dtype_nbytes(dt, (size_t)t->numel);
                if (b > maxb) maxb = b;
            } else {
                if (dt == t->dtype) {
                    s = wr(w, t->data);
                } else {
                    s = convert_elems(tmp, dt, t->data, t->dtype, (size_t)t->numel);
                    if (s == CT_OK) s = wr(w, tmp);
                }
                ct_checkpoint_release(ck, t); /* keep resident memory at about one tensor */
            }
        }
        for (int i = 0; i < n_ex && s == CT_OK; i++) {
            ct_dtype dt = gguf_dtype(ex[i].name, ex[i].ndim, ex[i].shape, CT_DTYPE_F32, dtype);
            if (pass == 0) {
                s = decl(w, ex[i].name, dt, ex[i].ndim, ex[i].shape);
                if (ct_dtype_nbytes(dt, ex[i].n) > maxb) maxb = ct_dtype_nbytes(dt, ex[i].n);
            } else {
                s = convert_elems(tmp, dt, ex[i].data, CT_DTYPE_F32, ex[i].n);
                if (s == CT_OK) s = wr(w, tmp);
            }
        }
        free(tmp);
        if (pass == 0 && s == CT_OK && !to_gguf) {
            /* the BatchNorm counters transformers expects */
            const ct_model_config *c = ct_checkpoint_config(ck);
            for (int l = 0; l < c->enc_layers && s == CT_OK; l++) {
                char nm[128];
                snprintf(nm, sizeof nm, "model.encoder.layers.%d.conv.batch_norm.num_batches_tracked", l);
                if (ct_checkpoint_tensor(ck, nm + 6)) continue; /* already carried */
                s = decl(w, nm, CT_DTYPE_I64, 0, NULL);
            }
        }
        if (pass == 1 && s == CT_OK && !to_gguf) {
            const ct_model_config *c = ct_checkpoint_config(ck);
            int64_t zero = 0;
            for (int l = 0; l < c->enc_layers && s == CT_OK; l++) {
                char nm[128];
                snprintf(nm, sizeof nm, "encoder.layers.%d.conv.batch_norm.num_batches_tracked", l);
                if (!ct_checkpoint_tensor(ck, nm)) s = wr(w, &zero);
            }
        }
    }
    return s;
}

static ct_status g_decl(void *w, const char *n, ct_dtype d, int nd, const int64_t *sh) {
    return ct_gguf_writer_add_tensor(w, n, d, nd, sh);
}
static ct_status g_write(void *w, const void *d) { return ct_gguf_writer_write(w, d); }
static ct_status s_decl(void *w, const char *n, ct_dtype d, int nd, const int64_t *sh) {
    return ct_st_writer_add(w, n, d, nd, sh);
}
static ct_status s_write(void *w, const void *d) { return ct_st_writer_write(w, d); }

static ct_status check_dtype(int dtype, int to_gguf) {
    if (dtype == CT_CONVERT_KEEP_DTYPE || (is_float((ct_dtype)dtype) && dtype != CT_DTYPE_Q8_0)) return CT_OK;
    if (to_gguf && dtype == CT_DTYPE_Q8_0) return CT_OK;
    return ct_fail(CT_ERR_INVALID_ARG, to_gguf ? "convert: the target dtype must be f32, f16, bf16 or q8_0"
                                               : "convert: the target dtype must be f32, f16 or bf16 (safetensors "
                                                 "has no Q8_0)");
}

ct_status ct_convert_to_gguf(const char *dir, const char *out, int dtype) {
    CT_TRY(check_dtype(dtype, 1));
    ct_checkpoint *ck;
    CT_TRY(ct_checkpoint_open(dir, &ck));
    /* everything that can refuse the model runs before the output is created */
    ct_convert_vocab v;
    extra ex[2] = {{0}};
    int n_ex = 0;
    ct_status s = ct_convert_vocab_read(ct_checkpoint_dir(ck), ct_checkpoint_config(ck), &v);
    if (s == CT_OK) s = make_frontend(ck, ex, &n_ex);
    ct_gguf_writer *w = NULL;
    if (s == CT_OK) s = ct_gguf_writer_create(out, &w);
    if (s == CT_OK) s = put_meta(w, ct_checkpoint_config(ck), &v);
    if (s == CT_OK) s = stream_tensors(ck, w, g_decl, g_write, dtype, 1, ex, n_ex);
    if (s == CT_OK) s = ct_gguf_writer_finish(w);
    ct_gguf_writer_free(w);
    for (int i = 0; i < n_ex; i++) free(ex[i].data);
    ct_convert_vocab_free(&v);
    ct_checkpoint_free(ck);
    return s;
}

/* ---- GGUF → safetensors directory --------------------------------------- */

ct_status ct_convert_from_gguf(const char *gguf, const char *outdir, int dtype) {
    CT_TRY(check_dtype(dtype, 0));
    ct_checkpoint *ck;
    CT_TRY(ct_checkpoint_open(gguf, &ck));
    /* the directory must be one the engine runs: its tokenizer is checked
     * against the model before anything is written */
    char *tok = NULL;
    size_t tok_len = 0;
    ct_status s = ct_convert_gguf_vocab_text(gguf, ct_checkpoint_config(ck), &tok, &tok_len);
    if (s != CT_OK) {
        ct_checkpoint_free(ck);
        return s;
    }
    if (dtype == CT_CONVERT_KEEP_DTYPE)
        dtype = (int)ct_checkpoint_tensor(ck, "transf_decoder._embedding.token_embedding.weight")->dtype;
    if (dtype == CT_DTYPE_Q8_0) dtype = CT_DTYPE_F32; /* a Q8_0 file: its values exactly, in f32 */
    s = ct_fs_mkdirs(outdir);
    char p[PATH_MAX];
    ct_st_writer *w = NULL;
    if (s == CT_OK) s = ct_path_join(p, sizeof p, outdir, "model.safetensors");
    if (s == CT_OK) s = ct_st_writer_create(p, &w);
    if (s == CT_OK) s = ct_st_writer_set_metadata(w, "format", "pt");
    if (s == CT_OK) s = stream_tensors(ck, w, s_decl, s_write, dtype, 0, NULL, 0);
    if (s == CT_OK) s = ct_st_writer_finish(w);
    ct_st_writer_free(w);
    const char *dn = dtype == CT_DTYPE_F32 ? "float32" : dtype == CT_DTYPE_BF16 ? "bfloat16" : "float16";
    if (s == CT_OK) s = ct_config_write_transformers(ct_checkpoint_config(ck), dn, outdir);
    if (s == CT_OK) s = ct_path_join(p, sizeof p, outdir, "tokenizer.json");
    if (s == CT_OK) s = ct_fs_write_atomic(p, tok, tok_len);
    free(tok);
    ct_checkpoint_free(ck);
    return s;
}
