/* st_mini.h — a tiny safetensors reader for tests that must run before (or
 * independently of) src/model: reads the whole file, parses the header with
 * jansson, finds tensors by name. Test-only; no bounds hardening beyond what
 * the committed fixtures need. */
#ifndef CT_TEST_ST_MINI_H
#define CT_TEST_ST_MINI_H

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asr/weights.h"

typedef struct st_mini {
    unsigned char *buf;
    size_t size;
    json_t *hdr;
    const unsigned char *data;
    const char *strip; /* prefix removed from names when matching ("model.") */
} st_mini;

static int st_mini_open(st_mini *m, const char *path) {
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    m->size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    m->buf = malloc(m->size);
    if (fread(m->buf, 1, m->size, f) != m->size) {
        fclose(f);
        return -1;
    }
    fclose(f);
    uint64_t n;
    memcpy(&n, m->buf, 8);
    m->hdr = json_loadb((const char *)m->buf + 8, n, 0, NULL);
    m->data = m->buf + 8 + n;
    return m->hdr ? 0 : -1;
}

static void st_mini_close(st_mini *m) {
    json_decref(m->hdr);
    free(m->buf);
}

static int st_mini_get(st_mini *m, const char *name, ct_host_tensor *out) {
    json_t *t = json_object_get(m->hdr, name);
    char alt[512];
    if (!t) {
        snprintf(alt, sizeof alt, "model.%s", name);
        t = json_object_get(m->hdr, alt);
    }
    if (!t) return 0;
    const char *dt = json_string_value(json_object_get(t, "dtype"));
    out->dtype = !strcmp(dt, "F32") ? CT_DTYPE_F32 : !strcmp(dt, "BF16") ? CT_DTYPE_BF16 : !strcmp(dt, "F16") ? CT_DTYPE_F16
               : !strcmp(dt, "I32") ? CT_DTYPE_I32 : !strcmp(dt, "I64") ? CT_DTYPE_I64 : CT_DTYPE_U8;
    json_t *sh = json_object_get(t, "shape");
    out->ndim = (int)json_array_size(sh);
    for (int i = 0; i < out->ndim && i < 8; i++) out->shape[i] = json_integer_value(json_array_get(sh, i));
    out->data = m->data + json_integer_value(json_array_get(json_object_get(t, "data_offsets"), 0));
    return 1;
}

static int st_mini_lookup(void *ctx, const char *name, ct_host_tensor *out) { return st_mini_get(ctx, name, out); }

#endif
