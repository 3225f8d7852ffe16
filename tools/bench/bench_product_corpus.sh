#!/usr/bin/env bash
# bench_product_corpus.sh DIR [N] — the product benchmark's corpus: N files
# (default 20) of 20–45 s (638 s in all for 20; the first 5 are 144 s), each a deterministic concatenation of the bundled
# fixture clips (tests/fixtures/audio/*.wav) and stretches of
# tests/fixtures/vad/speech_pauses.flac with silences between them, in mixed
# containers (wav, flac, mp3, ogg/opus, m4a; some 44.1 kHz stereo). Quick when
# DIR/.stamp-v1-N exists. Needs sox and ffmpeg.
set -euo pipefail
dir=${1:?usage: bench_product_corpus.sh DIR [N]}
count=${2:-20}
src=$(cd "$(dirname "$0")/../.." && pwd)/tests/fixtures
[ -f "$dir/.stamp-v1-$count" ] && exit 0
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }
clips=("$src"/audio/c1_en_us_3s.wav "$src"/audio/c2_de_noise_6s.wav "$src"/audio/c3_fr_ar_10s.wav
       "$src"/audio/c4_en_gb_30s.wav "$src"/audio/c5_es_en_34s.wav "$src"/audio/c0_tones_1s.wav)
sox "$src"/vad/speech_pauses.flac -r 16000 -c 1 -b 16 "$tmp/sp.wav"
for i in $(seq 0 $((count - 1))); do
  dur=$((20 + i * 7 % 26)) # 20..45 s, 638 s over the 20 files
  parts=()
  k=0
  total=0
  while [ "$total" -lt "$dur" ]; do
    gap=$(printf '0.%02d' $(((i * 31 + k * 17) % 90 + 10))) # 0.10..0.99 s of silence
    sox -n -r 16000 -c 1 -b 16 "$tmp/g_${i}_$k.wav" trim 0 "$gap"
    parts+=("$tmp/g_${i}_$k.wav")
    if [ $(((i + k) % 3)) -eq 0 ]; then # a stretch of the 70 s speech-with-pauses file
      off=$(((i * 11 + k * 5) % 50))
      len=$((8 + (i + k) % 12))
      sox "$tmp/sp.wav" "$tmp/p_${i}_$k.wav" trim "$off" "$len"
      total=$((total + len))
    else
      c=${clips[$(((i * 5 + k * 3) % ${#clips[@]}))]}
      cp "$c" "$tmp/p_${i}_$k.wav"
      total=$((total + $(soxi -D "$c" | cut -d. -f1) + 1))
    fi
    parts+=("$tmp/p_${i}_$k.wav")
    k=$((k + 1))
  done
  sox "${parts[@]}" "$tmp/f_$i.wav" trim 0 "$dur"
  name=$(printf 'file_%02d' "$i")
  case $((i % 5)) in
  0) if [ $((i % 10)) -eq 0 ]; then sox "$tmp/f_$i.wav" -r 44100 -c 2 "$dir/$name.wav"
     else cp "$tmp/f_$i.wav" "$dir/$name.wav"; fi ;;
  1) ff -i "$tmp/f_$i.wav" -c:a flac "$dir/$name.flac" ;;
  2) ff -i "$tmp/f_$i.wav" -c:a libmp3lame -b:a 64k "$dir/$name.mp3" ;;
  3) ff -i "$tmp/f_$i.wav" -c:a libopus -b:a 32k "$dir/$name.ogg" ;;
  4) ff -i "$tmp/f_$i.wav" -ar 44100 -ac 2 -c:a aac -b:a 96k "$dir/$name.m4a" ;;
  esac
done
touch "$dir/.stamp-v1-$count"
