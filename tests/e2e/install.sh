#!/usr/bin/env bash
# make install as a user or packager does it (cmake --install into a staging
# prefix): the shared library exporting the public API only, the header, the
# pkg-config file, the binaries, the Silero weights, the man page; then
# examples/transcribe.c built against the staged header and library (with the
# flags pkg-config gives) transcribes a fixture clip with the tiny model.
set -euo pipefail
build=$(dirname "$CT_BIN")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
p="$tmp/prefix"
cmake --install "$build" --prefix "$p" > "$tmp/install.log"
fail() { echo "FAIL: $*"; exit 1; }
lib=$(ls "$p"/lib*/libcohere_transcribe.so 2>/dev/null | head -1)
[ -n "$lib" ] || fail "no libcohere_transcribe.so under $p"
libdir=$(dirname "$lib")
[ -f "$p/include/cohere_transcribe.h" ] || fail "no header"
[ -f "$libdir/pkgconfig/cohere-transcribe.pc" ] || fail "no pkg-config file"
for b in cohere-transcribe cohere-transcribe-doctor cohere-transcribe-fetch cohere-transcribe-convert; do
  [ -x "$p/bin/$b" ] || fail "no $b"
done
[ -f "$p/share/man/man1/cohere-transcribe.1" ] || fail "no man page"
grep -q '^\.B \\-\\-max\\-new\\-tokens COUNT' "$p/share/man/man1/cohere-transcribe.1" || fail "man page lacks an option"
[ -f "$p/share/cohere-transcribe/silero_vad.onnx" ] || fail "no Silero weights"
# only the public API leaves the library: every exported function is ct_*
# and declared in the header
bad=$(nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | grep -v '^ct_' || true)
[ -z "$bad" ] || fail "exported beyond the API: $(echo $bad | head -c 300)"
for f in $(nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}'); do
  grep -q "\b$f(" "$p/include/cohere_transcribe.h" || fail "$f exported but not in the header"
done
# the example, built with what the .pc file says (its prefix moved to the stage)
flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --define-variable=prefix="$p" --cflags --libs cohere-transcribe)
cc -std=c17 -Wall -Werror "$CT_SOURCE/examples/transcribe.c" $flags -o "$tmp/transcribe"
cp "$CT_FIXTURES/audio/c1_en_us_3s.wav" "$tmp/a.wav"
LD_LIBRARY_PATH="$libdir" "$tmp/transcribe" --model "$CT_FIXTURES/tiny-product" "$tmp/a.wav" > "$tmp/out.txt" 2>&1 ||
  { cat "$tmp/out.txt"; fail "the example failed"; }
grep -q "1 completed, 0 failed" "$tmp/out.txt" || { cat "$tmp/out.txt"; fail "example summary"; }
# the default options publish beside the audio, through the installed Silero copy
[ -f "$tmp/a.txt" ] && [ -f "$tmp/a.srt" ] && [ -f "$tmp/a.vtt" ] || fail "the example published no outputs"
echo "install: ok ($(nm -D --defined-only "$lib" | awk '$2 == "T"' | wc -l) exported functions)"
