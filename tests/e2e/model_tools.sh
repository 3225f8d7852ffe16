#!/usr/bin/env bash
# model_tools.sh — cohere-transcribe-random-model and cohere-transcribe-convert
# end to end: a tiny model is written twice with one seed (byte-identical) and
# once with another (different), converted to GGUF and back (config,
# generation config and tokenizer byte-identical; weights equal, checked by
# the unit tests through the library), with f32 -> bf16 narrowing, and bad
# arguments or inputs fail with exit status 1/2 and a message.
set -u
BIN=${CT_BIN:?run through ctest}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

RM="$BIN/cohere-transcribe-random-model"
CV="$BIN/cohere-transcribe-convert"
"$RM" --tiny --dtype f32 --seed 4 --out "$W/a" >/dev/null || fail "random-model a"
"$RM" --tiny --dtype f32 --seed 4 --out "$W/b" >/dev/null || fail "random-model b"
"$RM" --tiny --dtype f32 --seed 5 --out "$W/c" >/dev/null || fail "random-model c"
cmp -s "$W/a/model.safetensors" "$W/b/model.safetensors" || fail "same seed, different weights"
cmp -s "$W/a/model.safetensors" "$W/c/model.safetensors" && fail "different seeds, same weights"
for f in config.json generation_config.json preprocessor_config.json tokenizer.json; do
  [ -s "$W/a/$f" ] || fail "missing $f"
done
grep -q '"decoder_start_token_id": 322' "$W/a/generation_config.json" || fail "decoder start is not the id of ▁"

"$CV" "$W/a" "$W/a.gguf" >/dev/null || fail "convert to gguf"
head -c 4 "$W/a.gguf" | grep -q GGUF || fail "no GGUF magic"
"$CV" "$W/a.gguf" "$W/back" >/dev/null || fail "convert back"
for f in config.json generation_config.json tokenizer.json; do
  cmp -s "$W/a/$f" "$W/back/$f" || fail "$f changed in the round trip"
done
"$CV" --dtype bf16 "$W/a" "$W/a16.gguf" >/dev/null || fail "convert to bf16 gguf"
s32=$(stat -c %s "$W/a.gguf"); s16=$(stat -c %s "$W/a16.gguf")
[ "$s16" -lt "$s32" ] || fail "bf16 gguf ($s16) not smaller than f32 ($s32)"

# refusals
out=$("$RM" --tiny --out "$W/x" --enc-heads 7 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "d % heads" || fail "bad heads: rc $rc: $out"
out=$("$RM" --out "$W/x" --dtype q4 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "is not bf16, f32 or f16" || fail "bad dtype: rc $rc: $out"
out=$("$RM" --tiny --vocab 100 --out "$W/x" 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "below the" || fail "small vocab: rc $rc: $out"
out=$("$CV" "$W/nothing" "$W/y.gguf" 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q "neither a model directory" || fail "missing input: rc $rc: $out"
printf 'GGUF\003\0\0\0' > "$W/trunc.gguf"
out=$("$CV" "$W/trunc.gguf" "$W/z" 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "trunc.gguf: truncated" || fail "truncated gguf: rc $rc: $out"
rm "$W/a/config.json"
out=$("$CV" "$W/a" "$W/y.gguf" 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "config.json" || fail "no config: rc $rc: $out"
[ -e "$W/y.gguf" ] && fail "a failed conversion left a file"
echo "PASS: model tools"
