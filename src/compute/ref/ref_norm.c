/* ref_norm.c — reference layer norm, softmax, activations and GLU. */
#include <math.h>

#include "compute/ref/ops_ref.h"

ct_status ct_ref_layer_norm(ct_backend *be, float *y, const float *x, const float *g, const float *b, int M,
                            int D, float eps) {
    // y (M,D), x (M,D), g (D), b (D)
    for (int m = 0; m < M; m++) {
        const float *xr = x + (size_t)m * D;
        float *yr = y + (size_t)m * D;
        float mean = 0.0f;
        for (int d = 0; d < D; d++) mean += xr[d];
        mean /= (float)D;
        float var = 0.0f;
        for (int d = 0; d < D; d++) var += (xr[d] - mean) * (xr[d] - mean);
        var /= (float)D;
        float inv = 1.0f / sqrtf(var + eps);
        for (int d = 0; d < D; d++) yr[d] = (xr[d] - mean) * inv * g[d] + b[d];
    }
    return CT_OK;
}

ct_status ct_ref_softmax(ct_backend *be, float *x, int M, int N) {
    // x (M,N), in place
    for (int m = 0; m < M; m++) {
        float *r = x + (size_t)m * N;
        float mx = -INFINITY;
        int nan = 0;
        for (int j = 0; j < N; j++) {
            if (r[j] > mx) mx = r[j];
            nan |= isnan(r[j]);
        }
        if (nan) { /* NaN in, NaN out, as torch: an all-NaN row must not pass for a masked one */
            for (int j = 0; j < N; j++) r[j] = NAN;
            continue;
        }
        if (mx == -INFINITY) { /* fully masked: zeros, as sdpa does */
            for (int j = 0; j < N; j++) r[j] = 0.0f;
            continue;
        }
        float s = 0.0f;
        for (int j = 0; j < N; j++) {
            r[j] = expf(r[j] - mx);
            s += r[j];
        }
        for (int j = 0; j < N; j++) r[j] /= s;
    }
    return CT_OK;
}

ct_status ct_ref_activate(ct_backend *be, float *x, size_t n, ct_act act) {
    // x (n), in place
    for (size_t i = 0; i < n; i++) x[i] = ct_ref_act(x[i], act);
    return CT_OK;
}

ct_status ct_ref_glu(ct_backend *be, float *y, const float *x, int M, int D) {
    // y (M,D), x (M,2D)
    for (int m = 0; m < M; m++)
        for (int c = 0; c < D; c++) {
            float a = x[(size_t)m * 2 * D + c], g = x[(size_t)m * 2 * D + D + c];
            y[(size_t)m * D + c] = a * (1.0f / (1.0f + expf(-g)));
        }
    return CT_OK;
}
