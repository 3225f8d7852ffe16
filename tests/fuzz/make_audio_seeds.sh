#!/usr/bin/env bash
# make_audio_seeds.sh TESTDATA OUT — seeds for fuzz_audio from the test audio
# made by tests/setup/audio_formats.sh: each file's first 60000 bytes behind
# a selector byte (extension hint index | backend << 3) for each backend.
set -euo pipefail
src=${1:?usage: make_audio_seeds.sh TESTDATA OUT}/audio
out=${2:?usage: make_audio_seeds.sh TESTDATA OUT}
mkdir -p "$out"
python3 - "$src" "$out" <<'PY'
import glob, os, sys
src, out = sys.argv[1], sys.argv[2]
idx = {'.wav': 0, '.mp3': 1, '.flac': 2, '.ogg': 3, '.m4a': 4, '.webm': 5, '.opus': 6}
n = 0
for f in sorted(glob.glob(src + '/*.*') + glob.glob(src + '/bad/*')):
    ext = os.path.splitext(f)[1]
    if ext not in idx:
        continue
    data = open(f, 'rb').read()[:60000]
    for backend in range(3):
        with open(f'{out}/{os.path.basename(f)}.{backend}', 'wb') as g:
            g.write(bytes([idx[ext] | backend << 3]) + data)
        n += 1
print(f'{n} seeds in {out}')
PY
