/* cuda_ops_sub.cu — the backend's version-6 subsampling op (backend.h,
 * subsample): the three stride-2 convs in channels-last layout (B, T, F, C),
 * so the two pointwise convs are plain GEMMs with the bias and ReLU in
 * cuBLASLt's epilogue and the projection reads the last map as it lies (its
 * weight's columns reordered at load, asr/weights.c); the time masks are
 * folded into the conv kernels (a zero row written, or a masked row not
 * read) except the last, which is one pass over the masked rows only. The
 * composition over the channels-first ops (conv2d_s2, mask_time,
 * dwconv2d_s2, conv_pointwise, flatten_ct, matmul) wrote and re-read ten
 * maps and launched fifteen kernels per group of rows. Reference:
 * ct_ref_subsample (compute/ref/ref_fused.c); test_cuda_backend.c compares.
 * Arithmetic in float32 whatever the storage type.
 */
#include "compute/cuda/cuda_be.h"

#define LAUNCH_CHECK() CT_CUDA_TRY(cudaGetLastError())

static __host__ __device__ int stride2(int L) { return L <= 0 ? 0 : (L - 1) / 2 + 1; }

/* Block per output frame (b, t), thread per channel: the three input rows
 * staged in shared memory once (zero padded), so the 3×3 taps read
 * broadcast shared values. Frames t ≥ len1[b] are written as zeros (the
 * composition's mask after this conv). y (B, T1, F1, C), x (B, T, F) f32. */
template <typename E>
__global__ void k_sub_conv0(E *y, const float *x, const float *w, const float *bias, const int *len1, int T, int F,
                            int C) {
    extern __shared__ float rows[]; /* [3][F + 2]: column f+1 holds input bin f */
    const int T1 = stride2(T), F1 = stride2(F), W = F + 2;
    const int b = blockIdx.x / T1, t = blockIdx.x % T1;
    for (int i = threadIdx.x; i < 3 * W; i += blockDim.x) {
        int kt = i / W, f = i % W - 1, ti = 2 * t - 1 + kt;
        rows[i] = (f >= 0 && f < F && ti >= 0 && ti < T) ? x[((size_t)b * T + ti) * F + f] : 0.f;
    }
    __syncthreads();
    const int c = threadIdx.x;
    if (c >= C)
        return;
    E *yr = y + ((size_t)b * T1 + t) * F1 * C;
    if (t >= len1[b]) {
        for (int f = 0; f < F1; f++)
            yr[(size_t)f * C + c] = ct_st<E>(0.f);
        return;
    }
    float wk[9];
#pragma unroll
    for (int k = 0; k < 9; k++)
        wk[k] = w[c * 9 + k];
    const float bc = bias[c];
    for (int f = 0; f < F1; f++) {
        float acc = bc;
#pragma unroll
        for (int kt = 0; kt < 3; kt++)
#pragma unroll
            for (int kf = 0; kf < 3; kf++)
                acc += wk[kt * 3 + kf] * rows[kt * W + 2 * f + kf]; /* bin 2f−1+kf */
        yr[(size_t)f * C + c] = ct_st<E>(fmaxf(acc, 0.f));
    }
}

/* Depthwise 3×3 stride 2, block per output frame, thread per channel,
 * channels-last: input rows ti ≥ len_in[b] read as zero (the composition's
 * mask of the input map), output frames ≥ len_out[b] written as zero (its
 * mask of this one). y (B, To, Fo, C), x (B, Ti, Fi, C). */
template <typename E>
__global__ void k_sub_dw(E *y, const E *x, const float *w, const float *bias, const int *len_in, const int *len_out,
                         int Ti, int Fi, int C) {
    const int To = stride2(Ti), Fo = stride2(Fi);
    const int b = blockIdx.x / To, t = blockIdx.x % To, c = threadIdx.x;
    if (c >= C)
        return;
    E *yr = y + ((size_t)b * To + t) * Fo * C + c;
    if (t >= len_out[b]) {
        for (int f = 0; f < Fo; f++)
            yr[(size_t)f * C] = ct_st<E>(0.f);
        return;
    }
    float wk[9];
#pragma unroll
    for (int k = 0; k < 9; k++)
        wk[k] = w[c * 9 + k];
    const float bc = bias[c];
    const int L = min(len_in[b], Ti);
    for (int f = 0; f < Fo; f++) {
        float acc = bc;
#pragma unroll
        for (int kt = 0; kt < 3; kt++) {
            int ti = 2 * t - 1 + kt;
            if (ti < 0 || ti >= L)
                continue;
            const E *xr = x + ((size_t)b * Ti + ti) * Fi * C + c;
#pragma unroll
            for (int kf = 0; kf < 3; kf++) {
                int fi = 2 * f - 1 + kf;
                if (fi >= 0 && fi < Fi)
                    acc += wk[kt * 3 + kf] * ct_ld(xr[(size_t)fi * C]);
            }
        }
        yr[(size_t)f * C] = ct_st<E>(acc);
    }
}

/* Rows t ≥ len[b] of x (B, T, inner) to zero; grid (T, B), masked rows only. */
template <typename E> __global__ void k_sub_mask(E *x, const int *len, int T, size_t inner) {
    const int b = blockIdx.y, t = blockIdx.x;
    if (t < len[b])
        return;
    E *r = x + ((size_t)b * T + t) * inner;
    for (size_t i = threadIdx.x; i < inner; i += blockDim.x)
        r[i] = ct_st<E>(0.f);
}

ct_status ct_cuda_op_subsample(ct_backend *be, ct_buf x, ct_buf feats, const ct_subsample_weights *w, const int *len,
                               int B, int T, int M, int C, int d, ct_buf a, ct_buf b, ct_arena *ws) {
    if (B <= 0 || T <= 0)
        return CT_OK;
    if (feats.dtype != CT_DTYPE_F32 || a.dtype != b.dtype || (a.dtype != CT_DTYPE_BF16 && a.dtype != CT_DTYPE_F16))
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda subsample: feats %s, scratch %s/%s", ct_dtype_name(feats.dtype),
                       ct_dtype_name(a.dtype), ct_dtype_name(b.dtype));
    if (C <= 0 || C > 1024)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda subsample: %d channels (1..1024)", C);
    const size_t smem = sizeof(float) * 3 * ((size_t)M + 2);
    if (smem > 48 * 1024)
        return ct_fail(CT_ERR_UNSUPPORTED, "cuda subsample: %d mel bins", M);
    if ((size_t)3 * B > CT_SIDE_INTS)
        return ct_fail(CT_ERR_LIMIT, "cuda subsample: %d rows", B);
    const int T1 = stride2(T), T2 = stride2(T1), T3 = stride2(T2);
    const int F1 = stride2(M), F2 = stride2(F1), F3 = stride2(F2);
    if (w->out_w->ndim != 2 || w->out_w->shape[0] != d || w->out_w->shape[1] != (int64_t)F3 * C)
        return ct_fail(CT_ERR_INVALID_ARG, "cuda subsample: projection shape for d=%d, %d·%d inputs", d, F3, C);
    int *L = (int *)malloc(sizeof(int) * 3 * (size_t)B);
    if (!L)
        return ct_fail(CT_ERR_OOM, "cuda subsample: lengths");
    for (int r = 0; r < B; r++) {
        L[r] = stride2(len[r] < T ? len[r] : T);
        L[B + r] = stride2(L[r]);
        L[2 * B + r] = stride2(L[B + r]);
    }
    const int *dL = NULL;
    ct_status s = ct_cuda_side(be, CT_SIDE_LEN, L, (size_t)3 * B, &dL);
    free(L);
    CT_TRY(s);
    const int *dL1 = dL, *dL2 = dL + B, *dL3 = dL + 2 * B;
    cudaStream_t st = ct_cstream(be);
    /* a: conv0 (B,T1,F1,C); b: dw1 (B,T2,F2,C); a: pw1; b: dw2 (B,T3,F3,C); a: pw2 */
    CT_CUDA_DISPATCH(a.dtype, E, "subsample", {
        k_sub_conv0<E><<<B * T1, C, smem, st>>>((E *)a.data, (const float *)feats.data, w->c0_w, w->c0_b, dL1, T, M, C);
        LAUNCH_CHECK();
        k_sub_dw<E><<<B * T2, C, 0, st>>>((E *)b.data, (const E *)a.data, w->dw1_w, w->dw1_b, dL1, dL2, T1, F1, C);
        LAUNCH_CHECK();
    });
    CT_TRY(ct_cuda_op_matmul(be, a, b, w->pw1_w, w->pw1_b, CT_BUF_NONE, 1.f, CT_ACT_RELU, B * T2 * F2, C, C, ws));
    CT_CUDA_DISPATCH(a.dtype, E, "subsample", {
        k_sub_dw<E><<<B * T3, C, 0, st>>>((E *)b.data, (const E *)a.data, w->dw2_w, w->dw2_b, dL2, dL3, T2, F2, C);
        LAUNCH_CHECK();
    });
    CT_TRY(ct_cuda_op_matmul(be, a, b, w->pw2_w, w->pw2_b, CT_BUF_NONE, 1.f, CT_ACT_RELU, B * T3 * F3, C, C, ws));
    CT_CUDA_DISPATCH(a.dtype, E, "subsample", {
        k_sub_mask<E><<<dim3((unsigned)T3, (unsigned)B), 256, 0, st>>>((E *)a.data, dL3, T3, (size_t)F3 * C);
        LAUNCH_CHECK();
    });
    return ct_cuda_op_matmul(be, x, a, w->out_w, w->out_b, CT_BUF_NONE, 1.f, CT_ACT_NONE, B * T3, d, F3 * C, ws);
}
