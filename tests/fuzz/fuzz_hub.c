/* fuzz_hub.c — libFuzzer target for what the Hub client parses from the
 * network and the cache: the revision API's JSON, raw HTTP header lines (in
 * a sequence, as one response's headers arrive), a safetensors index's
 * weight_map, and the name checks applied to server-supplied file names and
 * etags. The first input byte picks the parser. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/hub_internal.h"
#include "model/resolve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    switch (data[0] % 4) {
    case 0: {
        ct_hub_revision *r = calloc(1, sizeof *r);
        if (ct_hub_parse_revision_json(s, n, "fuzz/repo", r) == CT_OK) {
            for (int i = 0; i < r->n_files; i++)
                if (ct_hub_validate_filename(r->files[i]) != CT_OK) abort();
        }
        ct_hub_revision_free(r);
        break;
    }
    case 1: {
        ct_http_result r;
        memset(&r, 0, sizeof r);
        ct_http_result_clear(&r);
        size_t start = 0;
        for (size_t i = 0; i <= n; i++) {
            if (i == n || s[i] == '\n') {
                ct_http_parse_header_line(&r, s + start, i - start + (i < n));
                start = i + 1;
            }
        }
        if (strlen(r.etag) >= sizeof r.etag || strlen(r.repo_commit) >= sizeof r.repo_commit) abort();
        ct_http_result_clear(&r);
        break;
    }
    case 2: {
        char **names;
        int k;
        if (ct_model_index_shards_parse(s, n, "fuzz.json", &names, &k) == CT_OK) {
            for (int i = 0; i < k; i++) {
                if (ct_hub_validate_filename(names[i]) != CT_OK) abort();
                free(names[i]);
            }
            free(names);
        }
        break;
    }
    default: {
        char buf[512];
        size_t m = n < sizeof buf - 1 ? n : sizeof buf - 1;
        memcpy(buf, s, m);
        buf[m] = 0;
        (void)ct_hub_validate_repo_id(buf);
        (void)ct_hub_validate_revision(buf);
        if (ct_hub_validate_filename(buf) == CT_OK && (buf[0] == '/' || strstr(buf, "/../")))
            abort();
        char q[2048];
        (void)ct_hub_url_quote(buf, 1, q, sizeof q);
        char o[600];
        (void)ct_hub_url_origin(buf, o, sizeof o);
        break;
    }
    }
    return 0;
}
