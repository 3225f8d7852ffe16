#!/usr/bin/env python3
"""Which Silero weights does the original use, and do its speech spans on the
golden corpus equal those our engine gets from the pinned silero_vad.onnx v6.2
(PyPI silero-vad 6.2.3, sha256 1a153a22...)? Writes
tests/fixtures/golden/silero_comparison.json.

The original (cohere-transcribe 0.1.4) ships two Silero assets and, on the CPU
with the default `--vad-engine auto`, runs neither through ONNX Runtime: it
selects its packed Torch network (vad/torch_silero.py), rebuilt from the
TorchScript file of silero-vad 6.2.1 (silero_vad.jit). `--vad-engine onnx`
uses the faster-whisper sequence export silero_vad_v6.onnx. For every corpus
file this computes the frame probabilities with (a) the packed Torch network
(what the goldens used), (b) the packaged sequence ONNX, (c) silero_vad.onnx
v6.2 framed as PRODUCT-DETAILS 8.1 says (64 context samples + 512, state
carried), and the spans of each through the original's own timestamp state
machine with the default parameters.

    /work/origenv/bin/python tools/reference/golden_silero.py [path/to/silero_vad.onnx]

The v6.2 file is looked up in build/testdata/silero/ (tests/setup/silero.sh
puts it there) unless given.
"""

import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "tests", "fixtures", "golden", "silero_comparison.json")
V62_SHA = "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"
CORPUS = [
    "tests/fixtures/audio/c0_tones_1s.wav", "tests/fixtures/audio/c1_en_us_3s.wav",
    "tests/fixtures/audio/c2_de_noise_6s.wav", "tests/fixtures/audio/c3_fr_ar_10s.wav",
    "tests/fixtures/audio/c4_en_gb_30s.wav", "tests/fixtures/audio/c5_es_en_34s.wav",
    "tests/fixtures/vad/speech_pauses.flac", "tests/fixtures/golden/audio/ar_pauses_17s.flac",
]


def sha256(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def v62_probabilities(session, audio):
    """silero_vad.onnx (6.x interface: input [1, 576], state [2, 1, 128], sr)
    one frame at a time, as silero-vad's OnnxWrapper and PRODUCT-DETAILS 8.1."""
    frames = (len(audio) + 511) // 512
    padded = np.zeros(frames * 512, np.float32)
    padded[:len(audio)] = audio
    state = np.zeros((2, 1, 128), np.float32)
    context = np.zeros(64, np.float32)
    sr = np.array(16000, dtype=np.int64)
    out = np.empty(frames, np.float32)
    for i in range(frames):
        frame = padded[i * 512:(i + 1) * 512]
        x = np.concatenate([context, frame])[None, :]
        p, state = session.run(None, {"input": x, "state": state, "sr": sr})
        out[i] = p.reshape(-1)[0]
        context = frame[-64:]
    return out


def main():
    import onnxruntime
    from cohere_transcribe.audio.decoding import decode_audio
    from cohere_transcribe.vad import torch_silero, vectorized_silero
    from cohere_transcribe.vad.vectorized_silero import (
        VectorizedSileroVAD, get_speech_timestamps_from_probabilities)

    v62 = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "build", "testdata", "silero",
                                                              "silero_vad.onnx")
    if not os.path.exists(v62):
        v62 = "/work/main/build/testdata/silero/silero_vad.onnx"
    if sha256(v62) != V62_SHA:
        raise SystemExit("%s is not silero_vad.onnx v6.2 (sha256 %s)" % (v62, V62_SHA))
    pkg = os.path.dirname(torch_silero.__file__)
    opts = onnxruntime.SessionOptions()
    opts.inter_op_num_threads = 1
    opts.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(v62, providers=["CPUExecutionProvider"], sess_options=opts)
    packed = torch_silero.TorchSileroSequenceVAD(sampling_rate=16000)
    seq_onnx = VectorizedSileroVAD()
    params = dict(sampling_rate=16000, threshold=0.5, min_speech_duration_ms=500,
                  max_speech_duration_s=30.0, min_silence_duration_ms=300, speech_pad_ms=60)
    files = []
    for rel in CORPUS:
        audio = decode_audio(Path(os.path.join(REPO, rel)), "auto")
        probs = {
            "packed_torch": np.asarray(packed.speech_probabilities(audio), np.float32),
            "sequence_onnx": np.asarray(seq_onnx.speech_probabilities(audio), np.float32),
            "v62_onnx": v62_probabilities(session, audio),
        }
        spans = {k: [[int(s["start"]), int(s["end"])] for s in
                     get_speech_timestamps_from_probabilities(len(audio), v, **params)]
                 for k, v in probs.items()}
        entry = {
            "file": rel,
            "samples": int(len(audio)),
            "frames": int(len(probs["v62_onnx"])),
            "spans_samples": spans,
            "spans_equal_packed_torch_vs_v62": spans["packed_torch"] == spans["v62_onnx"],
            "spans_equal_sequence_onnx_vs_v62": spans["sequence_onnx"] == spans["v62_onnx"],
            "max_abs_prob_diff_packed_torch_vs_v62": float(np.max(np.abs(probs["packed_torch"] - probs["v62_onnx"]))) if len(audio) else 0.0,
            "max_abs_prob_diff_sequence_onnx_vs_v62": float(np.max(np.abs(probs["sequence_onnx"] - probs["v62_onnx"]))) if len(audio) else 0.0,
            "max_abs_prob_diff_packed_torch_vs_sequence_onnx": float(np.max(np.abs(probs["packed_torch"] - probs["sequence_onnx"]))) if len(audio) else 0.0,
        }
        # frames where the two sides of a threshold disagree (0.5 start, 0.35 end)
        for k in ("packed_torch", "sequence_onnx"):
            a, b = probs[k], probs["v62_onnx"]
            entry["threshold_flips_%s_vs_v62" % k] = int(
                np.sum((a >= np.float32(0.5)) != (b >= np.float32(0.5)))
                + np.sum((a < np.float32(0.35)) != (b < np.float32(0.35))))
        files.append(entry)
        print("%-45s spans equal: torch=%s onnx=%s  max|dp| torch %.2e onnx %.2e" % (
            rel, entry["spans_equal_packed_torch_vs_v62"], entry["spans_equal_sequence_onnx_vs_v62"],
            entry["max_abs_prob_diff_packed_torch_vs_v62"],
            entry["max_abs_prob_diff_sequence_onnx_vs_v62"]), flush=True)
    result = {
        "generator": "tools/reference/golden_silero.py",
        "parameters": params,
        "original_assets": {
            "silero_vad.jit": {"sha256": sha256(os.path.join(pkg, "silero_vad.jit")),
                               "source": "silero-vad==6.2.1 wheel, silero_vad/data/silero_vad.jit",
                               "used_by": "--vad-engine auto (CPU default: packed Torch rebuilt from it) / torch / jit"},
            "silero_vad_v6.onnx": {"sha256": sha256(os.path.join(pkg, "silero_vad_v6.onnx")),
                                   "source": "faster-whisper sequence export",
                                   "used_by": "--vad-engine onnx (and auto's fallback when torch is unavailable)"},
        },
        "ours": {"silero_vad.onnx": {"sha256": V62_SHA, "source": "silero-vad==6.2.3 wheel"}},
        "all_spans_equal_packed_torch_vs_v62": all(f["spans_equal_packed_torch_vs_v62"] for f in files),
        "all_spans_equal_sequence_onnx_vs_v62": all(f["spans_equal_sequence_onnx_vs_v62"] for f in files),
        "files": files,
    }
    with open(OUT, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
