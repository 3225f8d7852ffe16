/* fuzz_st_index.c — libFuzzer target for the sharded-checkpoint index
 * (model.safetensors.index.json) parser. At start-up two valid shards are
 * written to a private temp directory (s1: x.weight, x.bias; s2: y.weight);
 * each input is parsed as that directory's index, so weight_map entries may
 * name the real shards, missing ones, or hostile paths. On success every
 * tensor must be findable and its bytes readable. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char g_index[4096];

static void shard(const char *dir, const char *file, int n, const char *const *names) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    ct_st_writer *w;
    if (ct_st_writer_create(p, &w) != CT_OK) abort();
    int64_t shape[1] = {3};
    float v[3] = {1, 2, 3};
    for (int i = 0; i < n; i++)
        if (ct_st_writer_add(w, names[i], CT_DTYPE_F32, 1, shape) != CT_OK) abort();
    for (int i = 0; i < n; i++)
        if (ct_st_writer_write(w, v) != CT_OK) abort();
    if (ct_st_writer_finish(w) != CT_OK) abort();
    ct_st_writer_free(w);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    static char dir[] = "/tmp/ct-fuzz-index-XXXXXX";
    if (!mkdtemp(dir)) abort();
    const char *a[2] = {"x.weight", "x.bias"}, *b[1] = {"y.weight"};
    shard(dir, "s1.safetensors", 2, a);
    shard(dir, "s2.safetensors", 1, b);
    snprintf(g_index, sizeof g_index, "%s/model.safetensors.index.json", dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ct_safetensors *st;
    if (ct_st_open_index_buffer((const char *)data, size, g_index, &st) != CT_OK) return 0;
    volatile uint8_t sink = 0;
    for (size_t i = 0; i < ct_st_count(st); i++) {
        const ct_st_tensor *t = ct_st_at(st, i);
        if (ct_st_find(st, t->name) != t) abort();
        for (size_t k = 0; k < t->nbytes; k++) sink ^= ((const uint8_t *)t->data)[k];
    }
    (void)sink;
    ct_st_free(st);
    return 0;
}
