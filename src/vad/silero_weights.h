/* silero_weights.h — the one Silero VAD weight file the product accepts:
 * silero_vad.onnx as shipped by silero-vad 6.2.x (PRODUCT.md §5, "v6.2").
 * Shared by the VAD module (which parses it) and model/resolve.c (which finds
 * and checksums it); constants only. */
#ifndef CT_VAD_SILERO_WEIGHTS_H
#define CT_VAD_SILERO_WEIGHTS_H

#define CT_SILERO_WEIGHTS_FILE "silero_vad.onnx"
/* sha256 and size of silero_vad/data/silero_vad.onnx in the silero-vad 6.2.3 wheel */
#define CT_SILERO_WEIGHTS_SHA256 "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"
#define CT_SILERO_WEIGHTS_SIZE 2327524
/* environment variable naming a local file, folder or Hub repo holding it */
#define CT_SILERO_WEIGHTS_ENV "CT_VAD_WEIGHTS"

#endif
