#!/usr/bin/env bash
# hub_vad.sh — Silero VAD weights resolve like models: a Hub repo hosting
# silero_vad.onnx (downloaded into the cache, then sha256-checked against the
# pinned v6.2 hash), a local file or folder, or $CT_VAD_WEIGHTS; a file with
# another hash is refused naming both hashes.
source "$(dirname "$0")/../hub/lib.sh"

REAL="${CT_TESTDATA:-}/silero/silero_vad.onnx"
mkdir -p "$WORK/fake_vad"
printf 'not the silero network' >"$WORK/fake_vad/silero_vad.onnx"
args=(--repo acme/fakevad="$WORK/fake_vad")
if [ -f "$REAL" ]; then
  mkdir -p "$WORK/vad"
  cp "$REAL" "$WORK/vad/silero_vad.onnx"
  args+=(--repo acme/silero="$WORK/vad")
fi
start_hub "${args[@]}"

expect_fail 1 "is not that of silero_vad.onnx v6.2" "$FETCH" --quiet --vad acme/fakevad
expect_fail 1 "is not that of silero_vad.onnx v6.2" "$FETCH" --quiet --vad "$WORK/fake_vad"
CT_VAD_WEIGHTS="$WORK/fake_vad/silero_vad.onnx" expect_fail 1 "v6.2" "$FETCH" --quiet --vad ""
expect_fail 1 "no such file, and not a Hub repo id" "$FETCH" --quiet --vad ./nothing.onnx
pass "wrong weights refused"

if [ -f "$REAL" ]; then
  p=$("$FETCH" --quiet --vad acme/silero)
  C=$(commit_of acme/silero)
  [ "$p" = "$HF_HUB_CACHE/models--acme--silero/snapshots/$C/silero_vad.onnx" ] || fail "vad path $p"
  cmp "$p" "$REAL" || fail "vad content"
  p=$("$FETCH" --quiet --vad "acme/silero@$C")
  cmp "$p" "$REAL" || fail "vad @commit"
  [ "$("$FETCH" --quiet --vad "$WORK/vad")" = "$(realpath "$WORK/vad/silero_vad.onnx")" ] || fail "vad folder"
  [ "$(CT_VAD_WEIGHTS="$REAL" "$FETCH" --quiet --vad "")" = "$(realpath "$REAL")" ] || fail "CT_VAD_WEIGHTS"
  pass "v6.2 weights from the Hub, a folder and CT_VAD_WEIGHTS"
else
  echo "note: $REAL absent (made by tests/setup/silero.sh); positive case skipped"
fi
echo "hub_vad: all passed"
