#!/usr/bin/env bash
# hub_inspect.sh — `cohere-transcribe-inspect --model owner/name` end to end
# against the fake Hub serving tests/fixtures/tiny-hf as a gated repo: the
# run through the Hub gives byte-identical outputs (texts, tokens, features,
# encoder outputs, logits) to the run on the local folder; --model-revision
# with the commit and an offline rerun give the same; without a token it
# fails with the gated message and writes nothing.
source "$(dirname "$0")/../hub/lib.sh"

FIX=${CT_FIXTURES:-$CT_SOURCE/tests/fixtures}
INSPECT="$CT_BIN/cohere-transcribe-inspect"
[ -x "$INSPECT" ] || fail "$INSPECT not built"
cp "$FIX/audio/c1_en_us_3s.wav" "$FIX/audio/c0_tones_1s.wav" "$WORK/"
cd "$WORK"
start_hub --token tok --repo acme/tiny-hf="$FIX/tiny-hf",gated
C=$(commit_of acme/tiny-hf)

"$INSPECT" --model "$FIX/tiny-hf" --out local.safetensors c1_en_us_3s.wav c0_tones_1s.wav >local.txt 2>/dev/null ||
  fail "inspect on the local folder"
[ "$(wc -l <local.txt)" = 2 ] || fail "want 2 JSON lines: $(cat local.txt)"

expect_fail 1 "the model is gated: accept its terms on the Hub and set HF_TOKEN" \
  "$INSPECT" --model acme/tiny-hf --out hub.safetensors c1_en_us_3s.wav c0_tones_1s.wav
[ ! -e hub.safetensors ] || fail "output written despite the failure"

export HF_TOKEN=tok
"$INSPECT" --model acme/tiny-hf --out hub.safetensors c1_en_us_3s.wav c0_tones_1s.wav >hub.txt 2>"$WORK/err" ||
  { cat "$WORK/err"; fail "inspect --model acme/tiny-hf"; }
cmp local.txt hub.txt || fail "texts differ between the local folder and the Hub snapshot"
cmp local.safetensors hub.safetensors || fail "outputs differ between the local folder and the Hub snapshot"
[ -L "$HF_HUB_CACHE/models--acme--tiny-hf/snapshots/$C/model.safetensors" ] || fail "not run from the cache"
pass "inspect --model acme/tiny-hf == inspect --model tests/fixtures/tiny-hf"

"$INSPECT" --model acme/tiny-hf --model-revision "$C" --out rev.safetensors c1_en_us_3s.wav c0_tones_1s.wav \
  >rev.txt 2>/dev/null || fail "--model-revision commit"
cmp local.safetensors rev.safetensors || fail "--model-revision outputs differ"
stop_hub
unset HF_TOKEN
HF_HUB_OFFLINE=1 "$INSPECT" --model acme/tiny-hf --out off.safetensors c1_en_us_3s.wav c0_tones_1s.wav \
  >off.txt 2>/dev/null || fail "offline inspect"
cmp local.safetensors off.safetensors || fail "offline outputs differ"
pass "--model-revision and offline give the same outputs"
expect_fail 1 "cannot be used with a local model directory" \
  "$INSPECT" --model "$FIX/tiny-hf" --model-revision main --out x.safetensors c0_tones_1s.wav
pass "--model-revision with a local folder refused"
echo "hub_inspect: all passed"
