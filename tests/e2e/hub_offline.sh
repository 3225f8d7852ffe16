#!/usr/bin/env bash
# hub_offline.sh — without the network a complete cached snapshot resolves
# (HF_HUB_OFFLINE=1, or the server stopped: automatic fallback), by branch
# through refs/ and by commit; an incomplete snapshot fails naming the missing
# file; an uncached revision fails saying so.
source "$(dirname "$0")/../hub/lib.sh"

make_repo "$WORK/repo" 100000
make_repo "$WORK/sharded" 100000 sharded
start_hub --repo acme/tiny="$WORK/repo" --repo acme/sharded="$WORK/sharded"
C=$(commit_of acme/tiny)
S=$(commit_of acme/sharded)
R=models--acme--tiny
dir=$("$FETCH" --quiet acme/tiny)
sdir=$("$FETCH" --quiet acme/sharded)

# HF_HUB_OFFLINE=1 with the server up: no request at all
n=$(stats api_gets)
[ "$(HF_HUB_OFFLINE=1 "$FETCH" --quiet acme/tiny)" = "$dir" ] || fail "offline by branch"
[ "$(HF_HUB_OFFLINE=1 "$FETCH" --quiet --revision "$C" acme/tiny)" = "$dir" ] || fail "offline by commit"
[ "$("$FETCH" --offline --quiet acme/tiny)" = "$dir" ] || fail "--offline"
[ "$(stats api_gets)" = "$n" ] || fail "offline mode made requests"
pass "HF_HUB_OFFLINE=1: complete snapshot resolves without requests"

stop_hub
[ "$("$FETCH" --quiet acme/tiny 2>"$WORK/err")" = "$dir" ] || { cat "$WORK/err"; fail "server stopped: fallback"; }
grep -q "using the cached snapshot $C" "$WORK/err" || fail "fallback should say so: $(cat "$WORK/err")"
[ "$("$FETCH" --quiet acme/sharded 2>/dev/null)" = "$sdir" ] || fail "sharded fallback"
pass "server stopped: automatic use of the cached snapshot"

# incomplete snapshots name the missing file
rm "$dir/tokenizer.json"
HF_HUB_OFFLINE=1 expect_fail 1 "missing tokenizer.json" "$FETCH" --quiet acme/tiny
grep -q "incomplete" "$WORK/err" || fail "should say incomplete: $(cat "$WORK/err")"
expect_fail 1 "missing tokenizer.json" "$FETCH" --quiet acme/tiny
HF_HUB_OFFLINE=1 expect_fail 1 "tokenizer.json' is missing from the cached snapshot" \
  "$FETCH" --quiet --file tokenizer.json acme/tiny
# a blob gone under a link counts as missing too
rm "$(readlink -f "$sdir/model-00002-of-00002.safetensors")"
HF_HUB_OFFLINE=1 expect_fail 1 "missing model-00002-of-00002.safetensors" "$FETCH" --quiet acme/sharded
pass "incomplete snapshot: the missing file is named"

HF_HUB_OFFLINE=1 expect_fail 1 "revision 'v9' is not in the cache" "$FETCH" --quiet --revision v9 acme/tiny
HF_HUB_OFFLINE=1 expect_fail 1 "not in the cache" "$FETCH" --quiet acme/other
pass "uncached revision / repo offline"
echo "hub_offline: all passed"
