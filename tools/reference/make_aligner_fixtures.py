#!/usr/bin/env python3
"""Tiny random wav2vec2 CTC aligner + reference emissions for tests/unit/test_align_wav2vec2.c.

Run: /work/origenv/bin/python tools/reference/make_aligner_fixtures.py

Writes tests/fixtures/align/tiny-w2v2/ (config.json, model.safetensors, vocab.json as
save_pretrained writes them: the positional conv as parametrizations.weight.original0/1),
tests/fixtures/align/tiny-w2v2-gv/ (the same weights with the older weight_g/weight_v names)
and tests/fixtures/align/emissions.safetensors: the Python twin's own
cohere_transcribe.alignment.runtime.compute_emissions_streaming (34 s windows, log-softmax,
<star> column) on two clips — A (2.5 s, shorter than a window) and B (61 s, three windows) —
whose samples both sides make with the same integer generator (pcm_clip below,
tests/unit/test_align_wav2vec2.c). B is stored at every 5th frame and around the window joins.

The model is the tiny aligner of tools/reference/make_tiny_aligner.py (its build() and
§9.5 vocabulary, imported: one generator), so tiny-w2v2/ equals the golden runs' Hub
snapshot tests/fixtures/tiny-aligner/hub/.../snapshots/<rev>/ file for file (checked below).
"""
import json
import os
import shutil
import sys
import tempfile

import numpy as np
from safetensors.numpy import save_file
from safetensors.torch import load_file, save_file as save_torch

from cohere_transcribe.alignment.runtime import compute_emissions_streaming

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "align")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_tiny_aligner import VOCAB, build, snapshot_dir  # noqa: E402


def pcm_clip(n, seed):
    """Deterministic int16-valued audio: a 32-bit LCG's noise under a slow integer envelope
    (the C test computes the same values)."""
    out = np.empty(n, dtype=np.float32)
    state = seed & 0xFFFFFFFF
    for i in range(n):
        state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
        noise = (state >> 16) - 32768                    # [-32768, 32767]
        env = (i // 800) % 16                            # 0..15, 50 ms steps
        out[i] = np.float32((noise * env // 16) / 32768.0)
    return out


def main():
    model = build()
    model_dir = os.path.join(OUT, "tiny-w2v2")
    gv_dir = os.path.join(OUT, "tiny-w2v2-gv")
    for d in (model_dir, gv_dir):
        if os.path.exists(d):
            shutil.rmtree(d)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        os.makedirs(model_dir)
        for name in ("config.json", "model.safetensors"):
            shutil.copyfile(os.path.join(tmp, name), os.path.join(model_dir, name))
    with open(os.path.join(model_dir, "vocab.json"), "w", encoding="utf-8") as fh:
        json.dump({t: i for i, t in enumerate(VOCAB)}, fh, indent=1)
        fh.write("\n")
    for name in ("config.json", "model.safetensors", "vocab.json"):
        with open(os.path.join(model_dir, name), "rb") as a, open(os.path.join(snapshot_dir(), name), "rb") as b:
            assert a.read() == b.read(), name + " differs from the tiny aligner's Hub snapshot"
    # The older weight-norm spelling, same values.
    os.makedirs(gv_dir)
    tensors = load_file(os.path.join(model_dir, "model.safetensors"))
    renamed = {}
    for k, v in tensors.items():
        k = k.replace("conv.parametrizations.weight.original0", "conv.weight_g")
        k = k.replace("conv.parametrizations.weight.original1", "conv.weight_v")
        renamed[k] = v.contiguous()
    assert any(k.endswith("weight_g") for k in renamed)
    save_torch(renamed, os.path.join(gv_dir, "model.safetensors"), metadata={"format": "pt"})
    for name in ("config.json", "vocab.json"):
        shutil.copyfile(os.path.join(model_dir, name), os.path.join(gv_dir, name))

    a = pcm_clip(40000, 1)
    b = pcm_clip(976000, 2)
    ea, stride = compute_emissions_streaming(a, model, 2, "a")
    eb, _ = compute_emissions_streaming(b, model, 2, "b")
    assert stride == 20.0 and ea.shape == (125, 32) and eb.shape == (3050, 32), (ea.shape, eb.shape)
    keep = sorted(set(range(0, eb.shape[0], 5)) | set(range(1490, 1510)) | set(range(2990, 3010))
                  | set(range(eb.shape[0] - 10, eb.shape[0])))
    save_file({"a": np.ascontiguousarray(ea), "b": np.ascontiguousarray(eb[keep]),
               "b_frames": np.asarray(keep, dtype=np.int32)},
              os.path.join(OUT, "emissions.safetensors"))
    # The twin's align_words over clip A's emissions: the per-file word records.
    from cohere_transcribe.alignment.runtime import align_words

    class Tok:
        pad_token_id = 1

        def get_vocab(self):
            return {t: i for i, t in enumerate(VOCAB)}

    sets = {
        "en": [((0.0, 1.2), "la bi"), ((1.2, 2.5), "hello world again"), ((0.5, 0.52), "x"), ((2.0, 2.5), "  "),
               ((0.3, 2.1), "It’s 3 o'clock, Straße!"), ((1.0, 1.3), "a much longer sentence than fits here"),
               ((-0.2, 0.7), "<star> mark"), ((0.03, 0.05), "tiny"), ((2.2, 2.9), "past the end")],
        "ar": [((0.0, 1.3), "مرحبا بكم"), ((1.3, 2.5), "في العالم"), ((0.1, 2.4), "الإسلامُ مُحَمَّد ٣ إلى القاهرة"),
               ((0.61, 0.65), "لا"), ((0.0, 2.5), "ـــلا مؤمن (١٢) كتاب.")],
    }
    cases = []
    for lang, segs in sets.items():
        words, fallback = align_words(ea, 20.0, Tok(), [t for t, _ in segs], [x for _, x in segs], lang)
        cases.append({"language": lang, "segments": [[t[0], t[1], x] for t, x in segs], "fallback": fallback,
                      "words": [[w["start"], w["end"], w["text"], w["segment_index"], w["segment_word_index"],
                                 w["timing_source"]] for w in words]})
    with open(os.path.join(OUT, "file_words.json"), "w", encoding="utf-8") as fh:
        json.dump(cases, fh, ensure_ascii=False, indent=1)
    print("file words:", [(c["language"], len(c["words"]), c["fallback"]) for c in cases])
    print(f"emissions: a {ea.shape}, b {eb.shape} ({len(keep)} frames kept); log-prob std {eb[:, :31].std():.2f}")


if __name__ == "__main__":
    main()
