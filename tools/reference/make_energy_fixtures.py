#!/usr/bin/env python3
"""Reference spans for the energy VAD (tests/fixtures/vad/auditok_reference.json).

Runs auditok 0.5.2's own StreamTokenizer (non-strict minimum length, no
leading/trailing trimming: the settings the original uses) and its
calculate_energy over tests/fixtures/vad/speech_pauses.flac, framed as
PRODUCT-DETAILS §7 says: 800-sample windows (the last one short), samples
clamped to [-1, 1], scaled by 32767.0, rounded to binary32 and truncated to
integers. Spans are [start_window·0.05, that + samples/16000] before
validation. Run with /work/refenv/bin/python (pip install auditok==0.5.2).
"""
import json
import math
import os

import auditok
import numpy as np
import soundfile
from auditok.core import StreamTokenizer
from auditok.signal import calculate_energy

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
AUDIO = os.path.join(ROOT, "tests", "fixtures", "vad", "speech_pauses.flac")
OUT = os.path.join(ROOT, "tests", "fixtures", "vad", "auditok_reference.json")

PARAMS = {
    "product": dict(energy_threshold=50.0, min_dur=0.5, max_dur=30.0, max_silence=0.6),
    "short": dict(energy_threshold=45.0, min_dur=0.3, max_dur=3.0, max_silence=0.3),
    "no_silence": dict(energy_threshold=55.0, min_dur=0.2, max_dur=10.0, max_silence=0.0),
}


class Windows:
    """auditok data source: one (index, sample count) per read, then None."""

    def __init__(self, counts):
        self.counts, self.i = counts, 0

    def read(self):
        if self.i >= len(self.counts):
            return None
        f = (self.i, self.counts[self.i])
        self.i += 1
        return f


def spans(x, energy_threshold, min_dur, max_dur, max_silence):
    q = np.trunc((np.clip(x, -1.0, 1.0).astype(np.float64) * 32767.0).astype(np.float32)).astype(np.int64)
    counts, energies = [], []
    for a in range(0, len(q), 800):
        w = q[a:a + 800]
        counts.append(len(w))
        energies.append(float(calculate_energy(w)))
    tok = StreamTokenizer(
        validator=lambda f: energies[f[0]] >= energy_threshold,
        min_length=math.ceil(min_dur / 0.05),
        max_length=math.floor(max_dur / 0.05 + 1e-10),
        max_continuous_silence=math.floor(max_silence / 0.05 + 1e-10),
        mode=0)
    out = []
    for data, start, _end in tok.tokenize(Windows(counts)):
        s = start * 0.05
        out.append([s, s + sum(c for _, c in data) / 16000])
    return out


def main():
    x, sr = soundfile.read(AUDIO, dtype="float32")
    assert sr == 16000 and x.ndim == 1
    runs = [{"name": k, "params": v, "spans": spans(x, **v)} for k, v in PARAMS.items()]
    doc = {"made_by": "tools/reference/make_energy_fixtures.py", "auditok_version": auditok.__version__,
           "audio": "speech_pauses.flac", "samples": int(len(x)), "runs": runs}
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    for r in runs:
        print(r["name"], len(r["spans"]), "spans")


if __name__ == "__main__":
    main()
