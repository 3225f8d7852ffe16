#!/usr/bin/env bash
# cohere-transcribe over a folder tree as a user runs it: 14 files in mixed
# containers (wav, flac, mp3, ogg/opus, m4a) at three depths, one corrupt and
# one empty. Checks: exit 1; every good file's four outputs and state files
# present beside it, valid JSON; both failures named in the summary; no
# temporary or backup left; then --existing skip makes no ASR call (it loads
# the model only because the two failures are prepared again) and, once they
# are gone, loads no model and exits 0; --existing error fails at planning
# naming the existing outputs, before any decoding; --existing overwrite
# re-renders from the ASR checkpoints without loading a model.
set -euo pipefail
source "$(dirname "$0")/lib/product.sh"
a="$CT_FIXTURES/audio"
c="$tmp/corpus"
mkdir -p "$c/talks/2026/day1" "$c/talks/2026/day2" "$c/misc"
cp "$a/c1_en_us_3s.wav" "$c/a.wav"
ffmpeg -loglevel error -i "$a/c2_de_noise_6s.wav" "$c/b.flac"
ffmpeg -loglevel error -i "$a/c3_fr_ar_10s.wav" -b:a 64k "$c/talks/c.mp3"
ffmpeg -loglevel error -i "$a/c1_en_us_3s.wav" -c:a libopus -b:a 32k "$c/talks/d.opus"
ffmpeg -loglevel error -i "$a/c2_de_noise_6s.wav" -c:a libvorbis "$c/talks/e.ogg"
ffmpeg -loglevel error -i "$a/c0_tones_1s.wav" -c:a aac -b:a 64k "$c/talks/2026/f.m4a"
ffmpeg -loglevel error -i "$a/c1_en_us_3s.wav" -ar 44100 -ac 2 "$c/talks/2026/day1/g.wav"
ffmpeg -loglevel error -i "$a/c3_fr_ar_10s.wav" -ar 8000 "$c/talks/2026/day1/h.flac"
ffmpeg -loglevel error -i "$a/c2_de_noise_6s.wav" -b:a 32k "$c/talks/2026/day2/i.mp3"
cp "$a/c0_tones_1s.wav" "$c/talks/2026/day2/j.WAV"
ffmpeg -loglevel error -i "$a/c1_en_us_3s.wav" -c:a libopus "$c/misc/k.oga"
ffmpeg -loglevel error -i "$a/c3_fr_ar_10s.wav" -c:a aac "$c/misc/l.mp4"
head -c 3000 /dev/urandom > "$c/misc/corrupt.mp3"
: > "$c/misc/empty.wav"
echo "not audio" > "$c/misc/notes.txt"   # no audio extension: not picked up
run() { "$bin" "$c" --model "$model" --vad-weights "$weights" --max-new-tokens 60 --max-retry-tokens 114 \
  --formats txt srt vtt json "$@"; }

rc=0
run > "$tmp/run1.out" 2> "$tmp/run1.err" || rc=$?
[ $rc = 1 ] || { echo "first run: exit $rc, expected 1"; cat "$tmp/run1.out" "$tmp/run1.err"; exit 1; }
grep -q "12/14 files finished in" "$tmp/run1.out" || { echo "summary:"; cat "$tmp/run1.out"; exit 1; }
grep -q -- "- $c/misc/corrupt.mp3: " "$tmp/run1.out" || { echo "corrupt file not named"; cat "$tmp/run1.out"; exit 1; }
grep -q -- "- $c/misc/empty.wav: " "$tmp/run1.out" || { echo "empty file not named"; cat "$tmp/run1.out"; exit 1; }
for f in a.wav b.flac talks/c.mp3 talks/d.opus talks/e.ogg talks/2026/f.m4a talks/2026/day1/g.wav \
         talks/2026/day1/h.flac talks/2026/day2/i.mp3 talks/2026/day2/j.WAV misc/k.oga misc/l.mp4; do
  d=$(dirname "$c/$f"); s=$(basename "$f"); s=${s%.*}
  for ext in txt srt vtt json; do
    [ -f "$d/$s.$ext" ] || { echo "missing $d/$s.$ext"; exit 1; }
  done
  [ -f "$d/.$s.cohere-transcribe.manifest.json" ] && [ -f "$d/.$s.cohere-transcribe.asr.json" ] ||
    { echo "missing state files of $f"; exit 1; }
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['schema_version']==8 and d['source']['path']==sys.argv[2]" \
    "$d/$s.json" "$(realpath "$c/$f")"
done
for bad in corrupt empty; do
  ls "$c/misc/$bad".* "$c/misc/.$bad".* 2>/dev/null | grep -v "\.mp3$\|\.wav$" && { echo "outputs for $bad"; exit 1; }
done
left=$(find "$c" -name '*.tmp' -o -name '*.bak' -o -name '*.jnl' -o -name '*.new' | wc -l)
[ "$left" = 0 ] || { echo "temporaries left:"; find "$c" -name '*.tmp' -o -name '*.bak'; exit 1; }

# --existing skip: finished files cost nothing (no batch); the two failures
# are retried (and fail again: exit 1). They need decoding, so the model loads
# while they are prepared, as the original loads it whenever a file is to be
# prepared (it submits the first group, then loads the ASR model).
rc=0
run --existing skip --profile-json "$tmp/skip.json" > "$tmp/run2.out" 2>&1 || rc=$?
[ $rc = 1 ] || { echo "skip run: exit $rc"; cat "$tmp/run2.out"; exit 1; }
python3 - "$tmp/skip.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
st = [f for f in p["files"]]
assert p["asr"]["batches"] == 0, p["asr"]["batches"]
assert p["timings"]["asr_load_seconds"] > 0.0, p["timings"]["asr_load_seconds"]
assert sum(1 for f in st if f["error"] is None) == 12, [f["error"] for f in st]
PY
# only the good ones: every input skipped, exit 0, the all-skipped report
rm "$c/misc/corrupt.mp3" "$c/misc/empty.wav"
rc=0
run --existing skip > "$tmp/run3.out" 2>&1 || rc=$?
[ $rc = 0 ] || { echo "skip run without failures: exit $rc"; cat "$tmp/run3.out"; exit 1; }
grep -q "All inputs were skipped; no model was loaded." "$tmp/run3.out" || { cat "$tmp/run3.out"; exit 1; }
[ "$(grep -c '^    skipping ' "$tmp/run3.out")" = 12 ] || { cat "$tmp/run3.out"; exit 1; }

# --existing error: refused at planning, naming the outputs; nothing decoded
rc=0
run > "$tmp/run4.out" 2> "$tmp/run4.err" || rc=$?
[ $rc = 1 ] || { echo "error policy: exit $rc"; exit 1; }
grep -q "^Output already exists:" "$tmp/run4.err" || { cat "$tmp/run4.err"; exit 1; }
grep -q "^  $c/a.txt" "$tmp/run4.err" || { cat "$tmp/run4.err"; exit 1; }
grep -q "Use existing: 'overwrite' or existing: 'skip'." "$tmp/run4.err" || { cat "$tmp/run4.err"; exit 1; }
grep -q "Loading ASR" "$tmp/run4.out" && { echo "error policy decoded"; exit 1; }

# --existing overwrite with other cue limits: re-rendered from the checkpoints
before=$(sha256sum "$c/a.txt" | cut -d' ' -f1)
rc=0
run --existing overwrite --max-chars 10 --profile-json "$tmp/ow.json" > "$tmp/run5.out" 2>&1 || rc=$?
[ $rc = 0 ] || { echo "overwrite: exit $rc"; cat "$tmp/run5.out"; exit 1; }
python3 - "$tmp/ow.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
assert p["asr"]["batches"] == 0, "overwrite decoded again"
assert p["asr"]["checkpoint_resumed_files"] == 12, p["asr"]["checkpoint_resumed_files"]
assert p["timings"]["asr_load_seconds"] == 0.0, p["timings"]["asr_load_seconds"]
PY
[ "$(sha256sum "$c/a.txt" | cut -d' ' -f1)" = "$before" ] || { echo "txt changed on re-render"; exit 1; }
echo "corpus: ok"
