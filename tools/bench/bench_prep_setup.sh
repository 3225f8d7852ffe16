#!/usr/bin/env bash
# bench_prep_setup.sh DIR — the preparation benchmark's input: 20 files of
# 60 s each (10 mp3, 10 flac), espeak-ng speech with 1 s pauses between
# sentences, 16 kHz mono; every file starts at a different point of the loop
# so that no two are identical. Quick when the files exist.
set -euo pipefail
dir=${1:?usage: bench_prep_setup.sh DIR}
mkdir -p "$dir"
cd "$dir"
[ -f .stamp-v1 ] && exit 0
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }
espeak-ng -v en-us -s 160 -w one.wav "The quick brown fox jumps over the lazy dog. \
Speech recognition should decode every container and codec with the same samples."
sox one.wav -r 16000 -c 1 -b 16 one16.wav pad 0 1
for i in $(seq -w 0 19); do
  n=$((10#$i))
  if [ $((n % 2)) -eq 0 ]; then ext=mp3; codec=(-c:a libmp3lame -b:a 64k); else ext=flac; codec=(-c:a flac); fi
  ff -stream_loop -1 -i one16.wav -ss "$((n % 9)).$((n * 37 % 100))" -t 60 "${codec[@]}" "file_$i.$ext"
done
rm -f one.wav one16.wav
touch .stamp-v1
