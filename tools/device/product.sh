#!/bin/bash
# product.sh — the product on the GPU machine, from the CMake build users build:
# unpacks the Debian 12 -dev packages carried in build-devdeps/
# (tools/device/fetch-devdeps.sh) under /tmp/devdeps, points pkg-config and
# the loader at them, builds cohere-transcribe with CUDA and without FFmpeg
# (the image has no FFmpeg libraries: libsndfile decodes WAV/FLAC), then runs
# the fixture corpus through the same pipeline on --device cpu and --device
# cuda and compares the txt outputs. Results go to $OUT (device call) or
# build-gpu/product/.
#   bash tools/device/product.sh            (on the device, from the tree root)
set -euo pipefail
OUTDIR=${OUT:-build-gpu/product}
mkdir -p "$OUTDIR"
. tools/device/devdeps-env.sh
CUDA=${CT_CUDA:-ON}
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DCT_CUDA=$CUDA -DCT_FFMPEG=OFF \
  -DCMAKE_EXE_LINKER_FLAGS="$DEVDEPS_LDFLAGS" > "$OUTDIR/cmake.log" 2>&1 ||
  { tail -40 "$OUTDIR/cmake.log"; exit 1; }
t0=$(date +%s)
cmake --build build-gpu -j "$(nproc)" --target cohere-transcribe > "$OUTDIR/build.log" 2>&1 ||
  { grep -E 'error|Error' "$OUTDIR/build.log" | head -30; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"
BIN=build-gpu/bin/cohere-transcribe
W=${SILERO:-build/share/cohere-transcribe/silero_vad.onnx}
C=/tmp/ct-corpus
rm -rf "$C" && mkdir -p "$C"
cp tests/fixtures/audio/*.wav tests/fixtures/vad/speech_pauses.flac tests/fixtures/golden/audio/*.flac "$C/"
for dev in cpu ${DEVICES:-cuda}; do
  rm -rf "/tmp/out-$dev"
  /usr/bin/time -v "$BIN" "$C" --model tests/fixtures/tiny-product --device "$dev" --vad-weights "$W" \
    --output-dir "/tmp/out-$dev" --max-new-tokens 60 --max-retry-tokens 114 --formats txt srt vtt json \
    --profile-json "/tmp/out-$dev/profile.json" > "$OUTDIR/run-$dev.log" 2>&1 || echo "run $dev: exit $?"
  grep -E 'files finished|Failures|- /|error' "$OUTDIR/run-$dev.log" | head -12
done
# CPU vs CUDA, file by file: identical txt, or where they part
for f in /tmp/out-cpu/*.txt; do
  g=/tmp/out-cuda/$(basename "$f")
  if cmp -s "$f" "$g"; then echo "same   $(basename "$f")"; else echo "DIFFER $(basename "$f")"; fi
done | tee "$OUTDIR/compare.txt"
tar czf "$OUTDIR/outputs.tgz" -C /tmp out-cpu $(for dev in ${DEVICES:-cuda}; do echo "out-$dev"; done)
