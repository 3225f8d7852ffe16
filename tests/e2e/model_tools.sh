#!/usr/bin/env bash
# model_tools.sh — cohere-transcribe-random-model and cohere-transcribe-convert
# end to end: a tiny model is written twice with one seed (byte-identical) and
# once with another (different), converted to GGUF and back (config,
# generation config and tokenizer byte-identical; weights equal, checked by
# the unit tests through the library), with f32 -> bf16 narrowing, and bad
# arguments or inputs fail with exit status 1/2 and a message. A tokenizer the
# engine would refuse (empty, too few pieces, no <|endoftext|>) makes both
# `convert` and `fetch --check` fail and leaves no file (issue 10 item 6); a
# CrispASR-style Q8_0 GGUF converts to a directory (dequantised) and back to
# Q8_0 with --dtype q8_0, which a directory cannot take (issue 16).
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

# vocabularies the engine refuses: convert writes nothing, fetch --check fails
FE="$BIN/cohere-transcribe-fetch"
"$RM" --tiny --dtype f32 --seed 4 --vocab 495 --out "$W/v495" >/dev/null || fail "random-model v495"
"$RM" --tiny --dtype f32 --seed 4 --vocab 400 --out "$W/v400" >/dev/null || fail "random-model v400"
"$FE" --offline --quiet --check "$W/v495" >"$W/check.txt" || fail "fetch --check on a good model"
grep -q "^tokenizer: 495 pieces$" "$W/check.txt" || fail "no tokenizer line: $(cat "$W/check.txt")"
"$FE" --offline --quiet --check "$W/a.gguf" >"$W/check.txt" || fail "fetch --check on a good GGUF"
grep -q "^tokenizer: [1-9][0-9]* pieces$" "$W/check.txt" || fail "no tokenizer line for the GGUF"
bad_tok() { # name, then the text of its tokenizer.json on stdin
  rm -rf "$W/$1"; cp -r "$W/v495" "$W/$1"; cat > "$W/$1/tokenizer.json"
}
bad_tok short < "$W/v400/tokenizer.json"
sed 's/<|endoftext|>/<|endoftexx|>/g' "$W/v495/tokenizer.json" | bad_tok noeos
echo '{"model": {"type": "Unigram", "vocab": []}, "added_tokens": []}' | bad_tok empty
for case in "short:tokenizer has 400 pieces, the model 495" "noeos:missing prompt token <|endoftext|>" \
            "empty:model.vocab must be a non-empty array"; do
  d=${case%%:*}; want=${case#*:}
  out=$("$CV" "$W/$d" "$W/$d.gguf" 2>&1); rc=$?
  [ $rc = 1 ] && echo "$out" | grep -qF "$want" || fail "$d: convert rc $rc: $out"
  [ -e "$W/$d.gguf" ] && fail "$d: a refused conversion left a file"
  out=$("$FE" --offline --quiet --check "$W/$d" 2>&1); rc=$?
  [ $rc = 1 ] && echo "$out" | grep -qF "$want" || fail "$d: fetch --check rc $rc: $out"
done
FIX=${CT_FIXTURES:-$CT_SOURCE/tests/fixtures}
out=$("$CV" "$FIX/gguf/crisp-tiny-q8_0.gguf" "$W/q8" 2>&1) || fail "q8_0 -> directory: $out"
[ -f "$W/q8/model.safetensors" ] || fail "q8_0: no model.safetensors"
out=$("$CV" --dtype q8_0 "$W/q8" "$W/q8.gguf" 2>&1) || fail "directory -> q8_0: $out"
out=$("$CV" --dtype q8_0 "$W/q8.gguf" "$W/q8b" 2>&1); rc=$?
[ $rc = 1 ] && echo "$out" | grep -qF "safetensors has no Q8_0" || fail "q8_0 -> directory as q8_0: rc $rc: $out"
[ -e "$W/q8b" ] && fail "q8_0: a refused conversion left a directory"
echo "PASS: model tools"
