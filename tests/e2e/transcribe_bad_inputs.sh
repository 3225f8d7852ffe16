#!/usr/bin/env bash
# Bad input through the whole command (issue 11): truncated, NaN-sample and
# over-cap audio are per-file failures naming the file while the good file
# completes (exit 1, nothing written under a bad file's names, no
# temporaries); a model that is missing, has no tokenizer.json, is quantized
# or is an adapter, --device cuda without a GPU and --device mps are one
# clear error before any file is decoded (exit 1, no "[2/4]" stage).
set -euo pipefail
source "$(dirname "$0")/lib/product.sh"
fail() { echo "FAIL: $*"; exit 1; }
c="$tmp/c"
mkdir -p "$c"
cp "$CT_FIXTURES/audio/c1_en_us_3s.wav" "$c/good.wav"
head -c 40000 "$CT_FIXTURES/audio/c3_fr_ar_10s.wav" > "$c/truncated.wav"   # header claims 10 s
python3 - "$c/nan.wav" <<'PY'
import struct, sys
n = 16000
data = b"".join(struct.pack("<f", float("nan") if i == 8000 else 0.1) for i in range(n))
hdr = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 3, 1, 16000, 64000, 4, 32)
open(sys.argv[1], "wb").write(hdr + b"data" + struct.pack("<I", len(data)) + data)
PY
cp "$CT_FIXTURES/audio/c4_en_gb_30s.wav" "$c/long.wav"
run() { "$bin" "$@" --vad-weights "$weights" --max-new-tokens 60 --max-retry-tokens 114 --formats txt json; }

# 1.9 MB of PCM for the 30 s file against a 1 MB cap; the others fit
rc=0
run "$c" --model "$model" --audio-memory-gb 0.001 > "$tmp/out" 2>&1 || rc=$?
[ $rc = 1 ] || { cat "$tmp/out"; fail "bad audio: exit $rc"; }
grep -q "1/4 files finished" "$tmp/out" || { cat "$tmp/out"; fail "summary"; }
grep -q -- "- $c/truncated.wav: FormatError: " "$tmp/out" || { cat "$tmp/out"; fail "truncated not named"; }
grep -q -- "- $c/nan.wav: FormatError: .*\(NaN\|non-finite\|not finite\)" "$tmp/out" || { cat "$tmp/out"; fail "NaN not named"; }
grep -q -- "- $c/long.wav: LimitError: " "$tmp/out" || { cat "$tmp/out"; fail "over-cap not named"; }
[ -f "$c/good.txt" ] && [ -f "$c/good.json" ] || fail "the good file has no outputs"
for b in truncated nan long; do
  [ ! -e "$c/$b.txt" ] && [ ! -e "$c/$b.json" ] && [ ! -e "$c/.$b.cohere-transcribe.manifest.json" ] ||
    fail "outputs for $b"
done
[ "$(find "$c" -name '*.tmp' -o -name '*.bak' -o -name '*.jnl' | wc -l)" = 0 ] || fail "temporaries left"

# model and device problems: refused before any decoding
expect_refusal() { # want-substring, args...
  local want=$1; shift
  local rc=0
  run "$c/good.wav" --existing overwrite "$@" > "$tmp/r.out" 2> "$tmp/r.err" || rc=$?
  [ $rc = 1 ] || { cat "$tmp/r.out" "$tmp/r.err"; fail "$*: exit $rc, want 1"; }
  grep -q -- "$want" "$tmp/r.err" || { cat "$tmp/r.err"; fail "$*: message lacks '$want'"; }
  grep -q "Loading ASR" "$tmp/r.out" && { cat "$tmp/r.out"; fail "$*: decoding started"; }
  return 0
}
expect_refusal "no such local model directory" --model "$tmp/nothing/here"
mkdir -p "$tmp/notok" && cp "$model"/config.json "$model"/model.safetensors "$tmp/notok/"
expect_refusal "missing tokenizer.json" --model "$tmp/notok"
mkdir -p "$tmp/quant" && cp "$model"/* "$tmp/quant/"
python3 - "$tmp/quant/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_8bit": True}
json.dump(c, open(sys.argv[1], "w"))
PY
expect_refusal "quantiz" --model "$tmp/quant"
mkdir -p "$tmp/adapter" && echo '{"peft_type": "LORA"}' > "$tmp/adapter/adapter_config.json"
expect_refusal "adapters are not supported" --model "$tmp/adapter"
expect_refusal "adapters are not supported" --model "$model" --adapter "$tmp/adapter"
expect_refusal "mps" --model "$model" --device mps
if ! nvidia-smi -L > /dev/null 2>&1; then
  expect_refusal "--device cuda was requested, but CUDA is not available" --model "$model" --device cuda
fi
echo "bad inputs: ok"
