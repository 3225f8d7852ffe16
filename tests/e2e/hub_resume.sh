#!/usr/bin/env bash
# hub_resume.sh — a download killed with SIGKILL leaves <blob>.incomplete and
# the next run resumes it with a Range request from exactly its size (the
# file server sees one full GET and one ranged GET); SIGINT cancels cleanly
# (exit 130, partial file kept) and that, too, resumes.
source "$(dirname "$0")/../hub/lib.sh"

make_repo "$WORK/repo" 2000000
start_hub --repo acme/tiny="$WORK/repo"
C=$(commit_of acme/tiny)
R=models--acme--tiny
E=$(sha256_of "$WORK/repo/model.safetensors")
INC="$HF_HUB_CACHE/$R/blobs/$E.incomplete"

# wait_partial PID MIN_BYTES: until the partial file holds MIN_BYTES (≤ 20 s)
wait_partial() {
  for _ in $(seq 1 200); do
    if [ -f "$INC" ] && [ "$(stat -c %s "$INC")" -ge "$2" ]; then return 0; fi
    kill -0 "$1" 2>/dev/null || fail "fetch ended before it could be interrupted"
    sleep 0.1
  done
  fail "no partial download appeared"
}

# --- SIGKILL mid-file, then resume -----------------------------------------------
ctl fail '{"mode":"slow","file":"model.safetensors","rate":200000,"count":1}'
"$FETCH" --quiet acme/tiny >"$WORK/out1" 2>"$WORK/err1" &
pid=$!
wait_partial $pid 300000
kill -KILL $pid
wait $pid 2>/dev/null || true
part=$(stat -c %s "$INC")
[ "$part" -gt 0 ] && [ "$part" -lt 2000000 ] || fail "partial size $part"
[ ! -e "$HF_HUB_CACHE/$R/blobs/$E" ] || fail "blob must not exist after a kill"
[ ! -e "$HF_HUB_CACHE/$R/snapshots/$C/model.safetensors" ] || fail "no link after a kill"

dir=$("$FETCH" --quiet acme/tiny) || fail "resume run failed"
cmp "$dir/model.safetensors" "$WORK/repo/model.safetensors" || fail "resumed content differs"
[ ! -e "$INC" ] || fail "partial file left after completion"
ranges=$(stats cdn_ranges)
python3 -c 'import json,sys; r=[s for n,s in json.loads(sys.argv[1]) if n=="model.safetensors"]; sys.exit(0 if r==[0,int(sys.argv[2])] else 1)' \
  "$ranges" "$part" || fail "want one full GET then a Range from $part, got $ranges"
pass "SIGKILL: resumed from byte $part"

# --- SIGINT cancels (exit 130, partial kept), the next run resumes ---------------
rm -rf "$HF_HUB_CACHE"
ctl reset
ctl fail '{"mode":"slow","file":"model.safetensors","rate":200000,"count":1}'
"$FETCH" --quiet acme/tiny >"$WORK/out2" 2>"$WORK/err2" &
pid=$!
wait_partial $pid 200000
kill -INT $pid
rc=0
wait $pid || rc=$?
[ "$rc" = 130 ] || { cat "$WORK/err2" >&2; fail "SIGINT exit code $rc, want 130"; }
grep -q "cancelled" "$WORK/err2" || fail "no cancel message: $(cat "$WORK/err2")"
part=$(stat -c %s "$INC")
[ "$part" -gt 0 ] || fail "cancel lost the partial file"
dir=$("$FETCH" --quiet acme/tiny) || fail "resume after cancel"
cmp "$dir/model.safetensors" "$WORK/repo/model.safetensors" || fail "content after cancel+resume"
[ "$(stat_of cdn_full_gets model.safetensors)" = 1 ] || fail "resume after cancel restarted from 0"
pass "SIGINT: exit 130, resumed from byte $part"

# --- a corrupt partial file is caught by the hash and removed -------------------
rm -rf "$HF_HUB_CACHE"
ctl reset
mkdir -p "$HF_HUB_CACHE/$R/blobs"
head -c 1000 /dev/zero >"$INC"
expect_fail 1 "does not match the Hub's $E" "$FETCH" --quiet acme/tiny
[ ! -e "$INC" ] || fail "corrupt partial file must be removed"
dir=$("$FETCH" --quiet acme/tiny) || fail "run after corrupt partial"
cmp "$dir/model.safetensors" "$WORK/repo/model.safetensors" || fail "content after corrupt partial"
pass "corrupt partial detected by sha256"
echo "hub_resume: all passed"
