/* gguf_checkpoint.c — opening a GGUF file as a checkpoint (not written yet:
 * refuses with CT_ERR_UNSUPPORTED). */
#include "model/checkpoint_internal.h"

ct_status ct_checkpoint_open_gguf(const char *path, ct_checkpoint **out) {
    *out = NULL;
    return ct_fail(CT_ERR_UNSUPPORTED, "%s: GGUF checkpoints are not supported yet", path);
}
