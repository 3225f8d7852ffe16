/* cohere-transcribe-random-model — write a random-weight Cohere ASR
 * checkpoint (default: the full 2.07 B model, bf16) in the layout
 * transformers' save_pretrained writes, for benchmarks and parity checks.
 * Deterministic for a seed; streams one tensor at a time.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cohere_transcribe.h"
#include "model/random_model.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: cohere-transcribe-random-model --out DIR [options]\n"
            "  --out DIR               output directory (created)\n"
            "  --dtype bf16|f32|f16    weight dtype (default bf16)\n"
            "  --seed N                random seed (default 0)\n"
            "  --layout hf|nemo        save_pretrained (default) or Hub-release layout\n"
            "  --tiny                  the fixtures' tiny sizes (2 layers, d 64, vocab 512)\n"
            "  --enc-layers N --enc-d N --enc-heads N --enc-ff N --conv-kernel N\n"
            "  --sub-channels N --mels N\n"
            "  --dec-layers N --dec-d N --dec-heads N --dec-ff N --positions N --vocab N\n"
            "  --head-scale X          multiply the output head weight (default 1)\n"
            "  --bf16-exact            round f32 values to bf16-representable ones\n"
            "  --no-tokenizer          do not write tokenizer.json\n"
            "defaults: the full model (48×1280 encoder, 8×1024 decoder, vocab 16384)\n");
}

static int parse_int(const char *opt, const char *s, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v <= 0 || v > (1 << 20)) {
        fprintf(stderr, "cohere-transcribe-random-model: %s: '%s' is not a size in 1..1048576\n", opt, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv) {
    ct_random_model_opts o = ct_random_model_default_options();
    const char *out = NULL;
    enum { O_DTYPE = 256, O_SEED, O_LAYOUT, O_TINY, O_EL, O_ED, O_EH, O_EF, O_K, O_SC, O_M, O_DL, O_DD, O_DH, O_DF,
           O_P, O_V, O_HS, O_BX, O_NT, O_OUT, O_HELP };
    static const struct option lo[] = {
        {"out", 1, 0, O_OUT}, {"dtype", 1, 0, O_DTYPE}, {"seed", 1, 0, O_SEED}, {"layout", 1, 0, O_LAYOUT},
        {"tiny", 0, 0, O_TINY}, {"enc-layers", 1, 0, O_EL}, {"enc-d", 1, 0, O_ED}, {"enc-heads", 1, 0, O_EH},
        {"enc-ff", 1, 0, O_EF}, {"conv-kernel", 1, 0, O_K}, {"sub-channels", 1, 0, O_SC}, {"mels", 1, 0, O_M},
        {"dec-layers", 1, 0, O_DL}, {"dec-d", 1, 0, O_DD}, {"dec-heads", 1, 0, O_DH}, {"dec-ff", 1, 0, O_DF},
        {"positions", 1, 0, O_P}, {"vocab", 1, 0, O_V}, {"head-scale", 1, 0, O_HS}, {"bf16-exact", 0, 0, O_BX},
        {"no-tokenizer", 0, 0, O_NT}, {"help", 0, 0, O_HELP}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case O_OUT: out = optarg; break;
        case O_DTYPE:
            if (!strcmp(optarg, "bf16")) o.dtype = CT_DTYPE_BF16;
            else if (!strcmp(optarg, "f32") || !strcmp(optarg, "fp32")) o.dtype = CT_DTYPE_F32;
            else if (!strcmp(optarg, "f16") || !strcmp(optarg, "fp16")) o.dtype = CT_DTYPE_F16;
            else {
                fprintf(stderr, "cohere-transcribe-random-model: --dtype: '%s' is not bf16, f32 or f16\n", optarg);
                return 2;
            }
            break;
        case O_SEED: {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (errno || *end || end == optarg) {
                fprintf(stderr, "cohere-transcribe-random-model: --seed: '%s' is not a number\n", optarg);
                return 2;
            }
            o.seed = v;
            break;
        }
        case O_LAYOUT:
            if (!strcmp(optarg, "hf") || !strcmp(optarg, "transformers")) o.layout = CT_CONFIG_TRANSFORMERS;
            else if (!strcmp(optarg, "nemo")) o.layout = CT_CONFIG_NEMO;
            else {
                fprintf(stderr, "cohere-transcribe-random-model: --layout: '%s' is not hf or nemo\n", optarg);
                return 2;
            }
            break;
        case O_TINY:
            o.enc_layers = 2, o.enc_d_model = 64, o.enc_heads = 4, o.enc_ff = 256, o.subsampling_channels = 16;
            o.dec_layers = 2, o.dec_d_model = 64, o.dec_heads = 4, o.dec_ff = 128, o.dec_max_positions = 128;
            o.vocab_size = 512;
            break;
        case O_EL: bad = parse_int("--enc-layers", optarg, &o.enc_layers); break;
        case O_ED: bad = parse_int("--enc-d", optarg, &o.enc_d_model); break;
        case O_EH: bad = parse_int("--enc-heads", optarg, &o.enc_heads); break;
        case O_EF: bad = parse_int("--enc-ff", optarg, &o.enc_ff); break;
        case O_K: bad = parse_int("--conv-kernel", optarg, &o.enc_conv_kernel); break;
        case O_SC: bad = parse_int("--sub-channels", optarg, &o.subsampling_channels); break;
        case O_M: bad = parse_int("--mels", optarg, &o.n_mels); break;
        case O_DL: bad = parse_int("--dec-layers", optarg, &o.dec_layers); break;
        case O_DD: bad = parse_int("--dec-d", optarg, &o.dec_d_model); break;
        case O_DH: bad = parse_int("--dec-heads", optarg, &o.dec_heads); break;
        case O_DF: bad = parse_int("--dec-ff", optarg, &o.dec_ff); break;
        case O_P: bad = parse_int("--positions", optarg, &o.dec_max_positions); break;
        case O_V: bad = parse_int("--vocab", optarg, &o.vocab_size); break;
        case O_HS: {
            char *end;
            o.head_scale = strtof(optarg, &end);
            if (*end || end == optarg || !(o.head_scale > 0 && o.head_scale < 1e6f)) {
                fprintf(stderr, "cohere-transcribe-random-model: --head-scale: '%s' is not a positive number\n", optarg);
                return 2;
            }
            break;
        }
        case O_BX: o.bf16_exact = 1; break;
        case O_NT: o.write_tokenizer = 0; break;
        case O_HELP: usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bad) return 2;
    }
    if (!out || optind != argc) {
        usage(stderr);
        return 2;
    }
    ct_status s = ct_random_model_write(&o, out);
    if (s != CT_OK) {
        fprintf(stderr, "cohere-transcribe-random-model: %s\n", ct_last_error());
        return 1;
    }
    printf("wrote %s: %lld parameters, %s\n", out, (long long)ct_random_model_param_count(&o),
           o.dtype == CT_DTYPE_F32 ? "f32" : o.dtype == CT_DTYPE_BF16 ? "bf16" : "f16");
    return 0;
}
