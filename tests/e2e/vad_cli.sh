#!/usr/bin/env bash
# cohere-transcribe-vad end to end on the committed 70 s recording: Silero
# probabilities within 1e-4 of ONNX Runtime's and speech spans equal to the
# silero-vad package's (tests/fixtures/vad/silero_reference.json, converted
# to seconds as PRODUCT-DETAILS §8.5 says), merge, energy and fixed modes,
# the same recording as 44.1 kHz stereo WAV and MP3 (decoded by src/audio:
# the same spans within 0.1 s), and the exit status of bad invocations.
set -euo pipefail
bin="$CT_BIN/cohere-transcribe-vad"
audio="$CT_FIXTURES/vad/speech_pauses.flac"
ref="$CT_FIXTURES/vad/silero_reference.json"
weights="$CT_TESTDATA/silero/silero_vad.onnx"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bin" --mode silero --weights "$weights" "$audio" > "$tmp/silero.json"
"$bin" --mode silero --weights "$weights" --vad-merge "$audio" > "$tmp/merge.json"
"$bin" --mode silero --weights "$weights" --max-dur 5 --min-dur 0.25 --min-silence-ms 100 \
  --speech-pad-ms 30 "$audio" > "$tmp/short.json"
"$bin" --mode auditok "$audio" > "$tmp/auditok.json"
"$bin" --mode none --max-dur 20 "$audio" > "$tmp/none.json"
# Other formats go through the audio module (resampled, mixed to mono).
ffmpeg -loglevel error -y -i "$audio" -ar 44100 -ac 2 "$tmp/s44.wav"
ffmpeg -loglevel error -y -i "$audio" -ar 44100 -ac 2 -b:a 128k "$tmp/s.mp3"
"$bin" --mode silero --weights "$weights" "$tmp/s44.wav" > "$tmp/s44.json"
"$bin" --mode silero --weights "$weights" "$tmp/s.mp3" > "$tmp/mp3.json"

python3 - "$tmp" "$ref" <<'PY'
import json, sys
tmp, ref = sys.argv[1], json.load(open(sys.argv[2]))
n = ref["samples"]
def secs(spans):
    out = []
    for s, e in spans:
        s, e = max(0.0, s / 16000), min(n / 16000, e / 16000)
        if e > s:
            out.append([s, e])
    return out
runs = {r["name"]: r for r in ref["runs"]}
d = json.load(open(tmp + "/silero.json"))
assert d["duration"] == n / 16000, d["duration"]
p = d["probabilities"]
assert len(p) == len(ref["probabilities"]) == (n + 511) // 512
worst = max(abs(a - b) for a, b in zip(p, ref["probabilities"]))
assert worst <= 1e-4, worst
assert d["speech_spans"] == secs(runs["product"]["spans_samples"]), d["speech_spans"]
assert d["segments"] == d["speech_spans"]
s = json.load(open(tmp + "/short.json"))
assert s["speech_spans"] == secs(runs["short_max"]["spans_samples"])
m = json.load(open(tmp + "/merge.json"))
assert m["speech_spans"] == d["speech_spans"]
seg = m["segments"]
assert 0 < len(seg) < len(d["speech_spans"]), seg
assert all(e - s <= 30 + 1e-9 for s, e in seg)
assert seg[0][0] == d["speech_spans"][0][0] and seg[-1][1] == d["speech_spans"][-1][1]
a = json.load(open(tmp + "/auditok.json"))
assert "probabilities" not in a and a["segments"] == a["speech_spans"] and len(a["speech_spans"]) > 3
assert all(0 <= s < e <= n / 16000 and e - s <= 30 for s, e in a["speech_spans"])
f = json.load(open(tmp + "/none.json"))
assert f["segments"] == [[0.0, 20.0], [20.0, 40.0], [40.0, 60.0], [60.0, n / 16000]], f["segments"]
for other in ("s44", "mp3"):
    o = json.load(open(tmp + "/" + other + ".json"))
    assert abs(o["duration"] - n / 16000) < 0.01, (other, o["duration"])
    assert len(o["speech_spans"]) == len(d["speech_spans"]), (other, o["speech_spans"])
    worst_t = max(abs(a - b) for x, y in zip(o["speech_spans"], d["speech_spans"]) for a, b in zip(x, y))
    assert worst_t <= 0.1, (other, worst_t)
print("vad_cli: max |p - onnxruntime| = %.3g over %d frames; %d spans, %d merged segments" %
      (worst, len(p), len(d["speech_spans"]), len(seg)))
PY

expect_rc() { # want_rc args...
  local want=$1; shift
  set +e
  "$bin" "$@" > /dev/null 2> "$tmp/err"
  local rc=$?
  set -e
  if [ "$rc" != "$want" ]; then echo "exit $rc (want $want) for: $*"; cat "$tmp/err"; exit 1; fi
  if [ ! -s "$tmp/err" ]; then echo "no error message for: $*"; exit 1; fi
}
expect_rc 2 --mode bogus "$audio"
expect_rc 2 --mode silero "$audio"                       # no weights
expect_rc 2 --mode none --max-dur 0.5 "$audio"           # fixed windows need >= 1 s
expect_rc 2 --mode auditok --max-dur 40 "$audio"
expect_rc 2 --mode auditok --vad-threshold abc "$audio"
expect_rc 2 --mode none
expect_rc 1 --mode none /nonexistent/audio.wav
expect_rc 1 --mode silero --weights /nonexistent.onnx "$audio"
head -c 1000 /dev/urandom > "$tmp/junk.wav"
expect_rc 1 --mode auditok "$tmp/junk.wav"
echo "vad_cli: ok"
