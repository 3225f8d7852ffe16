/* wav2vec2_run.c — the aligner network's forward pass for a batch of equal
 * length rows (no attention mask, as the twin calls it on zero-filled 34 s
 * windows) and the file's emissions: windows, crop of the context frames,
 * float32 log-softmax, the <star> column, the trim of the last window, and
 * the out-of-memory halving of the window batch. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "align/wav2vec2_internal.h"
#include "compute/ops.h"

/* Buffers of the forward pass. act: the backend's activation type (F32 on
 * the CPU, bf16 on CUDA); the residual stream h, the conv outputs before
 * their LayerNorm (cf) and the logits are float32 everywhere. On the CPU
 * cf is the conv's own output buffer (a/b), hx is h and no buffer is
 * converted, so the ops run exactly as the float32 forward always did. */
typedef struct fwd_bufs {
    void *x, *a, *b, *cf, *h, *hx, *ln, *q, *k, *v, *att, *ff, *logits;
    ct_arena ws;
} fwd_bufs;

static void free_bufs(ct_backend *be, fwd_bufs *f) {
    void *all[] = {f->x, f->a, f->b, f->cf, f->h, f->hx, f->ln, f->q, f->k, f->v, f->att, f->ff, f->logits};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) be->ops->free(be, all[i]);
    ct_backend_arena_free(be, &f->ws);
}

/* Frames after the conv stack for n input samples (0 when too short). */
static int frames_after_convs(const ct_w2v2_config *c, size_t n, size_t *max_conv_elems) {
    size_t t = n, mx = 0;
    for (int i = 0; i < c->n_conv; i++) {
        if (t < (size_t)c->conv_kernel[i]) return 0;
        t = (t - (size_t)c->conv_kernel[i]) / (size_t)c->conv_stride[i] + 1;
        if (t * (size_t)c->conv_dim[i] > mx) mx = t * (size_t)c->conv_dim[i];
    }
    if (max_conv_elems) *max_conv_elems = mx;
    return t > (size_t)(1 << 30) ? 0 : (int)t;
}

/* The forward pass's buffer sizes in bytes for nb rows of n samples (T
 * frames, conv_max elements of the largest conv output per row), in the
 * order of fwd_bufs' pointers (0: not needed), and the workspace's. */
enum { FWD_NBUF = 13 };
static void fwd_sizes(const ct_w2v2_config *c, ct_dtype A, int nb, size_t n, int T, size_t conv_max,
                      size_t bytes[FWD_NBUF], size_t *ws_bytes) {
    const int act_f32 = A == CT_DTYPE_F32, H = c->hidden, Dh = H / c->heads;
    const size_t M = (size_t)nb * T, sa = ct_dtype_size(A), sf = sizeof(float);
    /* scratch: the conv im2col tile (+ a widened weight), one T×T score
     * matrix, or the bf16 attention's packed head and 512-row blocks */
    size_t ws_floats = (size_t)T * T + (size_t)T;
    const size_t attn_bf16 = (size_t)3 * T * Dh / 2 + (size_t)512 * (T + Dh) + (size_t)512 * T / 2 + 256;
    if (attn_bf16 > ws_floats) ws_floats = attn_bf16;
    for (int i = 1; i < c->n_conv; i++) {
        size_t ck = (size_t)c->conv_dim[i - 1] * c->conv_kernel[i];
        size_t need = 2048 * ck + ck * (size_t)c->conv_dim[i]; /* cpu_wav2vec2.c CT_CONV_ROWS */
        if (need > ws_floats) ws_floats = need;
    }
    const size_t wide = (size_t)(c->ffn > H ? c->ffn : H), conv = (size_t)nb * conv_max;
    const size_t sz[FWD_NBUF] = {
        (size_t)nb * n * sf,       /* x: the input rows */
        conv * sa,                 /* a, b: the conv outputs in turn */
        conv * sa,                 /* */
        act_f32 ? 0 : conv * sf,   /* cf: a GEMM conv's float32 sums */
        M * H * sf,                /* h: the residual stream */
        act_f32 ? 0 : M * H * sa,  /* hx: h in the activation type */
        M * H * sa,                /* ln, q, k, v, att */
        M * H * sa,                /* */
        M * H * sa,                /* */
        M * H * sa,                /* */
        M * H * sa,                /* */
        M * wide * sa,             /* ff */
        M * (size_t)c->vocab * sf, /* logits */
    };
    memcpy(bytes, sz, sizeof sz);
    *ws_bytes = ws_floats * sizeof(float) + 4096;
}

size_t ct_w2v2_forward_bytes(const ct_w2v2 *m, int nb, size_t n) {
    size_t conv_max = 0, bytes[FWD_NBUF], ws = 0, sum = 0;
    const int T = frames_after_convs(&m->cfg, n, &conv_max);
    if (nb <= 0 || T <= 0) return 0;
    fwd_sizes(&m->cfg, ct_backend_act_dtype(m->be), nb, n, T, conv_max, bytes, &ws);
    for (int i = 0; i < FWD_NBUF; i++) sum += bytes[i];
    return sum + ws;
}

/* The forward pass's buffers for nb rows of n samples. A device backend
 * keeps them between calls (cudaMalloc and cudaFree of ~20 GB per batch of
 * 64 windows cost more than some of the ops) while the row length is the
 * same and nb fits; ct_w2v2_release_buffers drops them (after an
 * out-of-memory, and in ct_w2v2_free). The CPU allocates per call, as
 * before. */
static ct_status fwd_buffers(ct_w2v2 *m, int nb, size_t n, int T, size_t conv_max, fwd_bufs *f) {
    ct_backend *be = m->be;
    if (m->fwd && m->fwd_nb >= nb && m->fwd_n == n) {
        *f = *(fwd_bufs *)m->fwd;
        return CT_OK;
    }
    ct_w2v2_release_buffers(m);
    memset(f, 0, sizeof *f);
    size_t bytes[FWD_NBUF], ws_bytes = 0;
    fwd_sizes(&m->cfg, ct_backend_act_dtype(be), nb, n, T, conv_max, bytes, &ws_bytes);
    void **slot[FWD_NBUF] = {&f->x, &f->a, &f->b, &f->cf, &f->h, &f->hx, &f->ln,
                             &f->q, &f->k, &f->v, &f->att, &f->ff, &f->logits};
    ct_status s = CT_OK;
    for (int i = 0; i < FWD_NBUF && s == CT_OK; i++)
        if (bytes[i]) s = be->ops->alloc(be, bytes[i], slot[i]);
    if (s == CT_OK) s = ct_backend_arena_create(be, ws_bytes, &f->ws);
    if (s != CT_OK) {
        free_bufs(be, f);
        memset(f, 0, sizeof *f);
        return s;
    }
    if (be->ops->stream(be)) { /* a device: keep them */
        fwd_bufs *keep = malloc(sizeof *keep);
        if (keep) {
            *keep = *f;
            m->fwd = keep, m->fwd_nb = nb, m->fwd_n = n;
        }
    }
    return CT_OK;
}

void ct_w2v2_release_buffers(ct_w2v2 *m) {
    if (!m->fwd) return;
    free_bufs(m->be, (fwd_bufs *)m->fwd);
    free(m->fwd);
    m->fwd = NULL;
    m->fwd_nb = 0, m->fwd_n = 0;
}

/* The forward's input: nb rows of n samples built on the host (rows), or
 * the windows first, first + 1, ... of a file's pcm_n samples, each cut
 * straight from pcm into its row of the device buffer (zeros where the
 * window reaches past the file). The second spares the host a window
 * buffer of nb · 2.2 MB (at 64 windows 139 MB, whose fresh pages and
 * copy cost as much as several of the GPU's layers) and uploads each
 * sample once per window, as the first did. */
typedef struct fwd_src {
    const float *rows, *pcm;
    size_t pcm_n, first;
} fwd_src;

static ct_status upload_input(ct_backend *be, float *x, const fwd_src *src, int nb, size_t n) {
    const ct_backend_ops *o = be->ops;
    if (src->rows) return o->to_device(be, x, src->rows, (size_t)nb * n * sizeof *x);
    ct_status s = CT_OK;
    for (int r = 0; r < nb && s == CT_OK; r++) {
        float *row = x + (size_t)r * n;
        long long req0 = (long long)(src->first + (size_t)r) * CT_ALIGN_WINDOW - CT_ALIGN_CONTEXT;
        long long s0 = req0 > 0 ? req0 : 0, s1 = req0 + (long long)n;
        if (s1 > (long long)src->pcm_n) s1 = (long long)src->pcm_n;
        if (s1 <= s0) { /* a window past the file: all zeros */
            s = o->zero(be, row, n * sizeof *row);
            continue;
        }
        const size_t head = (size_t)(s0 - req0), len = (size_t)(s1 - s0), tail = n - head - len;
        if (head) s = o->zero(be, row, head * sizeof *row);
        if (s == CT_OK && tail) s = o->zero(be, row + head + len, tail * sizeof *row);
        if (s == CT_OK) s = o->to_device(be, row + head, src->pcm + s0, len * sizeof *row);
    }
    return s;
}

static ct_status forward(ct_w2v2 *m, const fwd_src *src, int nb, size_t n, float **logits, int *frames) {
    *logits = NULL;
    *frames = 0;
    ct_backend *be = m->be;
    const ct_backend_ops *o = be->ops;
    const ct_w2v2_config *c = &m->cfg;
    const ct_dtype A = ct_backend_act_dtype(be), F32 = CT_DTYPE_F32;
    const int act_f32 = A == F32;
    size_t conv_max = 0;
    const int T = frames_after_convs(c, n, &conv_max);
    if (nb <= 0 || T <= 0) return ct_fail(CT_ERR_INVALID_ARG, "aligner: %zu samples give no frames", n);
    const int H = c->hidden, Dh = H / c->heads;
    const size_t M = (size_t)nb * T;
    fwd_bufs f = {0};
    ct_status s = fwd_buffers(m, nb, n, T, conv_max, &f);
    if (s == CT_OK) s = upload_input(be, (float *)f.x, src, nb, n);
    const ct_buf h = ct_buf_make(f.h, F32), hx = act_f32 ? h : ct_buf_make(f.hx, A), ln = ct_buf_make(f.ln, A);
    const ct_buf q = ct_buf_make(f.q, A), k = ct_buf_make(f.k, A), v = ct_buf_make(f.v, A);
    const ct_buf att = ct_buf_make(f.att, A), ff = ct_buf_make(f.ff, A), lg = ct_buf_make(f.logits, F32);
    /* feature encoder: conv → LayerNorm over channels → GELU, channels last */
    ct_buf in = ct_buf_make(f.x, F32), out = ct_buf_make(f.a, A);
    size_t t_in = n;
    int c_in = 1;
    for (int i = 0; i < c->n_conv && s == CT_OK; i++) {
        const int Co = c->conv_dim[i], K = c->conv_kernel[i], S = c->conv_stride[i];
        const int To = (int)((t_in - (size_t)K) / (size_t)S + 1);
        /* the GEMM convs accumulate their taps in float32 (cf); a layer of
         * few taps (the first, over the PCM) is one sum and writes act */
        const int direct = c_in * K < 64;
        const ct_buf cv = act_f32 || direct ? out : ct_buf_make(f.cf, F32);
        s = ct_op_conv1d(be, cv, in, &m->conv_w[i], m->conv_b[i], nb, (int)t_in, c_in, Co, K, S, &f.ws);
        if (s == CT_OK) s = ct_op_layer_norm(be, out, cv, m->conv_ln_g[i], m->conv_ln_b[i], nb * To, Co, 1e-5f);
        if (s == CT_OK) s = ct_op_gelu(be, out, (size_t)nb * To * Co);
        in = out;
        out = ct_buf_make(out.data == f.a ? f.b : f.a, A);
        t_in = (size_t)To;
        c_in = Co;
    }
    /* feature projection, positional conv */
    if (s == CT_OK) s = ct_op_layer_norm(be, ln, in, m->fp_ln_g, m->fp_ln_b, (int)M, c_in, c->eps);
    if (s == CT_OK) s = ct_op_matmul(be, h, ln, &m->fp_w, m->fp_b, CT_BUF_NONE, 1.0f, CT_ACT_NONE, (int)M, H, c_in, &f.ws);
    if (s == CT_OK && !act_f32) s = ct_op_convert(be, hx, h, M * H);
    if (s == CT_OK)
        s = ct_op_conv1d_grouped(be, q, hx, m->pos_w, m->pos_b, nb, T, H, c->pos_groups, c->pos_kernel, &f.ws);
    if (s == CT_OK) s = ct_op_gelu(be, q, M * H);
    if (s == CT_OK) s = ct_op_add(be, h, h, q, M * H);
    /* pre-LN transformer layers */
    for (int l = 0; l < c->layers && s == CT_OK; l++) {
        const w2v2_layer *L = &m->layer[l];
        s = ct_op_layer_norm(be, ln, h, L->ln1_g, L->ln1_b, (int)M, H, c->eps);
        if (s == CT_OK) s = ct_op_matmul(be, q, ln, &L->q, L->bq, CT_BUF_NONE, 1.0f, CT_ACT_NONE, (int)M, H, H, &f.ws);
        if (s == CT_OK) s = ct_op_matmul(be, k, ln, &L->k, L->bk, CT_BUF_NONE, 1.0f, CT_ACT_NONE, (int)M, H, H, &f.ws);
        if (s == CT_OK) s = ct_op_matmul(be, v, ln, &L->v, L->bv, CT_BUF_NONE, 1.0f, CT_ACT_NONE, (int)M, H, H, &f.ws);
        if (s == CT_OK) s = ct_op_attn_full(be, att, q, k, v, NULL, nb, T, c->heads, Dh, m->attn_dtype, &f.ws);
        if (s == CT_OK) s = ct_op_matmul(be, h, att, &L->o, L->bo, h, 1.0f, CT_ACT_NONE, (int)M, H, H, &f.ws);
        if (s == CT_OK) s = ct_op_layer_norm(be, ln, h, L->ln2_g, L->ln2_b, (int)M, H, c->eps);
        if (s == CT_OK)
            s = ct_op_matmul(be, ff, ln, &L->ff1, L->bff1, CT_BUF_NONE, 1.0f, CT_ACT_NONE, (int)M, c->ffn, H, &f.ws);
        if (s == CT_OK) s = ct_op_gelu(be, ff, M * (size_t)c->ffn);
        if (s == CT_OK) s = ct_op_matmul(be, h, ff, &L->ff2, L->bff2, h, 1.0f, CT_ACT_NONE, (int)M, H, c->ffn, &f.ws);
    }
    if (s == CT_OK) s = ct_op_layer_norm(be, ln, h, m->enc_ln_g, m->enc_ln_b, (int)M, H, c->eps);
    if (s == CT_OK)
        s = ct_op_matmul(be, lg, ln, &m->head_w, m->head_b, CT_BUF_NONE, 1.0f, CT_ACT_NONE, (int)M, c->vocab, H,
                         &f.ws);
    float *host = NULL;
    if (s == CT_OK) {
        host = malloc(M * (size_t)c->vocab * sizeof *host);
        if (!host) s = ct_fail(CT_ERR_OOM, "aligner: logits of %zu frames", M);
    }
    if (s == CT_OK) s = o->to_host(be, host, f.logits, M * (size_t)c->vocab * sizeof *host);
    if (!m->fwd) free_bufs(be, &f); /* else kept for the next batch */
    else if (s != CT_OK) ct_w2v2_release_buffers(m);
    if (s != CT_OK) {
        free(host);
        return s;
    }
    *logits = host;
    *frames = T;
    return CT_OK;
}

ct_status ct_w2v2_forward(ct_w2v2 *m, const float *pcm, int nb, size_t n, float **logits, int *frames) {
    const fwd_src src = {pcm, NULL, 0, 0};
    return forward(m, &src, nb, n, logits, frames);
}

void ct_w2v2_window_batch(float *rows, const float *pcm, size_t n, int first, int count) {
    const size_t in = CT_ALIGN_WINDOW + 2 * CT_ALIGN_CONTEXT;
    memset(rows, 0, (size_t)count * in * sizeof *rows);
    for (int r = 0; r < count; r++) {
        long long req0 = (long long)(first + r) * CT_ALIGN_WINDOW - CT_ALIGN_CONTEXT;
        long long s0 = req0 > 0 ? req0 : 0, s1 = req0 + (long long)in;
        if (s1 > (long long)n) s1 = (long long)n;
        if (s1 <= s0) continue;
        memcpy(rows + (size_t)r * in + (size_t)(s0 - req0), pcm + s0, (size_t)(s1 - s0) * sizeof *rows);
    }
}

/* torch.log_softmax over one row in float32: x − max − log Σ exp(x − max). */
static void log_softmax_row(float *y, const float *x, int n) {
    float mx = -INFINITY;
    for (int j = 0; j < n; j++)
        if (x[j] > mx) mx = x[j];
    float sum = 0.0f;
    for (int j = 0; j < n; j++) sum += expf(x[j] - mx);
    float lse = logf(sum);
    for (int j = 0; j < n; j++) y[j] = x[j] - mx - lse;
}

int ct_w2v2_budget_batch(ct_w2v2 *m, int want, size_t n) {
    ct_backend *be = m->be;
    size_t free_b = 0, total_b = 0;
    if (want <= 1 || !be->ops->stream(be) || !be->ops->memory_info) return want;
    if (be->ops->memory_info(be, &free_b, &total_b) != CT_OK) return want; /* unknown: the OOM halving decides */
    /* the kept buffers count as free to this model: they are reused or replaced */
    const size_t kept = m->fwd ? ct_w2v2_forward_bytes(m, m->fwd_nb, m->fwd_n) : 0;
    const size_t reserve = m->device_reserve ? m->device_reserve : total_b / 8;
    const size_t avail = free_b + kept > reserve ? free_b + kept - reserve : 0;
    int nb = want;
    while (nb > 1 && ct_w2v2_forward_bytes(m, nb, n) > avail) nb--;
    return nb;
}

ct_status ct_w2v2_emissions(ct_w2v2 *m, const float *pcm, size_t n, int batch_size, float **out, int *frames,
                            int *classes, double *stride_ms) {
    *out = NULL;
    *frames = 0;
    const ct_w2v2_config *c = &m->cfg;
    if (n == 0) return ct_fail(CT_ERR_INVALID_ARG, "aligner: cannot compute CTC emissions for empty audio");
    const int ratio = c->ratio;
    if (CT_ALIGN_WINDOW % ratio || CT_ALIGN_CONTEXT % ratio)
        return ct_fail(CT_ERR_UNSUPPORTED, "aligner: window and context must be divisible by the model stride %d",
                       ratio);
    const int wf = CT_ALIGN_WINDOW / ratio, cf = CT_ALIGN_CONTEXT / ratio, V = c->vocab, C = V + 1;
    const size_t in = CT_ALIGN_WINDOW + 2 * CT_ALIGN_CONTEXT;
    const size_t windows = (n + CT_ALIGN_WINDOW - 1) / CT_ALIGN_WINDOW;
    const size_t ext_frames = (windows * CT_ALIGN_WINDOW - n) / (size_t)ratio;
    const size_t total = windows * (size_t)wf - ext_frames;
    if (windows > (size_t)(1 << 24)) return ct_fail(CT_ERR_LIMIT, "aligner: %zu samples are too many", n);
    float *em = calloc(total * (size_t)C, sizeof *em);
    if (!em) return ct_fail(CT_ERR_OOM, "aligner: emissions of %zu frames", total);
    int cur = batch_size < 1 ? 1 : batch_size;
    if (m->batch_cap > 0 && m->batch_cap < cur) cur = m->batch_cap;
    if ((size_t)cur > windows) cur = (int)windows;
    cur = ct_w2v2_budget_batch(m, cur, in); /* the device's free memory, less the reserve */
    size_t first = 0, wrote = 0;
    ct_status s = CT_OK;
    while (first < windows && s == CT_OK) {
        int count = (int)(windows - first < (size_t)cur ? windows - first : (size_t)cur);
        const fwd_src src = {NULL, pcm, n, first}; /* the windows of ct_w2v2_window_batch, cut on upload */
        float *logits = NULL;
        int T = 0;
        s = forward(m, &src, count, in, &logits, &T);
        if (s == CT_ERR_OOM && cur > 1) {
            cur = cur / 2;
            m->batch_cap = cur;
            s = CT_OK;
            continue;
        }
        if (s != CT_OK) break;
        if (T < cf + wf) {
            free(logits);
            s = ct_fail(CT_ERR_FORMAT, "aligner: %d frames per window, fewer than the %d the window needs", T, cf + wf);
            break;
        }
        /* rows are independent: threads change nothing in the result (a GPU
         * batch of 64 windows is 96 000 rows, ~15 ms on one core) */
        const int last_keep = wf - (int)ext_frames, is_last = first + (size_t)count == windows;
        const long n_rows = (long)count * wf;
#pragma omp parallel for schedule(static) if (n_rows >= 16384)
        for (long i = 0; i < n_rows; i++) {
            const int r = (int)(i / wf), t = (int)(i % wf);
            if (is_last && r == count - 1 && t >= last_keep) continue;
            log_softmax_row(em + (wrote + i) * C, logits + ((size_t)r * T + cf + t) * V, V);
        }
        wrote += (size_t)count * wf - (is_last ? (size_t)ext_frames : 0);
        free(logits);
        first += (size_t)count;
    }
    if (s == CT_OK && wrote != total)
        s = ct_fail(CT_ERR_INTERNAL, "aligner: emission assembly wrote %zu frames, expected %zu", wrote, total);
    if (s != CT_OK) {
        free(em);
        return s;
    }
    *out = em;
    *frames = (int)total;
    *classes = C;
    *stride_ms = ratio * 1000.0 / CT_ALIGN_SR;
    return CT_OK;
}
