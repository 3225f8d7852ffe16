/* test_hostile_paths.c — property test over the library's file paths (issue
 * 10 items 1, 2, 5): every input reader and every output writer is handed a
 * FIFO, a character device, a socket, a directory, a dangling symlink, a
 * symlink to a FIFO and an empty file, in place of its file and of each file
 * inside a model directory. Inputs must fail with a message naming the path
 * (never block: the whole test runs under alarm()), outputs must refuse
 * every non-regular target and leave it exactly as it was. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "testutil.h"

#include "asr/asr.h"
#include "audio/audio.h"
#include "core/fs.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/convert.h"
#include "model/digest.h"
#include "model/gguf.h"
#include "model/safetensors.h"
#include "model/tokenizer.h"
#include "vad/onnx.h"
#include "vad/silero.h"

typedef enum { K_FIFO, K_CHARDEV, K_SOCKET, K_DIR, K_DANGLING, K_LINK_FIFO, K_EMPTY, K_COUNT } kind;
static const char *const kind_name[K_COUNT] = {"FIFO",           "character device", "socket",     "directory",
                                               "dangling link",  "link to a FIFO",   "empty file"};

/* Make a node of kind k at path. 0 on success, -1 when this process may not
 * (mknod needs root: the device case is then skipped with a note). */
static int make_node(kind k, const char *path) {
    switch (k) {
    case K_FIFO: return mkfifo(path, 0644);
    case K_CHARDEV: return mknod(path, S_IFCHR | 0666, makedev(1, 3)); /* a /dev/null twin */
    case K_SOCKET: {
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        if (fd < 0 || strlen(path) >= sizeof a.sun_path) return -1;
        strcpy(a.sun_path, path);
        int r = bind(fd, (struct sockaddr *)&a, sizeof a);
        close(fd);
        return r;
    }
    case K_DIR: return mkdir(path, 0755);
    case K_DANGLING: return symlink("no-such-target", path);
    case K_LINK_FIFO: {
        char t[4096];
        snprintf(t, sizeof t, "%s.fifo-target", path);
        if (mkfifo(t, 0644) != 0) return -1;
        return symlink(t, path);
    }
    case K_EMPTY: {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) return -1;
        return close(fd);
    }
    default: return -1;
    }
}

static void remove_node(const char *path) {
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) rmdir(path);
    else unlink(path);
    char t[4096];
    snprintf(t, sizeof t, "%s.fifo-target", path);
    unlink(t);
}

static void copy_file(const char *from, const char *to) {
    char *buf;
    size_t n;
    CT_ASSERT_OK(ct_fs_read_all(from, (size_t)1 << 30, &buf, &n));
    ct_test_write_file(to, buf, n);
    free(buf);
}

/* ---- inputs -------------------------------------------------------------- */

typedef ct_status (*input_fn)(const char *path);

static ct_status in_read_all(const char *p) {
    char *b;
    size_t n;
    ct_status s = ct_fs_read_all(p, 1 << 20, &b, &n);
    free(b);
    return s;
}
static ct_status in_map(const char *p) {
    ct_mapping m;
    ct_status s = ct_fs_map(p, &m);
    ct_fs_unmap(&m);
    return s;
}
static ct_status in_digest(const char *p) {
    char hex[65];
    return ct_file_digest(p, CT_DIGEST_SHA256, hex);
}
static ct_status in_st(const char *p) {
    ct_safetensors *st = NULL;
    ct_status s = ct_st_open(p, &st);
    ct_st_free(st);
    return s;
}
static ct_status in_gguf(const char *p) {
    ct_gguf *g = NULL;
    ct_status s = ct_gguf_open(p, &g);
    ct_gguf_free(g);
    return s;
}
static ct_status in_checkpoint(const char *p) {
    ct_checkpoint *ck = NULL;
    ct_status s = ct_checkpoint_open(p, &ck);
    ct_checkpoint_free(ck);
    return s;
}
static ct_status in_tokenizer(const char *p) {
    ct_tokenizer *t = NULL;
    ct_status s = ct_tokenizer_load(p, &t);
    ct_tokenizer_free(t);
    return s;
}
static ct_status in_onnx(const char *p) {
    ct_onnx_model *m = NULL;
    ct_status s = ct_onnx_open(p, 0, &m);
    ct_onnx_free(m);
    return s;
}
static ct_status in_silero(const char *p) {
    ct_silero *m = NULL;
    ct_status s = ct_silero_load(p, &m);
    ct_silero_free(m);
    return s;
}
static ct_status in_audio(const char *p) {
    ct_audio *a = NULL;
    ct_status s = ct_audio_decode(p, NULL, &a);
    ct_audio_free(a);
    return s;
}
static ct_status in_probe(const char *p) {
    ct_audio_info i;
    return ct_audio_probe(p, &i);
}
static ct_status in_asr(const char *p) {
    ct_asr *a = NULL;
    ct_asr_options o = ct_asr_default_options();
    ct_status s = ct_asr_open(p, &o, &a);
    ct_asr_free(a);
    return s;
}
static ct_status in_config(const char *p) {
    ct_model_config c;
    return ct_config_load(p, &c);
}
static ct_status in_convert(const char *p) {
    char out[4096];
    snprintf(out, sizeof out, "%s.converted.gguf", p);
    ct_status s = ct_convert_to_gguf(p, out, 0);
    unlink(out);
    return s;
}

typedef struct {
    const char *name;
    input_fn fn;
    int empty_ok; /* an empty regular file is a valid input (0 bytes read) */
} input_case;

static const input_case k_inputs[] = {
    {"ct_fs_read_all", in_read_all, 1}, {"ct_fs_map", in_map, 1},       {"ct_file_digest", in_digest, 1},
    {"ct_st_open", in_st, 0},           {"ct_gguf_open", in_gguf, 0},   {"ct_checkpoint_open", in_checkpoint, 0},
    {"ct_tokenizer_load", in_tokenizer, 0}, {"ct_onnx_open", in_onnx, 0}, {"ct_silero_load", in_silero, 0},
    {"ct_audio_decode", in_audio, 0},   {"ct_audio_probe", in_probe, 0}, {"ct_asr_open", in_asr, 0},
    {"ct_config_load", in_config, 0},   {"ct_convert_to_gguf", in_convert, 0},
};

static void test_inputs_refuse_special_files(void **state) {
    (void)state;
    alarm(120); /* a blocked open would hang: SIGALRM ends the test as failed */
    const char *dir = ct_test_tmpdir();
    char p[4096];
    snprintf(p, sizeof p, "%s/input", dir);
    int tried = 0;
    for (int k = 0; k < K_COUNT; k++) {
        if (make_node((kind)k, p) != 0) {
            print_message("note: cannot make a %s here (%s): skipped\n", kind_name[k], strerror(errno));
            continue;
        }
        for (size_t i = 0; i < sizeof k_inputs / sizeof *k_inputs; i++) {
            const input_case *c = &k_inputs[i];
            ct_error_clear();
            ct_status s = c->fn(p);
            if (k == K_EMPTY && c->empty_ok) {
                if (s != CT_OK) fail_msg("%s on an empty file: %s", c->name, ct_last_error());
                continue;
            }
            if (s == CT_OK) fail_msg("%s accepted a %s", c->name, kind_name[k]);
            /* the message names the path the caller gave (or a file inside it) */
            if (!strstr(ct_last_error(), "input"))
                fail_msg("%s on a %s: message '%s' does not name the path", c->name, kind_name[k], ct_last_error());
            tried++;
        }
        remove_node(p);
    }
    assert_true(tried > 0);
    ct_test_rmtree(dir);
    alarm(0);
}

/* Each file of a model directory replaced in turn by each kind: the model
 * readers (checkpoint, config, tokenizer, engine, converter) must refuse it. */
static void test_model_dir_files_refuse_special_files(void **state) {
    (void)state;
    alarm(300);
    static const char *const files[] = {"config.json", "tokenizer.json", "model.safetensors", "generation_config.json"};
    static const input_fn readers[] = {in_checkpoint, in_asr, in_convert};
    /* which readers read which file: the checkpoint has no tokenizer */
    static const int reads[4][3] = {{1, 1, 1}, {0, 1, 1}, {1, 1, 1}, {1, 1, 1}};
    const char *dir = ct_test_tmpdir();
    char m[4096], p[4096], src[4096];
    snprintf(m, sizeof m, "%s/model", dir);
    assert_int_equal(mkdir(m, 0755), 0);
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        for (size_t g = 0; g < sizeof files / sizeof *files; g++) {
            snprintf(src, sizeof src, "tiny-hf/%s", files[g]);
            snprintf(p, sizeof p, "%s/%s", m, files[g]);
            copy_file(CT_FIXTURE(src), p);
        }
        snprintf(p, sizeof p, "%s/%s", m, files[f]);
        for (int k = 0; k < K_COUNT; k++) {
            unlink(p);
            if (make_node((kind)k, p) != 0) continue;
            for (size_t r = 0; r < sizeof readers / sizeof *readers; r++) {
                if (!reads[f][r]) continue;
                ct_error_clear();
                ct_status s = readers[r](m);
                /* generation_config.json is optional, and so is tokenizer.json
                 * for the converter: a missing one (dangling link) is fine
                 * there, any other kind must be refused */
                int optional = f == 3 || (f == 1 && r == 2);
                if (s == CT_OK && !(optional && k == K_DANGLING))
                    fail_msg("reader %zu accepted %s as a %s", r, files[f], kind_name[k]);
                if (s != CT_OK && !strstr(ct_last_error(), files[f]) && !strstr(ct_last_error(), "model"))
                    fail_msg("%s as a %s: message '%s' names neither", files[f], kind_name[k], ct_last_error());
            }
            remove_node(p);
        }
    }
    ct_test_rmtree(dir);
    alarm(0);
}

/* ---- outputs ------------------------------------------------------------- */

typedef ct_status (*output_fn)(const char *path);

static ct_status out_atomic(const char *p) { return ct_fs_write_atomic(p, "new", 3); }
static ct_status out_atomic_file(const char *p) {
    ct_atomic_file f;
    ct_status s = ct_atomic_file_open(&f, p);
    if (s == CT_OK) s = ct_atomic_file_write(&f, "new", 3);
    if (s == CT_OK) s = ct_atomic_file_commit(&f);
    ct_atomic_file_close(&f);
    return s;
}
static ct_status out_st(const char *p) {
    ct_st_writer *w = NULL;
    ct_status s = ct_st_writer_create(p, &w);
    int64_t shape[1] = {2};
    float x[2] = {1, 2};
    if (s == CT_OK) s = ct_st_writer_add(w, "x", CT_DTYPE_F32, 1, shape);
    if (s == CT_OK) s = ct_st_writer_write(w, x);
    if (s == CT_OK) s = ct_st_writer_finish(w);
    ct_st_writer_free(w);
    return s;
}
static ct_status out_gguf(const char *p) {
    ct_gguf_writer *w = NULL;
    ct_status s = ct_gguf_writer_create(p, &w);
    if (s == CT_OK) s = ct_gguf_writer_set_u32(w, "x", 1);
    if (s == CT_OK) s = ct_gguf_writer_finish(w);
    ct_gguf_writer_free(w);
    return s;
}
static ct_status out_convert(const char *p) { return ct_convert_to_gguf(CT_FIXTURE("tiny-hf"), p, 0); }

typedef struct {
    const char *name;
    output_fn fn;
} output_case;

static const output_case k_outputs[] = {
    {"ct_fs_write_atomic", out_atomic},   {"ct_atomic_file", out_atomic_file},
    {"ct_st_writer", out_st},             {"ct_gguf_writer", out_gguf},
    {"ct_convert_to_gguf", out_convert},
};

static void test_outputs_refuse_special_targets(void **state) {
    (void)state;
    alarm(300);
    const char *dir = ct_test_tmpdir();
    char p[4096];
    snprintf(p, sizeof p, "%s/out", dir);
    for (int k = 0; k < K_COUNT; k++) {
        for (size_t i = 0; i < sizeof k_outputs / sizeof *k_outputs; i++) {
            const output_case *c = &k_outputs[i];
            if (make_node((kind)k, p) != 0) {
                if (i == 0) print_message("note: cannot make a %s here (%s): skipped\n", kind_name[k], strerror(errno));
                continue;
            }
            int before = ct_test_count_entries(dir);
            struct stat b, a;
            assert_int_equal(lstat(p, &b), 0);
            ct_error_clear();
            ct_status s = c->fn(p);
            assert_int_equal(lstat(p, &a), 0);
            if (k == K_EMPTY) {
                /* an existing regular file is replaced */
                if (s != CT_OK) fail_msg("%s over an empty file: %s", c->name, ct_last_error());
                assert_true(S_ISREG(a.st_mode) && a.st_size > 0);
            } else {
                if (s == CT_OK) fail_msg("%s replaced a %s", c->name, kind_name[k]);
                if (!strstr(ct_last_error(), "refusing to replace"))
                    fail_msg("%s over a %s: message '%s'", c->name, kind_name[k], ct_last_error());
                /* the node is exactly as it was: same inode, type and device */
                assert_true(a.st_ino == b.st_ino && a.st_mode == b.st_mode && a.st_rdev == b.st_rdev);
                assert_int_equal(ct_test_count_entries(dir), before); /* no temp file left */
            }
            remove_node(p);
        }
    }
    ct_test_rmtree(dir);
    alarm(0);
}

/* A symbolic link to a regular file is refused too (the rename would replace
 * the link, not the file it names), and the file it names keeps its bytes. */
static void test_output_symlink_to_regular_file_refused(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char t[4096], l[4096];
    snprintf(t, sizeof t, "%s/target.txt", dir);
    snprintf(l, sizeof l, "%s/link.txt", dir);
    ct_test_write_file(t, "old", 3);
    assert_int_equal(symlink(t, l), 0);
    CT_ASSERT_STATUS(ct_fs_write_atomic(l, "new", 3), CT_ERR_IO);
    CT_ASSERT_ERROR_HAS("refusing to replace a symbolic link (target: regular file)");
    struct stat st;
    assert_int_equal(lstat(l, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    ct_test_expect_file_text(t, "old");
    assert_int_equal(ct_test_count_entries(dir), 2);
    /* while an input through a link is fine (Hub snapshots are links) */
    char *buf;
    size_t n;
    CT_ASSERT_OK(ct_fs_read_all(l, 100, &buf, &n));
    assert_int_equal(n, 3);
    free(buf);
    CT_ASSERT_STATUS(ct_fs_write_atomic("", "x", 1), CT_ERR_INVALID_ARG);
    ct_test_rmtree(dir);
}

/* The target turned into a FIFO while the file was being written: the check
 * just before the rename refuses it. */
static void test_output_replaced_during_write_refused(void **state) {
    (void)state;
    const char *dir = ct_test_tmpdir();
    char p[4096];
    snprintf(p, sizeof p, "%s/out", dir);
    ct_atomic_file f;
    CT_ASSERT_OK(ct_atomic_file_open(&f, p));
    CT_ASSERT_OK(ct_atomic_file_write(&f, "new", 3));
    assert_int_equal(mkfifo(p, 0644), 0);
    CT_ASSERT_STATUS(ct_atomic_file_commit(&f), CT_ERR_IO);
    CT_ASSERT_ERROR_HAS("refusing to replace a FIFO");
    ct_atomic_file_close(&f);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(ct_test_count_entries(dir), 1);
    ct_test_rmtree(dir);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inputs_refuse_special_files),
        cmocka_unit_test(test_model_dir_files_refuse_special_files),
        cmocka_unit_test(test_outputs_refuse_special_targets),
        cmocka_unit_test(test_output_symlink_to_regular_file_refused),
        cmocka_unit_test(test_output_replaced_during_write_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
