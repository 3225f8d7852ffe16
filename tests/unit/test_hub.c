/* test_hub.c — the Hub client's offline parts: repo id / file / revision
 * validation (the table was checked against huggingface_hub 1.33's
 * validate_repo_id, except that ids over 96 characters in total are refused
 * here as PRODUCT.md §2 says), URL origins and quoting, environment lookup of
 * cache, token and offline mode, refs and snapshot links, blob hash checks,
 * model spec kinds, checkpoint folder checks, VAD weight checks. The network
 * paths are tested end to end against tests/hub/fake_hub.py (tests/e2e/hub_*.sh). */
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fs.h"
#include "model/digest.h"
#include "model/hub.h"
#include "model/hub_internal.h"
#include "model/resolve.h"
#include "testutil.h"

static void test_repo_ids(void **state) {
    (void)state;
    char n96[97], n97[98], long_parts[102];
    memset(n96, 'a', 96);
    n96[96] = 0;
    memset(n97, 'a', 97);
    n97[97] = 0;
    memset(long_parts, 'o', 101);
    long_parts[50] = '/';
    long_parts[101] = 0;
    const char *ok[] = {"foo", "foo/bar", "123", "Foo-BAR_foo.bar123",
                        "CohereLabs/cohere-transcribe-arabic-07-2026", n96, "_a/b_", "a.b/c-d"};
    const char *bad[] = {"", "datasets/foo/bar", ".repo_id", "foo--bar", "foo.git", "a..b", "-a", "a-",
                         "a/", "/a", n97, "a b", "a/b/c", "\xc3\xa9", "a/.b", "a/b.", long_parts};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        if (ct_hub_validate_repo_id(ok[i]) != CT_OK) fail_msg("'%s' refused: %s", ok[i], ct_last_error());
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (ct_hub_validate_repo_id(bad[i]) != CT_ERR_INVALID_ARG) fail_msg("'%s' accepted", bad[i]);
    }
    CT_ASSERT_STATUS(ct_hub_validate_repo_id("foo--bar"), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("'--' or '..'");
}

static void test_filenames_revisions(void **state) {
    (void)state;
    CT_ASSERT_OK(ct_hub_validate_filename("config.json"));
    CT_ASSERT_OK(ct_hub_validate_filename("onnx/model.onnx"));
    const char *bad[] = {"", "../x", "a/../b", "/etc/passwd", "a//b", "a\\b", "C:x", "d://x", "a/./b", "a\nb", ".."};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (ct_hub_validate_filename(bad[i]) == CT_OK) fail_msg("file '%s' accepted", bad[i]);
    CT_ASSERT_OK(ct_hub_validate_revision("main"));
    CT_ASSERT_OK(ct_hub_validate_revision("refs/pr/1"));
    CT_ASSERT_STATUS(ct_hub_validate_revision("../../x"), CT_ERR_INVALID_ARG);
    assert_true(ct_hub_is_commit("0a8193caa4f3f92131471ab08824e488141cb392"));
    assert_false(ct_hub_is_commit("0A8193caa4f3f92131471ab08824e488141cb392"));
    assert_false(ct_hub_is_commit("0a8193ca"));
    assert_false(ct_hub_is_commit("main"));
}

static void test_urls(void **state) {
    (void)state;
    char o[256];
    CT_ASSERT_OK(ct_hub_url_origin("https://huggingface.co/api/models", o, sizeof o));
    assert_string_equal(o, "https://huggingface.co:443");
    CT_ASSERT_OK(ct_hub_url_origin("HTTP://LocalHost:8080/a?b=c", o, sizeof o));
    assert_string_equal(o, "http://localhost:8080");
    CT_ASSERT_OK(ct_hub_url_origin("http://127.0.0.1/x", o, sizeof o));
    assert_string_equal(o, "http://127.0.0.1:80");
    /* a userinfo trick does not change the host */
    CT_ASSERT_OK(ct_hub_url_origin("https://huggingface.co@evil.example/x", o, sizeof o));
    assert_string_equal(o, "https://evil.example:443");
    char q[256];
    CT_ASSERT_OK(ct_hub_url_quote("refs/pr/1", 0, q, sizeof q));
    assert_string_equal(q, "refs%2Fpr%2F1");
    CT_ASSERT_OK(ct_hub_url_quote("a b/c+d.json", 1, q, sizeof q));
    assert_string_equal(q, "a%20b/c%2Bd.json");
    char f[256];
    CT_ASSERT_OK(ct_hub_repo_folder("CohereLabs/cohere-transcribe-arabic-07-2026", f, sizeof f));
    assert_string_equal(f, "models--CohereLabs--cohere-transcribe-arabic-07-2026");
    CT_ASSERT_OK(ct_hub_repo_folder("gpt2", f, sizeof f));
    assert_string_equal(f, "models--gpt2");
}

/* An endpoint so long that the revision URL does not fit is refused as too
 * long, not sent cut short (a truncated path is a request for another URL). */
static void test_long_endpoint(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char ep[2100];
    int n = snprintf(ep, sizeof ep, "http://127.0.0.1:9/");
    memset(ep + n, 'p', sizeof ep - 1 - (size_t)n);
    ep[sizeof ep - 1] = '\0';
    ct_hub_options o;
    ct_hub_default_options(&o);
    o.cache_dir = dir;
    o.endpoint = ep;
    o.offline = 0;
    o.max_attempts = 1;
    o.backoff_s = 0;
    ct_hub *h;
    CT_ASSERT_OK(ct_hub_create(&o, &h));
    ct_hub_revision *r = NULL;
    CT_ASSERT_STATUS(ct_hub_resolve_revision(h, "a/b", "main", &r), CT_ERR_LIMIT);
    CT_ASSERT_ERROR_HAS("too long");
    assert_null(r);
    ct_hub_free(h);
    ct_test_rmtree(dir);
}

static const char *const k_env[] = {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME",
                                    "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH",
                                    "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "HOME"};

static void test_environment(void **state) {
    (void)state;
    char *saved[sizeof k_env / sizeof *k_env];
    for (size_t i = 0; i < sizeof k_env / sizeof *k_env; i++) {
        const char *v = getenv(k_env[i]);
        saved[i] = v ? strdup(v) : NULL;
        unsetenv(k_env[i]);
    }
    const char *dir = ct_test_tmpdir();
    char home[4096], path[4096];
    snprintf(home, sizeof home, "%s/home", dir);
    setenv("HOME", home, 1);
    ct_hub *h;
    CT_ASSERT_OK(ct_hub_create(NULL, &h));
    snprintf(path, sizeof path, "%s/.cache/huggingface/hub", home);
    assert_string_equal(ct_hub_cache_dir(h), path);
    assert_string_equal(ct_hub_endpoint(h), "https://huggingface.co");
    assert_false(ct_hub_has_token(h));
    assert_false(ct_hub_is_offline(h));
    ct_hub_free(h);

    /* ~/.cache/huggingface/token, as `hf auth login` writes it */
    snprintf(path, sizeof path, "%s/.cache/huggingface", home);
    CT_ASSERT_OK(ct_fs_mkdirs(path));
    snprintf(path, sizeof path, "%s/.cache/huggingface/token", home);
    ct_test_write_file(path, "hf_file\n", 8);
    CT_ASSERT_OK(ct_hub_create(NULL, &h));
    assert_string_equal(h->token, "hf_file");
    ct_hub_free(h);

    setenv("XDG_CACHE_HOME", "~/xdg", 1);
    CT_ASSERT_OK(ct_hub_create(NULL, &h));
    snprintf(path, sizeof path, "%s/xdg/huggingface/hub", home);
    assert_string_equal(ct_hub_cache_dir(h), path);
    assert_false(ct_hub_has_token(h)); /* the token file moved with HF_HOME's default */
    ct_hub_free(h);

    setenv("HF_HOME", "/x/hfhome", 1);
    setenv("HF_TOKEN", "  hf_env \r\n", 1);
    setenv("HF_HUB_OFFLINE", "True", 1);
    setenv("HF_ENDPOINT", "http://127.0.0.1:9/", 1);
    CT_ASSERT_OK(ct_hub_create(NULL, &h));
    assert_string_equal(ct_hub_cache_dir(h), "/x/hfhome/hub");
    assert_string_equal(h->token, "hf_env");
    assert_true(ct_hub_is_offline(h));
    assert_string_equal(ct_hub_endpoint(h), "http://127.0.0.1:9");
    assert_string_equal(h->origin, "http://127.0.0.1:9");
    ct_hub_free(h);

    setenv("HF_HUB_CACHE", "/y/cache", 1);
    setenv("HF_HUB_OFFLINE", "0", 1);
    ct_hub_options o;
    ct_hub_default_options(&o);
    o.token = ""; /* explicit: no token even though HF_TOKEN is set */
    CT_ASSERT_OK(ct_hub_create(&o, &h));
    assert_string_equal(ct_hub_cache_dir(h), "/y/cache");
    assert_false(ct_hub_has_token(h));
    assert_false(ct_hub_is_offline(h));
    ct_hub_free(h);

    setenv("HF_ENDPOINT", "ftp://example.com", 1);
    CT_ASSERT_STATUS(ct_hub_create(NULL, &h), CT_ERR_INVALID_ARG);
    assert_null(h);

    for (size_t i = 0; i < sizeof k_env / sizeof *k_env; i++) {
        if (saved[i]) setenv(k_env[i], saved[i], 1);
        else unsetenv(k_env[i]);
        free(saved[i]);
    }
    ct_test_rmtree(dir);
}

static void test_refs_links_blobs(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    ct_hub_options o;
    ct_hub_default_options(&o);
    o.cache_dir = dir;
    ct_hub *h;
    CT_ASSERT_OK(ct_hub_create(&o, &h));
    const char *c = "0123456789abcdef0123456789abcdef01234567";
    CT_ASSERT_OK(ct_hub_write_ref(h, "a/b", "main", c));
    char p[4096], got[41];
    snprintf(p, sizeof p, "%s/models--a--b/refs/main", dir);
    char *buf;
    size_t n;
    CT_ASSERT_OK(ct_fs_read_all(p, 100, &buf, &n));
    assert_int_equal(n, 40); /* no newline, as huggingface_hub */
    assert_memory_equal(buf, c, 40);
    free(buf);
    CT_ASSERT_OK(ct_hub_read_ref(h, "a/b", "main", got));
    assert_string_equal(got, c);
    ct_test_write_file(p, "0123456789abcdef0123456789abcdef01234567\n", 41); /* hand-made */
    CT_ASSERT_OK(ct_hub_read_ref(h, "a/b", "main", got));
    ct_test_write_file(p, "not a commit", 12);
    CT_ASSERT_STATUS(ct_hub_read_ref(h, "a/b", "main", got), CT_ERR_FORMAT);
    CT_ASSERT_STATUS(ct_hub_read_ref(h, "a/b", "v2", got), CT_ERR_NOT_FOUND);

    char storage[4096], target[4096];
    CT_ASSERT_OK(ct_hub_storage_dir(h, "a/b", storage, sizeof storage));
    CT_ASSERT_OK(ct_hub_link_snapshot(storage, c, "sub/dir/f.json", "e1"));
    snprintf(p, sizeof p, "%s/snapshots/%s/sub/dir/f.json", storage, c);
    ssize_t k = readlink(p, target, sizeof target - 1);
    assert_true(k > 0);
    target[k] = 0;
    assert_string_equal(target, "../../../../blobs/e1");
    CT_ASSERT_OK(ct_hub_link_snapshot(storage, c, "f.json", "e2"));
    snprintf(p, sizeof p, "%s/snapshots/%s/f.json", storage, c);
    k = readlink(p, target, sizeof target - 1);
    target[k] = 0;
    assert_string_equal(target, "../../blobs/e2");

    /* "hello\n": git blob sha1 and sha256 as `git hash-object` / sha256sum give them */
    snprintf(p, sizeof p, "%s/hello", dir);
    ct_test_write_file(p, "hello\n", 6);
    CT_ASSERT_OK(ct_hub_verify_blob(p, "ce013625030ba8dba906f756967f9e9ca394464a"));
    CT_ASSERT_OK(ct_hub_verify_blob(p, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"));
    CT_ASSERT_STATUS(ct_hub_verify_blob(p, "ce013625030ba8dba906f756967f9e9ca394464b"), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("does not match");
    CT_ASSERT_OK(ct_hub_verify_blob(p, "opaque-etag")); /* not a content hash: nothing to check */
    char hex[65];
    CT_ASSERT_OK(ct_file_sha256(p, hex));
    assert_string_equal(hex, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");

    ct_hub_free(h);
    ct_test_rmtree(dir);
}

static void header(ct_http_result *r, const char *line) { ct_http_parse_header_line(r, line, strlen(line)); }

static void test_parsers(void **state) {
    (void)state;
    ct_http_result r = {0};
    ct_http_result_clear(&r);
    header(&r, "HTTP/1.1 302 Found\r\n");
    header(&r, "etag: W/\"abc\"\r\n");
    header(&r, "X-Linked-Etag:   \"0123abcd\"  \r\n");
    header(&r, "X-Linked-Size: 1234\r\n");
    header(&r, "X-Repo-Commit: 0a8193caa4f3f92131471ab08824e488141cb392\r\n");
    header(&r, "X-Error-Code: GatedRepo\r\n");
    assert_int_equal(r.status, 302);
    assert_string_equal(r.etag, "abc");
    assert_string_equal(r.linked_etag, "0123abcd");
    assert_int_equal(r.linked_size, 1234);
    assert_string_equal(r.repo_commit, "0a8193caa4f3f92131471ab08824e488141cb392");
    assert_string_equal(r.error_code, "GatedRepo");
    header(&r, "HTTP/1.1 206 Partial Content\r\n"); /* the next response forgets the last one's */
    assert_int_equal(r.status, 206);
    assert_string_equal(r.etag, "");
    assert_int_equal(r.linked_size, -1);
    header(&r, "Content-Range: bytes 100-199/200\r\n");
    header(&r, "Content-Length: -5\r\n");
    assert_int_equal(r.range_start, 100);
    assert_int_equal(r.range_total, 200);
    assert_int_equal(r.content_length, -1);
    ct_http_result_clear(&r);

    const char *api = "{\"sha\":\"0a8193caa4f3f92131471ab08824e488141cb392\",\"siblings\":["
                      "{\"rfilename\":\"config.json\",\"size\":12},"
                      "{\"rfilename\":\"model.safetensors\",\"lfs\":{\"size\":99}},"
                      "{\"rfilename\":\"../evil\"},{\"nope\":1}]}";
    ct_hub_revision *rev = calloc(1, sizeof *rev);
    CT_ASSERT_OK(ct_hub_parse_revision_json(api, strlen(api), "a/b", rev));
    assert_string_equal(rev->commit, "0a8193caa4f3f92131471ab08824e488141cb392");
    assert_int_equal(rev->n_files, 2); /* the unsafe and the nameless entries are dropped */
    int64_t size;
    assert_true(ct_hub_revision_has(rev, "config.json", &size));
    assert_int_equal(size, 12);
    assert_true(ct_hub_revision_has(rev, "model.safetensors", &size));
    assert_int_equal(size, 99);
    assert_false(ct_hub_revision_has(rev, "../evil", NULL));
    ct_hub_revision_free(rev);
    rev = calloc(1, sizeof *rev);
    CT_ASSERT_STATUS(ct_hub_parse_revision_json("{\"sha\":\"main\"}", 14, "a/b", rev), CT_ERR_FORMAT);
    ct_hub_revision_free(rev);

    const char *idx = "{\"weight_map\":{\"a\":\"s1\",\"b\":\"s2\",\"c\":\"s1\"}}";
    char **names;
    int n;
    CT_ASSERT_OK(ct_model_index_shards_parse(idx, strlen(idx), "i.json", &names, &n));
    assert_int_equal(n, 2);
    assert_string_equal(names[0], "s1");
    assert_string_equal(names[1], "s2");
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    /* a tensor named twice is refused here, as the index reader refuses it,
     * before any shard is downloaded */
    const char *dup = "{\"weight_map\":{\"a\":\"s1\",\"a\":\"s2\"}}";
    CT_ASSERT_STATUS(ct_model_index_shards_parse(dup, strlen(dup), "i.json", &names, &n), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("i.json: not valid JSON");
    assert_null(names);
}

static void write_model(const char *dir, const char *config) {
    char p[4096];
    CT_ASSERT_OK(ct_fs_mkdirs(dir));
    snprintf(p, sizeof p, "%s/config.json", dir);
    ct_test_write_file(p, config, strlen(config));
    snprintf(p, sizeof p, "%s/tokenizer.json", dir);
    ct_test_write_file(p, "{}", 2);
}

static void test_spec_and_dirs(void **state) {
    (void)state;
    int local;
    const char *dir = ct_test_tmpdir();
    CT_ASSERT_OK(ct_model_spec_kind(dir, &local));
    assert_true(local);
    CT_ASSERT_OK(ct_model_spec_kind("owner/name", &local));
    assert_false(local);
    CT_ASSERT_OK(ct_model_spec_kind("gpt2", &local));
    assert_false(local);
    const char *missing[] = {"./nope", "../nope", "~/nope", "/nonexistent/model", "a/b/c", ".", ".."};
    for (size_t i = 0; i < sizeof missing / sizeof *missing; i++) {
        if (!strcmp(missing[i], ".") || !strcmp(missing[i], "..")) continue; /* these exist */
        if (ct_model_spec_kind(missing[i], &local) != CT_ERR_NOT_FOUND)
            fail_msg("'%s' not refused as a missing path: %s", missing[i], ct_last_error());
        CT_ASSERT_ERROR_HAS("no such local model directory");
    }
    CT_ASSERT_STATUS(ct_model_spec_kind("bad--id", &local), CT_ERR_INVALID_ARG);
    CT_ASSERT_STATUS(ct_model_spec_kind("", &local), CT_ERR_INVALID_ARG);
    CT_ASSERT_STATUS(ct_model_spec_kind("a/b ", &local), CT_ERR_INVALID_ARG);

    char m[4096], p[4096];
    snprintf(m, sizeof m, "%s/m", dir);
    write_model(m, "{\"model_type\":\"cohere_asr\"}");
    CT_ASSERT_STATUS(ct_model_check_dir(m), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS("missing model.safetensors");
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", m);
    const char *idx = "{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\"}}";
    ct_test_write_file(p, idx, strlen(idx));
    snprintf(p, sizeof p, "%s/s1.safetensors", m);
    ct_test_write_file(p, "x", 1);
    CT_ASSERT_STATUS(ct_model_check_dir(m), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS("missing s2.safetensors");
    snprintf(p, sizeof p, "%s/s2.safetensors", m);
    ct_test_write_file(p, "x", 1);
    CT_ASSERT_OK(ct_model_check_dir(m));
    char *out;
    CT_ASSERT_OK(ct_model_resolve(m, NULL, NULL, &out));
    char *real = realpath(m, NULL);
    assert_string_equal(out, real);
    free(out);
    free(real);
    /* "~/..." is expanded like a shell would */
    char *saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("HOME", dir, 1);
    CT_ASSERT_OK(ct_model_resolve("~/m", NULL, NULL, &out));
    real = realpath(m, NULL);
    assert_string_equal(out, real);
    free(out);
    free(real);
    if (saved_home) setenv("HOME", saved_home, 1);
    free(saved_home);
    CT_ASSERT_STATUS(ct_model_resolve(m, "main", NULL, &out), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("--model-revision cannot be used with a local model directory");

    /* a shard name escaping the folder is refused */
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", m);
    const char *evil = "{\"weight_map\":{\"a\":\"../../etc/passwd\"}}";
    ct_test_write_file(p, evil, strlen(evil));
    CT_ASSERT_STATUS(ct_model_check_dir(m), CT_ERR_FORMAT);
    ct_test_write_file(p, "{\"weight_map\":[]}", 17);
    CT_ASSERT_STATUS(ct_model_check_dir(m), CT_ERR_FORMAT);
    ct_test_write_file(p, "{nope", 5);
    CT_ASSERT_STATUS(ct_model_check_dir(m), CT_ERR_FORMAT);

    snprintf(m, sizeof m, "%s/q", dir);
    write_model(m, "{\"quantization_config\":{\"bits\":4}}");
    CT_ASSERT_STATUS(ct_model_check_dir(m), CT_ERR_UNSUPPORTED);
    CT_ASSERT_ERROR_HAS("quantization_config");
    snprintf(m, sizeof m, "%s/adapter", dir);
    CT_ASSERT_OK(ct_fs_mkdirs(m));
    snprintf(p, sizeof p, "%s/adapter_config.json", m);
    ct_test_write_file(p, "{}", 2);
    CT_ASSERT_STATUS(ct_model_check_dir(m), CT_ERR_UNSUPPORTED);
    CT_ASSERT_ERROR_HAS("adapters are not supported");
    ct_test_rmtree(dir);
}

static void test_vad_weights(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, CT_SILERO_WEIGHTS_FILE);
    ct_test_write_file(p, "not silero", 10);
    char *out = NULL;
    CT_ASSERT_STATUS(ct_vad_weights_resolve(p, NULL, &out), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS("is not that of silero_vad.onnx v6.2");
    CT_ASSERT_STATUS(ct_vad_weights_resolve(dir, NULL, &out), CT_ERR_FORMAT); /* folder → its file */
    char empty[4096];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    CT_ASSERT_OK(ct_fs_mkdirs(empty));
    CT_ASSERT_STATUS(ct_vad_weights_resolve(empty, NULL, &out), CT_ERR_NOT_FOUND);
    CT_ASSERT_STATUS(ct_vad_weights_resolve("./missing.onnx", NULL, &out), CT_ERR_NOT_FOUND);
    char *saved = getenv(CT_SILERO_WEIGHTS_ENV) ? strdup(getenv(CT_SILERO_WEIGHTS_ENV)) : NULL;
    char *saved2 = getenv(CT_SILERO_WEIGHTS_ENV_ALT) ? strdup(getenv(CT_SILERO_WEIGHTS_ENV_ALT)) : NULL;
    unsetenv(CT_SILERO_WEIGHTS_ENV);
    unsetenv(CT_SILERO_WEIGHTS_ENV_ALT);
    CT_ASSERT_STATUS(ct_vad_weights_resolve(NULL, NULL, &out), CT_ERR_NOT_FOUND);
    CT_ASSERT_ERROR_HAS(CT_SILERO_WEIGHTS_ENV);
    setenv(CT_SILERO_WEIGHTS_ENV_ALT, p, 1);
    CT_ASSERT_STATUS(ct_vad_weights_resolve(NULL, NULL, &out), CT_ERR_FORMAT);
    CT_ASSERT_ERROR_HAS(p);
    unsetenv(CT_SILERO_WEIGHTS_ENV_ALT);
    setenv(CT_SILERO_WEIGHTS_ENV, p, 1);
    CT_ASSERT_STATUS(ct_vad_weights_resolve(NULL, NULL, &out), CT_ERR_FORMAT);
    /* the real file, when tests/setup fetched it from PyPI */
    const char *real = getenv("CT_TESTDATA") ? CT_TESTDATA("silero/silero_vad.onnx") : NULL;
    if (real && ct_fs_is_file(real)) {
        CT_ASSERT_OK(ct_vad_weights_resolve(real, NULL, &out));
        assert_non_null(out);
        free(out);
    }
    if (saved) setenv(CT_SILERO_WEIGHTS_ENV, saved, 1);
    else unsetenv(CT_SILERO_WEIGHTS_ENV);
    if (saved2) setenv(CT_SILERO_WEIGHTS_ENV_ALT, saved2, 1);
    free(saved);
    free(saved2);
    ct_test_rmtree(dir);
}

/* Issue 10, the Hub's smaller ones: an empty endpoint is refused (it meant
 * huggingface.co silently), a bad port is named as such (it was "not an
 * http(s) URL"), user:password@ is refused without echoing the password, and
 * a refused connection is retried once (five tries with back-off took 15 s). */
static void test_endpoint_checks_and_refusals(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    ct_hub_options o;
    ct_hub_default_options(&o);
    o.cache_dir = dir;
    o.offline = 0;
    ct_hub *h = NULL;
    o.endpoint = "";
    CT_ASSERT_STATUS(ct_hub_create(&o, &h), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("Hub endpoint: empty");
    o.endpoint = "http://localhost:99999";
    CT_ASSERT_STATUS(ct_hub_create(&o, &h), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("not a valid URL: Port number");
    o.endpoint = "https://user:s3cret@localhost:99999";
    CT_ASSERT_STATUS(ct_hub_create(&o, &h), CT_ERR_INVALID_ARG);
    assert_null(strstr(ct_last_error(), "s3cret"));
    o.endpoint = "https://user:s3cret@localhost:8443";
    CT_ASSERT_STATUS(ct_hub_create(&o, &h), CT_ERR_INVALID_ARG);
    CT_ASSERT_ERROR_HAS("user name or password in the URL is not supported");
    assert_null(strstr(ct_last_error(), "s3cret"));

    /* a port nothing listens on: bind one, note it, close it */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t al = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    close(fd);
    char ep[64];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", ntohs(a.sin_port));
    o.endpoint = ep;
    o.backoff_s = 1.0;
    o.max_attempts = 5;
    CT_ASSERT_OK(ct_hub_create(&o, &h));
    ct_hub_revision *rev = NULL;
    double t0 = ct_now();
    CT_ASSERT_STATUS(ct_hub_resolve_revision(h, "x/y", "main", &rev), CT_ERR_NETWORK);
    double took = ct_now() - t0;
    CT_ASSERT_ERROR_HAS("could not be reached after 2 attempts");
    if (took > 5.0) fail_msg("a refused connection took %.1f s to report", took);
    ct_hub_revision_free(rev);
    ct_hub_free(h);
    ct_test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repo_ids),         cmocka_unit_test(test_filenames_revisions),
        cmocka_unit_test(test_urls),             cmocka_unit_test(test_environment),
        cmocka_unit_test(test_refs_links_blobs), cmocka_unit_test(test_spec_and_dirs),
        cmocka_unit_test(test_vad_weights),      cmocka_unit_test(test_parsers),
        cmocka_unit_test(test_long_endpoint),    cmocka_unit_test(test_endpoint_checks_and_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
