#!/usr/bin/env bash
# The Silero VAD v6.2 weights for the tests, in $1/silero/silero_vad.onnx
# (scripts/fetch-silero: PyPI silero-vad==6.2.3, sha256 checked). Idempotent.
# The weights are never committed; tests that need them read CT_TESTDATA.
set -euo pipefail
out=${1:?usage: silero.sh TESTDATA_DIR}
exec "$CT_SOURCE/scripts/fetch-silero" "$out/silero/silero_vad.onnx"
