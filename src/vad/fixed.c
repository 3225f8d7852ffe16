/* fixed.c — see fixed.h. */
#include "vad/fixed.h"

#include <math.h>
#include <stdlib.h>

ct_status ct_vad_fixed_spans(size_t n, double max_dur, ct_span **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    if (!isfinite(max_dur) || max_dur < 1.0)
        return ct_fail(CT_ERR_INVALID_ARG, "vad: fixed windows need --max-dur >= 1 (got %g)", max_dur);
    if (max_dur > CT_VAD_MAX_SEGMENT_S)
        return ct_fail(CT_ERR_INVALID_ARG, "vad: --max-dur %g exceeds %g s", max_dur, CT_VAD_MAX_SEGMENT_S);
    if (n == 0) return CT_OK;
    double wd = nearbyint(max_dur * CT_VAD_RATE); /* round half to even (default rounding mode) */
    size_t w = wd < 1.0 ? 1 : (size_t)wd;
    size_t count = (n + w - 1) / w;
    ct_span *v = malloc(count * sizeof *v);
    if (!v) return ct_fail(CT_ERR_OOM, "vad: out of memory");
    for (size_t k = 0; k < count; k++) {
        size_t a = k * w, b = a + w < n ? a + w : n;
        v[k] = (ct_span){(double)a / CT_VAD_RATE, (double)b / CT_VAD_RATE};
    }
    *out = v;
    *n_out = count;
    return CT_OK;
}
