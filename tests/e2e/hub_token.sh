#!/usr/bin/env bash
# hub_token.sh — gated repos: 401 without a token and 403 with a wrong one
# give the "gated" message; HF_TOKEN and the $HF_HOME/token file both work;
# the token reaches the Hub origin but never the file server a redirect leads
# to (the fake Hub's second origin records any Authorization header it sees,
# and we first prove that this detector fires). The default model resolves to
# its pinned commit through the same path.
source "$(dirname "$0")/../hub/lib.sh"

make_repo "$WORK/repo" 250000
make_repo "$WORK/pinned" 120000
PINNED=0a8193caa4f3f92131471ab08824e488141cb392
start_hub --token secret-token --repo acme/gated="$WORK/repo",gated \
  --repo CohereLabs/cohere-transcribe-arabic-07-2026="$WORK/pinned",gated,commit=$PINNED
C=$(commit_of acme/gated)

# the detector on the second origin works (else the checks below prove nothing)
curl -s -o /dev/null -H "Authorization: Bearer x" "$CDN/lfs/0000" || true
[ -s "$WORK/state/violations.log" ] || fail "the second origin does not detect Authorization headers"
[ "$(stats auth_seen_cdn)" = 1 ] || fail "detector count"
rm -f "$WORK/state/violations.log"
ctl reset
pass "second-origin Authorization detector is live"

expect_fail 1 "the model is gated: accept its terms on the Hub and set HF_TOKEN" \
  "$FETCH" --quiet acme/gated
grep -q "HTTP 401" "$WORK/err" || fail "401 expected: $(cat "$WORK/err")"
HF_TOKEN=wrong expect_fail 1 "the model is gated: accept its terms on the Hub and set HF_TOKEN" \
  "$FETCH" --quiet acme/gated
grep -q "HTTP 403" "$WORK/err" || fail "403 expected: $(cat "$WORK/err")"
[ ! -e "$HF_HUB_CACHE/models--acme--gated/snapshots/$C/config.json" ] || fail "nothing may be cached"
pass "401/403 → gated message"

dir=$(HF_TOKEN=secret-token "$FETCH" --quiet acme/gated)
cmp "$dir/model.safetensors" "$WORK/repo/model.safetensors" || fail "gated download content"
[ "$(stats auth_seen_cdn)" = 0 ] || fail "token reached the second origin"
[ "$(stats auth_seen_hub)" -gt 0 ] || fail "token never reached the Hub origin"
[ "$(stat_of cdn_full_gets model.safetensors)" = 1 ] || fail "LFS file not served by the second origin"
pass "HF_TOKEN: downloads, token only to the Hub origin"

# the token file ($HF_HOME/token, with a trailing newline as `hf auth login` writes)
rm -rf "$HF_HUB_CACHE"
mkdir -p "$HF_HOME"
printf 'secret-token\n' >"$HF_HOME/token"
dir=$("$FETCH" --quiet acme/gated)
cmp "$dir/model.safetensors" "$WORK/repo/model.safetensors" || fail "token-file download"
[ "$(stats auth_seen_cdn)" = 0 ] || fail "token (file) reached the second origin"
rm -f "$HF_HOME/token"
pass "\$HF_HOME/token"

# HF_TOKEN_PATH overrides the file location
printf 'secret-token' >"$WORK/tok"
rm -rf "$HF_HUB_CACHE"
HF_TOKEN_PATH="$WORK/tok" "$FETCH" --quiet acme/gated >/dev/null || fail "HF_TOKEN_PATH"
pass "HF_TOKEN_PATH"

# the default model: no MODEL argument → the pinned commit (gated like the real one)
expect_fail 1 "gated" "$FETCH" --quiet
dir=$(HF_TOKEN=secret-token "$FETCH" --quiet)
[ "$dir" = "$HF_HUB_CACHE/models--CohereLabs--cohere-transcribe-arabic-07-2026/snapshots/$PINNED" ] ||
  fail "default model dir: $dir"
cmp "$dir/tokenizer.json" "$WORK/pinned/tokenizer.json" || fail "default model content"
# the pinned commit needs no ref, and a complete snapshot needs no network or token
[ ! -d "$HF_HUB_CACHE/models--CohereLabs--cohere-transcribe-arabic-07-2026/refs" ] ||
  [ -z "$(ls "$HF_HUB_CACHE/models--CohereLabs--cohere-transcribe-arabic-07-2026/refs")" ] ||
  fail "pinned commit must not write refs"
n=$(stats api_gets)
dir2=$("$FETCH" --quiet)
[ "$dir2" = "$dir" ] && [ "$(stats api_gets)" = "$n" ] || fail "cached pinned snapshot went to the network"
[ "$(stats auth_seen_cdn)" = 0 ] || fail "token reached the second origin"
pass "default model → pinned commit"

# a long token (1500 characters, as an OAuth or CI access token may be) is
# sent whole: cut short it would be refused as a wrong token
stop_hub
LONG_TOKEN=$(printf 't%.0s' $(seq 1 1500))
start_hub --token "$LONG_TOKEN" --repo acme/gated="$WORK/repo",gated
rm -rf "$HF_HUB_CACHE"
dir=$(HF_TOKEN="$LONG_TOKEN" "$FETCH" --quiet acme/gated 2>"$WORK/err") ||
  { cat "$WORK/err" >&2; fail "a 1500-character token"; }
cmp "$dir/model.safetensors" "$WORK/repo/model.safetensors" || fail "long-token download content"
[ "$(stats auth_seen_cdn)" = 0 ] || fail "long token reached the second origin"
pass "long token sent whole"
echo "hub_token: all passed"
