/* fuzz_output_state.c — libFuzzer target: arbitrary bytes as a state file
 * (src/output/state.h): the envelope check, then, when the digest holds or
 * for the bare payload, checkpoint restore into a record, re-serialisation
 * (pretty and canonical) and manifest verification against no outputs.
 * A payload whose digest verified must rebuild to the same canonical text:
 * the float and string round trip the reader relies on. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "output/render.h"
#include "output/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const json_t *p) {
    ct_source_snapshot snap = {.canonical_path = (char *)"/x.wav"};
    ct_file_record r = {0};
    int ok = 0;
    char reason[CT_REASON_MAX];
    const json_t *key = json_object_get(p, "asr_contract_key");
    if (ct_checkpoint_restore_payload(p, json_is_string(key) ? json_string_value(key) : "k", &snap, &r, &ok,
                                      reason) == CT_OK && ok) {
        json_t *again = NULL;
        if (ct_checkpoint_payload(&r, "k", &snap, 1.0, &again) == CT_OK) {
            ct_jbuf b = {0};
            if (ct_state_envelope(again, &b) != CT_OK) abort(); /* restored values must serialise */
            ct_jbuf_free(&b);
        }
        json_decref(again);
    }
    ct_file_record_clear(&r);
    ct_format f[1] = {CT_FORMAT_TXT};
    const char *names[1] = {"\x01-no-such-output"};
    ct_verify_request vr = {"k", "r", &snap, f, names, 1};
    if (ct_manifest_verify_payload(AT_FDCWD, p, &vr, &ok, reason, NULL) == CT_OK && ok) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    json_t *p = NULL;
    int ok = 0;
    char reason[CT_REASON_MAX];
    if (ct_state_decode((const char *)data, size, &p, &ok, reason) == CT_OK && ok) {
        /* the digest held: the canonical text is reproducible */
        ct_jbuf a = {0}, b = {0};
        if (ct_json_dump_canonical(p, &a) != CT_OK) abort();
        json_t *back = NULL;
        if (ct_json_parse(a.data, a.len, &back) != CT_OK) abort();
        if (ct_json_dump_canonical(back, &b) != CT_OK || a.len != b.len || memcmp(a.data, b.data, a.len)) abort();
        json_decref(back);
        ct_jbuf_free(&a);
        ct_jbuf_free(&b);
        exercise(p);
        json_decref(p);
        return 0;
    }
    /* also drive the validators with the bytes as a bare payload */
    if (ct_json_parse((const char *)data, size, &p) == CT_OK) {
        if (json_is_object(p)) exercise(p);
        json_decref(p);
    }
    return 0;
}
