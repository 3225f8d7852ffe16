/* cuda_backend.cu — the "cuda" entry of the backend table (backend.h): a
 * device context (device index from the options), device memory for
 * arenas and weights, the stream, and the typed (version 3) ops of
 * cuda_ops*.cu. Activations are bf16 by default, fp16 on request; the
 * residual stream, norms, softmax and logits stay float32 (compute/ops.h).
 * Creating the backend makes its device current for the calling thread;
 * ops do not switch devices, so one thread drives one device's backends.
 * The float32-only entries of versions 1–2 are left NULL: compute/ops.c
 * then refuses float32 activations on this backend with a clear message.
 * Version 4: the device steps and graph capture of cuda_ops_step.cu.
 * Version 5: the fused encoder ops of cuda_ops_fused.cu and the wav2vec2
 * aligner's typed ops (cuda_ops_w2v2*.cu). Version 7: background weight
 * uploads (cuda_upload.cu).
 */
#include <stdlib.h>
#include <string.h>

#include <thread>
#include <vector>

#include "compute/cuda/cuda_be.h"

ct_status ct_cuda_side(ct_backend *be, int r, const int *host, size_t n, const int **dev) {
    ct_cuda_be *cb = ct_cbe(be);
    if (r < 0 || r >= CT_SIDE_REGIONS) return ct_fail(CT_ERR_INTERNAL, "cuda: side region %d", r);
    if (n > CT_SIDE_INTS) return ct_fail(CT_ERR_LIMIT, "cuda: %zu row indices exceed %d", n, (int)CT_SIDE_INTS);
    int *d = cb->side + (size_t)r * CT_SIDE_INTS, *h = cb->side_host + (size_t)r * CT_SIDE_INTS;
    *dev = d;
    if (!n || (n <= cb->side_n[r] && !memcmp(h, host, n * sizeof(int)))) return CT_OK; /* already there */
    /* a graph would replay the copy from host memory that is gone by then */
    if (cb->capturing) return ct_fail(CT_ERR_UNSUPPORTED, "cuda: host ints (region %d) changed inside a graph capture", r);
    cb->side_n[r] = 0; /* unknown until the copy is queued */
    CT_CUDA_TRY(cudaMemcpyAsync(d, host, n * sizeof(int), cudaMemcpyHostToDevice, cb->c->stream));
    memcpy(h, host, n * sizeof(int));
    cb->side_n[r] = n;
    return CT_OK;
}

ct_status ct_cuda_scratch(ct_backend *be, size_t bytes, void **p) {
    ct_cuda_be *cb = ct_cbe(be);
    if (bytes > cb->scratch_cap) {
        ct_cuda_dfree(cb->c, cb->scratch);
        cb->scratch = NULL;
        cb->scratch_cap = 0;
        CT_TRY(ct_cuda_malloc(cb->c, &cb->scratch, bytes));
        cb->scratch_cap = bytes;
    }
    *p = cb->scratch;
    return CT_OK;
}

/* Background uploads land before anything that may read or free their
 * destinations runs on the backend's stream (cuda_upload.cu). */
static ct_status drain_uploads(ct_backend *be) {
    ct_cuda_be *cb = ct_cbe(be);
    return ct_cuda_upload_pending(cb->upload) ? ct_cuda_upload_drain(cb->upload) : CT_OK;
}

static ct_status cb_alloc(ct_backend *be, size_t bytes, void **ptr) {
    /* cudaMalloc aligns to 256 bytes, more than the 64 backend.h promises */
    return ct_cuda_malloc(ct_cbe(be)->c, ptr, bytes);
}
static void cb_free(ct_backend *be, void *ptr) {
    if (ptr) ct_cuda_biases_clear(be); /* their sources may be in it */
    if (ptr) (void)drain_uploads(be);  /* a failure was the load's; the memory goes anyway */
    ct_cuda_dfree(ct_cbe(be)->c, ptr);
}
/* Host memcpy split over up to 8 threads (one thread copies ~5–10 GB/s). */
static void copy_par(void *dst, const void *src, size_t n) {
    unsigned hw = std::thread::hardware_concurrency();
    int nt = (int)(hw < 2 ? 1 : hw < 8 ? hw : 8);
    if (n < ((size_t)2 << 20)) nt = 1;
    size_t part = (n + nt - 1) / nt;
    auto copy = [=](int t) {
        size_t o = (size_t)t * part;
        if (o < n) memcpy((char *)dst + o, (const char *)src + o, n - o < part ? n - o : part);
    };
    std::vector<std::thread> th;
    try {
        for (int t = 1; t < nt; t++) th.emplace_back(copy, t);
    } catch (...) { /* no thread: this one copies those parts too */
        for (int t = (int)th.size() + 1; t < nt; t++) copy(t);
    }
    copy(0);
    for (auto &x : th) x.join();
}

/* Uploads of a few MB and more go through two pinned buffers in turn: the
 * host copies one chunk (with several threads) while the previous one is
 * on its way (a pageable cudaMemcpy moved the mel's PCM, 245 MB at batch
 * 128 × 30 s, at ~5 GB/s). As with a pageable copy, src may be reused once
 * this returns. */
/* A write into backend memory drops the kept bias conversions made from it. */
static void biases_written(ct_backend *be, const void *dst, size_t bytes) {
    ct_cuda_be *cb = ct_cbe(be);
    for (struct ct_cuda_bias *e = cb->biases; e; e = e->next)
        if ((const char *)e->src + sizeof(float) * (size_t)e->n > (const char *)dst &&
            (const char *)e->src < (const char *)dst + bytes) {
            ct_cuda_biases_clear(be);
            return;
        }
}

static ct_status cb_to_device_async(ct_backend *be, void *dst, const void *src, size_t bytes) {
    biases_written(be, dst, bytes);
    ct_cuda_be *cb = ct_cbe(be);
    /* small ones: the synchronous path's one pageable copy costs less than a queue entry */
    if (bytes < ((size_t)1 << 20)) return ct_cuda_h2d(cb->c, dst, src, bytes);
    return ct_cuda_upload_async(&cb->upload, cb->c, dst, src, bytes);
}

static ct_status cb_to_device(ct_backend *be, void *dst, const void *src, size_t bytes) {
    biases_written(be, dst, bytes);
    CT_TRY(drain_uploads(be));
    ct_cuda_be *cb = ct_cbe(be);
    if (bytes < ((size_t)1 << 20)) return ct_cuda_h2d(cb->c, dst, src, bytes);
    /* page-locked source (host_alloc): one DMA straight from it; waited for,
     * so that src may be reused once this returns, as for any source */
    cudaPointerAttributes pa;
    if (cudaPointerGetAttributes(&pa, src) == cudaSuccess && pa.type == cudaMemoryTypeHost) {
        CT_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cb->c->stream));
        CT_CUDA_TRY(cudaStreamSynchronize(cb->c->stream));
        return CT_OK;
    }
    (void)cudaGetLastError(); /* a pageable pointer may leave an error from the query */
    for (int i = 0; i < 2 && !cb->stage[i]; i++) {
        CT_TRY(ct_cuda_host_alloc(&cb->stage[i], CT_STAGE_BYTES));
        if (cudaEventCreateWithFlags(&cb->stage_done[i], cudaEventDisableTiming) != cudaSuccess) {
            ct_cuda_host_free(cb->stage[i]);
            cb->stage[i] = NULL;
            return ct_fail(CT_ERR_DEVICE, "cuda: staging event");
        }
        CT_CUDA_TRY(cudaEventRecord(cb->stage_done[i], cb->c->stream));
    }
    for (size_t off = 0, k = 0; off < bytes; off += CT_STAGE_BYTES, k ^= 1) {
        size_t n = bytes - off < CT_STAGE_BYTES ? bytes - off : CT_STAGE_BYTES;
        CT_CUDA_TRY(cudaEventSynchronize(cb->stage_done[k])); /* its last chunk has left */
        copy_par(cb->stage[k], (const char *)src + off, n);
        CT_CUDA_TRY(cudaMemcpyAsync((char *)dst + off, cb->stage[k], n, cudaMemcpyHostToDevice, cb->c->stream));
        CT_CUDA_TRY(cudaEventRecord(cb->stage_done[k], cb->c->stream));
    }
    return CT_OK;
}
static ct_status cb_host_alloc(ct_backend *be, size_t bytes, void **ptr) { return ct_cuda_host_alloc(ptr, bytes); }
static void cb_host_free(ct_backend *be, void *ptr) { ct_cuda_host_free(ptr); }
static ct_status cb_to_host(ct_backend *be, void *dst, const void *src, size_t bytes) {
    CT_TRY(drain_uploads(be));
    return ct_cuda_d2h(ct_cbe(be)->c, dst, src, bytes); /* waits */
}
static ct_status cb_copy(ct_backend *be, void *dst, const void *src, size_t bytes) {
    biases_written(be, dst, bytes);
    CT_TRY(drain_uploads(be));
    if (bytes) CT_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ct_cstream(be)));
    return CT_OK;
}
static ct_status cb_zero(ct_backend *be, void *dst, size_t bytes) {
    biases_written(be, dst, bytes);
    CT_TRY(drain_uploads(be));
    return ct_cuda_memset(ct_cbe(be)->c, dst, 0, bytes);
}
static ct_status cb_sync(ct_backend *be) {
    CT_TRY(drain_uploads(be));
    return ct_cuda_sync(ct_cbe(be)->c);
}
static void *cb_stream(ct_backend *be) { return ct_cuda_stream(ct_cbe(be)->c); }
static ct_status cb_memory_info(ct_backend *be, size_t *free_bytes, size_t *total_bytes) {
    CT_CUDA_TRY(cudaSetDevice(ct_cbe(be)->c->device));
    CT_CUDA_TRY(cudaMemGetInfo(free_bytes, total_bytes));
    return CT_OK;
}
/* cuBLASLt multiplies like types: weights in the activation type */
static int cb_supports_weight(ct_backend *be, ct_dtype t) { return t == ct_cbe(be)->act; }

static void cb_destroy(ct_backend *be) {
    if (!be) return;
    ct_cuda_be *cb = ct_cbe(be);
    if (cb) {
        ct_cuda_upload_free(cb->upload);
        if (cb->c) ct_cuda_biases_clear(be);
        if (cb->c && cb->side) ct_cuda_dfree(cb->c, cb->side);
        if (cb->c && cb->scratch) ct_cuda_dfree(cb->c, cb->scratch);
        if (cb->c && cb->attn_count) ct_cuda_dfree(cb->c, cb->attn_count);
        ct_cuda_host_free(cb->host_ids);
        for (int i = 0; i < 2; i++)
            if (cb->stage[i]) {
                cudaEventSynchronize(cb->stage_done[i]);
                cudaEventDestroy(cb->stage_done[i]);
                ct_cuda_host_free(cb->stage[i]);
            }
        free(cb->side_host);
        ct_cuda_free(cb->c);
        free(cb);
    }
    free(be);
}

static const ct_backend_ops cuda_ops = {
    .version = CT_BACKEND_VERSION,
    .name = "cuda",
    .alloc = cb_alloc,
    .free = cb_free,
    .to_device = cb_to_device,
    .to_host = cb_to_host,
    .copy = cb_copy,
    .zero = cb_zero,
    .synchronize = cb_sync,
    .stream = cb_stream,
    .memory_info = cb_memory_info,
    .supports_weight = cb_supports_weight,
    .destroy = cb_destroy,
    .matmul_t = ct_cuda_op_matmul,
    .layer_norm_t = ct_cuda_op_layer_norm,
    .glu_t = ct_cuda_op_glu,
    .attn_relpos_t = ct_cuda_op_attn_relpos,
    .kv_write_t = ct_cuda_op_kv_write,
    .attn_causal_t = ct_cuda_op_attn_causal,
    .attn_cross_t = ct_cuda_op_attn_cross,
    .conv2d_s2_t = ct_cuda_op_conv2d_s2,
    .dwconv2d_s2_t = ct_cuda_op_dwconv2d_s2,
    .conv_pointwise_t = ct_cuda_op_conv_pointwise,
    .mask_time_t = ct_cuda_op_mask_time,
    .flatten_ct_t = ct_cuda_op_flatten_ct,
    .dwconv1d_t = ct_cuda_op_dwconv1d,
    .pos_relative_t = ct_cuda_op_pos_relative,
    .embed_t = ct_cuda_op_embed,
    .argmax_t = ct_cuda_op_argmax,
    .convert = ct_cuda_op_convert,
    .embed_dev = ct_cuda_op_embed_dev,
    .kv_write_dev = ct_cuda_op_kv_write_dev,
    .attn_causal_dev = ct_cuda_op_attn_causal_dev,
    .greedy_step = ct_cuda_op_greedy_step,
    .graph_begin = ct_cuda_graph_begin,
    .graph_end = ct_cuda_graph_end,
    .graph_launch = ct_cuda_graph_launch,
    .graph_free = ct_cuda_graph_free,
    .mel = ct_cuda_op_mel,
    .layer_norm2 = ct_cuda_op_layer_norm2,
    .glu_dwconv1d = ct_cuda_op_glu_dwconv1d,
    .attn_relpos_qkv = ct_cuda_op_attn_relpos_qkv,
    .host_alloc = cb_host_alloc,
    .host_free = cb_host_free,
    .conv1d_t = ct_cuda_op_conv1d,
    .conv1d_grouped_t = ct_cuda_op_conv1d_grouped,
    .gelu_t = ct_cuda_op_gelu,
    .add_t = ct_cuda_op_add,
    .attn_full_t = ct_cuda_op_attn_full,
    .attn_causal_qkv_dev = ct_cuda_op_attn_causal_qkv_dev,
    .subsample = ct_cuda_op_subsample,
    .to_device_async = cb_to_device_async,
};

extern "C" ct_status ct_cuda_backend_create(const ct_backend_options *opts, ct_backend **out) {
    *out = NULL;
    const char *why = "";
    if (!ct_cuda_available(&why)) return ct_fail(CT_ERR_UNSUPPORTED, "backend cuda: %s", why);
    ct_dtype act = opts->act_dtype == CT_DTYPE_F32 ? CT_DTYPE_BF16 : opts->act_dtype;
    if (act != CT_DTYPE_BF16 && act != CT_DTYPE_F16)
        return ct_fail(CT_ERR_UNSUPPORTED, "backend cuda: activations are bf16 or f16 (asked for %s)",
                       ct_dtype_name(act));
    if (opts->attn_variant < CT_ATTN_AUTO || opts->attn_variant > CT_ATTN_SIMPLE)
        return ct_fail(CT_ERR_INVALID_ARG, "backend cuda: attention variant %d", (int)opts->attn_variant);
    ct_backend *be = (ct_backend *)calloc(1, sizeof *be);
    ct_cuda_be *cb = (ct_cuda_be *)calloc(1, sizeof *cb);
    if (!be || !cb) {
        free(be);
        free(cb);
        return ct_fail(CT_ERR_OOM, "backend cuda");
    }
    be->ops = &cuda_ops;
    be->impl = cb;
    be->act_dtype = act;
    cb->act = act;
    cb->attn_variant = opts->attn_variant;
    ct_status s = ct_cuda_create_device(opts->device_index, &cb->c);
    if (s == CT_OK) ct_cuda_set_gemm_tune(cb->c, opts->gemm_tune);
    if (s == CT_OK) s = ct_cuda_malloc(cb->c, (void **)&cb->side, sizeof(int) * CT_SIDE_REGIONS * CT_SIDE_INTS);
    if (s == CT_OK) s = ct_cuda_host_alloc((void **)&cb->host_ids, sizeof(int32_t) * CT_SIDE_INTS);
    if (s == CT_OK) s = ct_cuda_malloc(cb->c, (void **)&cb->attn_count, sizeof(int) * CT_ATTN_SPLIT_PAIRS);
    if (s == CT_OK) s = ct_cuda_memset(cb->c, cb->attn_count, 0, sizeof(int) * CT_ATTN_SPLIT_PAIRS);
    if (s == CT_OK) s = ct_cuda_sync(cb->c);
    if (s == CT_OK && !(cb->side_host = (int *)malloc(sizeof(int) * CT_SIDE_REGIONS * CT_SIDE_INTS)))
        s = ct_fail(CT_ERR_OOM, "side arrays");
    if (s != CT_OK) {
        cb_destroy(be);
        return ct_fail_wrap(s, "backend cuda");
    }
    *out = be;
    return CT_OK;
}
