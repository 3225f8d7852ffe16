#!/usr/bin/env bash
# --trace FILE (ours, docs/USAGE.md "Timeline"): the run's timeline as
# Chrome trace-event JSON. Checked against the run's own records, not
# against fixed numbers: every input file has one decode and one VAD span
# (its file name, its decoded seconds equal to the JSON output's duration,
# its segment count equal to the output's segments); the rows and the
# number of the successful engine calls are the profile's processor_rows
# and batches; one model
# load; one publication per file, in input order, each after that file's
# VAD; the prep workers' spans are on named threads other than the run's;
# every span lies inside the process's lifetime as the file states it. A
# trace path that cannot be written is a run error (exit 1, the message),
# and the outputs are still published.
set -euo pipefail
source "$(dirname "$0")/lib/product.sh"
c="$tmp/corpus"
mkdir -p "$c"
cp "$CT_FIXTURES/audio/c3_fr_ar_10s.wav" "$CT_FIXTURES/audio/c4_en_gb_30s.wav" "$CT_FIXTURES/vad/speech_pauses.flac" "$c/"
run() { "$bin" "$c" --model "$model" --vad-weights "$weights" --device cpu --max-new-tokens 40 --formats txt json \
  --existing overwrite "$@"; }

t_start=$(date +%s.%N)
run --trace "$tmp/trace.json" --profile-json "$tmp/profile.json" > "$tmp/out.log" 2>&1
t_end=$(date +%s.%N)
python3 - "$tmp/trace.json" "$tmp/profile.json" "$c" "$t_start" "$t_end" <<'PY'
import json, os, sys
trace, prof, corpus, t_start, t_end = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
d = json.load(open(trace))
ev = d["traceEvents"]
assert d["otherData"]["dropped_events"] == 0
names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
spans = [e for e in ev if e["ph"] == "X"]
assert spans, "no spans"
pid = next(e["pid"] for e in ev if e["name"] == "process_name")
assert names.get(pid) == "run", names
for e in spans:
    assert e["dur"] >= 0 and e["ts"] >= 0, e
# the origin is the process start, so no span ends after the wall time the shell measured
wall_us = (t_end - t_start) * 1e6
assert max(e["ts"] + e["dur"] for e in spans) <= wall_us + 2e5, (max(e["ts"] + e["dur"] for e in spans), wall_us)
files = sorted(f for f in os.listdir(corpus) if f.endswith((".wav", ".flac")))
order = ["c3_fr_ar_10s.wav", "c4_en_gb_30s.wav", "speech_pauses.flac"]  # the input order (discovery sorts)
assert files == sorted(order)
def by(name): return [e for e in spans if e["name"] == name]
for stage in ("decode", "vad"):
    got = sorted(e["args"]["label"] for e in by(stage))
    assert got == sorted(order), (stage, got)
    for e in by(stage):
        assert names.get(e["tid"]) == "prep worker" and e["tid"] != pid, (stage, e, names)
total = 0
for f in order:
    out = json.load(open(os.path.join(corpus, os.path.splitext(f)[0] + ".json")))
    dec = next(e for e in by("decode") if e["args"]["label"] == f)
    vad = next(e for e in by("vad") if e["args"]["label"] == f)
    assert abs(dec["args"]["audio_s"] - out["source"]["duration_seconds"]) < 1e-3, (f, dec["args"], out["source"])
    assert vad["args"]["segments"] == len(out["segments"]) > 0, (f, vad["args"], len(out["segments"]))
    assert vad["ts"] >= dec["ts"] + dec["dur"] - 1, (f, "vad before its decode ended")
    total += len(out["segments"])
ok_calls = [e for e in by("asr call") if e["args"]["ok"] == 1]
rows = sum(e["args"]["rows"] for e in ok_calls)
p = json.load(open(prof))["asr"]
# token-limit retries decode some rows again: the profile counts those too
assert rows == p["processor_rows"] and len(ok_calls) == p["batches"], (rows, len(ok_calls), p["processor_rows"], p["batches"])
assert rows >= total, (rows, total)
assert len(by("load model")) == 1
pubs = by("publish")
assert [e["args"]["label"] for e in pubs] == order, [e["args"]["label"] for e in pubs]
assert all(a["ts"] <= b["ts"] for a, b in zip(pubs, pubs[1:]))
for e in pubs:
    vad = next(v for v in by("vad") if v["args"]["label"] == e["args"]["label"])
    assert e["ts"] >= vad["ts"] + vad["dur"] - 1, ("published before its VAD ended", e)
    assert e["tid"] == pid
calls = by("asr call")
assert calls and all(names.get(e["tid"]) == "run" for e in calls)
print(f"trace ok: {len(spans)} spans, {len(calls)} engine calls, {rows} rows for {total} segments")
PY
# an unwritable trace: the run's error, the outputs published anyway
rm -f "$c"/*.json "$c"/*.txt
rc=0
run --trace "$tmp/missing-dir/trace.json" > "$tmp/bad.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat "$tmp/bad.log"; echo "unwritable trace: exit $rc, want 1"; exit 1; }
grep -q "trace output failed" "$tmp/bad.log" || { cat "$tmp/bad.log"; echo "no trace error message"; exit 1; }
[ -f "$c/speech_pauses.json" ] || { echo "outputs not published with an unwritable trace"; exit 1; }
echo "e2e trace: ok"
