/* cohere-transcribe-convert — convert a Cohere Transcribe checkpoint between
 * a safetensors model directory (either layout) and a GGUF file with
 * CrispASR's tensor names and metadata keys (docs/GGUF.md). The direction
 * follows the input: a directory becomes OUT.gguf, a .gguf becomes OUT/.
 */
#include <stdio.h>
#include <string.h>

#include "cohere_transcribe.h"
#include "core/fs.h"
#include "model/convert.h"

static void usage(FILE *f) {
    fprintf(f, "usage: cohere-transcribe-convert [--dtype keep|f32|f16|bf16|q8_0] IN OUT\n"
               "  IN a model directory -> OUT a .gguf file\n"
               "  IN a .gguf file      -> OUT a directory in the save_pretrained layout\n"
               "  --dtype   dtype of the matrices, conv kernels and tables (default: keep;\n"
               "            from GGUF: every float tensor, default the token embedding's\n"
               "            dtype). Into GGUF, 1-D tensors and pos_bias_u/v are always f32,\n"
               "            as CrispASR reads them (docs/GGUF.md); q8_0 (into GGUF only):\n"
               "            the 2-D matrices in ggml's Q8_0 blocks, the other narrowed tensors f16\n"
               "  The tokenizer.json must pass the engine's checks; nothing is written\n"
               "  otherwise.\n");
}

int main(int argc, char **argv) {
    int dtype = CT_CONVERT_KEEP_DTYPE;
    const char *pos[2] = {0};
    int np = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
            const char *d = argv[++i];
            if (!strcmp(d, "keep")) dtype = CT_CONVERT_KEEP_DTYPE;
            else if (!strcmp(d, "f32") || !strcmp(d, "fp32")) dtype = CT_DTYPE_F32;
            else if (!strcmp(d, "f16") || !strcmp(d, "fp16")) dtype = CT_DTYPE_F16;
            else if (!strcmp(d, "bf16")) dtype = CT_DTYPE_BF16;
            else if (!strcmp(d, "q8_0") || !strcmp(d, "Q8_0")) dtype = CT_DTYPE_Q8_0;
            else {
                fprintf(stderr, "cohere-transcribe-convert: --dtype: '%s' is not keep, f32, f16, bf16 or q8_0\n", d);
                return 2;
            }
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "cohere-transcribe-convert: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (np < 2) {
            pos[np++] = argv[i];
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (np != 2) {
        usage(stderr);
        return 2;
    }
    ct_status s;
    if (ct_fs_is_dir(pos[0])) {
        /* refuse an empty, device, FIFO, directory or symlink OUT before the
         * conversion, not after it */
        if (ct_fs_check_output(pos[1]) != CT_OK) {
            fprintf(stderr, "cohere-transcribe-convert: %s\n", ct_last_error());
            return pos[1][0] ? 1 : 2;
        }
        s = ct_convert_to_gguf(pos[0], pos[1], dtype);
    } else {
        size_t n = strlen(pos[0]);
        if (n < 5 || strcmp(pos[0] + n - 5, ".gguf") != 0) {
            fprintf(stderr, "cohere-transcribe-convert: %s: neither a model directory nor a .gguf file\n", pos[0]);
            return 2;
        }
        if (!pos[1][0]) {
            fprintf(stderr, "cohere-transcribe-convert: OUT is empty\n");
            return 2;
        }
        s = ct_convert_from_gguf(pos[0], pos[1], dtype);
    }
    if (s != CT_OK) {
        fprintf(stderr, "cohere-transcribe-convert: %s\n", ct_last_error());
        return 1;
    }
    printf("wrote %s\n", pos[1]);
    return 0;
}
