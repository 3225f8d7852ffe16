#!/usr/bin/env bash
# Makes tests/fixtures/vad/speech_pauses.flac: about 75 s of espeak-ng speech
# (two voices, varied rates) separated by pauses of 0.1-3 s, two bursts of
# loud noise without speech, a quiet noise floor throughout; 16 kHz mono
# 16-bit FLAC. Run once; the file is committed and the references in
# tests/fixtures/vad/*.json are made from it by make_vad_fixtures.py.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/tests/fixtures/vad/speech_pauses.flac}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
parts=()
i=0
say() { # voice speed text
  i=$((i + 1))
  espeak-ng -v "$1" -s "$2" -w "$tmp/raw$i.wav" "$3"
  sox "$tmp/raw$i.wav" -r 16000 -c 1 -b 16 "$tmp/p$i.wav"
  parts+=("$tmp/p$i.wav")
}
pause() { # seconds
  i=$((i + 1))
  sox -n -r 16000 -c 1 -b 16 "$tmp/p$i.wav" trim 0 "$1"
  parts+=("$tmp/p$i.wav")
}
noise() { # seconds volume
  i=$((i + 1))
  sox -R -n -r 16000 -c 1 -b 16 "$tmp/p$i.wav" synth "$1" brownnoise vol "$2"
  parts+=("$tmp/p$i.wav")
}
pause 1.3
say en-us 160 "The quick brown fox jumps over the lazy dog near the river bank."
pause 0.1
say en-gb 150 "Then it rested for a moment."
pause 0.25
say en-us 175 "A short pause follows this sentence, and then another one begins right away."
pause 0.5
say en-gb 140 "Numbers like three hundred and twelve are spoken slowly."
pause 1.0
noise 1.5 0.3
pause 0.7
say en-us 165 "After the noise, speech comes back with a longer passage that keeps going without any break, describing the weather, the hills, the small town by the lake, and the people who walk there every evening before dinner."
pause 2.0
say en-gb 180 "Fast speech here."
pause 0.35
say en-us 150 "Yes."
pause 3.0
say en-us 155 "This part tests a long stretch of talking. It continues from one sentence to the next with only the natural gaps between words and phrases, so the detector must decide where to cut when a maximum length is reached. The speaker goes on about trains, clocks, maps, and the colour of the sky at dawn, and then about the sound of rain on a tin roof."
pause 0.15
say en-gb 160 "Almost done now."
pause 1.2
noise 0.8 0.5
pause 0.4
say en-us 170 "The final sentence ends the recording."
pause 1.5
sox "${parts[@]}" "$tmp/speech.wav"
len=$(soxi -D "$tmp/speech.wav")
sox -R -n -r 16000 -c 1 -b 16 "$tmp/floor.wav" synth "$len" whitenoise vol 0.0015
sox -m "$tmp/speech.wav" "$tmp/floor.wav" -r 16000 -c 1 -b 16 "$out"
soxi "$out"
