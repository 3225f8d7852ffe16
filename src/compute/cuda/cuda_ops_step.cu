/* cuda_ops_step.cu — the version 4 entries of the "cuda" table (backend.h):
 * the decoder step's embedding with ids and position read on the device,
 * the greedy step (argmax, stop rules, forced tokens) over the state in
 * device memory, and graph capture on the backend's stream. With these a
 * decoder step is the same launches every time, so asr/generate_dev.c
 * captures it once and replays it; the host looks at the state only to
 * end early and at the end. Also the mel op (the frontend kernels of
 * cuda_kernels.cu around two float32 GEMMs). References: ct_ref_embed_dev,
 * ct_ref_greedy_step (compute/ref/ref_step.c); for the mel, asr/mel.c.
 */
#include <math.h>
#include <stdlib.h>

#include "compute/cuda/cuda_be.h"

#define LAUNCH_CHECK() CT_CUDA_TRY(cudaGetLastError())
#define GRID_STRIDE(i, n) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* y[r] = tok[ids[r]] + pos[*p]; an id or position outside its table gives
 * a NaN row (a kernel cannot fail; NaN reaches the logits and shows) */
template <typename Y, typename W1, typename W2>
__global__ void k_embed_dev(Y *y, const int *ids, const int *p, int n, const W1 *tok, int V, const W2 *pos, int P,
                            int D) {
    int pp = *p;
    GRID_STRIDE(i, (size_t)n * D) {
        size_t r = i / D, d = i % D;
        int id = ids[r];
        float v = id >= 0 && id < V && pp >= 0 && pp < P
                      ? ct_ld(tok[(size_t)id * D + d]) + ct_ld(pos[(size_t)pp * D + d])
                      : NAN;
        y[i] = ct_st<Y>(v);
    }
}

ct_status ct_cuda_op_embed_dev(ct_backend *be, ct_buf y, const int32_t *ids, const int32_t *pos, int n,
                               const ct_tensor *tok, const ct_tensor *posemb, int D) {
    if (n <= 0) return CT_OK;
    int V = (int)tok->shape[0], P = (int)posemb->shape[0];
    size_t m = (size_t)n * D;
    CT_CUDA_DISPATCH(y.dtype, Y, "embed_dev", CT_CUDA_DISPATCH(tok->dtype, W1, "embed_dev", CT_CUDA_DISPATCH(posemb->dtype, W2, "embed_dev", {
        k_embed_dev<Y, W1, W2><<<ct_blocks(m, 256), 256, 0, ct_cstream(be)>>>(
            (Y *)y.data, ids, pos, n, (const W1 *)tok->data, V, (const W2 *)posemb->data, P, D);
        LAUNCH_CHECK();
    })));
    return CT_OK;
}

/* one block (1024 threads: the argmax scan is most of it) per row: the rule
 * of ct_ref_greedy_step */
__global__ void k_greedy(ct_greedy_state g, const float *logits, int V) {
    int r = blockIdx.x;
    if (r == 0 && threadIdx.x == 0) atomicAdd(g.pos, 1); /* nothing in this kernel reads pos */
    if (g.stop[r]) return; /* uniform per block: no barrier is skipped by part of it */
    int t = ct_block_argmax(logits + (size_t)r * V, V);
    if (threadIdx.x) return;
    int c = g.count[r];
    if (c >= g.budget) return; /* cannot happen: a row stops at its budget */
    g.tokens[(size_t)r * g.budget + c] = t;
    g.count[r] = ++c;
    int stop = 0;
    if (g.stop_eos && t == g.eos && !g.forced) stop = g.stop_eos;
    else if (c >= g.budget) stop = g.stop_budget;
    else if (g.row_budget && c >= g.row_budget[r]) stop = g.stop_row_budget;
    if (stop) {
        g.stop[r] = stop;
        atomicSub(g.active, 1);
    } else {
        g.ids[r] = g.forced ? g.forced[(size_t)r * g.forced_stride + c - 1] : t;
    }
}

ct_status ct_cuda_op_greedy_step(ct_backend *be, const ct_greedy_state *g, ct_buf logits, int n, int V) {
    if (n <= 0) return CT_OK;
    if (n > 65535) return ct_fail(CT_ERR_LIMIT, "cuda greedy_step: %d rows", n);
    k_greedy<<<n, 1024, 0, ct_cstream(be)>>>(*g, (const float *)logits.data, V);
    LAUNCH_CHECK();
    return CT_OK;
}

/* ---- graphs ---------------------------------------------------------------
 * Stream capture on the backend's stream, thread-local mode: a call that is
 * not allowed during capture (a synchronising copy, cudaMalloc) fails and
 * invalidates the capture, which graph_end then reports. Host ints that an
 * op would have to upload inside the capture are refused by ct_cuda_side. */
typedef struct ct_cuda_graph {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
} ct_cuda_graph;

ct_status ct_cuda_graph_begin(ct_backend *be) {
    ct_cuda_be *cb = ct_cbe(be);
    if (cb->capturing) return ct_fail(CT_ERR_INTERNAL, "cuda: graph capture already running");
    CT_CUDA_TRY(cudaStreamBeginCapture(cb->c->stream, cudaStreamCaptureModeThreadLocal));
    cb->capturing = 1;
    return CT_OK;
}

ct_status ct_cuda_graph_end(ct_backend *be, void **out) {
    ct_cuda_be *cb = ct_cbe(be);
    *out = NULL;
    if (!cb->capturing) return ct_fail(CT_ERR_INTERNAL, "cuda: no graph capture running");
    cb->capturing = 0;
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(cb->c->stream, &graph);
    if (e != cudaSuccess || !graph) {
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError(); /* the capture's failure is reported here, once */
        return ct_fail(CT_ERR_DEVICE, "cuda: graph capture failed (%s)", cudaGetErrorString(e));
    }
    ct_cuda_graph *g = (ct_cuda_graph *)calloc(1, sizeof *g);
    if (!g) {
        cudaGraphDestroy(graph);
        return ct_fail(CT_ERR_OOM, "cuda graph");
    }
    g->graph = graph;
    e = cudaGraphInstantiate(&g->exec, graph, 0);
    if (e != cudaSuccess) {
        cudaGraphDestroy(graph);
        free(g);
        return ct_fail(CT_ERR_DEVICE, "cuda: cudaGraphInstantiate: %s", cudaGetErrorString(e));
    }
    *out = g;
    return CT_OK;
}

ct_status ct_cuda_graph_launch(ct_backend *be, void *graph) {
    ct_cuda_graph *g = (ct_cuda_graph *)graph;
    if (!g) return ct_fail(CT_ERR_INVALID_ARG, "cuda: no graph");
    CT_CUDA_TRY(cudaGraphLaunch(g->exec, ct_cstream(be)));
    return CT_OK;
}

void ct_cuda_graph_free(ct_backend *be, void *graph) {
    (void)be;
    ct_cuda_graph *g = (ct_cuda_graph *)graph;
    if (!g) return;
    if (g->exec) cudaGraphExecDestroy(g->exec);
    if (g->graph) cudaGraphDestroy(g->graph);
    free(g);
}

/* ---- mel ------------------------------------------------------------------
 * The frontend kernels of cuda_kernels.cu (frames, power, normalisation)
 * around two float32 GEMMs (DFT, filterbank) in scratch from ws. */
ct_status ct_cuda_op_mel(ct_backend *be, float *feats, const float *pcm, const int *n, const int *valid, int B, int ns,
                         int T, int M, const float *window, const float *dft, const float *fbT, ct_arena *ws) {
    if (B <= 0 || T <= 0) return CT_OK;
    for (int b = 0; b < B; b++)
        if (n[b] < 0 || n[b] > ns || valid[b] < 2 || valid[b] > T)
            return ct_fail(CT_ERR_INVALID_ARG, "cuda mel: clip %d: %d samples (rows of %d), %d valid of %d frames", b,
                           n[b], ns, valid[b], T);
    ct_cuda *c = ct_cbe(be)->c;
    size_t rows = (size_t)B * T, mark = ct_arena_mark(ws);
    float *frames = (float *)ct_arena_alloc(ws, sizeof(float) * rows * 400);
    float *spec = (float *)ct_arena_alloc(ws, sizeof(float) * rows * 514);
    float *power = frames; /* the frames are dead once the DFT has run */
    if (!frames || !spec) {
        ct_arena_rewind(ws, mark);
        return ct_fail_wrap(CT_ERR_OOM, "cuda mel: scratch for %zu frames", rows);
    }
    const int *dn, *dvalid;
    ct_status s = ct_cuda_side(be, CT_SIDE_SAMPLES, n, (size_t)B, &dn);
    if (s == CT_OK) s = ct_cuda_side(be, CT_SIDE_LEN, valid, (size_t)B, &dvalid);
    if (s == CT_OK) s = ct_cuda_mel_frames(c, frames, pcm, dn, B, ns, T, window);
    if (s == CT_OK) s = ct_cuda_sgemm(c, (int)rows, 514, 400, frames, 400, dft, 514, spec, 514);
    if (s == CT_OK) s = ct_cuda_mel_power(c, power, spec, rows);
    if (s == CT_OK) s = ct_cuda_sgemm(c, (int)rows, M, 257, power, 257, fbT, M, feats, M);
    if (s == CT_OK) s = ct_cuda_mel_normalize(c, feats, dvalid, B, T, M);
    ct_arena_rewind(ws, mark);
    return s;
}
