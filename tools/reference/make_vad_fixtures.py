#!/usr/bin/env python3
"""Reference output for the Silero VAD tests (run with /work/refenv/bin/python).

Reads tests/fixtures/vad/speech_pauses.flac (made by make_vad_audio.sh),
runs the silero-vad 6.2.3 package's ONNX model through ONNX Runtime (CPU,
one thread: the package's OnnxWrapper, frame by frame as its
get_speech_timestamps does) and records
  - the per-frame speech probabilities (512-sample frames, last one
    zero-padded), and
  - get_speech_timestamps' spans (in samples) for the product's parameters
    and a few other parameter sets,
into tests/fixtures/vad/silero_reference.json. The C tests compare against it.
"""
import hashlib
import json
import os
import sys

import numpy as np
import soundfile
import torch

import silero_vad
from silero_vad.utils_vad import OnnxWrapper, get_speech_timestamps

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
AUDIO = os.path.join(ROOT, "tests", "fixtures", "vad", "speech_pauses.flac")
OUT = os.path.join(ROOT, "tests", "fixtures", "vad", "silero_reference.json")

# name -> get_speech_timestamps keyword arguments. "product" is the product's
# defaults (PRODUCT-DETAILS §8.2): threshold 0.5, min_dur 0.5 s, max_dur 30 s,
# min silence 300 ms, pad 60 ms, neg_threshold left to its default
# max(threshold - 0.15, 0.01), split at silences > 98 ms.
PARAMS = {
    "product": dict(threshold=0.5, min_speech_duration_ms=500, max_speech_duration_s=30.0,
                    min_silence_duration_ms=300, speech_pad_ms=60),
    "short_max": dict(threshold=0.5, min_speech_duration_ms=250, max_speech_duration_s=5.0,
                      min_silence_duration_ms=100, speech_pad_ms=30),
    "wide_pad": dict(threshold=0.3, min_speech_duration_ms=100, max_speech_duration_s=3.0,
                     min_silence_duration_ms=500, speech_pad_ms=200),
    "strict_last_silence": dict(threshold=0.7, min_speech_duration_ms=500, max_speech_duration_s=4.0,
                                min_silence_duration_ms=300, speech_pad_ms=60,
                                use_max_poss_sil_at_max_speech=False),
}


def synthetic():
    """12 s of non-speech made from integers so that C can rebuild it
    exactly: 4 s of full-scale white noise (xorshift32, int16), 4 s of a
    0.9-amplitude 440 Hz sine rounded to int16, 4 s of the noise at 1/256.
    Samples are int16 / 32768 (as a 16-bit file decodes)."""
    out = np.zeros(12 * 16000, np.float32)
    state = 2463534242
    noise = np.zeros(4 * 16000, np.int64)
    for i in range(len(noise)):
        state ^= (state << 13) & 0xFFFFFFFF
        state ^= state >> 17
        state ^= (state << 5) & 0xFFFFFFFF
        noise[i] = (state & 0xFFFF) - 32768
    out[:64000] = noise / 32768.0
    t = np.arange(64000)
    out[64000:128000] = np.round(0.9 * 32767 * np.sin(2 * np.pi * 440 * t / 16000)) / 32768.0
    out[128000:] = np.trunc(noise / 256.0) / 32768.0
    return out


def probs_of(model, wav):
    model.reset_states()
    probs = []
    for start in range(0, len(wav), 512):
        chunk = wav[start:start + 512]
        if len(chunk) < 512:
            chunk = torch.nn.functional.pad(chunk, (0, 512 - len(chunk)))
        probs.append(float(model(chunk, 16000).item()))
    return probs


def main():
    model_path = os.path.join(os.path.dirname(silero_vad.__file__), "data", "silero_vad.onnx")
    sha = hashlib.sha256(open(model_path, "rb").read()).hexdigest()
    audio, sr = soundfile.read(AUDIO, dtype="float32")
    assert sr == 16000 and audio.ndim == 1, (sr, audio.shape)
    wav = torch.from_numpy(audio)
    model = OnnxWrapper(model_path, force_onnx_cpu=True)

    # Probabilities exactly as get_speech_timestamps computes them.
    probs = probs_of(model, wav)
    synth = probs_of(model, torch.from_numpy(synthetic()))

    runs = []
    for name, kw in PARAMS.items():
        spans = get_speech_timestamps(wav, model, sampling_rate=16000, **kw)
        runs.append({"name": name, "params": kw,
                     "spans_samples": [[int(s["start"]), int(s["end"])] for s in spans]})
        print(name, len(spans), "spans", file=sys.stderr)

    doc = {
        "made_by": "tools/reference/make_vad_fixtures.py",
        "silero_vad_version": "6.2.3",
        "onnxruntime_version": __import__("onnxruntime").__version__,
        "model_sha256": sha,
        "audio": "speech_pauses.flac",
        "samples": int(len(audio)),
        "probabilities": probs,
        "runs": runs,
        "synthetic_probabilities": synth,
    }
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print("wrote", OUT, len(probs), "frames", file=sys.stderr)


if __name__ == "__main__":
    main()
