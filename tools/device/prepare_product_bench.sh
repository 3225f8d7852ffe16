#!/usr/bin/env bash
# prepare_product_bench.sh [DIR] — here, before the device call: what
# tools/device/product_bench.sh needs and the device cannot make, in DIR
# (default build-pbench/, ignored; carry it with build-devdeps/): the corpus
# seed (tools/device/make_corpus_seed.sh: espeak-ng, 1.5 MB) and the Silero
# weights (scripts/fetch-silero: PyPI, 2.3 MB; the device reaches nothing).
# The device's share of the 64 MiB a call carries: these ~4 MB, build-devdeps/
# (~27 MB, tools/device/fetch-devdeps.sh) and the tracked tree.
set -euo pipefail
root=$(git -C "$(dirname "$0")/../.." rev-parse --show-toplevel)
dir=${1:-$root/build-pbench}
mkdir -p "$dir"
[ -n "$(ls "$dir"/seed/*.opus 2>/dev/null)" ] || bash "$root/tools/device/make_corpus_seed.sh" "$dir/seed"
bash "$root/scripts/fetch-silero" "$dir/silero_vad.onnx"
du -sh "$dir"
