#!/usr/bin/env bash
# make_corpus_seed.sh [DIR] [VOICES] — the seed of the device corpus
# (tools/bench/bench_corpus.c expands it): espeak-ng speech, one sentence per
# file, 16 kHz mono Ogg Opus at 32 kbit/s (a third of FLAC's size; the
# expander decodes it with libsndfile), in DIR (default build-corpus-seed/, ignored;
# tools/device/sync.sh carries it). Every sentence below in each of VOICES
# voices (default 6: en-us en-gb de fr es it; fewer for tests), each voice at
# its own speed and pitch, so the seed has several speakers and languages.
# About 6 minutes and 1.5 MB with the 6 voices. Needs espeak-ng, sox and
# ffmpeg (libopus); deterministic for given versions of them (no dither,
# bit-exact muxing).
set -euo pipefail
root=$(git -C "$(dirname "$0")/../.." rev-parse --show-toplevel)
dir=${1:-$root/build-corpus-seed}
nvoices=${2:-6}
voices=(en-us en-gb de fr es it)
speeds=(165 150 175 160 180 155)
pitches=(50 38 60 45 55 42)
sentences=(
  "The meeting will start at nine, so please be on time."
  "We measured the throughput on every machine in the lab, and the numbers agree."
  "Yes."
  "Could you repeat the last part of the question?"
  "After the storm the river rose by almost two metres, and the old bridge was closed for a week."
  "Thank you very much."
  "The first results were promising, but the second series of tests showed a small drift in the sensor readings that nobody had expected."
  "Turn left at the station, then walk straight on for about five minutes."
  "I think so, but let me check."
  "The library opens at eight in the morning and closes at six in the evening, except on Sundays."
  "Numbers like three hundred and forty two, or nineteen eighty four, are read out in full."
  "Please send the report before Friday."
  "When the music stopped, everyone in the hall turned around to look at the door."
  "Good morning, everyone."
  "The committee has reviewed the proposal and will publish its decision next month, after the public consultation has ended."
  "It is cold outside today."
)
[ "$nvoices" -ge 1 ] && [ "$nvoices" -le ${#voices[@]} ] || { echo "VOICES: 1..${#voices[@]}" >&2; exit 2; }
command -v espeak-ng >/dev/null && command -v sox >/dev/null || { echo "needs espeak-ng and sox" >&2; exit 1; }
rm -rf "$dir" && mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
total=0
for v in $(seq 0 $((nvoices - 1))); do
  for s in "${!sentences[@]}"; do
    name=$(printf '%s/utt_%s_%02d.opus' "$dir" "${voices[$v]}" "$s")
    espeak-ng -v "${voices[$v]}" -s "${speeds[$v]}" -p "${pitches[$v]}" -w "$tmp/u.wav" "${sentences[$s]}"
    # espeak-ng pads with silence: trim it so the expander places every pause itself
    sox -D "$tmp/u.wav" -r 16000 -c 1 -b 16 "$tmp/t.wav" vol 0.9 silence 1 0.02 0.5% reverse silence 1 0.02 0.5% reverse
    ffmpeg -nostdin -loglevel error -i "$tmp/t.wav" -c:a libopus -b:a 32k -fflags +bitexact -flags:a +bitexact "$name"
    total=$(awk -v a="$total" -v b="$(soxi -D "$tmp/t.wav")" 'BEGIN {printf "%.3f", a + b}')
  done
done
echo "seed: $(ls "$dir" | wc -l) utterances, $(du -sh "$dir" | cut -f1), $total s"
