#!/usr/bin/env bash
# hub_errors.sh — what the user reads when things go wrong, and that
# transient failures are retried: 404 repo/revision/file, bad model specs,
# 5xx on the API and the file server, a connection dropped mid-file (resumed
# with Range), a short Content-Length, persistent failures ending cleanly
# (no blob, no snapshot link, a clear message), and a server that is gone.
source "$(dirname "$0")/../hub/lib.sh"

make_repo "$WORK/repo" 400000
cp "$WORK/repo/config.json" "$WORK/quant.json"
make_repo "$WORK/quant" 1000
printf '{"model_type":"cohere_asr","quantization_config":{"load_in_8bit":true}}' >"$WORK/quant/config.json"
mkdir -p "$WORK/adapter"
printf '{"peft_type":"LORA"}' >"$WORK/adapter/adapter_config.json"
printf 'x' >"$WORK/adapter/adapter_model.safetensors"
start_hub --repo acme/tiny="$WORK/repo" --repo acme/quant="$WORK/quant" --repo acme/lora="$WORK/adapter"
C=$(commit_of acme/tiny)
R=models--acme--tiny

# --- not found -------------------------------------------------------------
expect_fail 1 "acme/nothing: repository not found on the Hub" "$FETCH" --quiet acme/nothing
expect_fail 1 "acme/tiny: revision 'nope' not found on the Hub" "$FETCH" --quiet --revision nope acme/tiny
expect_fail 1 "file 'missing.json' not found at revision $C" "$FETCH" --quiet --file missing.json acme/tiny
pass "404: repository, revision, file"

# --- specs -----------------------------------------------------------------
expect_fail 2 "valid Hugging Face repository ID" "$FETCH" --quiet "acme/bad--name"
expect_fail 2 "valid Hugging Face repository ID" "$FETCH" --quiet "acme/x.git"
expect_fail 2 "valid Hugging Face repository ID" "$FETCH" --quiet "acme/-x"
expect_fail 2 "valid Hugging Face repository ID" "$FETCH" --quiet "acme/$(printf 'a%.0s' $(seq 1 97))"
expect_fail 2 "non-empty" "$FETCH" --quiet ""
expect_fail 2 "whitespace" "$FETCH" --quiet " acme/tiny"
expect_fail 1 "no such local model directory" "$FETCH" --quiet ./no/such
expect_fail 1 "no such local model directory" "$FETCH" --quiet a/b/c
expect_fail 1 "no such local model directory" "$FETCH" --quiet "$WORK/absent"
expect_fail 2 "cannot be used with a local model directory" "$FETCH" --quiet --revision main "$WORK/repo"
[ "$("$FETCH" --quiet "$WORK/repo")" = "$(realpath "$WORK/repo")" ] || fail "local dir"
pass "spec validation"

# --- refused checkpoints -----------------------------------------------------
expect_fail 1 "quantized (quantization_config)" "$FETCH" --quiet acme/quant
[ "$(stat_of cdn_gets model.safetensors)" = 0 ] || fail "quantized: weights downloaded before refusing"
expect_fail 1 "adapters are not supported" "$FETCH" --quiet acme/lora
expect_fail 1 "adapters are not supported" "$FETCH" --quiet "$WORK/adapter"
pass "quantized and adapter checkpoints refused"

# --- transient failures are retried ------------------------------------------
ctl reset
ctl fail '{"mode":"api503","count":2}'
dir=$("$FETCH" --quiet acme/tiny) || fail "API 503 twice then fine: should succeed"
pass "API 503 retried"
rm -rf "$HF_HUB_CACHE"

ctl reset
ctl fail '{"mode":"err500","file":"model.safetensors","count":1}'
ctl fail '{"mode":"err500","file":"config.json","count":1}'
dir=$("$FETCH" --quiet acme/tiny) || fail "500 once: should succeed"
cmp "$dir/model.safetensors" "$WORK/repo/model.safetensors" || fail "content after 500"
cmp "$dir/config.json" "$WORK/repo/config.json" || fail "config after 500"
pass "file 500 retried"
rm -rf "$HF_HUB_CACHE"

ctl reset
ctl fail '{"mode":"drop","file":"model.safetensors","count":1}'
dir=$("$FETCH" --quiet acme/tiny) || fail "drop once: should succeed"
cmp "$dir/model.safetensors" "$WORK/repo/model.safetensors" || fail "content after drop"
ranges=$(stats cdn_ranges)
python3 -c 'import json,sys; r=[s for n,s in json.loads(sys.argv[1]) if n=="model.safetensors"]; sys.exit(0 if r[0]==0 and len(r)==2 and r[1]==200000 else 1)' "$ranges" ||
  fail "dropped download must resume at byte 200000 with Range: $ranges"
pass "dropped connection resumed with Range"
rm -rf "$HF_HUB_CACHE"

# a server that ignores Range on the resume: the file starts over
ctl reset
ctl fail '{"mode":"drop","file":"model.safetensors","count":1}'
ctl fail '{"mode":"norange","file":"model.safetensors","count":1}'
dir=$("$FETCH" --quiet acme/tiny) || fail "drop then no Range support: should succeed"
cmp "$dir/model.safetensors" "$WORK/repo/model.safetensors" || fail "content after a restart without Range"
[ "$(stat_of cdn_full_gets model.safetensors)" = 2 ] || fail "want two full GETs (the second after Range was ignored)"
pass "Range ignored by the server: restarted from 0"
rm -rf "$HF_HUB_CACHE"

ctl reset
ctl fail '{"mode":"badlen","file":"model.safetensors","count":1}'
dir=$("$FETCH" --quiet acme/tiny) || fail "short Content-Length once: should succeed"
cmp "$dir/model.safetensors" "$WORK/repo/model.safetensors" || fail "content after badlen"
pass "short Content-Length detected and completed"
rm -rf "$HF_HUB_CACHE"

# redirects: a few same-origin hops are followed, a loop stops after 8
ctl reset
ctl fail '{"mode":"loop","file":"tokenizer.json","count":3}'
"$FETCH" --quiet acme/tiny >/dev/null || fail "3 same-origin redirects should be followed"
rm -rf "$HF_HUB_CACHE"
ctl reset
ctl fail '{"mode":"loop","file":"tokenizer.json","count":-1}'
expect_fail 1 "more than 8 redirects" "$FETCH" --quiet acme/tiny
pass "redirects followed, loops cut at 8"
rm -rf "$HF_HUB_CACHE"

# a long signed file-server URL (3000 bytes of signature) is followed whole;
# one beyond the client's limit is refused by name, never sent cut short
ctl reset
ctl fail '{"mode":"longloc","file":"model.safetensors","pad":3000,"count":-1}'
dir=$("$FETCH" --quiet acme/tiny 2>"$WORK/err") || { cat "$WORK/err" >&2; fail "a 3 kB redirect URL should be followed"; }
cmp "$dir/model.safetensors" "$WORK/repo/model.safetensors" || fail "content after a long redirect"
rm -rf "$HF_HUB_CACHE"
ctl reset
ctl fail '{"mode":"longloc","file":"model.safetensors","pad":20000,"count":-1}'
expect_fail 1 "redirect URL too long" "$FETCH" --quiet acme/tiny
pass "long redirect URLs followed whole or refused"
rm -rf "$HF_HUB_CACHE"

# --- persistent failures end cleanly -------------------------------------------
ctl reset
ctl fail '{"mode":"badlen","file":"model.safetensors","count":-1}'
expect_fail 1 "size mismatch" "$FETCH" --quiet acme/tiny
grep -q "download failed after" "$WORK/err" || fail "no attempt count in: $(cat "$WORK/err")"
[ ! -e "$HF_HUB_CACHE/$R/snapshots/$C/model.safetensors" ] || fail "a failed file got a snapshot link"
[ -z "$(find "$HF_HUB_CACHE/$R/blobs" -type f ! -name '*.incomplete' -size +300k)" ] ||
  fail "a failed download left a blob"
pass "persistent short length: clean failure"

ctl reset
ctl fail '{"mode":"err500","file":"model.safetensors","count":-1}'
expect_fail 1 "could not be reached\|HTTP 500" "$FETCH" --quiet acme/tiny
[ ! -e "$HF_HUB_CACHE/$R/snapshots/$C/model.safetensors" ] || fail "500: snapshot link"
pass "persistent 500: clean failure"

ctl reset
ctl fail '{"mode":"api503","count":-1}'
rm -rf "$HF_HUB_CACHE"
expect_fail 1 "could not be reached after 3 attempts" "$FETCH" --quiet acme/tiny
grep -q "no usable cached copy" "$WORK/err" || fail "should say there is no cached copy"
pass "persistent 503: clean failure"

# --- a slow server is not an error; a stalled one is retried, then fails ------
ctl reset
ctl fail '{"mode":"slow","file":"model.safetensors","rate":400000,"count":1}'
dir=$("$FETCH" --quiet acme/tiny) || fail "slow (1 s) download should succeed"
cmp "$dir/model.safetensors" "$WORK/repo/model.safetensors" || fail "slow content"
pass "slow server"
rm -rf "$HF_HUB_CACHE"

# a stalled transfer (no byte for CT_HUB_STALL_S) is abandoned and resumed
ctl reset
ctl fail '{"mode":"stall","file":"model.safetensors","secs":6,"count":1}'
dir=$(CT_HUB_STALL_S=1 "$FETCH" --quiet acme/tiny 2>"$WORK/err") || { cat "$WORK/err"; fail "stall once: should succeed"; }
cmp "$dir/model.safetensors" "$WORK/repo/model.safetensors" || fail "content after stall"
ranges=$(stats cdn_ranges)
python3 -c 'import json,sys; r=[s for n,s in json.loads(sys.argv[1]) if n=="model.safetensors"]; sys.exit(0 if r==[0,200000] else 1)' "$ranges" ||
  fail "stalled download must resume at byte 200000: $ranges"
pass "stalled transfer abandoned and resumed"
rm -rf "$HF_HUB_CACHE"

# --- a server that sends bare statuses (no X-Error-Code) --------------------------
stop_hub
start_hub --plain-errors --token tok --repo acme/tiny="$WORK/repo" --repo acme/gated="$WORK/repo",gated
expect_fail 1 "acme/nothing: repository not found on the Hub .*, or it is private or gated (HTTP 401" "$FETCH" --quiet acme/nothing
expect_fail 1 "repository or revision 'nope' not found" "$FETCH" --quiet --revision nope acme/tiny
expect_fail 1 "file 'missing.json' not found" "$FETCH" --quiet --file missing.json acme/tiny
expect_fail 1 "the model is gated" "$FETCH" --quiet acme/gated
pass "messages without X-Error-Code"

# --- the server is gone, nothing cached -----------------------------------------
stop_hub
expect_fail 1 "could not be reached" "$FETCH" --quiet acme/tiny
pass "server gone"
echo "hub_errors: all passed"
