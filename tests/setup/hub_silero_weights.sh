#!/usr/bin/env bash
# hub_silero_weights.sh — silero_vad.onnx v6.2 from the silero-vad 6.2.3 wheel
# on PyPI into $1/silero/ (for the VAD weight checksum test). Idempotent;
# without network access it says so and leaves nothing (the test then skips
# only its positive case).
set -euo pipefail
out=$1/silero
want=1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3
if [ -f "$out/silero_vad.onnx" ] && [ "$(sha256sum "$out/silero_vad.onnx" | cut -d' ' -f1)" = "$want" ]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! timeout 300 python3 -m pip download --quiet --no-deps --only-binary=:all: \
    silero-vad==6.2.3 -d "$tmp" >/dev/null 2>&1; then
  echo "hub_silero_weights: cannot download silero-vad 6.2.3 from PyPI; skipping"
  exit 0
fi
mkdir -p "$out"
python3 - "$tmp" "$out" <<'PY'
import glob, sys, zipfile
whl = glob.glob(sys.argv[1] + "/silero_vad-6.2.3-*.whl")[0]
with zipfile.ZipFile(whl) as z:
    data = z.read("silero_vad/data/silero_vad.onnx")
open(sys.argv[2] + "/silero_vad.onnx.tmp", "wb").write(data)
PY
got=$(sha256sum "$out/silero_vad.onnx.tmp" | cut -d' ' -f1)
[ "$got" = "$want" ] || { echo "hub_silero_weights: sha256 $got, want $want" >&2; exit 1; }
mv "$out/silero_vad.onnx.tmp" "$out/silero_vad.onnx"
