#!/usr/bin/env bash
# bench_decode_setup.sh DIR — makes the decode benchmark's input: 10 minutes
# of espeak-ng speech (the test sentence looped), 16 kHz mono, as wav, flac,
# mp3, ogg/opus, m4a/aac. Quick when the files exist.
set -euo pipefail
dir=${1:?usage: bench_decode_setup.sh DIR}
mkdir -p "$dir"
cd "$dir"
[ -f .stamp-v1 ] && exit 0
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }
espeak-ng -v en-us -s 160 -w one.wav "The quick brown fox jumps over the lazy dog. \
Speech recognition should decode every container and codec with the same samples."
sox -D one.wav -r 16000 -c 1 -b 16 one16.wav
ff -stream_loop -1 -i one16.wav -t 600 -c:a pcm_s16le bench.wav
ff -i bench.wav -c:a flac bench.flac
ff -i bench.wav -c:a libmp3lame -b:a 64k bench.mp3
ff -i bench.wav -c:a libopus -b:a 32k bench.opus
ff -i bench.wav -c:a aac -b:a 64k bench.m4a
ff -i bench.wav -ar 44100 -ac 2 -c:a pcm_s16le bench_44k_stereo.wav
rm -f one.wav one16.wav
touch .stamp-v1
