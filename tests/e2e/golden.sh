#!/usr/bin/env bash
# cohere-transcribe against the original product: every option set of
# tests/fixtures/golden/cases.json, word alignment included (made by the Python twin,
# tools/reference/make_golden.py) runs with the same argv on the same inputs
# and the same tiny model; txt/srt/vtt must be byte-identical, the transcript
# JSON and the state files equal field by field except the fields
# golden_compare.py lists with their reasons, and the exit code the same.
# Every set runs with --dtype fp32 added: the original always computes in
# fp32 on the CPU, while our `--dtype auto` picks bf16 where the CPU multiplies
# bf16 natively (AVX512-BF16/AMX; issue 16, USAGE.md). On other CPUs auto is
# fp32 and the flag changes nothing; the comparison itself is unchanged.
set -euo pipefail
bin="$CT_BIN/cohere-transcribe"
golden="$CT_FIXTURES/golden"
model="$CT_FIXTURES/tiny-product"
weights="$CT_TESTDATA/silero/silero_vad.onnx"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sets=$(python3 - "$golden/cases.json" <<'PY'
import json, sys
for s in json.load(open(sys.argv[1]))["sets"]:
    print(s["name"])
PY
)
fail=0
for set in $sets; do
  mkdir -p "$tmp/in/$set" "$tmp/out/$set" "$tmp/profile"
  # inputs, argv and exit code of the set
  python3 - "$golden/cases.json" "$set" "$CT_SOURCE" "$tmp" "$model" "$weights" > "$tmp/$set.argv" <<'PY'
import json, os, shutil, sys
cases, name, src, tmp, model, weights = sys.argv[1:7]
s = next(x for x in json.load(open(cases))["sets"] if x["name"] == name)
for i in s["inputs"]:
    dst = os.path.join(tmp, "in", name, i["name"])
    shutil.copyfile(os.path.join(src, i["source"]), dst)
    os.utime(dst, (1767225600, 1767225600))
rep = {"{audio}": f"{tmp}/in/{name}", "{model}": model, "{out}": f"{tmp}/out/{name}",
       "{profile}": f"{tmp}/profile/{name}.json"}
argv = [rep.get(a, a) for a in s["argv"]] + ["--vad-weights", weights, "--dtype", "fp32"]
print(s["exit_code"])
print("\0".join(argv))
PY
  want=$(head -n1 "$tmp/$set.argv")
  mapfile -d '' -t args < <(tail -n +2 "$tmp/$set.argv" | tr -d '\n')
  rc=0
  # word sets: the tiny aligner sits in a Hub cache under the pinned revision,
  # as the original found it (HF_HUB_OFFLINE: no network)
  HF_HUB_CACHE="$CT_FIXTURES/tiny-aligner/hub" HF_HUB_OFFLINE=1 \
    "$bin" "${args[@]}" > "$tmp/$set.stdout" 2> "$tmp/$set.stderr" || rc=$?
  if [ "$rc" != "$want" ]; then
    echo "FAIL $set: exit $rc, the original's $want"; cat "$tmp/$set.stderr"; fail=1; continue
  fi
  if ! python3 "$CT_SOURCE/tests/e2e/golden_compare.py" "$golden/$set/out" "$tmp/out/$set" \
      "/tmp/ct-golden" "$tmp"; then
    fail=1
  fi
done
exit $fail
