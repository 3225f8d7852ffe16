# align_dtype_agreement.py — how many word times move when the aligner's
# emissions come from bf16 instead of fp32 (issue 14, --align-dtype bf16).
# Word times are frame-quantised (20 ms), so a word either keeps its start and
# end exactly or moves by whole frames; this counts words, moved words and the
# frames they move, through the Python twin's own align_words (the oracle the
# C side equals: tests/unit/test_align_file.c).
#
#   /work/origenv/bin/python tools/bench/align_dtype_agreement.py \
#       --fp32 E32.f32 --bf16 E16.f32 [--segments 400] [--seed 1]
#
# E*.f32: raw float32 (frames x 32) from bench_align --save (same audio and
# model on both). Segments: random spans of 1-8 s over the file, each with 2-12
# random English words (seeded), language en.
import argparse
import json
import random

import numpy as np

from cohere_transcribe.alignment.runtime import align_words

VOCAB = ["<blank>", "<pad>", "</s>", "<unk>", "a", "i", "e", "n", "o", "u", "t", "s", "r", "m", "k", "l", "d",
         "g", "h", "y", "b", "p", "w", "c", "v", "j", "z", "f", "'", "q", "x"]
WORDS = ("the of and to in is you that it he was for on are as with his they at be this have from or one had by "
         "word but not what all were we when your can said there use an each which she do how their if will up "
         "other about out many then them these so some her would make like him into time has look two more write "
         "go see number no way could people my than first water been call who oil its now find long down day did "
         "get come made may part over new sound take only little work know place year live me back give most very "
         "after thing our just name good sentence man think say great where help through much before line right "
         "too mean old any same tell boy follow came want show also around form three small set put end does "
         "another well large must big even such because turn here why ask went men read need land different home "
         "us move try kind hand picture again change off play spell air away animal house point page letter "
         "mother answer found study still learn should america world").split()


class Tok:
    pad_token_id = 1

    def get_vocab(self):
        return {t: i for i, t in enumerate(VOCAB)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fp32", required=True)
    ap.add_argument("--bf16", required=True)
    ap.add_argument("--segments", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    e32 = np.fromfile(a.fp32, dtype=np.float32).reshape(-1, 32)
    e16 = np.fromfile(a.bf16, dtype=np.float32).reshape(-1, 32)
    assert e32.shape == e16.shape, (e32.shape, e16.shape)
    dur = e32.shape[0] * 0.02
    rng = random.Random(a.seed)
    times, texts = [], []
    for _ in range(a.segments):
        length = rng.uniform(1.0, 8.0)
        start = round(rng.uniform(0.0, max(0.0, dur - length)), 2)
        times.append((start, round(start + length, 2)))
        texts.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12))))
    w32, f32 = align_words(e32, 20.0, Tok(), times, texts, "en")
    w16, f16 = align_words(e16, 20.0, Tok(), times, texts, "en")
    assert len(w32) == len(w16)
    moved, frames = 0, []
    for x, y in zip(w32, w16):
        assert x["text"] == y["text"]
        d = max(abs(x["start"] - y["start"]), abs(x["end"] - y["end"]))
        if d > 1e-9:
            moved += 1
            frames.append(round(d / 0.02))
    em = float(np.abs(e32 - e16).max())
    print(json.dumps({"what": "align-dtype-agreement", "frames": int(e32.shape[0]), "segments": a.segments,
                      "words": len(w32), "fallback_fp32": f32, "fallback_bf16": f16, "words_moved": moved,
                      "moved_frames_max": max(frames) if frames else 0,
                      "moved_frames_median": float(np.median(frames)) if frames else 0,
                      "moved_by_1_frame": sum(1 for f in frames if f == 1),
                      "emission_max_abs_diff": em, "emission_scale": float(np.abs(e32).max()),
                      "best_class_equal": float((e32[:, :31].argmax(1) == e16[:, :31].argmax(1)).mean())}))


if __name__ == "__main__":
    main()
