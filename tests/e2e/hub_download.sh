#!/usr/bin/env bash
# hub_download.sh — a model downloads from the fake Hub into exactly the cache
# layout huggingface_hub writes (checked against the tree written down below,
# with blob names computed here from the file contents), a second run uses
# the cache without downloading, tags get refs, sharded checkpoints fetch
# their shards; and, when Python's huggingface_hub is importable, Python reads
# our cache offline and writes the very same tree itself.
source "$(dirname "$0")/../hub/lib.sh"

make_repo "$WORK/repo" 300000
make_repo "$WORK/sharded" 200000 sharded
start_hub --repo acme/tiny="$WORK/repo" --repo acme/sharded="$WORK/sharded"
C=$(commit_of acme/tiny)

dir=$("$FETCH" --quiet acme/tiny)
[ "$dir" = "$HF_HUB_CACHE/models--acme--tiny/snapshots/$C" ] || fail "snapshot dir: $dir"
for f in config.json generation_config.json tokenizer.json model.safetensors; do
  cmp "$dir/$f" "$WORK/repo/$f" || fail "$f differs from the served file"
done
pass "download: files match"

# blob names: git blob sha1 for small files, sha256 for LFS files
gsha() { python3 -c 'import hashlib,sys; d=open(sys.argv[1],"rb").read(); print(hashlib.sha1(b"blob %d\0" % len(d) + d).hexdigest())' "$1"; }
E_CFG=$(gsha "$WORK/repo/config.json")
E_GEN=$(gsha "$WORK/repo/generation_config.json")
E_TOK=$(gsha "$WORK/repo/tokenizer.json")
E_ST=$(sha256_of "$WORK/repo/model.safetensors")
R=models--acme--tiny
cat >"$WORK/want.txt" <<EOF
D .locks
D .locks/$R
F .locks/$R/$E_CFG.lock
F .locks/$R/$E_GEN.lock
F .locks/$R/$E_ST.lock
F .locks/$R/$E_TOK.lock
F CACHEDIR.TAG
D $R
D $R/blobs
F $R/blobs/$E_CFG
F $R/blobs/$E_GEN
F $R/blobs/$E_ST
F $R/blobs/$E_TOK
D $R/refs
F $R/refs/main
D $R/snapshots
D $R/snapshots/$C
L $R/snapshots/$C/config.json -> ../../blobs/$E_CFG
L $R/snapshots/$C/generation_config.json -> ../../blobs/$E_GEN
L $R/snapshots/$C/model.safetensors -> ../../blobs/$E_ST
L $R/snapshots/$C/tokenizer.json -> ../../blobs/$E_TOK
EOF
LC_ALL=C sort -o "$WORK/want.txt" "$WORK/want.txt"
tree_of "$HF_HUB_CACHE" | LC_ALL=C sort >"$WORK/got.txt"
diff -u "$WORK/want.txt" "$WORK/got.txt" || fail "cache layout differs from huggingface_hub's"
[ "$(cat "$HF_HUB_CACHE/$R/refs/main")" = "$C" ] || fail "refs/main content"
[ "$(stat -c %s "$HF_HUB_CACHE/$R/refs/main")" = 40 ] || fail "refs/main must have no newline"
head -1 "$HF_HUB_CACHE/CACHEDIR.TAG" | grep -q '^Signature: 8a477f597d28d172789f06886806bc55$' ||
  fail "CACHEDIR.TAG signature"
pass "layout matches the written-down huggingface_hub tree"

# a second run is served by the cache: no new file requests
before=$(stats cdn_gets)
hub_before=$(stats hub_gets)
dir2=$("$FETCH" --quiet acme/tiny)
[ "$dir2" = "$dir" ] || fail "second run dir"
[ "$(stats cdn_gets)" = "$before" ] && [ "$(stats hub_gets)" = "$hub_before" ] ||
  fail "second run downloaded again"
pass "second run uses the cache"

# a tag records its own ref; the commit itself records none
"$FETCH" --quiet --revision v1.0 acme/tiny >/dev/null
[ "$(cat "$HF_HUB_CACHE/$R/refs/v1.0")" = "$C" ] || fail "refs/v1.0"
"$FETCH" --quiet --revision "$C" acme/tiny >/dev/null
[ ! -e "$HF_HUB_CACHE/$R/refs/$C" ] || fail "a commit must not get a ref"
pass "refs for tags"

# sharded checkpoint: index + every shard it names, nothing else large
sdir=$("$FETCH" --quiet acme/sharded)
for f in model.safetensors.index.json model-00001-of-00002.safetensors model-00002-of-00002.safetensors; do
  cmp "$sdir/$f" "$WORK/sharded/$f" || fail "sharded: $f"
done
[ "$(stat_of cdn_full_gets model-00001-of-00002.safetensors)" = 1 ] || fail "shard 1 fetched once"
pass "sharded checkpoint"

# a progress bar when stderr is a terminal (script(1) provides one), none otherwise
if command -v script >/dev/null; then
  rm -rf "$WORK/cache2"
  HF_HUB_CACHE="$WORK/cache2" script -qec "$FETCH acme/tiny" "$WORK/typescript" >/dev/null
  tr '\r' '\n' <"$WORK/typescript" | grep -q 'model.safetensors.*\[#*\] 100.0% 300.0 kB / 300.0 kB' ||
    { cat -v "$WORK/typescript" >&2; fail "no progress bar on a terminal"; }
  rm -rf "$WORK/cache2"
  HF_HUB_CACHE="$WORK/cache2" "$FETCH" acme/tiny 2>"$WORK/err" >/dev/null
  ! grep -q '100.0%' "$WORK/err" || fail "progress bar drawn without a terminal"
  rm -rf "$WORK/cache2"
  pass "progress bar only on a terminal"
fi

# --- interoperability with Python's huggingface_hub (when installed) -------
PY=${CT_HF_PYTHON:-python3}
if "$PY" -c 'import huggingface_hub' 2>/dev/null; then
  # 1. Python reads the cache we wrote, offline
  HF_HUB_OFFLINE=1 "$PY" - "$C" "$dir" <<'EOF' || fail "huggingface_hub cannot read our cache"
import sys
from huggingface_hub import hf_hub_download
commit, snap = sys.argv[1], sys.argv[2]
for f in ["config.json", "tokenizer.json", "model.safetensors"]:
    p = hf_hub_download("acme/tiny", f)  # revision main → refs/main
    assert p == f"{snap}/{f}", (p, snap)
    p = hf_hub_download("acme/tiny", f, revision=commit)
    assert p == f"{snap}/{f}", (p, snap)
EOF
  # 2. Python writes a cache; its tree equals ours, and we read it offline
  HF_HUB_CACHE="$WORK/pycache" "$PY" - <<'EOF' || fail "huggingface_hub download from the fake hub"
from huggingface_hub import hf_hub_download
for f in ["config.json", "generation_config.json", "tokenizer.json", "model.safetensors"]:
    hf_hub_download("acme/tiny", f)
EOF
  tree_of "$WORK/pycache" | LC_ALL=C sort >"$WORK/py.txt"
  diff -u "$WORK/want.txt" "$WORK/py.txt" || fail "huggingface_hub's tree differs from the written-down one"
  pdir=$(HF_HUB_CACHE="$WORK/pycache" HF_HUB_OFFLINE=1 "$FETCH" --quiet acme/tiny)
  [ "$pdir" = "$WORK/pycache/$R/snapshots/$C" ] || fail "we cannot read Python's cache: $pdir"
  pass "huggingface_hub $("$PY" -c 'import huggingface_hub as h; print(h.__version__)') writes the same tree and reads ours"
else
  echo "note: huggingface_hub not importable by $PY; set CT_HF_PYTHON to run the interop part"
fi
# a new commit that changes only config.json: the unchanged blobs are linked,
# not downloaded again, refs/main moves, the old snapshot stays
stop_hub
printf '{"model_type":"cohere_asr","vocab_size":17}' >"$WORK/repo/config.json"
start_hub --repo acme/tiny="$WORK/repo" --repo acme/sharded="$WORK/sharded"
C2=$(commit_of acme/tiny)
[ "$C2" != "$C" ] || fail "the fake hub should give a new commit"
dir3=$("$FETCH" --quiet acme/tiny)
[ "$dir3" = "$HF_HUB_CACHE/$R/snapshots/$C2" ] || fail "new commit dir: $dir3"
[ "$(cat "$HF_HUB_CACHE/$R/refs/main")" = "$C2" ] || fail "refs/main did not move"
[ "$(stats cdn_gets)" = "{}" ] || fail "unchanged LFS blob downloaded again: $(stats cdn_gets)"
[ "$(stat_of hub_gets acme/tiny/config.json)" = 1 ] || fail "changed config.json not downloaded"
[ "$(stat_of hub_gets acme/tiny/tokenizer.json)" = 0 ] || fail "unchanged tokenizer.json downloaded again"
[ "$(readlink "$dir3/model.safetensors")" = "../../blobs/$E_ST" ] || fail "new snapshot does not share the blob"
[ -L "$dir/config.json" ] && cmp -s "$dir/config.json" "$dir3/config.json" && fail "old snapshot changed"
cmp "$dir3/config.json" "$WORK/repo/config.json" || fail "new config content"
pass "new commit: unchanged blobs shared, refs/main moved"

echo "hub_download: all passed"
