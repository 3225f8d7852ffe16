#!/usr/bin/env bash
# The device corpus generator (tools/device/make_corpus_seed.sh +
# bench_corpus) on a small corpus: the same seed and arguments give
# byte-identical files and manifest with 2 workers and with 1; another seed
# gives other files; every file is what the manifest says (codec, rate,
# channels by ffprobe; duration exact for wav/flac, within the codec's padding
# for mp3/opus/vorbis) and within the length limits; the total reaches the
# hours asked; and cohere-transcribe (tiny model, benchmark mode) decodes and
# segments every file, with several Silero segments in each file longer than 45 s.
set -euo pipefail
src=$CT_SOURCE
gen="$CT_BIN/bench_corpus"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bash "$src/tools/device/make_corpus_seed.sh" "$tmp/seed" 1 > "$tmp/seed.log"
[ "$(ls "$tmp/seed" | wc -l)" = 16 ] || { cat "$tmp/seed.log"; ls "$tmp/seed"; exit 1; }
args=(--seed-dir "$tmp/seed" --hours 0.06 --min-seconds 10 --max-seconds 90 --codecs wav,flac,mp3,opus,vorbis)
"$gen" "${args[@]}" --seed 5 --out "$tmp/a" --jobs 2 > "$tmp/a.log"
"$gen" "${args[@]}" --seed 5 --out "$tmp/b" --jobs 1 > "$tmp/b.log"
"$gen" "${args[@]}" --seed 6 --out "$tmp/c" --jobs 2 > "$tmp/c.log"
diff -r "$tmp/a" "$tmp/b" || { echo "same seed, different bytes"; exit 1; }
same=0
for f in "$tmp"/a/f*; do cmp -s "$f" "$tmp/c/$(basename "$f")" 2>/dev/null && same=$((same + 1)); done
[ "$same" = 0 ] || { echo "seed 6 repeated $same files of seed 5"; exit 1; }
python3 - "$tmp/a" 0.06 10 90 <<'EOF'
import json, subprocess, sys
d, hours, lo, hi = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
m = json.load(open(f"{d}/manifest.json"))
files = m["files"]
assert len(files) >= 5 and {f["codec"] for f in files} == {"wav", "flac", "mp3", "opus", "vorbis"}, files
# each file's length is rounded to whole frames at its rate (and resampled): allow 10 ms a file
assert m["total_seconds"] >= hours * 3600 - 0.01 * len(files), m["total_seconds"]
names = {"wav": "pcm_s16le", "flac": "flac", "mp3": "mp3", "opus": "opus", "vorbis": "vorbis"}
for f in files:
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels:format=duration",
                          "-of", "json", f"{d}/{f['name']}"], check=True, capture_output=True, text=True).stdout
    p = json.loads(out)
    s = p["streams"][0]
    assert s["codec_name"] == names[f["codec"]], (f, s)
    assert int(s["channels"]) == f["channels"], (f, s)
    # Ogg Opus always decodes at 48 kHz (RFC 7845); its header keeps the input rate
    assert int(s["sample_rate"]) == (48000 if f["codec"] == "opus" else f["sample_rate"]), (f, s)
    dur, want = float(p["format"]["duration"]), f["duration_seconds"]
    assert abs(want - f["frames"] / f["sample_rate"]) < 1e-9, f
    tol = 1e-3 if f["codec"] in ("wav", "flac") else 0.25  # lossy codecs: encoder delay and final-frame padding
    assert abs(dur - want) <= tol, (f, dur)
    assert lo - 1e-6 <= want <= hi + 1e-6, f
    assert 0 < f["speech_seconds"] < want and f["utterances"] >= 1, f
print(f"{len(files)} files, {m['total_seconds']:.1f} s: manifest matches")
EOF
# the product reads and segments all of them
out="$tmp/out"
rc=0
"$CT_BIN/cohere-transcribe" "$tmp/a" --model "$CT_FIXTURES/tiny-product" --vad-weights "$CT_TESTDATA/silero/silero_vad.onnx" \
  --device cpu --benchmark-tokens-per-second 3.3 --max-new-tokens 60 --max-retry-tokens 114 --formats txt \
  --output-dir "$out" --profile-json "$tmp/p.json" > "$tmp/run.log" 2>&1 || rc=$?
[ $rc = 0 ] || { echo "product: exit $rc"; tail -20 "$tmp/run.log"; exit 1; }
python3 - "$tmp/a" "$out" <<'EOF'
import glob, json, os, sys
d, out = sys.argv[1], sys.argv[2]
m = json.load(open(f"{d}/manifest.json"))
for f in m["files"]:
    stem = os.path.splitext(f["name"])[0]
    ck = json.load(open(f"{out}/.{stem}.cohere-transcribe.asr.json"))["payload"]["checkpoint"]
    n = len(ck["segment_times"])
    assert n >= 1, f
    if f["duration_seconds"] > 45:
        assert n >= 3, (f["name"], n)
    assert abs(ck["duration"] - f["duration_seconds"]) < 0.25, (f, ck["duration"])
print("product: every file decoded and segmented")
EOF
echo "bench corpus: ok"
