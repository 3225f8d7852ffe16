#!/usr/bin/env bash
# --benchmark-tokens-per-second on the tiny model (docs/USAGE.md, "Benchmark
# mode"): every segment's generated_tokens in the ASR checkpoint is exactly
# min(ceil(RATE x samples / 16000), --max-new-tokens), recomputed here from
# the checkpoint's segment times by the product's slicing rule, at two rates
# (so a count that only happens to match one formula fails the other); no
# retry, no token-limit segment, the profile's batch totals add up to the
# segments' and its configuration names the rate (and does not without the
# option); the engine-alone bound (bench_product_engine) reproduces the same
# batches and row counts and objects to a profile whose rate is not the one
# the product used; a later run without the option does not skip the
# benchmark's outputs (the contract differs); bad rates are refused with the message.
set -euo pipefail
source "$(dirname "$0")/lib/product.sh"
c="$tmp/corpus"
mkdir -p "$c"
cp "$CT_FIXTURES/audio/c4_en_gb_30s.wav" "$CT_FIXTURES/audio/c3_fr_ar_10s.wav" "$CT_FIXTURES/vad/speech_pauses.flac" "$c/"
run() { "$bin" "$c" --model "$model" --vad-weights "$weights" --device cpu --max-new-tokens 60 --max-retry-tokens 114 \
  --formats txt json "$@"; }

check() { # rate profile
  python3 - "$c" "$1" "$2" 60 <<'EOF'
import glob, json, math, os, sys
corpus, rate, prof, limit = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4])
total, n_seg, capped = 0, 0, 0
for f in sorted(glob.glob(os.path.join(corpus, ".*.cohere-transcribe.asr.json"))):
    ck = json.load(open(f))["payload"]["checkpoint"]
    n_all = round(ck["duration"] * 16000)
    gen = dict((i, k) for i, k in ck["generated_tokens"])
    assert len(gen) == len(ck["segment_times"]) > 0, f
    for j, (s, e) in enumerate(ck["segment_times"]):
        a, b = max(round(s * 16000), 0), min(round(e * 16000), n_all)  # Python's round is half-even, as slice()
        want = min(max(math.ceil(rate * (b - a) / 16000.0), 1), limit)
        assert gen[j] == want, (f, j, s, e, gen[j], want)
        total += want; n_seg += 1; capped += want == limit
    assert ck["truncation_retried_segments"] == [] and ck["token_limit_segments"] == [], f
    assert ck["repetition_stopped_segments"] == [], f
p = json.load(open(prof))
assert p["configuration"]["benchmark_tokens_per_second"] == rate, p["configuration"]
a = p["asr"]
assert a["truncation_retries"] == 0 and a["generated_tokens"] == total, (a["generated_tokens"], total)
assert sum(b["generated_tokens"] for b in a["batch_history"]) == total
assert n_seg >= 5, n_seg
print(f"rate {rate}: {n_seg} segments, {total} tokens, {capped} at the limit")
EOF
}

run --benchmark-tokens-per-second 3.3 --profile-json "$tmp/p1.json" > "$tmp/r1.out" 2>&1 ||
  { cat "$tmp/r1.out"; exit 1; }
check 3.3 "$tmp/p1.json"
# the engine-alone bound over the same segments: the same batches, every row
# at the formula's count (the product's checkpoints agree with it), the same
# row steps in total; with the profile's rate altered it must object (exit 3)
eng() { "$CT_BIN/bench_product_engine" --model "$model" --profile "$1" --out-dir "$c" --dtype fp32 --threads 2 --batch-size 4; }
eng "$tmp/p1.json" > "$tmp/e1.out" 2> "$tmp/e1.err" || { cat "$tmp/e1.out" "$tmp/e1.err"; exit 1; }
want=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['asr']['generated_tokens'])" "$tmp/p1.json")
grep -qx "engine_row_steps $want product_row_steps $want (repetition-stopped rows counted at the limit: 0)" "$tmp/e1.out" &&
  grep -qx "benchmark_tokens_per_second 3.3 formula_mismatches 0" "$tmp/e1.out" && grep -qx "batch_mismatches 0" "$tmp/e1.out" &&
  grep -q "^engine_rtfx [0-9.]* " "$tmp/e1.out" || { echo "engine bound:"; cat "$tmp/e1.out"; exit 1; }
sed 's/"benchmark_tokens_per_second": 3.3/"benchmark_tokens_per_second": 3.4/' "$tmp/p1.json" > "$tmp/p1x.json"
rc=0
eng "$tmp/p1x.json" > "$tmp/e2.out" 2> "$tmp/e2.err" || rc=$?
[ $rc = 3 ] && grep -q "^benchmark_tokens_per_second 3.4 formula_mismatches [1-9]" "$tmp/e2.out" ||
  { echo "engine bound with a wrong rate: exit $rc"; cat "$tmp/e2.out"; exit 1; }
run --benchmark-tokens-per-second 7.25 --existing overwrite --profile-json "$tmp/p2.json" > "$tmp/r2.out" 2>&1 ||
  { cat "$tmp/r2.out"; exit 1; }
out=$(check 7.25 "$tmp/p2.json")
echo "$out"
case "$out" in *" 0 at the limit") echo "no segment reached the limit at 7.25/s: the cap is untested"; exit 1 ;; esac

# without the option: the benchmark's outputs do not count as done, and the
# profile's configuration is the original's (no benchmark key)
run --existing skip --profile-json "$tmp/p3.json" > "$tmp/r3.out" 2>&1 || { cat "$tmp/r3.out"; exit 1; }
python3 - "$tmp/p3.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
assert "benchmark_tokens_per_second" not in p["configuration"], p["configuration"]
assert p["asr"]["batches"] > 0 and p["asr"]["generated_tokens"] > 0, "skipped the benchmark's outputs"
EOF

for bad in -1 nan inf 1000.5; do
  rc=0
  run --benchmark-tokens-per-second "$bad" > "$tmp/bad.out" 2>&1 || rc=$?
  [ $rc = 1 ] || { echo "rate $bad: exit $rc, expected 1 (a configuration error)"; cat "$tmp/bad.out"; exit 1; }
  grep -q -- "--benchmark-tokens-per-second must be a finite number of tokens per second in 0..1000 (0: off)" \
    "$tmp/bad.out" || { echo "rate $bad: message"; cat "$tmp/bad.out"; exit 1; }
done
rc=0
run --benchmark-tokens-per-second fast > "$tmp/bad.out" 2>&1 || rc=$?
[ $rc = 2 ] && grep -q 'invalid float value: "fast"' "$tmp/bad.out" || { echo "rate fast: exit $rc"; cat "$tmp/bad.out"; exit 1; }
echo "benchmark mode: ok"
