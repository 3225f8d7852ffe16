/* test_gguf_conformance.c — every GGUF `convert` writes follows CrispASR's
 * rules (issue 17, docs/GGUF.md), for both checkpoint layouts (tiny-hf f32,
 * tiny-nemo bf16 Hub layout), both tokenizer types (Unigram, BPE) and every
 * --dtype (keep, f32, f16, bf16): 1-D tensors and pos_bias_u/v are F32 and
 * the rest has the asked dtype; fe.mel_fb / fe.window are present and equal
 * the Hub checkpoint's tensors; every key has CrispASR's type (max_clip_s
 * u32); tokenizer.ggml.tokens is the id → piece list; the tensor values are
 * the source's. Also: a vocabulary the engine would refuse is refused
 * before anything is written (issue 10 item 6). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/fs.h"
#include "model/checkpoint.h"
#include "model/convert.h"
#include "model/gguf.h"
#include "model/tokenizer.h"
#include "model_testutil.h"
#include "testutil.h"

/* ---- the rules ------------------------------------------------------------ */

typedef struct key_rule {
    const char *key;
    ct_gguf_type type, elem; /* elem: for arrays */
    int required;
} key_rule;

#define K(k) "cohere_transcribe." k
/* The types CrispASR writes and reads, key by key (docs/GGUF.md). */
static const key_rule k_keys[] = {
    {"general.architecture", CT_GGUF_STRING, 0, 1},
    {"general.name", CT_GGUF_STRING, 0, 1},
    {K("vocab_size"), CT_GGUF_U32, 0, 1},
    {K("encoder.n_layers"), CT_GGUF_U32, 0, 1},
    {K("encoder.d_model"), CT_GGUF_U32, 0, 1},
    {K("encoder.n_heads"), CT_GGUF_U32, 0, 1},
    {K("encoder.head_dim"), CT_GGUF_U32, 0, 1},
    {K("encoder.ffn_dim"), CT_GGUF_U32, 0, 1},
    {K("encoder.conv_kernel"), CT_GGUF_U32, 0, 1},
    {K("decoder.n_layers"), CT_GGUF_U32, 0, 1},
    {K("decoder.d_model"), CT_GGUF_U32, 0, 1},
    {K("decoder.n_heads"), CT_GGUF_U32, 0, 1},
    {K("decoder.head_dim"), CT_GGUF_U32, 0, 1},
    {K("decoder.ffn_dim"), CT_GGUF_U32, 0, 1},
    {K("decoder.max_ctx"), CT_GGUF_U32, 0, 1},
    {K("audio.sample_rate"), CT_GGUF_U32, 0, 1},
    {K("audio.n_mels"), CT_GGUF_U32, 0, 1},
    {K("audio.n_fft"), CT_GGUF_U32, 0, 1},
    {K("audio.hop_length"), CT_GGUF_U32, 0, 1},
    {K("audio.win_length"), CT_GGUF_U32, 0, 1},
    {K("audio.max_clip_s"), CT_GGUF_U32, 0, 0},
    {K("supported_languages"), CT_GGUF_ARRAY, CT_GGUF_STRING, 0},
    {K("decoder_start_token_id"), CT_GGUF_U32, 0, 0},
    {"tokenizer.ggml.model", CT_GGUF_STRING, 0, 1},
    {"tokenizer.ggml.tokens", CT_GGUF_ARRAY, CT_GGUF_STRING, 1},
    {"tokenizer.ggml.scores", CT_GGUF_ARRAY, CT_GGUF_F32, 1},
    {"tokenizer.ggml.token_type", CT_GGUF_ARRAY, CT_GGUF_I32, 1},
    {"tokenizer.ggml.bos_token_id", CT_GGUF_U32, 0, 0},
    {"tokenizer.ggml.eos_token_id", CT_GGUF_U32, 0, 0},
    {"tokenizer.ggml.padding_token_id", CT_GGUF_U32, 0, 0},
    {"tokenizer.ggml.unknown_token_id", CT_GGUF_U32, 0, 0},
    {"tokenizer.huggingface.json", CT_GGUF_STRING, 0, 1},
};

static void check_keys(const ct_gguf *g, const ct_tokenizer *tok, const ct_model_config *c) {
    size_t nk = sizeof k_keys / sizeof k_keys[0];
    for (size_t i = 0; i < ct_gguf_kv_count(g); i++) {
        const char *k = ct_gguf_kv_key(g, i);
        const ct_gguf_value *v = ct_gguf_kv_value(g, i);
        size_t r = 0;
        while (r < nk && strcmp(k_keys[r].key, k) != 0) r++;
        if (r == nk) fail_msg("key %s is not in the documented list", k);
        if (v->type != k_keys[r].type) fail_msg("key %s has GGUF type %d, CrispASR's is %d", k, v->type, k_keys[r].type);
        if (v->type == CT_GGUF_ARRAY && v->arr.elem != k_keys[r].elem)
            fail_msg("key %s: array of type %d, CrispASR's is %d", k, v->arr.elem, k_keys[r].elem);
    }
    for (size_t r = 0; r < nk; r++)
        if (k_keys[r].required && !ct_gguf_find(g, k_keys[r].key)) fail_msg("key %s is missing", k_keys[r].key);
    const char *s;
    CT_ASSERT_OK(ct_gguf_get_str(g, "general.architecture", &s));
    assert_string_equal(s, "cohere-transcribe");
    CT_ASSERT_OK(ct_gguf_get_str(g, "tokenizer.ggml.model", &s));
    assert_string_equal(s, "llama");
    int64_t v;
    CT_ASSERT_OK(ct_gguf_get_int(g, K("vocab_size"), 0, 1 << 24, &v));
    assert_int_equal(v, c->vocab_size);
    if (c->max_audio_clip_s > 0) {
        CT_ASSERT_OK(ct_gguf_get_int(g, K("audio.max_clip_s"), 0, 1 << 20, &v));
        assert_int_equal(v, (int64_t)c->max_audio_clip_s);
    }
    /* the id → piece list, whichever model type the tokenizer.json has */
    const ct_gguf_value *t = ct_gguf_find(g, "tokenizer.ggml.tokens");
    const ct_gguf_value *sc = ct_gguf_find(g, "tokenizer.ggml.scores");
    const ct_gguf_value *ty = ct_gguf_find(g, "tokenizer.ggml.token_type");
    int n = ct_tokenizer_vocab_size(tok);
    assert_int_equal(t->arr.n, n);
    assert_true(t->arr.n >= (uint64_t)c->vocab_size);
    assert_int_equal(sc->arr.n, n);
    assert_int_equal(ty->arr.n, n);
    for (int i = 0; i < n; i++) {
        assert_string_equal(t->arr.items[i].str.s, ct_tokenizer_piece(tok, i));
        int type = (int)ct_gguf_array_num(ty, (uint64_t)i);
        int byte = strlen(t->arr.items[i].str.s) == 6 && strncmp(t->arr.items[i].str.s, "<0x", 3) == 0;
        int want = ct_tokenizer_is_special(tok, i) ? 3 : byte ? 6 : 1;
        if (type != want) fail_msg("token %d (%s): type %d, want %d", i, t->arr.items[i].str.s, type, want);
    }
    CT_ASSERT_OK(ct_gguf_get_int(g, "tokenizer.ggml.eos_token_id", 0, n - 1, &v));
    assert_string_equal(t->arr.items[v].str.s, "<|endoftext|>");
}

/* The dtype the rule gives a GGUF tensor; `narrow` is what the matrices get. */
static ct_dtype rule_dtype(const ct_st_tensor *t, ct_dtype narrow) {
    size_t n = strlen(t->name);
    int pos_bias = n > 16 && (strcmp(t->name + n - 16, ".attn.pos_bias_u") == 0 ||
                              strcmp(t->name + n - 16, ".attn.pos_bias_v") == 0);
    return t->ndim == 1 || pos_bias ? CT_DTYPE_F32 : narrow;
}

static void assert_dtype(const ct_gguf *g, const char *name, ct_dtype want) {
    const ct_st_tensor *t = ct_gguf_find_tensor(g, name);
    if (!t) fail_msg("tensor %s is missing", name);
    if (t->dtype != want) fail_msg("tensor %s is %s, want %s", name, ct_dtype_name(t->dtype), ct_dtype_name(want));
}

static void check_tensors(const ct_gguf *g, const ct_model_config *c, ct_dtype narrow) {
    for (size_t i = 0; i < ct_gguf_tensor_count(g); i++) {
        const ct_st_tensor *t = ct_gguf_tensor_at(g, i);
        char nemo[256];
        if (ct_gguf_name_to_nemo(t->name, nemo, sizeof nemo) != CT_OK) fail_msg("tensor %s: not a CrispASR name", t->name);
        ct_dtype want = rule_dtype(t, narrow);
        if (t->dtype != want)
            fail_msg("tensor %s [%dD] is %s, the rule says %s", t->name, t->ndim, ct_dtype_name(t->dtype),
                     ct_dtype_name(want));
    }
    /* by name: what CrispASR's BatchNorm folding reads as float32, and what it narrows */
    char nm[128];
    const char *f32[] = {"conv.bn.mean", "conv.bn.var", "conv.bn.weight", "conv.bn.bias", "conv.dw.bias",
                         "attn.pos_bias_u", "attn.pos_bias_v", "ff1.norm.weight", "attn.q.bias"};
    for (int l = 0; l < c->enc_layers; l++)
        for (size_t k = 0; k < sizeof f32 / sizeof f32[0]; k++) {
            snprintf(nm, sizeof nm, "enc.blk.%d.%s", l, f32[k]);
            assert_dtype(g, nm, CT_DTYPE_F32);
        }
    const char *narrowed[] = {"enc.blk.0.attn.q.weight", "enc.blk.1.conv.dw.weight", "enc.blk.0.conv.pw1.weight",
                              "enc.pre.conv.0.weight",   "enc.pre.out.weight",       "fe.mel_fb",
                              "dec.emb.weight",          "dec.pos.weight",           "dec.head.weight",
                              "dec.blk.0.cross_k.weight"};
    for (size_t k = 0; k < sizeof narrowed / sizeof narrowed[0]; k++) assert_dtype(g, narrowed[k], narrow);
    assert_dtype(g, "fe.window", CT_DTYPE_F32);
    assert_dtype(g, "dec.head.bias", CT_DTYPE_F32);
    assert_dtype(g, "enc.pre.conv.0.bias", CT_DTYPE_F32);
    /* shapes CrispASR expects (torch order here) */
    const ct_st_tensor *fb = ct_gguf_find_tensor(g, "fe.mel_fb"), *win = ct_gguf_find_tensor(g, "fe.window");
    assert_int_equal(fb->ndim, 3);
    assert_true(fb->shape[0] == 1 && fb->shape[1] == 128 && fb->shape[2] == 257);
    assert_int_equal(win->ndim, 1);
    assert_int_equal(win->shape[0], 400);
}

static float *to_f32(const ct_st_tensor *t) {
    float *f = malloc(sizeof(float) * (size_t)t->numel + 4);
    CT_ASSERT_OK(ct_st_tensor_to_f32(t, f, (size_t)t->numel));
    return f;
}

static float round_to(float x, ct_dtype d) {
    if (d == CT_DTYPE_BF16) return ct_bf16_to_f32(ct_f32_to_bf16(x));
    if (d == CT_DTYPE_F16) return ct_f16_to_f32(ct_f32_to_f16(x));
    return x;
}

/* fe.* against the Hub-layout checkpoint's preprocessor.featurizer.{fb,window}
 * (bf16 in tiny-nemo, made by transformers' feature extractor and
 * torch.hann_window(400, periodic=False)): equal once rounded to bf16; the
 * window also against its formula. */
static void check_frontend(const ct_gguf *g, const ct_checkpoint *hub, int made) {
    const char *pairs[2][2] = {{"fe.mel_fb", "preprocessor.featurizer.fb"}, {"fe.window", "preprocessor.featurizer.window"}};
    for (int k = 0; k < 2; k++) {
        const ct_st_tensor *x = ct_gguf_find_tensor(g, pairs[k][0]), *y = ct_checkpoint_tensor(hub, pairs[k][1]);
        assert_non_null(y);
        assert_int_equal(x->numel, y->numel);
        float *fx = to_f32(x), *fy = to_f32(y);
        size_t nonzero = 0;
        for (int64_t i = 0; i < x->numel; i++) {
            /* f16 cannot be compared exactly with bf16: within one bf16 step then */
            int ok = x->dtype == CT_DTYPE_F16 ? fabsf(fx[i] - fy[i]) <= fabsf(fy[i]) / 256 + 1.2e-7f
                                              : round_to(fx[i], CT_DTYPE_BF16) == fy[i];
            if (!ok) fail_msg("%s[%lld] = %.9g, the Hub checkpoint has %.9g", pairs[k][0], (long long)i, fx[i], fy[i]);
            nonzero += fx[i] != 0;
        }
        assert_true(nonzero > (size_t)(k == 0 ? 256 : 390));
        free(fx);
        free(fy);
    }
    /* the window made here is Hann(400, periodic=False) to float32 rounding */
    const ct_st_tensor *w = ct_gguf_find_tensor(g, "fe.window");
    float *fw = to_f32(w);
    for (int i = 0; i < 400; i++) {
        double want = 0.5 - 0.5 * cos(2.0 * M_PI * i / 399.0);
        double tol = made ? 2.5e-7 : fabs(want) / 256; /* torch's float32 cos, bf16 */
        if (fabs(fw[i] - want) > tol) fail_msg("fe.window[%d] = %.9g, Hann gives %.9g", i, fw[i], want);
    }
    free(fw);
}

/* Every source tensor is in the GGUF (by its NeMo name through the GGUF
 * checkpoint) with the source's values rounded to the GGUF dtype. */
static void check_values(const ct_checkpoint *src, const char *gguf) {
    ct_checkpoint *ck;
    CT_ASSERT_OK(ct_checkpoint_open(gguf, &ck));
    size_t carried = 0;
    for (size_t i = 0; i < ct_checkpoint_count(src); i++) {
        const ct_st_tensor *x = ct_checkpoint_at(src, i), *y = ct_checkpoint_tensor(ck, x->name);
        if (strstr(x->name, "num_batches_tracked")) {
            assert_null(y);
            continue;
        }
        if (!y) fail_msg("%s is not in the GGUF", x->name);
        float *fx = to_f32(x), *fy = to_f32(y);
        for (int64_t k = 0; k < x->numel; k++)
            if (round_to(fx[k], y->dtype) != fy[k]) fail_msg("%s[%lld] differs", x->name, (long long)k);
        free(fx);
        free(fy);
        carried++;
    }
    assert_true(carried > 100);
    ct_checkpoint_free(ck);
}

static const char *dtype_arg_name(int d) { return d == CT_CONVERT_KEEP_DTYPE ? "keep" : ct_dtype_name((ct_dtype)d); }

/* Convert one variant at every dtype and check each file. */
static void check_variant(const char *fixture, const char *tokenizer_file, ct_dtype stored) {
    const char *dir = ct_test_model_copy(CT_FIXTURE(fixture), tokenizer_file);
    ct_checkpoint *src, *hub;
    CT_ASSERT_OK(ct_checkpoint_open(dir, &src));
    CT_ASSERT_OK(ct_checkpoint_open(CT_FIXTURE("tiny-nemo"), &hub));
    ct_tokenizer *tok;
    CT_ASSERT_OK(ct_convert_load_tokenizer(dir, &tok));
    const int dtypes[] = {CT_CONVERT_KEEP_DTYPE, CT_DTYPE_F32, CT_DTYPE_F16, CT_DTYPE_BF16};
    for (size_t k = 0; k < 4; k++) {
        char out[4096];
        snprintf(out, sizeof out, "%s/m-%s.gguf", dir, dtype_arg_name(dtypes[k]));
        CT_ASSERT_OK(ct_convert_to_gguf(dir, out, dtypes[k]));
        ct_gguf *g;
        CT_ASSERT_OK(ct_gguf_open(out, &g));
        assert_int_equal(ct_gguf_version(g), 3);
        ct_dtype narrow = dtypes[k] == CT_CONVERT_KEEP_DTYPE ? stored : (ct_dtype)dtypes[k];
        check_keys(g, tok, ct_checkpoint_config(src));
        check_tensors(g, ct_checkpoint_config(src), narrow);
        check_frontend(g, hub, !ct_checkpoint_tensor(src, "preprocessor.featurizer.fb"));
        check_values(src, out);
        /* the tokenizer it carries is the source's, byte for byte */
        char back[4096], src_tok[4096];
        snprintf(back, sizeof back, "%s/tok-back.json", dir);
        snprintf(src_tok, sizeof src_tok, "%s/tokenizer.json", dir);
        CT_ASSERT_OK(ct_convert_gguf_tokenizer(out, back));
        char *a, *b;
        size_t na, nb;
        CT_ASSERT_OK(ct_fs_read_all(src_tok, 1 << 24, &a, &na));
        CT_ASSERT_OK(ct_fs_read_all(back, 1 << 24, &b, &nb));
        assert_true(na == nb && memcmp(a, b, na) == 0);
        free(a);
        free(b);
        ct_gguf_free(g);
    }
    ct_tokenizer_free(tok);
    ct_checkpoint_free(hub);
    ct_checkpoint_free(src);
    ct_test_rmtree(dir);
}

static void test_hf_unigram(void **state) {
    (void)state;
    check_variant("tiny-hf", CT_FIXTURE("tokenizer.json"), CT_DTYPE_F32);
}
static void test_hf_bpe(void **state) {
    (void)state;
    check_variant("tiny-hf", CT_FIXTURE("tokenizer_bpe.json"), CT_DTYPE_F32);
}
static void test_nemo_unigram(void **state) {
    (void)state;
    check_variant("tiny-nemo", CT_FIXTURE("tokenizer.json"), CT_DTYPE_BF16);
}
static void test_nemo_bpe(void **state) {
    (void)state;
    check_variant("tiny-nemo", CT_FIXTURE("tokenizer_bpe.json"), CT_DTYPE_BF16);
}

/* At bf16 the two layouts give the same tensors: the transformers
 * checkpoint's weights are the Hub one's (bf16-exact), byte for byte, and the
 * fe.* made for it equal the Hub checkpoint's stored ones value for value. */
static void test_layouts_agree(void **state) {
    (void)state;
    const char *d = ct_test_tmpdir();
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/hf.gguf", d);
    snprintf(b, sizeof b, "%s/nemo.gguf", d);
    CT_ASSERT_OK(ct_convert_to_gguf(CT_FIXTURE("tiny-hf"), a, CT_DTYPE_BF16));
    CT_ASSERT_OK(ct_convert_to_gguf(CT_FIXTURE("tiny-nemo"), b, CT_DTYPE_BF16));
    ct_gguf *ga, *gb;
    CT_ASSERT_OK(ct_gguf_open(a, &ga));
    CT_ASSERT_OK(ct_gguf_open(b, &gb));
    assert_int_equal(ct_gguf_tensor_count(ga), ct_gguf_tensor_count(gb));
    for (size_t i = 0; i < ct_gguf_tensor_count(ga); i++) {
        const ct_st_tensor *x = ct_gguf_tensor_at(ga, i), *y = ct_gguf_find_tensor(gb, x->name);
        if (!y) fail_msg("%s only in the transformers-layout file", x->name);
        assert_int_equal(x->dtype, y->dtype);
        assert_int_equal(x->nbytes, y->nbytes);
        if (strcmp(x->name, "fe.mel_fb") == 0) assert_int_equal(x->dtype, CT_DTYPE_BF16);
        if (strncmp(x->name, "fe.", 3) == 0) {
            /* equal values (the Hub's filterbank has -0.0 where ours has +0.0);
             * fe.window is F32 in both, from float32 here and from bf16 there */
            float *fx = to_f32(x), *fy = to_f32(y);
            for (int64_t k = 0; k < x->numel; k++)
                if (round_to(fx[k], CT_DTYPE_BF16) != fy[k]) fail_msg("%s[%lld]: %.9g vs the Hub's %.9g", x->name, (long long)k, fx[k], fy[k]);
            free(fx);
            free(fy);
        } else if (memcmp(x->data, y->data, x->nbytes)) {
            fail_msg("%s differs between the layouts", x->name);
        }
    }
    ct_gguf_free(ga);
    ct_gguf_free(gb);
    ct_test_rmtree(d);
}

/* ---- issue 10 item 6: vocabularies the engine refuses ---------------------- */

/* The conversion of tiny-hf with this tokenizer.json text is refused with
 * `want`, and no file appears. */
static void expect_refused(const char *tokenizer_text, const char *want) {
    const char *dir = ct_test_model_copy(CT_FIXTURE("tiny-hf"), CT_FIXTURE("tokenizer.json"));
    ct_test_write_text(dir, "tokenizer.json", tokenizer_text);
    char out[4096];
    snprintf(out, sizeof out, "%s/m.gguf", dir);
    ct_status s = ct_convert_to_gguf(dir, out, CT_CONVERT_KEEP_DTYPE);
    if (s != CT_ERR_FORMAT) fail_msg("converted (%s: %s), want a refusal with '%s'", ct_status_str(s), ct_last_error(), want);
    CT_ASSERT_ERROR_HAS(want);
    assert_false(ct_fs_is_file(out));
    ct_test_rmtree(dir);
}

static char *fixture_text(const char *name) {
    char *t;
    size_t n;
    CT_ASSERT_OK(ct_fs_read_all(CT_FIXTURE(name), 1 << 24, &t, &n));
    return t;
}

/* The fixture's Unigram tokenizer with only its first `keep` pieces (and the
 * added tokens among them): well-formed, only short. With keep > 0 the last
 * piece becomes "▁" (id 322 in the fixture), so that every prompt token is
 * still there and only the size is wrong. */
static char *truncated_vocab(size_t keep) {
    json_error_t e;
    json_t *root = json_load_file(CT_FIXTURE("tokenizer.json"), 0, &e);
    assert_non_null(root);
    json_t *vocab = json_object_get(json_object_get(root, "model"), "vocab");
    while (json_array_size(vocab) > keep) json_array_remove(vocab, json_array_size(vocab) - 1);
    if (keep) json_array_set_new(json_array_get(vocab, keep - 1), 0, json_string("\xe2\x96\x81"));
    json_t *added = json_object_get(root, "added_tokens");
    for (size_t i = json_array_size(added); i-- > 0;)
        if (json_integer_value(json_object_get(json_array_get(added, i), "id")) >= (json_int_t)keep)
            json_array_remove(added, i);
    char *t = json_dumps(root, JSON_INDENT(2));
    json_decref(root);
    return t;
}

static void test_refuses_bad_vocab(void **state) {
    (void)state;
    /* empty vocabulary */
    char *t = truncated_vocab(0);
    expect_refused(t, "model.vocab must be a non-empty array");
    free(t);
    /* 100 pieces for a 495-token model */
    t = truncated_vocab(100);
    expect_refused(t, "tokenizer has 100 pieces, the model 495");
    free(t);
    /* no <|endoftext|>: renamed in the vocab and the added tokens */
    t = fixture_text("tokenizer.json");
    for (char *p = t; (p = strstr(p, "<|endoftext|>")); p++) memcpy(p, "<|endoftexx|>", 13);
    expect_refused(t, "missing prompt token <|endoftext|>");
    free(t);
    /* the BPE layout too */
    t = fixture_text("tokenizer_bpe.json");
    for (char *p = t; (p = strstr(p, "<|endoftext|>")); p++) memcpy(p, "<|endoftexx|>", 13);
    expect_refused(t, "missing prompt token <|endoftext|>");
    free(t);
    /* no tokenizer.json at all: not a model the engine runs */
    const char *dir = ct_test_model_copy(CT_FIXTURE("tiny-hf"), CT_FIXTURE("tokenizer.json"));
    char p[4096], out[4096];
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    assert_int_equal(remove(p), 0);
    snprintf(out, sizeof out, "%s/m.gguf", dir);
    CT_ASSERT_STATUS(ct_convert_to_gguf(dir, out, CT_CONVERT_KEEP_DTYPE), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS("no tokenizer.json");
    assert_false(ct_fs_is_file(out));
    ct_test_rmtree(dir);
}

/* src → dst with every tokenizer.* key left out except a tokens list of the
 * first n_tokens pieces (none when < 0), and tokenizer.huggingface.json kept
 * when keep_json: GGUFs that another writer (or an edit) could produce. */
static void copy_with_vocab(const char *src, const char *dst, int n_tokens, int keep_json) {
    ct_gguf *g;
    CT_ASSERT_OK(ct_gguf_open(src, &g));
    ct_gguf_writer *w;
    CT_ASSERT_OK(ct_gguf_writer_create(dst, &w));
    for (size_t i = 0; i < ct_gguf_kv_count(g); i++) {
        const char *k = ct_gguf_kv_key(g, i);
        const ct_gguf_value *v = ct_gguf_kv_value(g, i);
        if (!strcmp(k, "tokenizer.ggml.tokens")) {
            if (n_tokens < 0) continue;
            const char **p = malloc(sizeof *p * (size_t)n_tokens + 1);
            for (int t = 0; t < n_tokens; t++) p[t] = v->arr.items[t].str.s;
            CT_ASSERT_OK(ct_gguf_writer_set_str_array(w, k, p, (size_t)n_tokens));
            free(p);
        } else if (!strcmp(k, "tokenizer.huggingface.json")) {
            if (keep_json) CT_ASSERT_OK(ct_gguf_writer_set_str(w, k, v->str.s));
        } else if (!strncmp(k, "tokenizer.", 10)) {
            continue;
        } else if (v->type == CT_GGUF_U32) {
            CT_ASSERT_OK(ct_gguf_writer_set_u32(w, k, (uint32_t)v->u));
        } else if (v->type == CT_GGUF_STRING) {
            CT_ASSERT_OK(ct_gguf_writer_set_str(w, k, v->str.s));
        } else if (v->type == CT_GGUF_ARRAY && v->arr.elem == CT_GGUF_STRING) {
            const char **p = malloc(sizeof *p * (size_t)v->arr.n + 1);
            for (uint64_t t = 0; t < v->arr.n; t++) p[t] = v->arr.items[t].str.s;
            CT_ASSERT_OK(ct_gguf_writer_set_str_array(w, k, p, (size_t)v->arr.n));
            free(p);
        } else {
            fail_msg("key %s: type %d not copied", k, v->type);
        }
    }
    for (size_t i = 0; i < ct_gguf_tensor_count(g); i++) {
        const ct_st_tensor *t = ct_gguf_tensor_at(g, i);
        CT_ASSERT_OK(ct_gguf_writer_add_tensor(w, t->name, t->dtype, t->ndim, t->shape));
    }
    for (size_t i = 0; i < ct_gguf_tensor_count(g); i++) CT_ASSERT_OK(ct_gguf_writer_write(w, ct_gguf_tensor_at(g, i)->data));
    CT_ASSERT_OK(ct_gguf_writer_finish(w));
    ct_gguf_writer_free(w);
    ct_gguf_free(g);
}

/* GGUF → directory refuses a vocabulary the engine would refuse, before
 * writing anything; ct_convert_load_tokenizer (what fetch --check uses) reads
 * the same vocabulary. */
static void test_from_gguf_refuses_bad_vocab(void **state) {
    (void)state;
    const char *d = ct_test_tmpdir();
    char good[4096], bad[4096], out[4096];
    snprintf(good, sizeof good, "%s/good.gguf", d);
    snprintf(bad, sizeof bad, "%s/bad.gguf", d);
    snprintf(out, sizeof out, "%s/out", d);
    CT_ASSERT_OK(ct_convert_to_gguf(CT_FIXTURE("tiny-hf"), good, CT_CONVERT_KEEP_DTYPE));
    /* CrispASR-style: tokens only, no embedded file: still runs */
    copy_with_vocab(good, bad, 495, 0);
    ct_tokenizer *tok;
    CT_ASSERT_OK(ct_convert_load_tokenizer(bad, &tok));
    assert_int_equal(ct_tokenizer_vocab_size(tok), 495);
    CT_ASSERT_OK(ct_tokenizer_check_model(tok, 495, -1, bad, NULL));
    ct_tokenizer_free(tok);
    CT_ASSERT_OK(ct_convert_from_gguf(bad, out, CT_CONVERT_KEEP_DTYPE));
    ct_test_rmtree(d);
    d = ct_test_tmpdir();
    snprintf(good, sizeof good, "%s/good.gguf", d);
    snprintf(bad, sizeof bad, "%s/bad.gguf", d);
    snprintf(out, sizeof out, "%s/out", d);
    CT_ASSERT_OK(ct_convert_to_gguf(CT_FIXTURE("tiny-hf"), good, CT_CONVERT_KEEP_DTYPE));
    /* no vocabulary */
    copy_with_vocab(good, bad, -1, 0);
    CT_ASSERT_STATUS(ct_convert_from_gguf(bad, out, CT_CONVERT_KEEP_DTYPE), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS("carries no vocabulary");
    assert_false(ct_fs_is_dir(out));
    /* 100 tokens for a 495-token model */
    copy_with_vocab(good, bad, 100, 0);
    CT_ASSERT_STATUS(ct_convert_from_gguf(bad, out, CT_CONVERT_KEEP_DTYPE), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("bad.gguf: missing prompt token");
    assert_false(ct_fs_is_dir(out));
    CT_ASSERT_STATUS(ct_convert_load_tokenizer(bad, &tok), CT_ERR_FORMAT);
    /* tokens edited after conversion: they no longer match the embedded file */
    copy_with_vocab(good, bad, 494, 1);
    CT_ASSERT_STATUS(ct_convert_from_gguf(bad, out, CT_CONVERT_KEEP_DTYPE), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("tokenizer.huggingface.json has 495 pieces, tokenizer.ggml.tokens 494");
    assert_false(ct_fs_is_dir(out));
    ct_test_rmtree(d);
}

/* The shared check itself, on the fixture tokenizer. */
static void test_check_model(void **state) {
    (void)state;
    ct_tokenizer *tok;
    CT_ASSERT_OK(ct_tokenizer_load(CT_FIXTURE("tokenizer.json"), &tok));
    int32_t eos = 0;
    CT_ASSERT_OK(ct_tokenizer_check_model(tok, 495, -1, "m", &eos));
    assert_int_equal(eos, 3);
    CT_ASSERT_OK(ct_tokenizer_check_model(tok, 400, 7, "m", &eos));
    assert_int_equal(eos, 7);
    CT_ASSERT_STATUS(ct_tokenizer_check_model(tok, 496, -1, "m", &eos), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("m: tokenizer has 495 pieces, the model 496");
    assert_int_equal(eos, -1);
    CT_ASSERT_STATUS(ct_tokenizer_check_model(tok, 100, 200, "m", NULL), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("end-of-text id 200 is outside the model's 100 output ids");
    ct_tokenizer_free(tok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hf_unigram),    cmocka_unit_test(test_hf_bpe),
        cmocka_unit_test(test_nemo_unigram),  cmocka_unit_test(test_nemo_bpe),
        cmocka_unit_test(test_layouts_agree), cmocka_unit_test(test_refuses_bad_vocab),
        cmocka_unit_test(test_check_model),   cmocka_unit_test(test_from_gguf_refuses_bad_vocab),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
