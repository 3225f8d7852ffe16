/* test_checkpoint.c — opening model directories: both layouts written by the
 * random-model writer load to identical tensors and sizes; sizes are derived
 * from tensors and a disagreeing config, a missing or misshapen tensor, a
 * non-float weight, a doubled name are refused naming the tensor; a sharded
 * copy loads the same; the committed fixtures (tiny-hf f32, tiny-nemo bf16)
 * load to identical values. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/weights.h"
#include "core/fs.h"
#include "model/checkpoint.h"
#include "model/random_model.h"
#include "model_testutil.h"
#include "testutil.h"

static void write_model(const char *dir, ct_config_layout layout, ct_dtype dt) {
    ct_random_model_opts o = ct_test_tiny_model(11);
    o.layout = layout;
    o.dtype = dt;
    CT_ASSERT_OK(ct_random_model_write(&o, dir));
}

static void assert_same_sizes(const ct_model_config *a, const ct_model_config *b) {
    assert_int_equal(a->enc_layers, b->enc_layers);
    assert_int_equal(a->enc_d_model, b->enc_d_model);
    assert_int_equal(a->enc_heads, b->enc_heads);
    assert_int_equal(a->enc_ff, b->enc_ff);
    assert_int_equal(a->enc_conv_kernel, b->enc_conv_kernel);
    assert_int_equal(a->subsampling_channels, b->subsampling_channels);
    assert_int_equal(a->subsampling_factor, b->subsampling_factor);
    assert_int_equal(a->n_mels, b->n_mels);
    assert_int_equal(a->dec_layers, b->dec_layers);
    assert_int_equal(a->dec_d_model, b->dec_d_model);
    assert_int_equal(a->dec_heads, b->dec_heads);
    assert_int_equal(a->dec_ff, b->dec_ff);
    assert_int_equal(a->dec_max_positions, b->dec_max_positions);
    assert_int_equal(a->vocab_size, b->vocab_size);
    assert_int_equal(a->eos_id, b->eos_id);
    assert_int_equal(a->pad_id, b->pad_id);
    assert_int_equal(a->bos_id, b->bos_id);
    assert_int_equal(a->decoder_start_id, b->decoder_start_id);
}

static void test_layouts_agree(void **state) {
    (void)state;
    const char *d1 = ct_test_tmpdir(), *d2 = ct_test_tmpdir();
    write_model(d1, CT_CONFIG_TRANSFORMERS, CT_DTYPE_F32);
    write_model(d2, CT_CONFIG_NEMO, CT_DTYPE_BF16);
    ct_checkpoint *a, *b;
    CT_ASSERT_OK(ct_checkpoint_open(d1, &a));
    CT_ASSERT_OK(ct_checkpoint_open(d2, &b));
    const ct_model_config *ca = ct_checkpoint_config(a), *cb = ct_checkpoint_config(b);
    assert_int_equal(ca->layout, CT_CONFIG_TRANSFORMERS);
    assert_int_equal(cb->layout, CT_CONFIG_NEMO);
    assert_int_equal(ca->enc_layers, 2);
    assert_int_equal(ca->enc_d_model, 64);
    assert_int_equal(ca->enc_heads, 4);
    assert_int_equal(ca->enc_ff, 256);
    assert_int_equal(ca->dec_ff, 128);
    assert_int_equal(ca->vocab_size, 400);
    assert_int_equal(ca->decoder_start_id, ct_random_model_min_vocab() - 1);
    assert_same_sizes(ca, cb);
    assert_int_equal(ct_checkpoint_count(a), ct_checkpoint_count(b));
    ct_test_assert_tensors_in(a, b);
    /* names are normalised: no model. prefix, head unprefixed */
    assert_non_null(ct_checkpoint_tensor(a, "encoder.layers.1.self_attn.pos_bias_u"));
    assert_null(ct_checkpoint_tensor(a, "model.encoder.layers.1.self_attn.pos_bias_u"));
    assert_non_null(ct_checkpoint_tensor(a, "log_softmax.mlp.layer0.bias"));
    assert_int_equal(ct_checkpoint_tensor(b, "encoder.layers.0.conv.depthwise_conv.weight")->dtype, CT_DTYPE_BF16);

    const ct_st_tensor *t;
    int64_t good[2] = {4, 16}, bad[2] = {16, 4};
    CT_ASSERT_OK(ct_checkpoint_expect(a, "encoder.layers.0.self_attn.pos_bias_v", 2, good, &t));
    assert_non_null(t);
    CT_ASSERT_STATUS(ct_checkpoint_expect(a, "encoder.layers.0.self_attn.pos_bias_v", 2, bad, &t), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("'encoder.layers.0.self_attn.pos_bias_v' has shape [4, 16], expected [16, 4]");
    assert_null(t);
    CT_ASSERT_STATUS(ct_checkpoint_expect(a, "encoder.layers.0.self_attn.pos_bias_v", 1, good, &t), CT_ERR_FORMAT);
    CT_ASSERT_STATUS(ct_checkpoint_expect(a, "encoder.layers.9.norm_out.weight", 1, good, &t), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS("'encoder.layers.9.norm_out.weight' is missing");
    /* released pages read back the same bytes (they fault in from the file) */
    const ct_st_tensor *big = ct_checkpoint_tensor(a, "transf_decoder._embedding.token_embedding.weight");
    void *copy = malloc(big->nbytes);
    memcpy(copy, big->data, big->nbytes);
    ct_checkpoint_release(a, big);
    ct_checkpoint_release(a, ct_checkpoint_tensor(a, "encoder.layers.0.norm_out.bias"));
    ct_checkpoint_release(NULL, big);
    assert_memory_equal(big->data, copy, big->nbytes);
    free(copy);
    ct_checkpoint_free(a);
    ct_checkpoint_free(b);
    ct_checkpoint_free(NULL);

    /* The same seed gives the same bytes; another seed other values. */
    const char *d3 = ct_test_tmpdir();
    write_model(d3, CT_CONFIG_TRANSFORMERS, CT_DTYPE_F32);
    char p1[4096], p3[4096];
    snprintf(p1, sizeof p1, "%s/model.safetensors", d1);
    snprintf(p3, sizeof p3, "%s/model.safetensors", d3);
    char *b1, *b3;
    size_t n1, n3;
    CT_ASSERT_OK(ct_fs_read_all(p1, 1 << 26, &b1, &n1));
    CT_ASSERT_OK(ct_fs_read_all(p3, 1 << 26, &b3, &n3));
    assert_int_equal(n1, n3);
    assert_memory_equal(b1, b3, n1);
    free(b3);
    ct_random_model_opts o = ct_test_tiny_model(11);
    o.seed = 12;
    CT_ASSERT_OK(ct_random_model_write(&o, d3));
    CT_ASSERT_OK(ct_fs_read_all(p3, 1 << 26, &b3, &n3));
    assert_int_equal(n1, n3);
    assert_true(memcmp(b1, b3, n1) != 0);
    free(b1);
    free(b3);
    ct_test_rmtree(d1);
    ct_test_rmtree(d2);
    ct_test_rmtree(d3);
}

static void test_full_size_count(void **state) {
    (void)state;
    /* MODEL.md: 2,065,647,872 parameters; the BatchNorm running statistics
     * (2 × 48 × 1280) are buffers, not parameters, in torch's count. */
    ct_random_model_opts o = ct_random_model_default_options();
    assert_int_equal(ct_random_model_param_count(&o) - 2 * 48 * 1280, 2065647872LL);
}

/* Rewrite dir/model.safetensors: drop `drop`, give `reshape` a new last
 * dimension, store `retype` as I32, add `alias` as a second copy of the
 * tensor named `alias_of`. */
typedef struct edit {
    const char *drop, *reshape, *retype, *alias, *alias_of;
} edit;

static void rewrite(const char *dir, edit e) {
    char p[4096], q[4096];
    snprintf(p, sizeof p, "%s/model.safetensors", dir);
    snprintf(q, sizeof q, "%s/model.safetensors.old", dir);
    assert_int_equal(rename(p, q), 0);
    ct_safetensors *st;
    CT_ASSERT_OK(ct_st_open(q, &st));
    ct_st_writer *w;
    CT_ASSERT_OK(ct_st_writer_create(p, &w));
    const ct_st_tensor *alias_src = NULL;
    for (size_t i = 0; i < ct_st_count(st); i++) {
        const ct_st_tensor *t = ct_st_at(st, i);
        if (e.drop && !strcmp(t->name, e.drop)) continue;
        int64_t sh[8];
        memcpy(sh, t->shape, sizeof sh);
        ct_dtype dt = t->dtype;
        if (e.reshape && !strcmp(t->name, e.reshape)) {
            sh[0] = t->shape[0] * t->shape[t->ndim - 1];
            for (int k = 1; k < t->ndim; k++) sh[k] = 1;
            if (t->ndim == 1) sh[0] = t->shape[0];
            if (t->ndim == 1) fail_msg("reshape needs a 2-d+ tensor");
        }
        if (e.retype && !strcmp(t->name, e.retype)) dt = CT_DTYPE_I32;
        CT_ASSERT_OK(ct_st_writer_add(w, t->name, dt, t->ndim, sh));
        if (e.alias_of && !strcmp(t->name, e.alias_of)) alias_src = t;
    }
    if (e.alias) {
        assert_non_null(alias_src);
        CT_ASSERT_OK(ct_st_writer_add(w, e.alias, alias_src->dtype, alias_src->ndim, alias_src->shape));
    }
    for (size_t i = 0; i < ct_st_count(st); i++) {
        const ct_st_tensor *t = ct_st_at(st, i);
        if (e.drop && !strcmp(t->name, e.drop)) continue;
        CT_ASSERT_OK(ct_st_writer_write(w, t->data));
    }
    if (e.alias) CT_ASSERT_OK(ct_st_writer_write(w, alias_src->data));
    CT_ASSERT_OK(ct_st_writer_finish(w));
    ct_st_writer_free(w);
    ct_st_free(st);
    remove(q);
}

/* Replace the first occurrence of `from` in dir/name by `to`. */
static void patch_file(const char *dir, const char *name, const char *from, const char *to) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    char *buf;
    size_t n;
    CT_ASSERT_OK(ct_fs_read_all(p, 1 << 20, &buf, &n));
    char *at = strstr(buf, from);
    if (!at) fail_msg("%s has no '%s'", name, from);
    size_t fl = strlen(from), tl = strlen(to);
    char *out = malloc(n - fl + tl + 1);
    memcpy(out, buf, (size_t)(at - buf));
    memcpy(out + (at - buf), to, tl);
    strcpy(out + (at - buf) + tl, at + fl);
    ct_test_write_file(p, out, strlen(out));
    free(out);
    free(buf);
}

static void expect_refused(const char *dir, ct_status want, const char *sub) {
    ct_checkpoint *ck = (ct_checkpoint *)0x1;
    ct_status s = ct_checkpoint_open(dir, &ck);
    if (s != want) fail_msg("got %s (%s), want %s", ct_status_str(s), ct_last_error(), ct_status_str(want));
    assert_null(ck);
    CT_ASSERT_ERROR_HAS(sub);
}

/* Issue 10 item 4: a NaN or infinity in any weight the model uses, in each
 * stored float type, is refused at open naming the tensor and the element
 * (before, NaN weights gave exit 0 and an empty text). */
static void test_non_finite_weights_refused(void **state) {
    (void)state;
    static const ct_dtype dts[] = {CT_DTYPE_F32, CT_DTYPE_BF16, CT_DTYPE_F16};
    for (size_t d = 0; d < 3; d++) {
        for (int inf = 0; inf < 2; inf++) {
            const char *dir = ct_test_tmpdir();
            write_model(dir, CT_CONFIG_TRANSFORMERS, dts[d]);
            char path[4096];
            snprintf(path, sizeof path, "%s/model.safetensors", dir);
            char *file;
            size_t len;
            CT_ASSERT_OK(ct_fs_read_all(path, (size_t)1 << 30, &file, &len));
            ct_safetensors *st;
            CT_ASSERT_OK(ct_st_open(path, &st));
            const ct_st_tensor *big = NULL;
            for (size_t i = 0; i < ct_st_count(st); i++)
                if (!big || ct_st_at(st, i)->nbytes > big->nbytes) big = ct_st_at(st, i);
            /* the tensor's bytes in the file copy: random weights are unique */
            char *at = memmem(file, len, big->data, 32);
            assert_non_null(at);
            size_t es = ct_dtype_size(big->dtype);
            uint32_t f32 = inf ? 0x7f800000u : 0x7fc00000u;
            uint16_t h = big->dtype == CT_DTYPE_BF16 ? (inf ? 0x7f80u : 0x7fc0u) : (inf ? 0x7c00u : 0x7e00u);
            if (es == 4) memcpy(at + 5 * es, &f32, 4);
            else memcpy(at + 5 * es, &h, 2);
            char want[512];
            const char *nm = strncmp(big->name, "model.", 6) == 0 ? big->name + 6 : big->name;
            snprintf(want, sizeof want, "tensor '%s' holds a non-finite weight (%s at element 5)", nm,
                     inf ? "infinity" : "NaN");
            ct_st_free(st);
            ct_test_write_file(path, file, len);
            free(file);
            ct_checkpoint *ck = NULL;
            CT_ASSERT_STATUS(ct_checkpoint_open(dir, &ck), CT_ERR_FORMAT);
            CT_ASSERT_ERROR_HAS(want);
            assert_null(ck);
            /* Opened unchecked, the weight loader refuses it in its single
             * pass, with the same message: in place (stored dtype = compute
             * dtype, zero-copy) and converted alike. */
            CT_ASSERT_OK(ct_checkpoint_open_unchecked(dir, &ck));
            assert_int_equal(ct_checkpoint_finite_checked(ck), 0);
            ct_backend *be;
            CT_ASSERT_OK(ct_backend_create("cpu", NULL, &be));
            static const ct_dtype wdts[] = {CT_DTYPE_F32, CT_DTYPE_BF16};
            for (int w = 0; w < 4; w++) {
                ct_asr_weights aw;
                CT_ASSERT_STATUS((w < 2 ? ct_asr_weights_map_checkpoint : ct_asr_weights_from_checkpoint)(
                                     be, ck, wdts[w % 2], &aw),
                                 CT_ERR_FORMAT);
                CT_ASSERT_ERROR_HAS(want);
                CT_ASSERT_ERROR_HAS(dir);
            }
            ct_backend_free(be);
            ct_checkpoint_free(ck);
            ct_test_rmtree(dir);
        }
    }
}

/* Issue 16 item 4: weights already in the compute dtype are the checkpoint's
 * own mapped bytes (not owned, no copy); others are converted copies equal
 * to the element-wise conversion. */
static void test_weights_in_place(void **state) {
    (void)state;
    static const ct_dtype dts[] = {CT_DTYPE_F32, CT_DTYPE_BF16};
    ct_backend *be;
    CT_ASSERT_OK(ct_backend_create("cpu", NULL, &be));
    for (size_t d = 0; d < 2; d++) {
        const char *dir = ct_test_tmpdir();
        write_model(dir, CT_CONFIG_TRANSFORMERS, dts[d]);
        ct_checkpoint *ck;
        CT_ASSERT_OK(ct_checkpoint_open_unchecked(dir, &ck));
        const ct_st_tensor *q = ct_checkpoint_tensor(ck, "encoder.layers.0.self_attn.linear_q.weight");
        const ct_st_tensor *g = ct_checkpoint_tensor(ck, "encoder.layers.0.norm_out.weight");
        assert_non_null(q);
        assert_non_null(g);
        for (size_t w = 0; w < 2; w++) {
            ct_asr_weights aw;
            CT_ASSERT_OK(ct_asr_weights_map_checkpoint(be, ck, dts[w], &aw));
            const ct_tensor *wq = &aw.enc[0].wq, *lg = &aw.enc[0].ln_out_g;
            if (w == d) { /* same dtype: a view of the mapping */
                assert_ptr_equal(wq->data, q->data);
                assert_null(wq->owner);
                assert_true(aw.borrowed_bytes >= wq->nbytes);
            } else {
                assert_ptr_not_equal(wq->data, q->data);
                assert_non_null(wq->owner);
                for (int64_t i = 0; i < ct_tensor_numel(wq); i++) {
                    float src;
                    CT_ASSERT_OK(ct_convert_to_f32(&src, (const char *)q->data + i * ct_dtype_size(q->dtype), q->dtype, 1));
                    if (dts[w] == CT_DTYPE_F32) assert_true(((const float *)wq->data)[i] == src);
                    else assert_int_equal(((const uint16_t *)wq->data)[i], ct_f32_to_bf16(src));
                }
            }
            /* norms compute in f32: in place only from an f32 checkpoint */
            assert_true((lg->data == g->data) == (dts[d] == CT_DTYPE_F32));
            assert_true(aw.borrowed_bytes < aw.bytes);
            ct_asr_weights_free(&aw);
            /* the copying loader never borrows: the checkpoint may go first */
            CT_ASSERT_OK(ct_asr_weights_from_checkpoint(be, ck, dts[w], &aw));
            assert_ptr_not_equal(aw.enc[0].wq.data, q->data);
            assert_non_null(aw.enc[0].wq.owner);
            assert_int_equal(aw.borrowed_bytes, 0);
            ct_asr_weights_free(&aw);
        }
        ct_checkpoint_free(ck);
        ct_test_rmtree(dir);
    }
    ct_backend_free(be);
}

static void test_refusals(void **state) {
    (void)state;
    struct {
        ct_config_layout layout;
        edit e;
        const char *cfg_from, *cfg_to;
        ct_status want;
        const char *sub;
    } cases[] = {
        {CT_CONFIG_TRANSFORMERS, {0}, "\"hidden_size\": 64,\n    \"initializer_range\"",
         "\"hidden_size\": 128,\n    \"initializer_range\"", CT_ERR_FORMAT,
         "the config says encoder d_model = 128 but tensor 'encoder.pre_encode.out.weight' implies 64"},
        {CT_CONFIG_TRANSFORMERS, {0}, "\"num_hidden_layers\": 2,\n    \"num_key", "\"num_hidden_layers\": 3,\n    \"num_key",
         CT_ERR_FORMAT, "encoder layers = 3 but tensor 'encoder.layers.N' implies 2"},
        {CT_CONFIG_TRANSFORMERS, {0}, "\"vocab_size\": 400", "\"vocab_size\": 401", CT_ERR_FORMAT,
         "vocab size = 401 but tensor 'transf_decoder._embedding.token_embedding.weight' implies 400"},
        {CT_CONFIG_TRANSFORMERS, {0}, "\"max_position_embeddings\": 128", "\"max_position_embeddings\": 1024",
         CT_ERR_FORMAT, "decoder positions = 1024 but tensor 'transf_decoder._embedding.position_embedding.pos_enc'"},
        {CT_CONFIG_TRANSFORMERS, {0}, "\"intermediate_size\": 128", "\"intermediate_size\": 256", CT_ERR_FORMAT,
         "decoder feed-forward size = 256 but tensor 'transf_decoder._decoder.layers.0.third_sub_layer.dense_in.weight'"},
        {CT_CONFIG_TRANSFORMERS, {0}, "\"num_attention_heads\": 4,\n    \"num_hidden_layers\": 2,\n    \"num_key",
         "\"num_attention_heads\": 8,\n    \"num_hidden_layers\": 2,\n    \"num_key", CT_ERR_FORMAT,
         "encoder heads = 8 but tensor 'encoder.layers.0.self_attn.pos_bias_u' implies 4"},
        {CT_CONFIG_TRANSFORMERS, {0}, "\"vocab_size\": 400", "\"vocab_size\": 400, \"quantization_config\": {\"quant_method\": \"gptq\"}",
         CT_ERR_UNSUPPORTED, "quantization_config present (quant_method 'gptq')"},
        {CT_CONFIG_NEMO, {0}, "\"num_attention_heads\": 4,", "", CT_ERR_FORMAT,
         "does not give the decoder's attention heads"},
        {CT_CONFIG_NEMO, {0}, "\"ff_expansion_factor\": 4", "\"ff_expansion_factor\": 2", CT_ERR_FORMAT,
         "encoder feed-forward size = 128 but tensor 'encoder.layers.0.feed_forward1.linear1.weight' implies 256"},
        {CT_CONFIG_NEMO, {0}, "\"conv_kernel_size\": 9", "\"conv_kernel_size\": 31", CT_ERR_FORMAT,
         "conv kernel size = 31 but tensor 'encoder.layers.0.conv.depthwise_conv.weight' implies 9"},
        {CT_CONFIG_NEMO, {0}, "\"subsampling_conv_channels\": 16", "\"subsampling_conv_channels\": 256",
         CT_ERR_FORMAT, "subsampling channels = 256 but tensor 'encoder.pre_encode.conv.0.weight' implies 16"},
        {CT_CONFIG_NEMO, {0}, "\"window_stride\": 0.01", "\"window_stride\": 0.02", CT_ERR_UNSUPPORTED, "hop 320"},
        {CT_CONFIG_NEMO, {.drop = "encoder.layers.1.conv.batch_norm.running_var"}, 0, 0, CT_ERR_NOT_FOUND,
         "tensor 'encoder.layers.1.conv.batch_norm.running_var' is missing"},
        {CT_CONFIG_TRANSFORMERS, {.drop = "log_softmax.mlp.layer0.bias"}, 0, 0, CT_ERR_NOT_FOUND,
         "tensor 'log_softmax.mlp.layer0.bias' is missing"},
        {CT_CONFIG_TRANSFORMERS, {.drop = "model.encoder.pre_encode.conv.0.weight"}, 0, 0, CT_ERR_NOT_FOUND,
         "tensor 'encoder.pre_encode.conv.0.weight' is missing"},
        {CT_CONFIG_NEMO, {.reshape = "transf_decoder._decoder.layers.1.second_sub_layer.key_net.weight"}, 0, 0,
         CT_ERR_FORMAT, "tensor 'transf_decoder._decoder.layers.1.second_sub_layer.key_net.weight' has shape [4096, 1], expected [64, 64]"},
        {CT_CONFIG_NEMO, {.reshape = "encoder.layers.1.conv.pointwise_conv1.weight"}, 0, 0, CT_ERR_FORMAT,
         "tensor 'encoder.layers.1.conv.pointwise_conv1.weight' has shape [128, 1, 1], expected [128, 64, 1]"},
        {CT_CONFIG_NEMO, {.retype = "encoder.layers.0.norm_out.weight"}, 0, 0, CT_ERR_FORMAT,
         "tensor 'encoder.layers.0.norm_out.weight' has dtype I32"},
        {CT_CONFIG_TRANSFORMERS, {.alias = "encoder_decoder_proj.bias", .alias_of = "model.encoder_decoder_proj.bias"}, 0, 0,
         CT_ERR_FORMAT, "'encoder_decoder_proj.bias' is stored both with and without the 'model.' prefix"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *dir = ct_test_tmpdir();
        write_model(dir, cases[i].layout, cases[i].layout == CT_CONFIG_NEMO ? CT_DTYPE_BF16 : CT_DTYPE_F32);
        if (cases[i].cfg_from) patch_file(dir, "config.json", cases[i].cfg_from, cases[i].cfg_to);
        edit e = cases[i].e;
        if (e.drop || e.reshape || e.retype || e.alias) rewrite(dir, e);
        expect_refused(dir, cases[i].want, cases[i].sub);
        ct_test_rmtree(dir);
    }
    /* a file that is neither a directory nor .gguf, and a path that is not there */
    const char *dir = ct_test_tmpdir();
    ct_test_write_text(dir, "x.bin", "x");
    char p[4096];
    snprintf(p, sizeof p, "%s/x.bin", dir);
    expect_refused(p, CT_ERR_INVALID_ARG, "not a model directory");
    snprintf(p, sizeof p, "%s/absent", dir);
    expect_refused(p, CT_ERR_NOT_FOUND, "absent");
    /* a directory without config.json */
    expect_refused(dir, CT_ERR_NOT_FOUND, "config.json");
    ct_test_rmtree(dir);
}

/* The tiny model split over two shards with an index loads the same. */
static void test_sharded(void **state) {
    (void)state;
    const char *d1 = ct_test_tmpdir(), *d2 = ct_test_tmpdir();
    write_model(d1, CT_CONFIG_TRANSFORMERS, CT_DTYPE_F32);
    write_model(d2, CT_CONFIG_TRANSFORMERS, CT_DTYPE_F32);
    char p[4096];
    snprintf(p, sizeof p, "%s/model.safetensors", d2);
    ct_safetensors *st;
    CT_ASSERT_OK(ct_st_open(p, &st));
    const char *names[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
    size_t n = ct_st_count(st), half = n / 2;
    size_t cap = 64 + n * 128;
    char *index = malloc(cap);
    size_t o = (size_t)snprintf(index, cap, "{\"metadata\":{},\"weight_map\":{");
    for (int s = 0; s < 2; s++) {
        char sp[4096];
        snprintf(sp, sizeof sp, "%s/%s", d2, names[s]);
        ct_st_writer *w;
        CT_ASSERT_OK(ct_st_writer_create(sp, &w));
        size_t lo = s ? half : 0, hi = s ? n : half;
        for (size_t i = lo; i < hi; i++) {
            const ct_st_tensor *t = ct_st_at(st, i);
            CT_ASSERT_OK(ct_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape));
            o += (size_t)snprintf(index + o, cap - o, "%s\"%s\":\"%s\"", o > 30 ? "," : "", t->name, names[s]);
        }
        for (size_t i = lo; i < hi; i++) CT_ASSERT_OK(ct_st_writer_write(w, ct_st_at(st, i)->data));
        CT_ASSERT_OK(ct_st_writer_finish(w));
        ct_st_writer_free(w);
    }
    snprintf(index + o, cap - o, "}}");
    ct_st_free(st);
    remove(p);
    ct_test_write_text(d2, "model.safetensors.index.json", index);
    free(index);
    ct_checkpoint *a, *b;
    CT_ASSERT_OK(ct_checkpoint_open(d1, &a));
    CT_ASSERT_OK(ct_checkpoint_open(d2, &b));
    assert_same_sizes(ct_checkpoint_config(a), ct_checkpoint_config(b));
    assert_int_equal(ct_checkpoint_count(a), ct_checkpoint_count(b));
    ct_test_assert_tensors_in(a, b);
    ct_checkpoint_free(a);
    ct_checkpoint_free(b);
    ct_test_rmtree(d1);
    ct_test_rmtree(d2);
}

/* The committed fixtures: both layouts hold the same values. */
static void test_fixtures_agree(void **state) {
    (void)state;
    const char *hf = CT_FIXTURE("tiny-hf"), *nemo = CT_FIXTURE("tiny-nemo");
    if (!ct_fs_is_dir(hf) || !ct_fs_is_dir(nemo)) {
        print_message("tests/fixtures/tiny-hf or tiny-nemo not present yet: skipped\n");
        skip();
    }
    ct_checkpoint *a, *b;
    CT_ASSERT_OK(ct_checkpoint_open(hf, &a));
    CT_ASSERT_OK(ct_checkpoint_open(CT_FIXTURE("tiny-nemo"), &b));
    assert_int_equal(ct_checkpoint_config(a)->layout, CT_CONFIG_TRANSFORMERS);
    assert_int_equal(ct_checkpoint_config(b)->layout, CT_CONFIG_NEMO);
    assert_same_sizes(ct_checkpoint_config(a), ct_checkpoint_config(b));
    /* the release layout also stores the frontend tensors, which the model
     * does not use; compare everything else both ways */
    size_t shared = 0;
    for (size_t i = 0; i < ct_checkpoint_count(b); i++)
        if (strncmp(ct_checkpoint_at(b, i)->name, "preprocessor.", 13) != 0) shared++;
    assert_int_equal(shared, ct_checkpoint_count(a));
    ct_test_assert_tensors_in(a, b);
    assert_int_equal(ct_checkpoint_tensor(a, "encoder.layers.0.norm_out.weight")->dtype, CT_DTYPE_F32);
    assert_int_equal(ct_checkpoint_tensor(b, "encoder.layers.0.norm_out.weight")->dtype, CT_DTYPE_BF16);
    ct_checkpoint_free(a);
    ct_checkpoint_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layouts_agree),
        cmocka_unit_test(test_full_size_count),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_non_finite_weights_refused),
        cmocka_unit_test(test_weights_in_place),
        cmocka_unit_test(test_sharded),
        cmocka_unit_test(test_fixtures_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
