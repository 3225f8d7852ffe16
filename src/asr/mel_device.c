/* mel_device.c — tables and batch call for the backend mel op (see
 * mel_device.h). The window and filterbank are the CPU mel's (one
 * definition); the DFT basis is the real DFT of 512 points restricted to
 * the 400 window samples at offset 56, in double precision then rounded. */
#include "asr/mel_device.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { NFFT = 512, WIN = 400, HOP = 160, NB = NFFT / 2 + 1, OFF = (NFFT - WIN) / 2 };

void ct_mel_device_free(ct_mel_device *md) {
    if (!md) return;
    if (md->host && md->host_pinned) md->be->ops->host_free(md->be, md->host);
    else free(md->host);
    if (md->be) {
        md->be->ops->free(md->be, md->window);
        md->be->ops->free(md->be, md->dft);
        md->be->ops->free(md->be, md->fbT);
    }
    free(md);
}

static ct_status upload(ct_backend *be, float **dst, const float *src, size_t n) {
    CT_TRY(be->ops->alloc(be, sizeof(float) * n, (void **)dst));
    return be->ops->to_device(be, *dst, src, sizeof(float) * n);
}

ct_status ct_mel_device_create(const ct_mel *mel, const ct_mel_options *o, ct_backend *be, ct_mel_device **out) {
    *out = NULL;
    if (be->ops->version < 4 || !be->ops->mel) return CT_OK;
    if (o->n_fft != NFFT || o->win_length != WIN || o->hop_length != HOP || o->preemphasis != 0.97f) return CT_OK;
    const int M = ct_mel_n_mels(mel);
    ct_mel_device *md = calloc(1, sizeof *md);
    float *dft = malloc(sizeof(float) * WIN * 2 * NB), *fbT = malloc(sizeof(float) * NB * (size_t)M);
    ct_status s = CT_OK;
    if (!md || !dft || !fbT) {
        s = ct_fail(CT_ERR_OOM, "mel tables");
        goto done;
    }
    md->be = be;
    md->mel = mel;
    md->n_mels = M;
    const float *fb = ct_mel_filterbank(mel); /* (M, 257) */
    for (int m = 0; m < M; m++)
        for (int k = 0; k < NB; k++) fbT[(size_t)k * M + m] = fb[(size_t)m * NB + k];
    const double PI = 3.14159265358979323846;
    for (int k = 0; k < WIN; k++)
        for (int f = 0; f < NB; f++) {
            double a = 2.0 * PI * (double)f * (double)(k + OFF) / NFFT;
            dft[(size_t)k * 2 * NB + f] = (float)cos(a);
            dft[(size_t)k * 2 * NB + NB + f] = (float)-sin(a);
        }
    if ((s = upload(be, &md->window, ct_mel_window(mel) + OFF, WIN)) == CT_OK &&
        (s = upload(be, &md->dft, dft, (size_t)WIN * 2 * NB)) == CT_OK)
        s = upload(be, &md->fbT, fbT, (size_t)NB * M);
    if (s == CT_OK) s = be->ops->synchronize(be); /* the host tables are freed below */
done:
    free(dft);
    free(fbT);
    if (s != CT_OK) {
        ct_mel_device_free(md);
        return ct_fail_wrap(s, "mel tables on %s", be->ops->name);
    }
    *out = md;
    return CT_OK;
}

static size_t rounded(size_t bytes) { return (bytes + 2 * CT_ARENA_ALIGN) / CT_ARENA_ALIGN * CT_ARENA_ALIGN; }

size_t ct_mel_device_ws_bytes(int B, int T, size_t ns) {
    size_t rows = (size_t)B * T;
    return rounded(sizeof(float) * (size_t)B * ns) + rounded(sizeof(float) * rows * WIN) +
           rounded(sizeof(float) * rows * 2 * NB) + 4096;
}

/* The host buffer for B × ns samples: grown (never shrunk) as batches need. */
static ct_status host_buffer(ct_mel_device *md, size_t floats) {
    if (floats <= md->host_floats) return CT_OK;
    ct_backend *be = md->be;
    if (md->host_pinned) be->ops->host_free(be, md->host);
    else free(md->host);
    md->host = NULL;
    md->host_floats = 0;
    md->host_pinned = 0;
    void *p = NULL;
    if (be->ops->version >= 5 && be->ops->host_alloc && be->ops->host_free &&
        be->ops->host_alloc(be, sizeof(float) * floats, &p) == CT_OK) {
        md->host_pinned = 1;
    } else {
        ct_error_clear(); /* no page-locked memory: a plain buffer works too, through staging */
        p = malloc(sizeof(float) * floats);
        if (!p) return ct_fail(CT_ERR_OOM, "mel: PCM of %zu samples", floats);
    }
    md->host = p;
    md->host_floats = floats;
    return CT_OK;
}

/* dst = src and whether every sample is within ±2^50: the test of
 * ct_mel_check_clips (asr/mel.c), made in the same pass as the copy */
static int copy_checked(float *dst, const float *src, size_t n) {
    uint32_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, src + i, 4);
        bad |= (uint32_t)((u & 0x7f800000u) >= ((127u + 50u) << 23));
        dst[i] = src[i];
    }
    return bad == 0;
}

ct_status ct_mel_device_compute(ct_mel_device *md, const float *const *clips, const size_t *n, int B, int T,
                                float *feats, int *valid, ct_arena *ws) {
    ct_backend *be = md->be;
    size_t ns = 0;
    int cheap_bad = 0; /* what needs no pass over the samples: sizes, missing clips */
    for (int b = 0; b < B; b++) {
        if (n[b] > ns) ns = n[b];
        if (n[b] > 0 && !clips[b]) cheap_bad = 1;
    }
    if (cheap_bad || ns > ct_mel_max_samples(md->mel)) return ct_mel_check_clips(md->mel, clips, n, B);
    if (ns > (size_t)1 << 30) return ct_fail(CT_ERR_LIMIT, "mel: %zu samples", ns);
    CT_TRY(host_buffer(md, (size_t)B * (ns ? ns : 1)));
    int *ni = malloc(sizeof(int) * (size_t)B);
    if (!ni) return ct_fail(CT_ERR_OOM, "mel: batch");
    size_t mark = ct_arena_mark(ws);
    float *pcm = ct_arena_alloc(ws, sizeof(float) * (size_t)B * (ns ? ns : 1));
    ct_status s = pcm ? CT_OK : ct_fail_wrap(CT_ERR_OOM, "mel: PCM of %d x %zu samples", B, ns);
    /* one upload of the padded batch, gathered on the host by several
     * threads, the clip check (finite, within ±2^50) in the same pass: rows
     * are padded to ns; the op reads only the first n[b] samples of each */
    float *host = md->host;
    int bad = 0;
    if (s == CT_OK) {
#pragma omp parallel for schedule(dynamic, 1) reduction(| : bad)
        for (int b = 0; b < B; b++) {
            if (n[b] && !copy_checked(host + (size_t)b * ns, clips[b], n[b])) bad |= 1;
            memset(host + (size_t)b * ns + n[b], 0, sizeof(float) * (ns - n[b]));
        }
        if (bad) { /* the first failing clip's message, as the CPU mel gives it */
            s = ct_mel_check_clips(md->mel, clips, n, B);
            if (s == CT_OK) s = ct_fail(CT_ERR_INTERNAL, "mel: a clip failed the sample check");
        }
    }
    if (s == CT_OK) {
        for (int b = 0; b < B; b++) {
            ni[b] = (int)n[b];
            valid[b] = (int)(n[b] / HOP);
        }
        s = be->ops->to_device(be, pcm, host, sizeof(float) * (size_t)B * ns);
    }
    if (s == CT_OK) s = be->ops->mel(be, feats, pcm, ni, valid, B, (int)ns, T, md->n_mels, md->window, md->dft, md->fbT, ws);
    ct_arena_rewind(ws, mark);
    free(ni);
    return s;
}
