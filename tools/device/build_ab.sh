#!/usr/bin/env bash
# build_ab.sh OLD [OUT] — on the device, from the tree root: a second
# cohere-transcribe for an A/B in the same call (product_bench.sh AB_BIN).
# OLD holds the other version's files at their tree paths (made here with
#   git diff --name-only BASE | xargs git archive BASE | tar -x -C OLD
# or git show BASE:path for each changed file); OLD/.deleted lists paths
# that version lacks. The tree is copied to a scratch folder (build outputs
# left out), OLD laid over it, and built like product_bench.sh's main build
# into OUT (default /tmp/ab-build); prints the binary's path last.
set -euo pipefail
old=$1
out=${2:-/tmp/ab-build}
src=${out}-tree
rm -rf "$src" && mkdir -p "$src"
tar -c --exclude='./build*' --exclude='./.git' . | tar -x -C "$src"
cp -a "$old/." "$src/"
if [ -f "$old/.deleted" ]; then
  while read -r p; do [ -n "$p" ] && rm -f "$src/$p"; done < "$old/.deleted"
  rm -f "$src/.deleted"
fi
. tools/device/devdeps-env.sh
cmake -S "$src" -B "$out" -DCMAKE_BUILD_TYPE=Release -DCT_CUDA=ON -DCT_FFMPEG=OFF \
  -DCMAKE_EXE_LINKER_FLAGS="$DEVDEPS_LDFLAGS" > "$out.cmake.log" 2>&1 || { tail -40 "$out.cmake.log"; exit 1; }
cmake --build "$out" -j "$(nproc)" --target cohere-transcribe > "$out.build.log" 2>&1 ||
  { grep -E 'error|Error' "$out.build.log" | head -30; exit 1; }
echo "$out/bin/cohere-transcribe"
