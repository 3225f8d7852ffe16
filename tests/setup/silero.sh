#!/usr/bin/env bash
# Fetches silero_vad.onnx (the v6.2 weights) from the PyPI package
# silero-vad==6.2.3 into $1/silero/silero_vad.onnx and checks its sha256.
# Idempotent: does nothing when the file is already there with the right hash.
# The weights are never committed; tests that need them read CT_TESTDATA.
set -euo pipefail
out=${1:?usage: silero.sh TESTDATA_DIR}
want=1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3
dir="$out/silero"
dst="$dir/silero_vad.onnx"
if [ -f "$dst" ] && [ "$(sha256sum "$dst" | cut -d' ' -f1)" = "$want" ]; then
  exit 0
fi
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=${PYTHON:-python3}
"$py" -m pip download --quiet --no-deps --only-binary=:all: silero-vad==6.2.3 -d "$tmp"
whl=$(ls "$tmp"/silero_vad-6.2.3-*.whl | head -n1)
"$py" - "$whl" "$tmp/silero_vad.onnx" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    with z.open("silero_vad/data/silero_vad.onnx") as src, open(sys.argv[2], "wb") as dst:
        dst.write(src.read())
PY
got=$(sha256sum "$tmp/silero_vad.onnx" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
  echo "silero.sh: silero_vad.onnx sha256 $got, expected $want" >&2
  exit 1
fi
mv "$tmp/silero_vad.onnx" "$dst"
