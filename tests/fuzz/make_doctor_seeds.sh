#!/usr/bin/env bash
# make_doctor_seeds.sh OUT — seeds for fuzz_doctor_tokenizer: each tokenizer
# seed (tests/fuzz/seeds/tokenizer/, its JSON part) and the fixtures'
# tokenizer.json, once without a declared vocab_size and once with the size
# the file has, both with 2 languages.
set -euo pipefail
out=${1:?usage: make_doctor_seeds.sh OUT}
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
for f in "$src"/tests/fuzz/seeds/tokenizer/*.json "$src"/tests/fixtures/tiny-hf/tokenizer.json; do
  python3 - "$f" "$out/$(basename "$(dirname "$f")")_$(basename "$f")" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read().split(b"\0")[0]  # the JSON part (fuzz_tokenizer seeds carry ids after a NUL)
try:
    t = json.loads(raw)
    m = t.get("model", {}).get("vocab")
    ids = [a.get("id", 0) for a in t.get("added_tokens") or [] if isinstance(a, dict) and isinstance(a.get("id"), int)]
    v = max([len(m) - 1 if isinstance(m, (list, dict)) else -1] + ids) + 1
except (ValueError, AttributeError):
    v = 0
for tag, size in (("none", 0), ("sized", min(max(v, 0), 65535))):
    open(sys.argv[2] + "." + tag, "wb").write(struct.pack("<HB", size, 2) + raw)
PY
done
