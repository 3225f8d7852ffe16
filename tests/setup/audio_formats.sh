#!/usr/bin/env bash
# audio_formats.sh — test audio for the decoder (tests/unit/test_audio.c) in
# $1/audio/: one espeak-ng sentence as the 16 kHz mono reference WAV, the same
# speech encoded by the ffmpeg CLI in every format the product promises, and
# a corpus of bad inputs (empty, truncated, random bytes, lying headers, NaN,
# a video without audio). Quick when the outputs exist (stamp file).
set -euo pipefail
out=${1:?usage: audio_formats.sh TESTDATA_DIR}/audio
stamp="$out/.stamp-v7"
[ -f "$stamp" ] && exit 0
mkdir -p "$out"
cd "$out"
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }

# ---- the speech source: ~8.3 s, 16 kHz mono s16 (sox -D: no dither, so the
# data is the same on every run) ----------------------------------------------
text="The quick brown fox jumps over the lazy dog. Speech recognition should \
decode every container and codec with the same samples."
espeak-ng -v en-us -s 160 -w speech_espeak.wav "$text"
sox -D speech_espeak.wav -r 16000 -c 1 -b 16 speech_ref.wav
rm -f speech_espeak.wav

# ---- the same speech in each format (bitexact: no encoder version strings) --
bx=(-fflags +bitexact -flags:a +bitexact)
ff -i speech_ref.wav "${bx[@]}" -c:a pcm_s16le speech_s16.wav
ff -i speech_ref.wav "${bx[@]}" -c:a pcm_f32le speech_f32.wav
ff -i speech_ref.wav "${bx[@]}" -ar 44100 -ac 2 -c:a pcm_s16le speech_44k_stereo.wav
ff -i speech_ref.wav "${bx[@]}" -c:a flac speech.flac
ff -i speech_ref.wav "${bx[@]}" -c:a libmp3lame -b:a 64k speech.mp3
ff -i speech_ref.wav "${bx[@]}" -c:a libopus -b:a 32k speech_opus.ogg
ff -i speech_ref.wav "${bx[@]}" -c:a libvorbis -q:a 4 speech_vorbis.ogg
ff -i speech_ref.wav "${bx[@]}" -c:a aac -b:a 64k speech.m4a
ff -i speech_ref.wav "${bx[@]}" -c:a libopus -b:a 32k speech.webm

# Channel averaging: constant channels, so the expected mono value is exact.
# 5.1 with values 0.1..0.6 → mean 0.35 (FFmpeg's default downmix would not
# give that); stereo 0.5 / -0.1 → 0.2.
ff -f lavfi -i "aevalsrc=0.1|0.2|0.3|0.4|0.5|0.6:c=5.1:s=16000:d=1" -c:a pcm_f32le const_51.wav
ff -f lavfi -i "aevalsrc=0.5|-0.1:c=stereo:s=16000:d=1" -c:a pcm_f32le const_stereo.wav

# A file longer than its header says: two MP3s back to back; the first
# one's Xing header claims 1 s, the stream goes on for ~8 s.
ff -f lavfi -i "sine=frequency=440:sample_rate=16000:duration=1" "${bx[@]}" -c:a libmp3lame -b:a 64k one_second.mp3
cat one_second.mp3 speech.mp3 > concat_lying.mp3
# The format changes mid-stream: 1 s of 44.1 kHz stereo, then the 16 kHz
# mono speech (the resampler must be drained and rebuilt in between).
ff -f lavfi -i "sine=frequency=440:sample_rate=44100:duration=1" -ac 2 "${bx[@]}" -write_xing 0 -c:a libmp3lame -b:a 96k stereo44.mp3
ff -i speech_ref.wav "${bx[@]}" -write_xing 0 -c:a libmp3lame -b:a 64k speech_noxing.mp3
cat stereo44.mp3 speech_noxing.mp3 > concat_rates.mp3
rm -f one_second.mp3 stereo44.mp3 speech_noxing.mp3
# A FLAC whose STREAMINFO claims 1 s (16000 samples) while its frames hold
# ~8 s: the memory cap must be enforced while decoding, not only up front.
python3 - <<'PY'
d = bytearray(open("speech.flac", "rb").read())
assert d[:4] == b"fLaC" and d[4] & 0x7F == 0  # STREAMINFO first
w = int.from_bytes(d[18:26], "big")            # rate:20 ch:3 bps:5 total:36
w = (w & ~((1 << 36) - 1)) | 16000
d[18:26] = w.to_bytes(8, "big")
d[26:42] = bytes(16)                           # MD5 unknown
open("lying_short.flac", "wb").write(d)
PY

# ---- bad inputs -------------------------------------------------------------
mkdir -p bad
: > bad/empty.wav
: > bad/empty.mp3
head -c 44 speech_s16.wav > bad/trunc_header.wav           # RIFF/fmt/data header only
head -c 40000 speech_s16.wav > bad/trunc_mid.wav           # 1.25 s of ~7 s
head -c 100 speech.flac > bad/trunc_header.flac            # inside the metadata
head -c $(( $(stat -c %s speech.flac) / 2 )) speech.flac > bad/trunc_mid.flac
head -c $(( $(stat -c %s speech.mp3) / 2 )) speech.mp3 > bad/trunc_mid.mp3
head -c $(( $(stat -c %s speech.m4a) / 2 )) speech.m4a > bad/trunc_mid.m4a
head -c $(( $(stat -c %s speech_opus.ogg) / 2 )) speech_opus.ogg > bad/trunc_mid_opus.ogg
head -c $(( $(stat -c %s speech.webm) / 2 )) speech.webm > bad/trunc_mid.webm
printf 'This is a text file, not audio.\nIt only has an audio extension.\n' > bad/text.mp3
python3 - <<'PY'
import random, struct, math
rng = random.Random(1234)
for ext in ("wav", "mp3", "flac", "ogg", "m4a", "opus"):
    with open(f"bad/random.{ext}", "wb") as f:
        f.write(bytes(rng.getrandbits(8) for _ in range(32768)))

def wav(path, fmt_tag, channels, rate, bits, data, data_size=None):
    block = channels * bits // 8
    size = len(data) if data_size is None else data_size
    hdr = b"RIFF" + struct.pack("<I", (36 + size) & 0xFFFFFFFF) + b"WAVE"
    hdr += b"fmt " + struct.pack("<IHHIIHH", 16, fmt_tag, channels, rate, rate * block, block, bits)
    hdr += b"data" + struct.pack("<I", size)
    with open(path, "wb") as f:
        f.write(hdr + data)

# 1 s of real 8 kHz u8 audio under a header claiming 0xFFFFFFF0 bytes (149 h):
# the decoded size (149 h at 16 kHz float32, ~32 GiB) is over the 4 GiB cap.
tone8 = bytes(128 + int(60 * math.sin(2 * math.pi * 440 * i / 8000)) for i in range(8000))
wav("bad/lying_hours.wav", 1, 1, 8000, 8, tone8, data_size=0xFFFFFFF0)
# 1 s of 16 kHz s16 under a header claiming 2 hours (under the cap): truncated.
tone16 = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / 16000))) for i in range(16000))
wav("bad/lying_2h.wav", 1, 1, 16000, 16, tone16, data_size=2 * 3600 * 16000 * 2)
# Float WAVs with one NaN / one +Inf sample at 0.5 s.
def floats(bad):
    x = [0.25 * math.sin(2 * math.pi * 440 * i / 16000) for i in range(16000)]
    x[8000] = bad
    return struct.pack(f"<{len(x)}f", *x)
wav("bad/nan.wav", 3, 1, 16000, 32, floats(float("nan")))
wav("bad/inf.wav", 3, 1, 16000, 32, floats(float("inf")))
PY
# Damaged, not cut: the middle 40 % of the bytes replaced by seeded random
# bytes (a corrupt file), and one AAC packet with 50 bytes inverted (a
# single damaged frame, which players skip: it must still decode).
python3 - <<'PY'
import random
rng = random.Random(7)
for src, dst in (("speech.m4a", "bad/corrupt_mid.m4a"), ("speech.mp3", "bad/corrupt_mid.mp3")):
    d = bytearray(open(src, "rb").read())
    for i in range(int(len(d) * 0.3), int(len(d) * 0.7)):
        d[i] = rng.getrandbits(8)
    open(dst, "wb").write(d)
d = bytearray(open("speech.m4a", "rb").read())
m = len(d) // 2
for i in range(m, m + 50):
    d[i] ^= 0xFF
open("corrupt_one.m4a", "wb").write(d)
PY
# A video with no audio stream.
ff -f lavfi -i "testsrc=duration=2:size=160x120:rate=10" -c:v mpeg4 bad/video_only.mp4

touch "$stamp"
