/* cpu_attention.c — attention on sgemm (encoder) and plain loops (decoder).
 * The encoder path runs OpenMP over (row, head) pairs (OpenBLAS runs
 * single-threaded inside an active parallel region). Decoding steps (one
 * query per row) split each row's keys across threads and read whole key
 * rows; the prompt step (several queries) goes per (row, head). The encoder path
 * computes only the L valid query rows and the 2L−1 relative positions they
 * use; per-thread scratch comes from the workspace. */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "compute/cpu/cpu_fast.h"
#include "compute/cpu/cpu_math.h"
#include "compute/cpu/cpu_vec.h"
#include "compute/ref/ops_ref.h"

/* The end of a softmax, in place: s[j] = exp(s[j] - mx) / Σ_k exp(s[k] - mx),
 * where mx is the largest of s[0..n) (n > 0). */
static inline void exp_normalise(float *s, int n, float mx) {
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int j = 0; j < n; j++) {
        s[j] = ct_fast_expf(s[j] - mx);
        sum += s[j];
    }
    float inv = 1.0f / sum;
    for (int j = 0; j < n; j++) s[j] *= inv;
}

/* One query row of the encoder's attention, in place: s[j] = softmax_j(
 * s[j]·scale + bd[j]·scale) over n > 0 keys. 16-lane vectors (cpu_vec.h,
 * AVX-512/AVX2 clones): the scalar ct_fast_expf loop does not vectorise in
 * this build, and the 48 layers × 8 heads × T² exponentials of a 30 s
 * window were a large part of the attention's CPU time. Every lane computes
 * what the scalar loop did (v_exp equals ct_fast_expf, no contraction); only
 * the order of the sum changes (16 partial sums), so the probabilities move
 * by an ulp or so. */
CT_VCLONES static void relpos_softmax_row(float *s, const float *bd, int n, float scale) {
    const int nv = n / CT_V * CT_V;
    vf v, w;
    float mx = -INFINITY;
    if (nv) {
        vf m = V_SPLAT(-INFINITY);
        for (int j = 0; j < nv; j += CT_V) {
            memcpy(&v, s + j, sizeof v);
            memcpy(&w, bd + j, sizeof w);
            v = v * scale + w * scale;
            memcpy(s + j, &v, sizeof v);
            m = V_SELECT(v > m, v, m);
        }
        for (int l = 0; l < CT_V; l++) mx = m[l] > mx ? m[l] : mx;
    }
    for (int j = nv; j < n; j++) {
        s[j] = s[j] * scale + bd[j] * scale;
        mx = s[j] > mx ? s[j] : mx;
    }
    v_exp_normalise(s, n, mx, 1.0f); /* × 1 is exact: the same values as without it */
}

ct_status ct_cpu_attn_relpos(ct_backend *be, float *out, const float *q, const float *k, const float *v,
                             const float *p, const float *u, const float *vb, const int *len, int B, int T,
                             int H, int Dh, ct_arena *ws) {
    // out, q, k, v (B,T,H*Dh); p (2T-1, H*Dh); u, vb (H,Dh); len (B)
    const int D = H * Dh;
    const float scale = 1.0f / sqrtf((float)Dh);
    const int nth = omp_get_max_threads();
    /* per thread: Qu, Qv (T,Dh), AC (T,T), BD (T, 2T-1) */
    const size_t per = (size_t)2 * T * Dh + (size_t)T * T + (size_t)T * (2 * T - 1);
    size_t mark = ct_arena_mark(ws);
    float *scratch = ct_arena_alloc(ws, sizeof(float) * per * (size_t)nth);
    if (!scratch) return CT_ERR_OOM;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth)
    for (int bh = 0; bh < B * H; bh++) {
        const int b = bh / H, h = bh % H;
        const int L = len[b] < T ? (len[b] < 0 ? 0 : len[b]) : T;
        float *qu = scratch + per * (size_t)omp_get_thread_num();
        float *qv = qu + (size_t)T * Dh, *ac = qv + (size_t)T * Dh, *bd = ac + (size_t)T * T;
        const size_t base = (size_t)b * T * D + (size_t)h * Dh;
        for (int i = L; i < T; i++) memset(out + base + (size_t)i * D, 0, sizeof(float) * Dh);
        if (L == 0) continue;
        for (int i = 0; i < L; i++)
            for (int d = 0; d < Dh; d++) {
                float qd = q[base + (size_t)i * D + d];
                qu[(size_t)i * Dh + d] = qd + u[h * Dh + d];
                qv[(size_t)i * Dh + d] = qd + vb[h * Dh + d];
            }
        /* ac (L,L) = Qu · Kᵀ;  bd (L, 2L-1) = Qv · P'ᵀ, P' = rows T-L .. T+L-2 of p */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, L, Dh, 1.0f, qu, Dh, k + base, D, 0.0f, ac, L);
        const float *pp = p + (size_t)(T - L) * D + (size_t)h * Dh;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, L, 2 * L - 1, Dh, 1.0f, qv, Dh, pp, D, 0.0f, bd,
                    2 * L - 1);
        for (int i = 0; i < L; i++) /* bd[i][L-1-i+j] is key j's relative-position score */
            relpos_softmax_row(ac + (size_t)i * L, bd + (size_t)i * (2 * L - 1) + (L - 1 - i), L, scale);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, L, Dh, L, 1.0f, ac, L, v + base, D, 0.0f,
                    out + base, D);
    }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}

/* One query against nk keys/values with row stride D: o = softmax(K·q·scale) · V
 * (the prompt step's path, and the fallback of the split one). */
static void attend_one(float *o, const float *qi, const float *K, const float *V, int nk, int D, int Dh,
                       float scale, float *s) {
    if (nk <= 0) {
        memset(o, 0, sizeof(float) * Dh);
        return;
    }
    /* Plain loops, not cblas_sgemv: the callers run this inside an OpenMP
     * region that is often inactive (its `if` is false while decoding), and
     * OpenBLAS-openmp then opens a nested team, for which libgomp creates
     * and joins fresh threads on every call (about 1,500 a second, 4x slower
     * decoding with two threads; docs/PERFORMANCE.md). */
    for (int j = 0; j < nk; j++) {
        const float *kj = K + (size_t)j * D;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int d = 0; d < Dh; d++) dot += kj[d] * qi[d];
        s[j] = scale * dot;
    }
    float mx = -INFINITY;
    for (int j = 0; j < nk; j++)
        if (s[j] > mx) mx = s[j];
    exp_normalise(s, nk, mx);
    memset(o, 0, sizeof(float) * Dh);
    for (int j = 0; j < nk; j++) {
        const float *vj = V + (size_t)j * D;
        const float sj = s[j];
#pragma omp simd
        for (int d = 0; d < Dh; d++) o[d] += sj * vj[d];
    }
}

/* ---- one query per row, keys split across threads --------------------------
 * A decoding step has one query per row and, for cross-attention, hundreds
 * of keys (376 for 30 s) in rows of D = H·Dh floats; the caches are laid out
 * (slot, key, D), so walking one head's keys strides by D·4 bytes (4 KB for
 * the full-size decoder), a fresh page per key that the hardware prefetchers
 * do not follow. Here each row's keys are cut into T contiguous parts (4
 * per thread, taken from a shared counter) and every key row is read whole,
 * for all heads at once: K, then V, stream. Each part keeps, per row and
 * head, the maximum m of its scores, the sum l of exp(s − m) and the
 * unnormalised output o; the calling thread then merges the parts (split-K
 * "flash decoding"): with M = max_t m_t,
 *   out = Σ_t e^(m_t − M) o_t / Σ_t e^(m_t − M) l_t.
 * Per part: scores (n · H · ⌈maxkeys / T⌉) and partials (n · (2H + D)) from
 * the workspace. */
/* Key rows prefetched ahead of the one being read: the dot products hold
 * few loads in flight, so the next rows are asked for explicitly. */
#define CT_KV_AHEAD 4
#define CT_SPLIT_ROWS 64 /* rows per call on the split path (a stack array of key counts) */

typedef struct split_attn {
    float *out;
    const float *q, *K, *V;
    const int *slot, *nkeys; /* nkeys (n): keys row r attends to */
    size_t slot_stride;      /* floats between two slots of K/V */
    int n, H, Dh, D, chunk;  /* chunk: scores per (row, head) per part */
    float scale;
} split_attn;

/* Part t of T of every row's keys: keys [nk·t/T, nk·(t+1)/T). */
static void split_attn_part(const split_attn *a, int t, int T, float *sc, float *part) {
    const int H = a->H, Dh = a->Dh, D = a->D;
    for (int r = 0; r < a->n; r++) {
        const int nk = a->nkeys[r], j0 = (int)((long)nk * t / T), j1 = (int)((long)nk * (t + 1) / T);
        float *m = part + (size_t)r * (2 * H + D), *l = m + H, *o = l + H, *s = sc + (size_t)r * H * a->chunk;
        const float *qr = a->q + (size_t)r * D;
        const float *K = a->K + (size_t)a->slot[r] * a->slot_stride, *V = a->V + (size_t)a->slot[r] * a->slot_stride;
        for (int h = 0; h < H; h++) m[h] = -INFINITY, l[h] = 0.0f;
        memset(o, 0, sizeof(float) * D);
        for (int j = j0; j < j1; j++) { /* s[(j − j0)·H + h] = scale · q_h · k_jh */
            const float *kj = K + (size_t)j * D;
            float *sj = s + (size_t)(j - j0) * H;
            for (int h = 0; h < H; h++) {
                const float *kh = kj + (size_t)h * Dh, *qh = qr + (size_t)h * Dh;
                for (int c = 0; c < Dh; c += 16) __builtin_prefetch(kh + CT_KV_AHEAD * (size_t)D + c);
                float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                for (int d = 0; d < Dh; d++) dot += kh[d] * qh[d];
                sj[h] = a->scale * dot;
                if (sj[h] > m[h]) m[h] = sj[h];
            }
        }
        for (int j = j0; j < j1; j++) {
            float *sj = s + (size_t)(j - j0) * H;
            for (int h = 0; h < H; h++) {
                sj[h] = ct_fast_expf(sj[h] - m[h]);
                l[h] += sj[h];
            }
        }
        for (int j = j0; j < j1; j++) { /* o_h += p_jh · v_jh */
            const float *vj = V + (size_t)j * D, *sj = s + (size_t)(j - j0) * H;
            for (int h = 0; h < H; h++) {
                const float p = sj[h];
                float *oh = o + (size_t)h * Dh;
                const float *vh = vj + (size_t)h * Dh;
                for (int c = 0; c < Dh; c += 16) __builtin_prefetch(vh + CT_KV_AHEAD * (size_t)D + c);
#pragma omp simd
                for (int d = 0; d < Dh; d++) oh[d] += p * vh[d];
            }
        }
    }
}

/* out (n, D) from the T parts' partials (each n · (2H + D) floats, `per` apart). */
static void split_attn_merge(const split_attn *a, const float *parts, size_t per, int T) {
    const int H = a->H, Dh = a->Dh, D = a->D;
    for (int r = 0; r < a->n; r++) {
        float *out = a->out + (size_t)r * D;
        const size_t ro = (size_t)r * (2 * H + D);
        for (int h = 0; h < H; h++) {
            float M = -INFINITY;
            for (int t = 0; t < T; t++) {
                float mt = parts[per * t + ro + h];
                if (mt > M) M = mt;
            }
            float *oh = out + (size_t)h * Dh;
            memset(oh, 0, sizeof(float) * Dh);
            if (M == -INFINITY) continue; /* no keys: zeros, as the reference */
            float L = 0.0f;
            for (int t = 0; t < T; t++) {
                const float *m = parts + per * t + ro, *l = m + H, *o = l + H + (size_t)h * Dh;
                if (m[h] == -INFINITY) continue; /* this part had no keys of the row */
                float wt = expf(m[h] - M);
                L += wt * l[h];
#pragma omp simd
                for (int d = 0; d < Dh; d++) oh[d] += wt * o[d];
            }
            float inv = 1.0f / L;
            for (int d = 0; d < Dh; d++) oh[d] *= inv;
        }
    }
}

/* Returns CT_ERR_OOM when ws is too small; the caller then takes the
 * per-head path, which needs less scratch (the arena's message stays set but
 * the op succeeds). */
static ct_status split_attn_run(split_attn *a, ct_arena *ws) {
    int maxk = 0;
    size_t reads = 0; /* floats of K and V the call streams */
    for (int r = 0; r < a->n; r++) {
        if (a->nkeys[r] > maxk) maxk = a->nkeys[r];
        reads += (size_t)2 * a->nkeys[r] * a->D;
    }
    /* below ~0.5 MB of keys a second thread costs more than it saves */
    int nth = reads > 2 * CT_PAR_MIN ? omp_get_max_threads() : 1;
    /* parts: key ranges taken from a shared counter, a few per thread, so
     * a thread the scheduler starts late leaves its share to the others */
    int C = nth > 1 ? 4 * nth : 1;
    if (C > maxk) C = maxk > 0 ? maxk : 1;
    a->chunk = (maxk + C - 1) / C;
    const size_t per_sc = (size_t)a->n * a->H * a->chunk, per = (size_t)a->n * (2 * a->H + a->D);
    size_t mark = ct_arena_mark(ws);
    float *sc = ct_arena_alloc(ws, sizeof(float) * per_sc * C), *parts = ct_arena_alloc(ws, sizeof(float) * per * C);
    if (!sc || !parts) {
        ct_arena_rewind(ws, mark);
        return CT_ERR_OOM;
    }
    if (C == 1) {
        split_attn_part(a, 0, 1, sc, parts);
    } else {
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth)
        for (int c = 0; c < C; c++) split_attn_part(a, c, C, sc + per_sc * c, parts + per * c);
    }
    split_attn_merge(a, parts, per, C);
    ct_arena_rewind(ws, mark);
    return CT_OK;
}

ct_status ct_cpu_attn_causal(ct_backend *be, float *out, const float *q, const float *kc, const float *vc,
                             const int *slot, int n, int S, int pos0, int Smax, int H, int Dh, ct_arena *ws) {
    // out, q (n,S,H*Dh); kc, vc (slots,Smax,H*Dh); slot (n)
    const int D = H * Dh;
    const float scale = 1.0f / sqrtf((float)Dh);
    if (pos0 + S > Smax) return ct_fail(CT_ERR_INVALID_ARG, "attn_causal: position %d beyond %d", pos0 + S, Smax);
    if (S == 1 && n <= CT_SPLIT_ROWS) { /* decoding: every row sees positions 0..pos0 */
        int nkeys[CT_SPLIT_ROWS];
        for (int r = 0; r < n; r++) nkeys[r] = pos0 + 1;
        split_attn a = {.out = out, .q = q, .K = kc, .V = vc, .slot = slot, .nkeys = nkeys,
                        .slot_stride = (size_t)Smax * D, .n = n, .H = H, .Dh = Dh, .D = D, .scale = scale};
        if (split_attn_run(&a, ws) == CT_OK) return CT_OK;
    }
    const int nth = omp_get_max_threads();
    size_t mark = ct_arena_mark(ws);
    float *scratch = ct_arena_alloc(ws, sizeof(float) * (size_t)(pos0 + S) * nth);
    if (!scratch) return CT_ERR_OOM;
#pragma omp parallel for schedule(static) num_threads(nth) if ((size_t)n * H * S * (pos0 + S) * Dh > 16 * CT_PAR_MIN)
    for (int rh = 0; rh < n * H; rh++) {
        const int r = rh / H, h = rh % H;
        float *s = scratch + (size_t)(pos0 + S) * omp_get_thread_num();
        const size_t cb = (size_t)slot[r] * Smax * D + (size_t)h * Dh;
        for (int t = 0; t < S; t++) {
            size_t qo = ((size_t)r * S + t) * D + (size_t)h * Dh;
            attend_one(out + qo, q + qo, kc + cb, vc + cb, pos0 + t + 1, D, Dh, scale, s);
        }
    }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}

ct_status ct_cpu_attn_cross(ct_backend *be, float *out, const float *q, const float *ek, const float *ev,
                            const int *slot, const int *enc_len, int n, int S, int Tenc, int H, int Dh,
                            ct_arena *ws) {
    // out, q (n,S,H*Dh); ek, ev (slots,Tenc,H*Dh); slot (n); enc_len (slots)
    const int D = H * Dh;
    const float scale = 1.0f / sqrtf((float)Dh);
    if (S == 1 && n <= CT_SPLIT_ROWS) {
        int nkeys[CT_SPLIT_ROWS];
        for (int r = 0; r < n; r++) {
            int L = enc_len[slot[r]] < Tenc ? enc_len[slot[r]] : Tenc;
            nkeys[r] = L > 0 ? L : 0;
        }
        split_attn a = {.out = out, .q = q, .K = ek, .V = ev, .slot = slot, .nkeys = nkeys,
                        .slot_stride = (size_t)Tenc * D, .n = n, .H = H, .Dh = Dh, .D = D, .scale = scale};
        if (split_attn_run(&a, ws) == CT_OK) return CT_OK;
    }
    const int nth = omp_get_max_threads();
    size_t mark = ct_arena_mark(ws);
    float *scratch = ct_arena_alloc(ws, sizeof(float) * (size_t)(Tenc > 0 ? Tenc : 1) * nth);
    if (!scratch) return CT_ERR_OOM;
#pragma omp parallel for schedule(static) num_threads(nth) if ((size_t)n * H * S * Tenc * Dh > 16 * CT_PAR_MIN)
    for (int rh = 0; rh < n * H; rh++) {
        const int r = rh / H, h = rh % H;
        float *s = scratch + (size_t)Tenc * omp_get_thread_num();
        int L = enc_len[slot[r]] < Tenc ? enc_len[slot[r]] : Tenc;
        const size_t cb = (size_t)slot[r] * Tenc * D + (size_t)h * Dh;
        for (int t = 0; t < S; t++) {
            size_t qo = ((size_t)r * S + t) * D + (size_t)h * Dh;
            attend_one(out + qo, q + qo, ek + cb, ev + cb, L, D, Dh, scale, s);
        }
    }
    ct_arena_rewind(ws, mark);
    return CT_OK;
}
