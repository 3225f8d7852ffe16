/* cuda_kernels.cu — the mel frontend's kernels under the cuda table's mel
 * op (cuda_ops_step.cu): framing with pre-emphasis and the window, power,
 * log and per-bin normalisation. Reductions run in fp32.
 */
#include <math.h>

#include "compute/cuda/cuda_internal.h"

#define LAUNCH_CHECK() CT_CUDA_TRY(cudaGetLastError())

/* ---- mel frontend ----------------------------------------------------------------- */
__global__ void k_mel_frames(float *fr, const float *pcm, const int *n, int ns, int T, const float *win) {
    int row = blockIdx.x; /* b*T + f */
    int b = row / T, f = row % T, N = n[b];
    const float *x = pcm + (size_t)b * ns;
    for (int k = threadIdx.x; k < 400; k += blockDim.x) {
        int s = f * 160 - 200 + k;
        float y = 0.f;
        if (s >= 0 && s < N) y = s == 0 ? x[0] : x[s] - 0.97f * x[s - 1];
        fr[(size_t)row * 400 + k] = y * win[k];
    }
}

extern "C" ct_status ct_cuda_mel_frames(ct_cuda *c, float *frames, const float *pcm, const int *n, int B, int ns,
                                        int T, const float *window) {
    if (B > 0 && T > 0) k_mel_frames<<<B * T, 128, 0, c->stream>>>(frames, pcm, n, ns, T, window);
    LAUNCH_CHECK();
    return CT_OK;
}

__global__ void k_mel_power(float *p, const float *spec, size_t rows) {
    size_t n = rows * 257;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        size_t r = i / 257, k = i % 257;
        float re = spec[r * 514 + k], im = spec[r * 514 + 257 + k];
        float m = sqrtf(re * re + im * im);
        p[i] = m * m;
    }
}

extern "C" ct_status ct_cuda_mel_power(ct_cuda *c, float *p, const float *spec, size_t rows) {
    if (rows) k_mel_power<<<4 * 132 * 8, 256, 0, c->stream>>>(p, spec, rows);
    LAUNCH_CHECK();
    return CT_OK;
}

/* Block (32 bins × 8 frame lanes) per (b, bin group). */
__global__ void k_mel_norm(float *x, const int *Ls, int T, int M) {
    __shared__ float sh[8][33];
    int b = blockIdx.y, m = blockIdx.x * 32 + threadIdx.x, ty = threadIdx.y;
    int L = Ls[b];
    float *xb = x + (size_t)b * T * M;
    const float guard = 5.9604644775390625e-08f; /* 2^-24 */
    float s = 0.f;
    if (m < M)
        for (int t = ty; t < L; t += 8) s += logf(xb[(size_t)t * M + m] + guard);
    sh[ty][threadIdx.x] = s;
    __syncthreads();
    float mean = 0.f;
    for (int k = 0; k < 8; k++) mean += sh[k][threadIdx.x];
    mean /= (float)L;
    __syncthreads();
    float q = 0.f;
    if (m < M)
        for (int t = ty; t < L; t += 8) {
            float d = logf(xb[(size_t)t * M + m] + guard) - mean;
            q += d * d;
        }
    sh[ty][threadIdx.x] = q;
    __syncthreads();
    float var = 0.f;
    for (int k = 0; k < 8; k++) var += sh[k][threadIdx.x];
    var /= (float)(L - 1);
    float den = sqrtf(var) + 1e-5f;
    if (m < M)
        for (int t = ty; t < T; t += 8) {
            float *p = xb + (size_t)t * M + m;
            *p = t < L ? (logf(*p + guard) - mean) / den : 0.f;
        }
}

extern "C" ct_status ct_cuda_mel_normalize(ct_cuda *c, float *feats, const int *L, int B, int T, int M) {
    k_mel_norm<<<dim3((M + 31) / 32, B), dim3(32, 8), 0, c->stream>>>(feats, L, T, M);
    LAUNCH_CHECK();
    return CT_OK;
}
