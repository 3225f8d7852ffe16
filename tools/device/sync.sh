#!/bin/bash
# sync.sh — copy this worktree's files (tracked + untracked, not ignored) into
# an ignored folder of the session checkout that the device tool sends
# (/work/main/build-cuda-carry, matched by main's /build-*/ ignore rule), so a
# device call can `carry` it and run `cd build-cuda-carry && bash tools/device/run.sh`.
set -euo pipefail
src=$(git -C "$(dirname "$0")/../.." rev-parse --show-toplevel)
dst=${1:-/work/main/build-cuda-carry}
mkdir -p "$dst"
rm -rf "$dst" && mkdir -p "$dst"
(cd "$src" && git ls-files --cached --others --exclude-standard -z | xargs -0 cp --parents -t "$dst")
du -sh "$dst"
# cmocka .debs for the device build (ignored here, fetched with apt-get download)
if [ -d "$src/build-devdeps" ]; then mkdir -p "$dst/build-devdeps" && cp "$src"/build-devdeps/*.deb "$dst/build-devdeps/"; fi
# the product benchmark's seed and Silero weights (tools/device/prepare_product_bench.sh)
if [ -d "$src/build-pbench" ]; then cp -r "$src/build-pbench" "$dst/"; fi
