#!/usr/bin/env bash
# hub_model.sh — the fixture checkpoints (tests/fixtures/tiny-hf, tiny-nemo)
# served by the fake Hub as gated repos: resolving them downloads every file
# the loader needs, and the library's checkpoint loader opens the snapshot
# with the same tensors and parameter count as the local folder; then the
# same offline from the cache.
source "$(dirname "$0")/../hub/lib.sh"

FIX=${CT_FIXTURES:-$CT_SOURCE/tests/fixtures}
start_hub --token tok --repo acme/tiny-hf="$FIX/tiny-hf",gated --repo acme/tiny-nemo="$FIX/tiny-nemo",gated
export HF_TOKEN=tok
for m in tiny-hf tiny-nemo; do
  "$FETCH" --quiet --check "$FIX/$m" >"$WORK/local.txt" || fail "$m: local check"
  "$FETCH" --quiet --check "acme/$m" >"$WORK/hub.txt" || fail "$m: hub check"
  dir=$(head -1 "$WORK/hub.txt")
  [ "$dir" = "$HF_HUB_CACHE/models--acme--$m/snapshots/$(commit_of acme/$m)" ] || fail "$m: dir $dir"
  for f in config.json generation_config.json preprocessor_config.json tokenizer.json model.safetensors; do
    cmp "$dir/$f" "$FIX/$m/$f" || fail "$m: $f differs"
  done
  [ "$(tail -1 "$WORK/local.txt")" = "$(tail -1 "$WORK/hub.txt")" ] || fail "$m: loader differs: $(tail -1 "$WORK/hub.txt")"
  grep -q "^checkpoint: [1-9][0-9]* tensors, [1-9][0-9]* parameters$" "$WORK/hub.txt" || fail "$m: no checkpoint line"
  HF_HUB_OFFLINE=1 "$FETCH" --quiet --check "acme/$m" >"$WORK/off.txt" || fail "$m: offline"
  cmp "$WORK/hub.txt" "$WORK/off.txt" || fail "$m: offline result differs"
  pass "$m: $(tail -1 "$WORK/hub.txt") via the fake Hub, online and offline"
done
[ "$(stats auth_seen_cdn)" = 0 ] || fail "token reached the second origin"
echo "hub_model: all passed"
