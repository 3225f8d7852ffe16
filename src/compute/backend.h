/* backend.h — the compute backend interface: memory, streams and the ops the
 * Cohere ASR model needs, as one versioned table of function pointers.
 *
 * The model code (src/asr) is written once against these ops, called
 * through compute/ops.h; each backend fills a ct_backend_ops table:
 * "cpu-ref" (plain float32 reference loops, the definition of every op),
 * "cpu" (OpenBLAS/oneDNN products, GEMV kernels for decoding, int8 on VNNI,
 * OpenMP fast paths) and "cuda" (src/compute/cuda, registered in backend.c
 * under CT_HAVE_CUDA; src/asr never sees that macro).
 *
 * Conventions for every op:
 * - outputs first, then inputs, weights, sizes; a shape comment per pointer;
 * - activation pointers of the version 1-2 entries are float32 in backend
 *   memory (host memory on CPU); the version 3 entries take ct_buf views that
 *   carry their element type (bf16/f16 activations on CUDA);
 * - weights are ct_tensors (f32, bf16 or f16 where the backend supports it,
 *   Q8 int8 rows and Q8_0 ggml blocks on the CPU backends;
 *   biases, norms and other small parameters are always f32);
 * - integer side arrays (lengths, ids, slots) are host memory, small;
 * - scratch comes from `ws`, an arena over backend memory that the op rewinds
 *   before it returns; ops never allocate;
 * - ops may run asynchronously on the backend's stream; to_host and
 *   synchronize wait for them.
 * The table only grows: new entries go at the end with a new version number.
 */
#ifndef CT_COMPUTE_BACKEND_H
#define CT_COMPUTE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "compute/tensor.h"
#include "core/arena.h"

/* 2: conv1d, conv1d_grouped, gelu, add, attn_full (wav2vec2 aligner).
 * 3: typed activations: the ct_buf entries at the end (docs/ARCHITECTURE.md,
 *    "Activation dtypes"); model code calls them through compute/ops.h.
 * 4: decoding steps on the device: the step ops that read their token ids
 *    and position from backend memory, the greedy step, and graph capture
 *    (docs/ARCHITECTURE.md, "Decoder steps on the device").
 * 5: fused encoder ops (layer_norm2, glu_dwconv1d, attn_relpos_qkv): each
 *    the composition of earlier entries, in fewer passes over memory; and
 *    page-locked host memory (host_alloc, host_free) for the mel's PCM;
 *    and typed entries of the wav2vec2 aligner's ops (conv1d_t,
 *    conv1d_grouped_t, gelu_t, add_t, attn_full_t with key lengths), so the
 *    aligner runs bf16 on CUDA; NULL on the CPU tables (compute/ops.c falls
 *    back).
 * 6: the fused decoder step (attn_causal_qkv_dev): a device step's KV-cache
 *    writes and causal self-attention over one packed q|k|v projection, in
 *    one pass; and the whole subsampling in channels-last layout
 *    (subsample); NULL on the CPU tables (the model runs the compositions).
 * 7: to_device_async, uploads from a source that stays put until the next
 *    synchronize (weights from a checkpoint's mapping); NULL on the CPU
 *    tables (ct_tensor_upload_deferred then calls to_device). */
#define CT_BACKEND_VERSION 7

typedef enum ct_act { CT_ACT_NONE = 0, CT_ACT_RELU = 1, CT_ACT_SILU = 2 } ct_act;

/* The subsampling's weights (version 6, subsample): three 3×3 stride-2
 * convs (the first full over one input channel, the other two depthwise),
 * each depthwise one followed by a pointwise conv with ReLU, then the
 * projection of each frame's C·F3 values. */
typedef struct ct_subsample_weights {
    const float *c0_w, *c0_b;   /* (C,1,3,3), (C) f32 */
    const float *dw1_w, *dw1_b; /* (C,1,3,3), (C) f32 */
    const ct_tensor *pw1_w;     /* (C, C) */
    const float *pw1_b;         /* (C) f32 */
    const float *dw2_w, *dw2_b;
    const ct_tensor *pw2_w;
    const float *pw2_b;
    const ct_tensor *out_w;     /* (d, F3·C), columns f·C + c: channels-last (not flatten_ct's c·F3 + f) */
    const float *out_b;         /* (d) f32 */
} ct_subsample_weights;

typedef struct ct_backend ct_backend;

/* An activation in backend memory and its element type. Version 3 ops take
 * these so one model definition runs float32 on the CPU and bf16/f16 with
 * float32 residual stream on CUDA: each buffer says what it holds. Inputs are
 * never written through (the pointer is not const only to keep one type). */
typedef struct ct_buf {
    void *data;
    ct_dtype dtype;
} ct_buf;

static inline ct_buf ct_buf_make(void *data, ct_dtype dtype) {
    ct_buf b = {data, dtype};
    return b;
}
static inline ct_buf ct_buf_f32(const float *data) { return ct_buf_make((void *)(uintptr_t)data, CT_DTYPE_F32); }
#define CT_BUF_NONE (ct_buf_make(NULL, CT_DTYPE_F32))

/* The greedy decoder's per-row state in backend memory (version 4): what a
 * decoding step reads and writes, so that steps need no host round trip and
 * replay as one captured graph. Every pointer is int32 backend memory; the
 * stop codes are the caller's (compute/ knows no ASR stop reasons). */
typedef struct ct_greedy_state {
    int32_t *ids;    /* (n) the next step's input ids */
    int32_t *pos;    /* (1) the position of the last step run; +1 per greedy step */
    int32_t *tokens; /* (n, budget) each row's chosen ids */
    int32_t *count;  /* (n) tokens chosen so far (0 at start) */
    int32_t *stop;   /* (n) 0 while the row runs, else the stop code written */
    int32_t *active; /* (1) rows whose stop is 0 */
    const int32_t *forced;     /* (n, forced_stride): the input after a row's g-th token, or NULL */
    const int32_t *row_budget; /* (n) a budget per row, or NULL */
    int budget, forced_stride;
    int32_t eos;       /* stop_eos written when a row chooses it (0: never stops at EOS) */
    int stop_eos, stop_budget, stop_row_budget;
} ct_greedy_state;

typedef struct ct_backend_ops {
    int version; /* CT_BACKEND_VERSION the table was written for */
    const char *name;

    /* ---- memory, streams ------------------------------------------------ */
    ct_status (*alloc)(ct_backend *be, size_t bytes, void **ptr); /* 64-byte aligned */
    void (*free)(ct_backend *be, void *ptr);
    ct_status (*to_device)(ct_backend *be, void *dst, const void *src_host, size_t bytes);
    ct_status (*to_host)(ct_backend *be, void *dst_host, const void *src, size_t bytes); /* waits */
    ct_status (*copy)(ct_backend *be, void *dst, const void *src, size_t bytes);        /* device to device */
    ct_status (*zero)(ct_backend *be, void *dst, size_t bytes);
    ct_status (*synchronize)(ct_backend *be);
    void *(*stream)(ct_backend *be); /* cudaStream_t for CUDA; NULL on CPU */
    ct_status (*memory_info)(ct_backend *be, size_t *free_bytes, size_t *total_bytes);
    int (*supports_weight)(ct_backend *be, ct_dtype dtype); /* matmul weight dtypes */
    void (*destroy)(ct_backend *be);

    /* ---- dense ----------------------------------------------------------- */
    /* y = residual + alpha * act(x · wᵀ + b). residual and b may be NULL.
     * residual may equal y only when act is NONE.
     * y (M,N), x (M,K), w (N,K) tensor, b (N), residual (M,N). */
    ct_status (*matmul)(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *b,
                        const float *residual, float alpha, ct_act act, int M, int N, int K,
                        ct_arena *ws);
    /* y = (x − mean) / sqrt(var + eps) · g + b per row, biased variance.
     * y (M,D) may equal x (M,D); g, b (D). */
    ct_status (*layer_norm)(ct_backend *be, float *y, const float *x, const float *g, const float *b,
                            int M, int D, float eps);
    /* In-place row softmax in float32, x (M,N); -inf entries become 0; a row
     * of only -inf becomes all zeros; a row holding a NaN becomes all NaN. */
    ct_status (*softmax)(ct_backend *be, float *x, int M, int N);
    /* In place x = act(x), x (n). */
    ct_status (*activate)(ct_backend *be, float *x, size_t n, ct_act act);
    /* GLU over the last axis: y[m][c] = x[m][c] · sigmoid(x[m][D + c]).
     * y (M,D), x (M,2D). */
    ct_status (*glu)(ct_backend *be, float *y, const float *x, int M, int D);

    /* ---- attention ------------------------------------------------------- */
    /* Encoder relative-position MHSA core (Transformer-XL), per row b, head h:
     *   score[i][j] = ((q_i + u_h)·k_j + (q_i + v_h)·p_{T−1−i+j}) / sqrt(Dh)
     * keys j ≥ len[b] masked, softmax over j, out_i = Σ_j score·v_j; query rows
     * i ≥ len[b] are written as zeros.
     * out, q, k, v (B,T,H·Dh); p (2T−1, H·Dh) = linear_pos(pos_relative(T));
     * u, vb (H,Dh); len (B) host. */
    ct_status (*attn_relpos)(ct_backend *be, float *out, const float *q, const float *k, const float *v,
                             const float *p, const float *u, const float *vb, const int *len, int B,
                             int T, int H, int Dh, ct_arena *ws);
    /* Copy n rows' S new K (or V) vectors into a cache at positions
     * pos0..pos0+S−1 of the slots given: cache[slot[r]][pos0+s] = src[r][s].
     * cache (slots, Smax, D); src (n,S,D); slot (n) host. */
    ct_status (*kv_write)(ct_backend *be, float *cache, const float *src, const int *slot, int n, int S,
                          int pos0, int Smax, int D);
    /* Decoder causal self-attention over a KV cache. Query s of row r sits at
     * position pos0+s and sees cache positions 0..pos0+s of slot[r].
     * out, q (n,S,H·Dh); kc, vc (slots, Smax, H·Dh); slot (n) host. */
    ct_status (*attn_causal)(ct_backend *be, float *out, const float *q, const float *kc,
                             const float *vc, const int *slot, int n, int S, int pos0, int Smax, int H,
                             int Dh, ct_arena *ws);
    /* Decoder cross-attention: row r attends to the first enc_len[slot[r]]
     * encoder frames of slot[r]. out, q (n,S,H·Dh); ek, ev (slots, Tenc,
     * H·Dh); slot (n), enc_len (slots) host. */
    ct_status (*attn_cross)(ct_backend *be, float *out, const float *q, const float *ek, const float *ev,
                            const int *slot, const int *enc_len, int n, int S, int Tenc, int H, int Dh,
                            ct_arena *ws);

    /* ---- convolutions (subsampling layout (B, C, T, F)) ------------------- */
    /* 3×3 stride-2 pad-1 conv from 1 channel to C, then act.
     * y (B,C,To,Fo) with To = (T−1)/2+1, Fo = (F−1)/2+1; x (B,T,F); w (C,1,3,3) f32; b (C). */
    ct_status (*conv2d_s2)(ct_backend *be, float *y, const float *x, const float *w, const float *b,
                           int B, int C, int T, int F, ct_act act);
    /* Depthwise 3×3 stride-2 pad-1 conv, then act. y (B,C,To,Fo); x (B,C,T,F); w (C,1,3,3); b (C). */
    ct_status (*dwconv2d_s2)(ct_backend *be, float *y, const float *x, const float *w, const float *b,
                             int B, int C, int T, int F, ct_act act);
    /* Pointwise (1×1) conv over channels, then act: y[b][o][p] = act(Σ_i w[o][i] x[b][i][p] + b[o]).
     * y (B,Co,P); x (B,Ci,P); w (Co,Ci) tensor; b (Co). */
    ct_status (*conv_pointwise)(ct_backend *be, float *y, const float *x, const ct_tensor *w,
                                const float *b, int B, int Ci, int Co, int P, ct_act act, ct_arena *ws);
    /* Zero time steps t ≥ len[b]: x (B, C, T, F) with C = 1 for (B,T,F). len (B) host. */
    ct_status (*mask_time)(ct_backend *be, float *x, const int *len, int B, int C, int T, int F);
    /* (B,C,T,F) → (B,T,C·F), index c·F+f. */
    ct_status (*flatten_ct)(ct_backend *be, float *y, const float *x, int B, int C, int T, int F);
    /* Depthwise conv1d over time, kernel K, pad (K−1)/2, BatchNorm folded into
     * w and b, then act. y, x (B,T,C); w (C,K); b (C). */
    ct_status (*dwconv1d)(ct_backend *be, float *y, const float *x, const float *w, const float *b, int B,
                          int T, int C, int K, ct_act act);

    /* ---- positions, embeddings, selection -------------------------------- */
    /* Relative sinusoidal positions p = T−1 … −(T−1):
     * y[k][2i] = sin(p_k · f_i), y[k][2i+1] = cos(p_k · f_i), f_i = 1/10000^(2i/D)
     * in float32. y (2T−1, D). */
    ct_status (*pos_relative)(ct_backend *be, float *y, int T, int D);
    /* y[r] = tok[ids[r]] + pos[positions[r]]. y (n,D); ids, positions (n) host;
     * tok (V,D), pos (P,D) tensors of any float dtype. */
    ct_status (*embed)(ct_backend *be, float *y, const int32_t *ids, const int32_t *positions, int n,
                       const ct_tensor *tok, const ct_tensor *pos, int D);
    /* ids[r] = argmax_j x[r][j], ties to the lowest j. x (n,N); ids (n) host. */
    ct_status (*argmax)(ct_backend *be, int32_t *ids, const float *x, int n, int N);

    /* ---- version 2: the wav2vec2 CTC aligner (src/align) ------------------ */
    /* Strided conv1d over time, channels last, no padding (PyTorch Conv1d):
     * y[b][t][o] = bias[o] + Σ_{i,k} w[o][i][k] · x[b][t·stride + k][i],
     * To = (T − K)/stride + 1 (T ≥ K). y (B,To,Co); x (B,T,Ci); w (Co,Ci,K)
     * tensor; bias (Co) or NULL. */
    ct_status (*conv1d)(ct_backend *be, float *y, const float *x, const ct_tensor *w, const float *bias, int B,
                        int T, int Ci, int Co, int K, int stride, ct_arena *ws);
    /* wav2vec2's positional conv: grouped conv1d, zero padding K/2 on both
     * sides, G groups, the first T output frames kept (an even K makes one
     * more, which wav2vec2 drops):
     * y[b][t][o] = bias[o] + Σ_{i<C/G,k} w[o][i][k] · x[b][t + k − K/2][g(o)·C/G + i].
     * y (B,T,C) ≠ x (B,T,C); w (C,C/G,K) f32 with weight norm already applied; bias (C). */
    ct_status (*conv1d_grouped)(ct_backend *be, float *y, const float *x, const float *w, const float *bias, int B,
                                int T, int C, int G, int K);
    /* In place exact GELU: x · ½(1 + erf(x/√2)), x (n). */
    ct_status (*gelu)(ct_backend *be, float *x, size_t n);
    /* y = a + b elementwise; y may equal a or b. y, a, b (n). */
    ct_status (*add)(ct_backend *be, float *y, const float *a, const float *b, size_t n);
    /* Plain bidirectional multi-head attention, no mask, scores q·k/√Dh,
     * softmax over all T keys. out, q, k, v (B,T,H·Dh). prod: the products'
     * input type, CT_DTYPE_F32, or CT_DTYPE_BF16: q, k, v and the softmax
     * probabilities rounded to bf16 (nearest even) for the two products,
     * float32 accumulation, scale and softmax (a backend without native bf16
     * products may compute BF16 requests in float32). */
    ct_status (*attn_full)(ct_backend *be, float *out, const float *q, const float *k, const float *v, int B, int T,
                           int H, int Dh, ct_dtype prod, ct_arena *ws);

    /* ---- version 3: typed activations ------------------------------------
     * The same ops as above, each ct_buf saying its element type. A backend
     * fills these when it computes in other types than float32 (CUDA: bf16
     * or f16 activations, float32 residual stream and norms); a NULL entry
     * makes compute/ops.c call the float32 entry above when every buffer is
     * F32, and refuse otherwise, so the CPU tables need no change. Which
     * buffers may be which type is said per op in compute/ops.h. */
    ct_status (*matmul_t)(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *b, ct_buf residual,
                          float alpha, ct_act act, int M, int N, int K, ct_arena *ws);
    ct_status (*layer_norm_t)(ct_backend *be, ct_buf y, ct_buf x, const float *g, const float *b, int M, int D,
                              float eps);
    ct_status (*glu_t)(ct_backend *be, ct_buf y, ct_buf x, int M, int D);
    ct_status (*attn_relpos_t)(ct_backend *be, ct_buf out, ct_buf q, ct_buf k, ct_buf v, ct_buf p, const float *u,
                               const float *vb, const int *len, int B, int T, int H, int Dh, ct_arena *ws);
    ct_status (*kv_write_t)(ct_backend *be, ct_buf cache, ct_buf src, const int *slot, int n, int S, int pos0,
                            int Smax, int D);
    ct_status (*attn_causal_t)(ct_backend *be, ct_buf out, ct_buf q, ct_buf kc, ct_buf vc, const int *slot, int n,
                               int S, int pos0, int Smax, int H, int Dh, ct_arena *ws);
    ct_status (*attn_cross_t)(ct_backend *be, ct_buf out, ct_buf q, ct_buf ek, ct_buf ev, const int *slot,
                              const int *enc_len, int n, int S, int Tenc, int H, int Dh, ct_arena *ws);
    ct_status (*conv2d_s2_t)(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int C, int T,
                             int F, ct_act act);
    ct_status (*dwconv2d_s2_t)(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int C,
                               int T, int F, ct_act act);
    ct_status (*conv_pointwise_t)(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *b, int B,
                                  int Ci, int Co, int P, ct_act act, ct_arena *ws);
    ct_status (*mask_time_t)(ct_backend *be, ct_buf x, const int *len, int B, int C, int T, int F);
    ct_status (*flatten_ct_t)(ct_backend *be, ct_buf y, ct_buf x, int B, int C, int T, int F);
    ct_status (*dwconv1d_t)(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, int B, int T, int C,
                            int K, ct_act act);
    ct_status (*pos_relative_t)(ct_backend *be, ct_buf y, int T, int D);
    ct_status (*embed_t)(ct_backend *be, ct_buf y, const int32_t *ids, const int32_t *positions, int n,
                         const ct_tensor *tok, const ct_tensor *pos, int D);
    ct_status (*argmax_t)(ct_backend *be, int32_t *ids, ct_buf x, int n, int N);
    /* y = x converted elementwise (round to nearest even), n elements; the
     * only new op of version 3. NULL: same-type copies only. */
    ct_status (*convert)(ct_backend *be, ct_buf y, ct_buf x, size_t n);

    /* ---- version 4: decoding steps on the device --------------------------
     * One decoder position (S = 1) for rows 0..n−1 whose ids and position
     * are int32 backend memory (ct_greedy_state's ids and pos), so a step's
     * launches do not change from one step to the next and replay as a
     * graph. Same results as embed_t, kv_write_t and attn_causal_t with
     * S = 1, pos0 = *pos, positions all *pos. A position or id outside the
     * tables writes NaN rows (embed_dev) or nothing (kv_write_dev): the
     * device cannot fail an op; the caller keeps them in range. */
    ct_status (*embed_dev)(ct_backend *be, ct_buf y, const int32_t *ids, const int32_t *pos, int n,
                           const ct_tensor *tok, const ct_tensor *posemb, int D);
    ct_status (*kv_write_dev)(ct_backend *be, ct_buf cache, ct_buf src, const int *slot, int n, const int32_t *pos,
                              int Smax, int D);
    ct_status (*attn_causal_dev)(ct_backend *be, ct_buf out, ct_buf q, ct_buf kc, ct_buf vc, const int *slot, int n,
                                 const int32_t *pos, int Smax, int H, int Dh, ct_arena *ws);
    /* One greedy step over logits (n, V) f32, row r ↔ state row r. For each
     * row with stop[r] = 0: t = argmax (ties and NaN as argmax);
     * tokens[r][count[r]++] = t; then stop[r] = stop_eos if stop_eos and
     * t = eos and no forcing, else stop_budget if count ≥ budget, else
     * stop_row_budget if row_budget and count ≥ row_budget[r] (active −1
     * for each row that stops); a row still running gets ids[r] = forced ?
     * forced[r·forced_stride + count − 1] : t. Finally *pos += 1. Rows that
     * stopped are left alone. Host loop's rules exactly (asr/generate.c). */
    ct_status (*greedy_step)(ct_backend *be, const ct_greedy_state *g, ct_buf logits, int n, int V);
    /* Graph capture: between graph_begin and graph_end the ops are recorded,
     * not run; graph_launch replays them (same buffers, same sizes, the
     * backend-memory inputs read at replay time). graph_end always ends the
     * capture and fails when an op could not be recorded (a host array that
     * changed inside the capture). NULL entries (CPU): no graphs, the caller
     * runs the ops each time. */
    ct_status (*graph_begin)(ct_backend *be);
    ct_status (*graph_end)(ct_backend *be, void **graph);
    ct_status (*graph_launch)(ct_backend *be, void *graph);
    void (*graph_free)(ct_backend *be, void *graph);
    /* Log-mel features without dither: the frontend asr/mel.c defines
     * (ct_mel_compute_batch, dither off; n_fft 512, window 400, hop 160,
     * pre-emphasis 0.97) from the tables asr/mel_device.c makes. Clip b is
     * n[b] samples of pcm row b (rows ns apart); frame t windows samples
     * 160t − 200 … 160t + 199 after pre-emphasis (zeros outside the clip),
     * |DFT|² through dft (400, 514) [cos | −sin], · fbT (257, M),
     * log(· + 2⁻²⁴), normalised per (b, bin) over the valid[b] first frames
     * (variance divisor valid − 1), frames ≥ valid[b] zero.
     * feats (B, T, M) f32; pcm (B, ns), window (400), dft, fbT f32 backend
     * memory; n, valid (B) host; scratch from ws (ct_mel_device_ws_bytes).
     * NULL (CPU): the caller runs asr/mel.c on the host. */
    ct_status (*mel)(ct_backend *be, float *feats, const float *pcm, const int *n, const int *valid, int B, int ns,
                     int T, int M, const float *window, const float *dft, const float *fbT, ct_arena *ws);

    /* ---- version 5: fused encoder ops --------------------------------------
     * Each is defined as the composition of earlier entries written beside
     * it; a backend fills them where one pass over memory beats several
     * (CUDA). NULL (the CPU tables): the encoder runs the composition, so the
     * CPU's float32 results do not change. References: ct_ref_layer_norm2,
     * ct_ref_glu_dwconv1d, ct_ref_attn_relpos_qkv (compute/ref/ops_ref.h).
     *
     * y (f32) = LN1(x (f32)), then z (act) = LN2(y): one layer's last norm
     * and the next layer's first. y may equal x. (M, D) each. */
    ct_status (*layer_norm2)(ct_backend *be, ct_buf y, ct_buf z, ct_buf x, const float *g1, const float *b1,
                             const float *g2, const float *b2, int M, int D, float eps);
    /* The conv module's middle: y (B,T,C) = act(dwconv1d(mask_time(glu(x)),
     * len)), x (B,T,2C) the first pointwise conv's output, w (C,K), b (C)
     * BatchNorm folded, len (B) host; y, x act, y ≠ x. */
    ct_status (*glu_dwconv1d)(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *b, const int *len,
                              int B, int T, int C, int K, ct_act act, ct_arena *ws);
    /* attn_relpos over one packed projection: qkv (B,T,3·H·Dh) act holds
     * [q̃ | k | v] per row with q̃ = q + u, and c (H,Dh) f32 = vb − u, so
     * that (q+u)·k + (q+vb)·p = q̃·k + (q̃+c)·p: the result of attn_relpos
     * with q̃, u = 0 and vb = c. out (B,T,H·Dh) act; p as attn_relpos. */
    ct_status (*attn_relpos_qkv)(ct_backend *be, ct_buf out, ct_buf qkv, ct_buf p, const float *c, const int *len,
                                 int B, int T, int H, int Dh, ct_arena *ws);
    /* Page-locked host memory (CUDA: cudaHostAlloc) that to_device copies
     * from in one transfer, without the staging copy a pageable source
     * takes: for inputs the caller writes on the host batch after batch
     * (the mel's PCM). NULL (CPU): plain host memory is what it reads. */
    ct_status (*host_alloc)(ct_backend *be, size_t bytes, void **ptr);
    void (*host_free)(ct_backend *be, void *ptr);
    /* ---- version 5 (continued): the wav2vec2 aligner's typed ops -----------
     * The version-2 ops above, each ct_buf saying its element type (which
     * buffer takes which type: compute/ops.h, ct_op_conv1d ...). NULL (the
     * CPU tables): compute/ops.c calls the version-2 float32 entry when
     * every buffer is F32 and no key length is short, so the CPU aligner's
     * results do not change. */
    ct_status (*conv1d_t)(ct_backend *be, ct_buf y, ct_buf x, const ct_tensor *w, const float *bias, int B, int T,
                          int Ci, int Co, int K, int stride, ct_arena *ws);
    /* w (C, C/G, K) f32 as conv1d_grouped; the backend may re-lay it in ws */
    ct_status (*conv1d_grouped_t)(ct_backend *be, ct_buf y, ct_buf x, const float *w, const float *bias, int B, int T,
                                  int C, int G, int K, ct_arena *ws);
    ct_status (*gelu_t)(ct_backend *be, ct_buf x, size_t n);
    ct_status (*add_t)(ct_backend *be, ct_buf y, ct_buf a, ct_buf b, size_t n);
    /* attn_full with key lengths: row b attends to keys j < len[b] (len NULL:
     * all T); query rows i ≥ len[b] are written as zeros. len (B) host. */
    ct_status (*attn_full_t)(ct_backend *be, ct_buf out, ct_buf q, ct_buf k, ct_buf v, const int *len, int B, int T,
                             int H, int Dh, ct_dtype prod, ct_arena *ws);

    /* ---- version 6: the fused decoder step ---------------------------------
     * One device step's self-attention over a packed projection: qkv (n,
     * 3·H·Dh) act holds [q | k | v] per row; the k and v parts are written
     * into kc and vc at slot[r], position *pos (kv_write_dev), then out (n,
     * H·Dh) act = attn_causal_dev(q) over those caches. One launch where the
     * composition takes three (and three q/k/v products become one). NULL
     * (the CPU tables): asr/decoder.c runs the composition. Reference:
     * ct_ref_attn_causal_qkv_dev (compute/ref/ref_fused.c). */
    ct_status (*attn_causal_qkv_dev)(ct_backend *be, ct_buf out, ct_buf qkv, ct_buf kc, ct_buf vc, const int *slot,
                                     int n, const int32_t *pos, int Smax, int H, int Dh, ct_arena *ws);
    /* The subsampling of B rows, asr/encoder.c's composition: with L0 =
     * min(len[b], T), L1..L3 its stride-2 lengths, s1 = mask(L1,
     * conv2d_s2(feats, c0, ReLU)), s2 = mask(L2, dwconv2d_s2(s1, dw1)), s3
     * = mask(L2, conv_pointwise(s2, pw1, ReLU)), s4 = mask(L3,
     * dwconv2d_s2(s3, dw2)), s5 = mask(L3, conv_pointwise(s4, pw2, ReLU)),
     * x (B·T3, d) = flat(s5) · out_wᵀ + out_b with flat[b,t][f·C + c] =
     * s5[b][c][t][f]. feats (B, T, M) f32; x f32 or act; len (B) host; a,
     * b act scratch of B·T1·F1·C and B·T2·F2·C elements (the backend lays
     * the maps out as it likes there). Reference: ct_ref_subsample. */
    ct_status (*subsample)(ct_backend *be, ct_buf x, ct_buf feats, const ct_subsample_weights *w, const int *len,
                           int B, int T, int M, int C, int d, ct_buf a, ct_buf b, ct_arena *ws);

    /* ---- version 7: uploads in the background -------------------------------
     * As to_device, but the copy may still be on its way when this returns,
     * on threads and streams of the backend's own: src must stay valid and
     * unchanged, and dst must not be read by an op, until the next
     * synchronize. to_device, to_host, copy, zero, free and synchronize
     * wait for the pending ones first, so only a kernel launched on dst in
     * between would race. The model load's weights from the checkpoint's
     * mapping (asr/weights.c): on CUDA a load beside busy preparation
     * workers no longer waits ~500 times for a chunk's copy threads
     * (compute/cuda/cuda_upload.cu). NULL: callers use to_device. */
    ct_status (*to_device_async)(ct_backend *be, void *dst, const void *src_host, size_t bytes);
} ct_backend_ops;

struct ct_backend {
    const ct_backend_ops *ops;
    void *impl;  /* backend-private state */
    int threads; /* CPU threads used (0 = OpenMP default) */
    ct_dtype act_dtype; /* the model's activations (F32 on CPU: zero from calloc) */
};

/* The CUDA encoder attention (attn_relpos): the fused tensor-core kernel
 * where it is built for the head size and activations are bf16, else the
 * simple one; FUSED refuses shapes it cannot run, SIMPLE is the A/B and
 * reference path. */
typedef enum ct_attn_variant { CT_ATTN_AUTO = 0, CT_ATTN_FUSED = 1, CT_ATTN_SIMPLE = 2 } ct_attn_variant;

typedef struct ct_backend_options {
    int threads;      /* CPU threads (0: OpenMP default) */
    int device_index; /* CUDA device */
    /* activation type: CT_DTYPE_F32 (the default, CPU: the only one) asks
     * for the backend's own default (CUDA: BF16); CUDA takes BF16 or F16 */
    ct_dtype act_dtype;
    ct_attn_variant attn_variant; /* CUDA only */
    /* CUDA only: 1 = time cuBLASLt's candidates for each new large GEMM
     * shape on its first call (ct_cuda_set_gemm_tune; benchmarks), 0 = the
     * heuristic's first choice */
    int gemm_tune;
    /* cpu: the highest CPU feature level the matrix products may use
     * (CT_ISA_* in compute/cpu/cpu_features.h; 0 = all the CPU has).
     * CT_ISA_BASELINE forces today's OpenBLAS path on any machine. */
    int isa_limit;
    /* cpu: bf16 weights through oneDNN's bf16 matmul: 0 = where the CPU
     * multiplies bf16 natively, 1 = always (emulated elsewhere: tests),
     * -1 = never. */
    int dnnl_bf16;
    /* cpu: weights pre-packed into oneDNN's blocked layout on first use
     * (compute/cpu/cpu_dnnl.h): 0 = where it measured faster end to end
     * (no shape yet: plain weights, today's path), 1 = always (tests: the packed path on any CPU), -1 = never.
     * The benchmarks' A/B switch is their --dnnl-pack off|auto|always. */
    int dnnl_pack;
} ct_backend_options;

ct_backend_options ct_backend_default_options(void);

/* name: "cpu" (fast paths), "cpu-ref" (reference ops only), "cuda". */
ct_status ct_backend_create(const char *name, const ct_backend_options *opts, ct_backend **out);
/* Whether a backend can be created on this machine, before loading a model:
 * 1, or 0 with the reason in *why (static text): "built without CUDA" (the
 * build has no CUDA code), else the driver's or device's answer ("no usable
 * CUDA driver/device", too old a device) for "cuda"; unknown names give 0. */
int ct_backend_available(const char *name, const char **why);
void ct_backend_free(ct_backend *be);

/* The reference and fast CPU tables (for tests that compare ops). */
const ct_backend_ops *ct_cpu_ref_ops(void);
const ct_backend_ops *ct_cpu_fast_ops(void);

/* An arena over `bytes` of backend memory (for activations and scratch). */
ct_status ct_backend_arena_create(ct_backend *be, size_t bytes, ct_arena *out);
void ct_backend_arena_free(ct_backend *be, ct_arena *a);

#endif
