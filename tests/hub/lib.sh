# lib.sh — shared by tests/e2e/hub_*.sh: a private work folder and Hugging
# Face environment, tiny model repos, and the fake Hub (fake_hub.py) started
# on ephemeral ports and stopped on exit. Every test sources this first.
set -euo pipefail

CT_SOURCE=${CT_SOURCE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
CT_BIN=${CT_BIN:-$CT_SOURCE/build/bin}
FETCH="$CT_BIN/cohere-transcribe-fetch"
FAKE_HUB="$CT_SOURCE/tests/hub/fake_hub.py"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ct-hub-test.XXXXXX")
HUB_PID=""

# a clean Hugging Face environment: nothing from the user's own setup leaks in
unset HF_TOKEN HUGGING_FACE_HUB_TOKEN HF_TOKEN_PATH HF_HUB_OFFLINE TRANSFORMERS_OFFLINE \
      HUGGINGFACE_HUB_CACHE XDG_CACHE_HOME CT_VAD_WEIGHTS CT_SILERO_VAD || true
export HF_HOME="$WORK/hfhome"
export HF_HUB_CACHE="$WORK/cache"
export CT_HUB_BACKOFF_MS=${CT_HUB_BACKOFF_MS:-50}
export CT_HUB_ATTEMPTS=${CT_HUB_ATTEMPTS:-3}
export CT_HUB_STALL_S=${CT_HUB_STALL_S:-5}
export HF_HUB_DISABLE_TELEMETRY=1 HF_HUB_DISABLE_UPDATE_CHECK=1

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
pass() { echo "ok: $*"; }

stop_hub() {
  if [ -n "$HUB_PID" ]; then
    kill "$HUB_PID" 2>/dev/null || true
    wait "$HUB_PID" 2>/dev/null || true
    HUB_PID=""
  fi
}

cleanup() {
  local rc=$?
  stop_hub
  if [ -s "$WORK/state/violations.log" ]; then
    echo "FAIL: the second origin received an Authorization header:" >&2
    cat "$WORK/state/violations.log" >&2
    rc=1
  fi
  rm -rf "$WORK"
  exit $rc
}
trap cleanup EXIT

# make_repo DIR LFS_BYTES [sharded]: a tiny checkpoint folder (deterministic bytes)
make_repo() {
  python3 - "$@" <<'EOF'
import json, os, random, sys
d, n = sys.argv[1], int(sys.argv[2])
sharded = len(sys.argv) > 3 and sys.argv[3] == "sharded"
os.makedirs(d, exist_ok=True)
rng = random.Random(n * 7 + sharded)
def w(name, data):
    p = os.path.join(d, name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, "wb").write(data)
w("config.json", json.dumps({"model_type": "cohere_asr", "vocab_size": 16}).encode())
w("generation_config.json", b'{"max_new_tokens": 8}')
w("tokenizer.json", json.dumps({"model": {"vocab": {"a": 0}}, "seed": n}).encode())
w("README.md", b"# tiny test repo\n")
if sharded:
    w("model-00001-of-00002.safetensors", bytes(rng.getrandbits(8) for _ in range(n)))
    w("model-00002-of-00002.safetensors", bytes(rng.getrandbits(8) for _ in range(n // 2)))
    w("model.safetensors.index.json", json.dumps({"metadata": {}, "weight_map": {
        "a.weight": "model-00001-of-00002.safetensors",
        "b.weight": "model-00002-of-00002.safetensors",
        "c.weight": "model-00001-of-00002.safetensors"}}).encode())
else:
    w("model.safetensors", bytes(rng.getrandbits(8) for _ in range(n)))
EOF
}

# start_hub ARGS...: start fake_hub.py; sets HUB, CDN, and exports HF_ENDPOINT
start_hub() {
  rm -f "$WORK/state/ports.json"
  mkdir -p "$WORK/state"
  timeout 900 python3 "$FAKE_HUB" --state "$WORK/state" --lifetime 600 "$@" \
    2>>"$WORK/state/server.err" &
  HUB_PID=$!
  for _ in $(seq 1 100); do
    [ -s "$WORK/state/ports.json" ] && break
    kill -0 "$HUB_PID" 2>/dev/null || { cat "$WORK/state/server.err" >&2; fail "fake hub died"; }
    sleep 0.1
  done
  [ -s "$WORK/state/ports.json" ] || fail "fake hub did not start"
  HUB="http://127.0.0.1:$(jget "$WORK/state/ports.json" hub)"
  CDN="http://127.0.0.1:$(jget "$WORK/state/ports.json" cdn)"
  export HF_ENDPOINT="$HUB"
}

# jget FILE KEY[.KEY...]: a value from a JSON file ('' when absent)
jget() {
  python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else (json.dumps(v) if isinstance(v, (dict, list)) else v))' "$1" "$2"
}

commit_of() { jget "$WORK/state/ports.json" "commits" | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

ctl() { curl -fsS -X POST --data "${2:-{\}}" "$HUB/_ctl/$1" >/dev/null; }
stats() {
  curl -fsS "$HUB/_ctl/stats" >"$WORK/stats.json"
  jget "$WORK/stats.json" "$1"
}
# stat_of KEY NAME: a per-name counter (0 when absent)
stat_of() {
  curl -fsS "$HUB/_ctl/stats" >"$WORK/stats.json"
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]].get(sys.argv[3], 0))' \
    "$WORK/stats.json" "$1" "$2"
}

# expect_fail WANT_RC PATTERN CMD...: CMD must exit WANT_RC and print PATTERN on stderr
expect_fail() {
  local want=$1 pat=$2
  shift 2
  local rc=0
  "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
  [ "$rc" = "$want" ] || { cat "$WORK/err" >&2; fail "'$*' exited $rc, want $want"; }
  grep -q -- "$pat" "$WORK/err" || { cat "$WORK/err" >&2; fail "'$*': stderr lacks '$pat'"; }
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# tree_of DIR: every entry below DIR, one per line, as "type path [-> target]"
tree_of() {
  (cd "$1" && find . -mindepth 1 | LC_ALL=C sort | while read -r p; do
    if [ -L "$p" ]; then echo "L ${p#./} -> $(readlink "$p")"
    elif [ -d "$p" ]; then echo "D ${p#./}"
    else echo "F ${p#./}"; fi
  done)
}
