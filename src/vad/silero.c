/* silero.c — see silero.h. Weight lookup in the ONNX file, the batched
 * network (matrix products through cblas over blocks of frames from several
 * files; only the LSTM recurrence runs frame by frame) and a direct-loop
 * reference of one frame. The 8 kHz branch of the file is not used.
 */
#include "vad/silero.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "compute/cpu/blas_budget.h"
#include "core/fs.h"
#include "core/tasks.h"

/* Shapes of the 16 kHz branch. */
#define ROW (CT_SILERO_CONTEXT + CT_SILERO_FRAME) /* 576 samples per model row */
#define PADDED (ROW + 64)                        /* reflect-padded on the right: 640 */
#define NFFT 256                                 /* STFT filter length */
#define HOP 128
#define NT 4      /* STFT frames per row: (640 - 256) / 128 + 1 */
#define NBASIS 258 /* 129 real + 129 imaginary filters */
#define NFREQ 129
#define HID 128
#define GATES (4 * HID)

/* Rows per block of the batched path: bounds scratch memory (about 19 KiB
 * per row) while keeping the matrix products large. Each file contributes
 * BLOCK_ROWS / batch frames per block (at least one, so a block of a large
 * batch holds one row per file). */
#define BLOCK_ROWS 512

typedef struct {
    int cin, cout, stride, tin, tout;
    float *w; /* (cout, cin*3) */
    float *b; /* (cout) */
} conv_layer;

struct ct_silero {
    float *basis; /* (258, 256) */
    conv_layer enc[4];
    float *w_ih, *w_hh; /* (512, 128), gates i, f, g, o (PyTorch order) */
    float *b_ih, *b_hh; /* (512) */
    float *b_sum;       /* b_ih + b_hh (512) */
    float *w_out;       /* (128) */
    float b_out;
    char sha256[65];
};

static const struct {
    int cin, cout, stride;
} ENC[4] = {{NFREQ, 128, 1}, {128, 64, 2}, {64, 64, 2}, {64, 128, 1}};

size_t ct_silero_frame_count(size_t n) { return (n + CT_SILERO_FRAME - 1) / CT_SILERO_FRAME; }

static float sigmoidf(float x) { return 1.0f / (1.0f + expf(-x)); }

/* ---- weights -------------------------------------------------------------- */

/* A tensor's name matches a parameter when it is the parameter's name or ends
 * with it after a separator (the exporter prefixes branch scopes, e.g.
 * "If_0_then_branch__Inline_0__encoder.0.reparam_conv.weight"). */
static int name_matches(const char *name, const char *param) {
    size_t n = strlen(name), p = strlen(param);
    if (n < p || strcmp(name + n - p, param) != 0) return 0;
    if (n == p) return 1;
    char c = name[n - p - 1];
    return c == '_' || c == '/' || c == ':';
}

static int dims_equal(const ct_onnx_tensor *t, int ndim, const int64_t *dims) {
    if (t->ndim != ndim) return 0;
    for (int i = 0; i < ndim; i++)
        if (t->dims[i] != dims[i]) return 0;
    return 1;
}

/* Copy a float tensor of the given shape, from the graph `graph`, into a new
 * array. */
static ct_status take(const ct_onnx_model *m, const char *graph, const char *param, int ndim,
                      const int64_t *dims, float **out) {
    const ct_onnx_tensor *hit = NULL;
    for (int i = 0; i < ct_onnx_count(m); i++) {
        const ct_onnx_tensor *t = ct_onnx_at(m, i);
        if (strcmp(t->graph, graph) != 0 || !name_matches(t->name, param)) continue;
        if (hit) return ct_fail(CT_ERR_FORMAT, "silero: two tensors named %s", param);
        hit = t;
    }
    if (!hit) return ct_fail(CT_ERR_FORMAT, "silero: tensor %s is missing", param);
    if (hit->data_type != CT_ONNX_FLOAT || !hit->data || !dims_equal(hit, ndim, dims))
        return ct_fail(CT_ERR_FORMAT, "silero: tensor %s has the wrong type or shape", param);
    float *a = malloc(hit->nbytes ? hit->nbytes : 4);
    if (!a) return ct_fail(CT_ERR_OOM, "silero: out of memory");
    memcpy(a, hit->data, hit->nbytes);
    for (int64_t i = 0; i < hit->numel; i++) {
        if (!isfinite(a[i])) {
            free(a);
            return ct_fail(CT_ERR_FORMAT, "silero: tensor %s holds a non-finite value", param);
        }
    }
    *out = a;
    return CT_OK;
}

void ct_silero_free(ct_silero *s) {
    if (!s) return;
    free(s->basis);
    for (int i = 0; i < 4; i++) {
        free(s->enc[i].w);
        free(s->enc[i].b);
    }
    free(s->w_ih);
    free(s->w_hh);
    free(s->b_ih);
    free(s->b_hh);
    free(s->b_sum);
    free(s->w_out);
    free(s);
}

ct_status ct_silero_from_onnx(const ct_onnx_model *m, ct_silero **out) {
    *out = NULL;
    /* The file holds an 8 kHz and a 16 kHz branch with the same parameter
     * names; the 16 kHz one is the graph whose first conv takes 129
     * frequency bins (256-point STFT). All weights come from that graph. */
    const char *graph = NULL;
    for (int i = 0; i < ct_onnx_count(m); i++) {
        const ct_onnx_tensor *t = ct_onnx_at(m, i);
        const int64_t d[3] = {128, NFREQ, 3};
        if (name_matches(t->name, "encoder.0.reparam_conv.weight") && dims_equal(t, 3, d)) {
            if (graph) return ct_fail(CT_ERR_FORMAT, "silero: more than one 16 kHz branch");
            graph = t->graph;
        }
    }
    if (!graph) return ct_fail(CT_ERR_FORMAT, "silero: no 16 kHz encoder weights (encoder.0 of 128x129x3)");
    ct_silero *s = calloc(1, sizeof *s);
    if (!s) return ct_fail(CT_ERR_OOM, "silero: out of memory");
    ct_status st;
    const int64_t d_basis[3] = {NBASIS, 1, NFFT};
    if ((st = take(m, graph, "stft.forward_basis_buffer", 3, d_basis, &s->basis)) != CT_OK) goto fail;
    for (int l = 0; l < 4; l++) {
        char wn[64], bn[64];
        snprintf(wn, sizeof wn, "encoder.%d.reparam_conv.weight", l);
        snprintf(bn, sizeof bn, "encoder.%d.reparam_conv.bias", l);
        conv_layer *c = &s->enc[l];
        c->cin = ENC[l].cin;
        c->cout = ENC[l].cout;
        c->stride = ENC[l].stride;
        c->tin = l == 0 ? NT : s->enc[l - 1].tout;
        c->tout = (c->tin + 2 - 3) / c->stride + 1;
        const int64_t dw[3] = {c->cout, c->cin, 3}, db[1] = {c->cout};
        if ((st = take(m, graph, wn, 3, dw, &c->w)) != CT_OK) goto fail;
        if ((st = take(m, graph, bn, 1, db, &c->b)) != CT_OK) goto fail;
    }
    CT_ASSERT(s->enc[3].tout == 1);
    const int64_t d_w[2] = {GATES, HID}, d_b[1] = {GATES}, d_o[3] = {1, HID, 1}, d_ob[1] = {1};
    if ((st = take(m, graph, "decoder.rnn.weight_ih", 2, d_w, &s->w_ih)) != CT_OK) goto fail;
    if ((st = take(m, graph, "decoder.rnn.weight_hh", 2, d_w, &s->w_hh)) != CT_OK) goto fail;
    if ((st = take(m, graph, "decoder.rnn.bias_ih", 1, d_b, &s->b_ih)) != CT_OK) goto fail;
    if ((st = take(m, graph, "decoder.rnn.bias_hh", 1, d_b, &s->b_hh)) != CT_OK) goto fail;
    if ((st = take(m, graph, "decoder.decoder.2.weight", 3, d_o, &s->w_out)) != CT_OK) goto fail;
    float *bo = NULL;
    if ((st = take(m, graph, "decoder.decoder.2.bias", 1, d_ob, &bo)) != CT_OK) goto fail;
    s->b_out = bo[0];
    free(bo);
    s->b_sum = malloc(GATES * sizeof(float));
    if (!s->b_sum) {
        st = ct_fail(CT_ERR_OOM, "silero: out of memory");
        goto fail;
    }
    for (int i = 0; i < GATES; i++) s->b_sum[i] = s->b_ih[i] + s->b_hh[i];
    /* The matrix products below call cblas: one OpenBLAS buffer must be
     * mapped while there is room (compute/cpu/blas_budget.h); callers that
     * run the VAD on several threads at once reserve one per thread. */
    if ((st = ct_blas_reserve(1)) != CT_OK) goto fail;
    *out = s;
    return CT_OK;
fail:
    ct_silero_free(s);
    return st;
}

ct_status ct_silero_load(const char *path, ct_silero **out) {
    *out = NULL;
    char *buf;
    size_t n;
    CT_TRY(ct_fs_read_all(path, (size_t)64 << 20, &buf, &n));
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (!EVP_Digest(buf, n, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32) {
        free(buf);
        return ct_fail(CT_ERR_INTERNAL, "%s: sha256 failed", path);
    }
    ct_onnx_model *m;
    ct_status st = ct_onnx_parse(buf, n, &m);
    free(buf);
    if (st != CT_OK) return ct_fail_wrap(st, "%s", path);
    st = ct_silero_from_onnx(m, out);
    ct_onnx_free(m);
    if (st != CT_OK) return ct_fail_wrap(st, "%s", path);
    for (int i = 0; i < 32; i++) snprintf((*out)->sha256 + 2 * i, 3, "%02x", md[i]);
    return CT_OK;
}

const char *ct_silero_sha256(const ct_silero *s) { return s->sha256; }

int ct_silero_is_v62(const ct_silero *s) { return strcmp(s->sha256, CT_SILERO_SHA256_V62) == 0; }

/* ---- shared pieces ------------------------------------------------------- */

/* Model row of frame f: the 64 samples before the frame (zeros before the
 * file) and the frame (zeros past the end), then the reflect padding of the
 * exporter's STFT (64 samples mirrored about the last one, which is not
 * repeated). */
/* Frame f's row from samples audio[i] = file sample base + i (the file has n
 * samples; a row reads [f·512 − 64, f·512 + 512), zero outside the file).
 * base is 0 for a whole file and a block's first sample for the stream,
 * which keeps only the blocks it has not yet turned into gates. */
static void build_row_at(float *x /* (640) */, const float *audio, size_t base, size_t n, size_t f) {
    size_t s0 = f * CT_SILERO_FRAME;
    for (int j = 0; j < ROW; j++) {
        /* sample index s0 - 64 + j, as a signed offset */
        size_t idx = s0 + (size_t)j;
        x[j] = (idx >= CT_SILERO_CONTEXT && idx - CT_SILERO_CONTEXT < n) ? audio[idx - CT_SILERO_CONTEXT - base]
                                                                          : 0.0f;
    }
    for (int j = 0; j < 64; j++) x[ROW + j] = x[ROW - 2 - j];
}

static void build_row(float *x, const float *audio, size_t n, size_t f) { build_row_at(x, audio, 0, n, f); }

/* ---- reference: one frame with direct loops ---------------------------- */

static void conv_ref(float *out /* (cout, tout) */, const float *in /* (cin, tin) */, const conv_layer *c) {
    for (int co = 0; co < c->cout; co++) {
        for (int to = 0; to < c->tout; to++) {
            float acc = c->b[co];
            for (int ci = 0; ci < c->cin; ci++) {
                for (int k = 0; k < 3; k++) {
                    int ti = to * c->stride + k - 1;
                    if (ti < 0 || ti >= c->tin) continue;
                    acc += c->w[((size_t)co * c->cin + ci) * 3 + k] * in[ci * c->tin + ti];
                }
            }
            out[co * c->tout + to] = acc > 0.0f ? acc : 0.0f;
        }
    }
}

ct_status ct_silero_probs_ref(const ct_silero *s, const float *audio, size_t n, float *probs) {
    float x[PADDED], spec[NBASIS * NT], a[NFREQ * NT], b[NFREQ * NT];
    float h[HID] = {0}, c[HID] = {0}, g[GATES];
    size_t frames = ct_silero_frame_count(n);
    for (size_t f = 0; f < frames; f++) {
        build_row(x, audio, n, f);
        for (int k = 0; k < NBASIS; k++) {
            for (int t = 0; t < NT; t++) {
                float acc = 0.0f;
                for (int j = 0; j < NFFT; j++) acc += s->basis[k * NFFT + j] * x[t * HOP + j];
                spec[k * NT + t] = acc;
            }
        }
        for (int k = 0; k < NFREQ; k++) {
            for (int t = 0; t < NT; t++) {
                float re = spec[k * NT + t], im = spec[(NFREQ + k) * NT + t];
                a[k * NT + t] = sqrtf(re * re + im * im);
            }
        }
        conv_ref(b, a, &s->enc[0]);
        conv_ref(a, b, &s->enc[1]);
        conv_ref(b, a, &s->enc[2]);
        conv_ref(a, b, &s->enc[3]); /* a: (128, 1) */
        for (int r = 0; r < GATES; r++) {
            float acc = s->b_ih[r] + s->b_hh[r];
            for (int j = 0; j < HID; j++) acc += s->w_ih[r * HID + j] * a[j] + s->w_hh[r * HID + j] * h[j];
            g[r] = acc;
        }
        float o = s->b_out;
        for (int j = 0; j < HID; j++) {
            float ig = sigmoidf(g[j]), fg = sigmoidf(g[HID + j]), gg = tanhf(g[2 * HID + j]),
                  og = sigmoidf(g[3 * HID + j]);
            c[j] = fg * c[j] + ig * gg;
            h[j] = og * tanhf(c[j]);
            o += s->w_out[j] * (h[j] > 0.0f ? h[j] : 0.0f);
        }
        probs[f] = sigmoidf(o);
    }
    return CT_OK;
}

/* ---- batched path --------------------------------------------------------- */

/* out (M, N) = A (M, K; row stride lda) · W (N, K)ᵀ [+ bias (N)] */
static void gemm_nt(float *out, int ldo, const float *a, int lda, const float *w, const float *bias, int m,
                    int n, int k) {
    if (bias) {
        for (int i = 0; i < m; i++) memcpy(out + (size_t)i * ldo, bias, (size_t)n * sizeof(float));
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, lda, w, k, bias ? 1.0f : 0.0f,
                out, ldo);
}

/* One conv block over M rows, activations channel-last: in (M, tin, cin) →
 * out (M, tout, cout), via im2col (M·tout, cin·3) so that the product uses
 * the weights' own (cout, cin·3) layout. */
static void conv_batch(float *out, const float *in, float *col, const conv_layer *c, int m) {
    int kk = c->cin * 3;
    for (int r = 0; r < m; r++) {
        for (int to = 0; to < c->tout; to++) {
            float *dst = col + ((size_t)r * c->tout + to) * kk;
            for (int k = 0; k < 3; k++) {
                int ti = to * c->stride + k - 1;
                if (ti < 0 || ti >= c->tin) {
                    for (int ci = 0; ci < c->cin; ci++) dst[ci * 3 + k] = 0.0f;
                } else {
                    const float *src = in + ((size_t)r * c->tin + ti) * c->cin;
                    for (int ci = 0; ci < c->cin; ci++) dst[ci * 3 + k] = src[ci];
                }
            }
        }
    }
    int rows = m * c->tout;
    gemm_nt(out, c->cout, col, kk, c->w, c->b, rows, c->cout, kk);
    size_t total = (size_t)rows * c->cout;
    for (size_t i = 0; i < total; i++) out[i] = out[i] > 0.0f ? out[i] : 0.0f;
}

typedef struct {
    float *x;    /* (M, 640) */
    float *spec; /* (M, 4, 258) */
    float *a, *b;/* activations, (M, 4, 129) at most */
    float *col;  /* im2col, (M·4, 128·3) at most */
    float *xg;   /* (M, 512) input half of the LSTM gates */
    float *hs;   /* (B, 128) gathered LSTM state */
    float *gs;   /* (B, 512) */
} scratch;

/* The frame-independent part of one block: the m rows in w->x through the
 * STFT, the four convs and the input half of the LSTM gates, into w->xg
 * (m, 512). Shared by the batched path and the parallel one, so that a
 * block of the same rows gives the same bits in both. */
static void block_gates(const ct_silero *s, scratch *w, int m) {
    /* STFT: for each of the 4 windows, (M, 256) at stride 640 times the
     * basis, written interleaved as (M, 4, 258). */
    for (int t = 0; t < NT; t++)
        gemm_nt(w->spec + t * NBASIS, NT * NBASIS, w->x + t * HOP, PADDED, s->basis, NULL, m, NBASIS, NFFT);
    size_t cells = (size_t)m * NT;
    for (size_t i = 0; i < cells; i++) {
        const float *sp = w->spec + i * NBASIS;
        float *dst = w->a + i * NFREQ;
        for (int k = 0; k < NFREQ; k++) dst[k] = sqrtf(sp[k] * sp[k] + sp[NFREQ + k] * sp[NFREQ + k]);
    }
    conv_batch(w->b, w->a, w->col, &s->enc[0], m);
    conv_batch(w->a, w->b, w->col, &s->enc[1], m);
    conv_batch(w->b, w->a, w->col, &s->enc[2], m);
    conv_batch(w->a, w->b, w->col, &s->enc[3], m); /* (M, 128) */
    gemm_nt(w->xg, GATES, w->a, HID, s->w_ih, s->b_sum, m, GATES, HID);
}

/* One LSTM step of one file from its gate halves (input xg, hidden gh);
 * updates h and c, returns the frame's probability. */
static float lstm_cell(const ct_silero *s, const float *xg, const float *gh, float *h, float *c) {
    float o = s->b_out;
    for (int u = 0; u < HID; u++) {
        float ig = sigmoidf(xg[u] + gh[u]);
        float fg = sigmoidf(xg[HID + u] + gh[HID + u]);
        float gg = tanhf(xg[2 * HID + u] + gh[2 * HID + u]);
        float og = sigmoidf(xg[3 * HID + u] + gh[3 * HID + u]);
        c[u] = fg * c[u] + ig * gg;
        h[u] = og * tanhf(c[u]);
        o += s->w_out[u] * (h[u] > 0.0f ? h[u] : 0.0f);
    }
    return sigmoidf(o);
}

ct_status ct_silero_probs_batch(const ct_silero *s, const float *const *audio, const size_t *n, int batch,
                                float *const *probs) {
    if (batch <= 0) return CT_OK;
    if (batch > 4096) return ct_fail(CT_ERR_INVALID_ARG, "silero: batch of %d files is too large", batch);
    size_t per_file_frames = BLOCK_ROWS / (size_t)batch;
    if (per_file_frames < 1) per_file_frames = 1;
    size_t mmax = (size_t)batch * per_file_frames;
    scratch w;
    /* Per-row sizes of a, b and col come from the conv layers themselves
     * (layer 0's im2col, 4 · 129 · 3, is the largest, not 4 · 128 · 3). The
     * slab is exactly the sum of what is carved below; col is carved last so
     * that an overrun of it leaves the allocation, where ASan sees it. */
    size_t act_row = (size_t)NT * NFREQ, col_row = 0;
    for (int l = 0; l < 4; l++) {
        const conv_layer *c = &s->enc[l];
        if ((size_t)c->tout * c->cout > act_row) act_row = (size_t)c->tout * c->cout;
        if ((size_t)c->tout * c->cin * 3 > col_row) col_row = (size_t)c->tout * c->cin * 3;
    }
    size_t per_row = PADDED + NT * NBASIS + 2 * act_row + GATES + col_row; /* x, spec, a, b, xg, col */
    size_t per_file = 2 * HID /* h, c */ + HID + GATES;                     /* hstate, cstate, hs, gs */
    size_t total = mmax * per_row + (size_t)batch * per_file;
    float *mem = malloc(total * sizeof(float));
    if (!mem) return ct_fail(CT_ERR_OOM, "silero: cannot allocate scratch for %d files", batch);
    float *p = mem;
    w.x = p, p += mmax * PADDED;
    w.spec = p, p += mmax * NT * NBASIS;
    w.a = p, p += mmax * act_row;
    w.b = p, p += mmax * act_row;
    w.xg = p, p += mmax * GATES;
    float *hstate = p;
    p += (size_t)batch * HID;
    float *cstate = p;
    p += (size_t)batch * HID;
    w.hs = p, p += (size_t)batch * HID;
    w.gs = p, p += (size_t)batch * GATES;
    w.col = p, p += mmax * col_row;
    size_t carved = (size_t)(p - mem);
    if (carved != total) { /* the sizing above and the carving disagree */
        free(mem);
        return ct_fail(CT_ERR_INTERNAL, "silero: scratch carved %zu of %zu floats", carved, total);
    }
    memset(hstate, 0, (size_t)batch * 2 * HID * sizeof(float));

    size_t *done = calloc((size_t)batch * 3, sizeof(size_t)); /* frames done, rows this block, row base */
    int *act = malloc((size_t)batch * sizeof(int));
    if (!done || !act) {
        free(mem);
        free(done);
        free(act);
        return ct_fail(CT_ERR_OOM, "silero: out of memory");
    }
    size_t *take_n = done + batch, *base = done + 2 * batch;
    /* The products here are small: OpenBLAS's own threads would only spin
     * (and on a loaded machine run ten times slower). OpenBLAS (OpenMP
     * build) runs single-threaded when the caller's OpenMP thread count is
     * 1; that setting is per thread, so it is set here and restored, and
     * VAD throughput comes from running files in worker threads instead. */
    int saved_threads = omp_get_max_threads();
    omp_set_num_threads(1);
    for (;;) {
        /* Rows of this block: up to BLOCK_FRAMES next frames of every file. */
        int m = 0, most = 0;
        for (int bi = 0; bi < batch; bi++) {
            size_t left = ct_silero_frame_count(n[bi]) - done[bi];
            take_n[bi] = left < per_file_frames ? left : per_file_frames;
            base[bi] = (size_t)m;
            for (size_t f = 0; f < take_n[bi]; f++) build_row(w.x + (size_t)(m + (int)f) * PADDED, audio[bi], n[bi], done[bi] + f);
            m += (int)take_n[bi];
            if ((int)take_n[bi] > most) most = (int)take_n[bi];
        }
        if (m == 0) break;
        block_gates(s, &w, m);
        /* The recurrence: step k advances every file that has a k-th row. */
        for (int k = 0; k < most; k++) {
            int na = 0;
            for (int bi = 0; bi < batch; bi++)
                if ((int)take_n[bi] > k) act[na++] = bi;
            for (int j = 0; j < na; j++) memcpy(w.hs + (size_t)j * HID, hstate + (size_t)act[j] * HID, HID * sizeof(float));
            if (na == 1) /* a matrix-vector product costs less than a 1-row GEMM */
                cblas_sgemv(CblasRowMajor, CblasNoTrans, GATES, HID, 1.0f, s->w_hh, HID, w.hs, 1, 0.0f, w.gs, 1);
            else
                gemm_nt(w.gs, GATES, w.hs, HID, s->w_hh, NULL, na, GATES, HID);
            for (int j = 0; j < na; j++) {
                int bi = act[j];
                const float *xg = w.xg + (base[bi] + (size_t)k) * GATES;
                const float *gh = w.gs + (size_t)j * GATES;
                probs[bi][done[bi] + (size_t)k] =
                    lstm_cell(s, xg, gh, hstate + (size_t)bi * HID, cstate + (size_t)bi * HID);
            }
        }
        for (int bi = 0; bi < batch; bi++) done[bi] += take_n[bi];
    }
    omp_set_num_threads(saved_threads);
    free(act);
    free(done);
    free(mem);
    return CT_OK;
}

/* ---- one file, blocks on a task pool ------------------------------------- */

/* Blocks whose gates may be computed ahead of the recurrence. */
#define PAR_INFLIGHT 16

typedef struct {
    ct_task task; /* first: the pool hands this back */
    const ct_silero *s;
    const float *audio; /* audio[i] is the file's sample base + i */
    size_t base, n, f0;  /* n: the file's samples (at least those the block reads) */
    int m;
    float *xg; /* (BLOCK_ROWS, 512): the block's result, kept until the recurrence took it */
    ct_status status;
} gate_job;

/* Rows f0 .. f0+m of the file through block_gates, with the batched path's
 * row layout; the working memory lives only for the task (glibc then reuses
 * it from the thread's arena). */
static void run_gates(ct_task *t) {
    gate_job *g = (gate_job *)t;
    const ct_silero *s = g->s;
    size_t m = (size_t)g->m;
    size_t act_row = (size_t)NT * NFREQ, col_row = 0;
    for (int l = 0; l < 4; l++) {
        const conv_layer *c = &s->enc[l];
        if ((size_t)c->tout * c->cout > act_row) act_row = (size_t)c->tout * c->cout;
        if ((size_t)c->tout * c->cin * 3 > col_row) col_row = (size_t)c->tout * c->cin * 3;
    }
    float *mem = malloc(m * (PADDED + NT * NBASIS + 2 * act_row + col_row) * sizeof(float));
    if (!mem) {
        g->status = CT_ERR_OOM;
        return;
    }
    scratch w = {0};
    float *p = mem;
    w.x = p, p += m * PADDED;
    w.spec = p, p += m * NT * NBASIS;
    w.a = p, p += m * act_row;
    w.b = p, p += m * act_row;
    w.col = p;
    w.xg = g->xg;
    for (size_t f = 0; f < m; f++) build_row_at(w.x + f * PADDED, g->audio, g->base, g->n, g->f0 + f);
    int saved_threads = omp_get_max_threads(); /* see ct_silero_probs_batch */
    omp_set_num_threads(1);
    block_gates(s, &w, g->m);
    omp_set_num_threads(saved_threads);
    free(mem);
    g->status = CT_OK;
}

/* The recurrence over one block's gates, as the batched path runs it for a
 * single file; state: h, c and the hidden half's gates (2·HID + GATES). */
static void recur_block(const ct_silero *s, const gate_job *g, float *state, float *probs) {
    float *h = state, *c = state + HID, *gh = state + 2 * HID;
    int saved_threads = omp_get_max_threads();
    omp_set_num_threads(1);
    for (int k = 0; k < g->m; k++) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, GATES, HID, 1.0f, s->w_hh, HID, h, 1, 0.0f, gh, 1);
        probs[g->f0 + (size_t)k] = lstm_cell(s, g->xg + (size_t)k * GATES, gh, h, c);
    }
    omp_set_num_threads(saved_threads);
}

ct_status ct_silero_probs_tasks(const ct_silero *s, const float *audio, size_t n, ct_tasks *tasks,
                                float *probs) {
    size_t frames = ct_silero_frame_count(n);
    size_t nblocks = (frames + BLOCK_ROWS - 1) / BLOCK_ROWS;
    if (nblocks == 0) return CT_OK;
    size_t q = nblocks < PAR_INFLIGHT ? nblocks : PAR_INFLIGHT;
    gate_job *jobs = calloc(q, sizeof *jobs);
    float *state = calloc(2 * HID + GATES, sizeof(float)); /* h, c, gh */
    ct_status st = jobs && state ? CT_OK : ct_fail(CT_ERR_OOM, "silero: out of memory");
    for (size_t i = 0; i < q && st == CT_OK; i++)
        if (!(jobs[i].xg = malloc((size_t)BLOCK_ROWS * GATES * sizeof(float))))
            st = ct_fail(CT_ERR_OOM, "silero: out of memory");
    size_t submitted = 0;
    /* Blocks of BLOCK_ROWS frames from frame 0: the blocks ct_silero_probs_batch
     * cuts for one file, so every product has the same rows and shape. */
    for (size_t b = 0; b < nblocks && st == CT_OK; b++) {
        for (; submitted < nblocks && submitted < b + q; submitted++) {
            gate_job *g = &jobs[submitted % q];
            g->s = s;
            g->audio = audio;
            g->base = 0;
            g->n = n;
            g->f0 = submitted * BLOCK_ROWS;
            g->m = (int)(frames - g->f0 < BLOCK_ROWS ? frames - g->f0 : BLOCK_ROWS);
            g->task.run = run_gates;
            ct_tasks_submit(tasks, &g->task);
        }
        gate_job *g = &jobs[b % q];
        ct_tasks_wait(tasks, &g->task);
        if (g->status != CT_OK) {
            st = ct_fail(CT_ERR_OOM, "silero: out of memory");
            break;
        }
        recur_block(s, g, state, probs);
    }
    /* after a failure: wait for what is still queued or running */
    for (size_t b = 0; jobs && b < submitted; b++) ct_tasks_wait(tasks, &jobs[b % q].task);
    if (jobs)
        for (size_t i = 0; i < q; i++) free(jobs[i].xg);
    free(jobs);
    free(state);
    return st;
}

/* ---- one file as its decoder produces it ----------------------------------- */

/* A block's window: the samples its rows read, [b·BLOCK − 64, (b+1)·BLOCK)
 * (from 0 for the first block). */
#define BLOCK_SAMPLES ((size_t)BLOCK_ROWS * CT_SILERO_FRAME)
#define WINDOW (BLOCK_SAMPLES + CT_SILERO_CONTEXT)

struct ct_silero_stream {
    const ct_silero *s;
    ct_tasks *tasks;
    gate_job jobs[PAR_INFLIGHT]; /* block b in jobs[b % PAR_INFLIGHT] */
    float *in;                   /* (PAR_INFLIGHT, WINDOW): each job's samples */
    float tail[CT_SILERO_CONTEXT]; /* the last samples of the block before the one filling */
    size_t fed, fill;            /* samples fed; samples in the filling block's window */
    float *probs;                /* the recurrence thread's output */
    size_t probs_cap;
    float state[2 * HID + GATES];
    pthread_t thread;
    int thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    size_t submitted, consumed; /* blocks handed to the pool; blocks through the recurrence */
    int ended, abandon;         /* no more blocks; drain without computing */
    ct_status status;           /* the first failure */
};

/* Runs the recurrence block after block as the blocks' gates come back, so
 * that it follows the decoder instead of starting once the file is decoded
 * (on a long file it was a third of the VAD, all of it sequential). */
static void *stream_recur(void *arg) {
    ct_silero_stream *st = arg;
    for (;;) {
        pthread_mutex_lock(&st->mu);
        while (st->consumed == st->submitted && !st->ended) pthread_cond_wait(&st->cv, &st->mu);
        if (st->consumed == st->submitted) { /* ended, and every block went through */
            pthread_mutex_unlock(&st->mu);
            return NULL;
        }
        size_t b = st->consumed;
        int skip = st->abandon || st->status != CT_OK;
        pthread_mutex_unlock(&st->mu);
        gate_job *g = &st->jobs[b % PAR_INFLIGHT];
        ct_tasks_wait(st->tasks, &g->task); /* every submitted task is waited for, even when skipping */
        ct_status fail = CT_OK;
        if (!skip && g->status != CT_OK) fail = ct_fail(CT_ERR_OOM, "silero: out of memory");
        if (!skip && fail == CT_OK && g->f0 + (size_t)g->m > st->probs_cap) {
            size_t cap = st->probs_cap ? 2 * st->probs_cap : 4 * (size_t)BLOCK_ROWS;
            while (cap < g->f0 + (size_t)g->m) cap *= 2;
            float *p = realloc(st->probs, cap * sizeof(float));
            if (p) st->probs = p, st->probs_cap = cap;
            else fail = ct_fail(CT_ERR_OOM, "silero: out of memory");
        }
        if (!skip && fail == CT_OK) recur_block(st->s, g, st->state, st->probs);
        pthread_mutex_lock(&st->mu);
        if (fail != CT_OK && st->status == CT_OK) st->status = fail;
        st->consumed++;
        pthread_cond_broadcast(&st->cv);
        pthread_mutex_unlock(&st->mu);
    }
}

ct_status ct_silero_stream_open(const ct_silero *s, struct ct_tasks *tasks, ct_silero_stream **out) {
    *out = NULL;
    ct_silero_stream *st = calloc(1, sizeof *st);
    if (!st) return ct_fail(CT_ERR_OOM, "silero: out of memory");
    st->s = s;
    st->tasks = tasks;
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    ct_status r = (st->in = malloc((size_t)PAR_INFLIGHT * WINDOW * sizeof(float))) ? CT_OK
                                                                                   : ct_fail(CT_ERR_OOM, "silero: out of memory");
    for (int i = 0; i < PAR_INFLIGHT && r == CT_OK; i++)
        if (!(st->jobs[i].xg = malloc((size_t)BLOCK_ROWS * GATES * sizeof(float))))
            r = ct_fail(CT_ERR_OOM, "silero: out of memory");
    if (r == CT_OK) {
        if (pthread_create(&st->thread, NULL, stream_recur, st) == 0) st->thread_started = 1;
        else r = ct_fail(CT_ERR_OOM, "silero: no thread for the recurrence");
    }
    if (r != CT_OK) {
        ct_silero_stream_free(st);
        return r;
    }
    *out = st;
    return CT_OK;
}

/* Hand the filling block (m frames, the file's first `n` samples known) to
 * the pool and the recurrence. */
static void stream_submit(ct_silero_stream *st, int m, size_t n) {
    pthread_mutex_lock(&st->mu);
    size_t b = st->submitted;
    pthread_mutex_unlock(&st->mu);
    gate_job *g = &st->jobs[b % PAR_INFLIGHT];
    g->s = st->s;
    g->audio = st->in + (b % PAR_INFLIGHT) * WINDOW;
    g->base = b ? b * BLOCK_SAMPLES - CT_SILERO_CONTEXT : 0;
    g->n = n;
    g->f0 = b * BLOCK_ROWS;
    g->m = m;
    g->task.run = run_gates;
    size_t len = st->fill;
    if (len >= CT_SILERO_CONTEXT) memcpy(st->tail, g->audio + len - CT_SILERO_CONTEXT, sizeof st->tail);
    ct_tasks_submit(st->tasks, &g->task);
    pthread_mutex_lock(&st->mu);
    st->submitted++;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    st->fill = 0;
}

ct_status ct_silero_stream_feed(ct_silero_stream *st, const float *x, size_t k) {
    while (k > 0) {
        pthread_mutex_lock(&st->mu);
        /* the filling block's slot is free once the block PAR_INFLIGHT
         * before it went through the recurrence */
        while (st->status == CT_OK && st->submitted - st->consumed >= PAR_INFLIGHT)
            pthread_cond_wait(&st->cv, &st->mu);
        ct_status fail = st->status;
        size_t b = st->submitted;
        pthread_mutex_unlock(&st->mu);
        if (fail != CT_OK) return ct_fail(fail, "silero: %s", "the stream's recurrence failed");
        float *w = st->in + (b % PAR_INFLIGHT) * WINDOW;
        size_t need = b ? WINDOW : BLOCK_SAMPLES;
        if (b && st->fill == 0) { /* the context this block's first row reads */
            memcpy(w, st->tail, sizeof st->tail);
            st->fill = CT_SILERO_CONTEXT;
        }
        size_t take = need - st->fill < k ? need - st->fill : k;
        memcpy(w + st->fill, x, take * sizeof(float));
        st->fill += take, st->fed += take;
        x += take, k -= take;
        if (st->fill == need) stream_submit(st, BLOCK_ROWS, st->fed);
    }
    return CT_OK;
}

ct_status ct_silero_stream_finish(ct_silero_stream *st, size_t n, float **probs) {
    *probs = NULL;
    if (n != st->fed) return ct_fail(CT_ERR_INTERNAL, "silero: the stream was fed %zu of %zu samples", st->fed, n);
    size_t frames = ct_silero_frame_count(n);
    pthread_mutex_lock(&st->mu);
    size_t done_frames = st->submitted * BLOCK_ROWS;
    pthread_mutex_unlock(&st->mu);
    if (frames > done_frames) { /* the last, partial block: rows past n read zeros */
        ct_status r = CT_OK;
        pthread_mutex_lock(&st->mu);
        while (st->status == CT_OK && st->submitted - st->consumed >= PAR_INFLIGHT)
            pthread_cond_wait(&st->cv, &st->mu);
        r = st->status;
        pthread_mutex_unlock(&st->mu);
        if (r != CT_OK) return ct_fail(r, "silero: the stream's recurrence failed");
        /* frames > done_frames means samples past the last full block were
         * fed, so the filling block holds its context and those samples */
        stream_submit(st, (int)(frames - done_frames), n);
    }
    pthread_mutex_lock(&st->mu);
    st->ended = 1;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    pthread_join(st->thread, NULL);
    st->thread_started = 0;
    if (st->status != CT_OK) return ct_fail(st->status, "silero: the stream's recurrence failed");
    if (!frames) {
        free(st->probs);
        st->probs = malloc(sizeof(float));
        if (!st->probs) return ct_fail(CT_ERR_OOM, "silero: out of memory");
    }
    *probs = st->probs;
    st->probs = NULL;
    return CT_OK;
}

void ct_silero_stream_free(ct_silero_stream *st) {
    if (!st) return;
    if (st->thread_started) { /* not finished: drain what the pool still holds, then stop */
        pthread_mutex_lock(&st->mu);
        st->abandon = 1;
        st->ended = 1;
        pthread_cond_broadcast(&st->cv);
        pthread_mutex_unlock(&st->mu);
        pthread_join(st->thread, NULL);
    }
    for (int i = 0; i < PAR_INFLIGHT; i++) free(st->jobs[i].xg);
    free(st->in);
    free(st->probs);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    free(st);
}
