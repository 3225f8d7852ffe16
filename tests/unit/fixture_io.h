/* fixture_io.h — reading committed fixtures in tests: a 16 kHz mono audio
 * file (wav, flac: libsndfile) as floats and a JSON document (jansson), each
 * failing the test with the file's name. Header-only and kept out of
 * testutil.c, which programs without libsndfile or jansson link
 * (tools/device/build.sh). */
#ifndef CT_FIXTURE_IO_H
#define CT_FIXTURE_IO_H

#include <jansson.h>
#include <sndfile.h>
#include <stdlib.h>

#include "testutil.h"

/* All samples of a 16 kHz mono file (free()); *n: how many. */
static inline float *ct_test_read_audio(const char *path, size_t *n) {
    SF_INFO info = {0};
    SNDFILE *f = sf_open(path, SFM_READ, &info);
    if (!f) fail_msg("cannot open %s: %s", path, sf_strerror(NULL));
    assert_int_equal(info.samplerate, 16000);
    assert_int_equal(info.channels, 1);
    float *x = malloc((size_t)info.frames * sizeof(float) + 4);
    assert_non_null(x);
    assert_int_equal(sf_readf_float(f, x, info.frames), info.frames);
    sf_close(f);
    *n = (size_t)info.frames;
    return x;
}

/* A JSON file (json_decref it). */
static inline json_t *ct_test_load_json(const char *path) {
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) fail_msg("%s: %s (line %d)", path, err.text, err.line);
    return j;
}

#endif
