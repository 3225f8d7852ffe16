# bench_align_transformers.py — the CPU baseline of the word aligner (issue 14):
# transformers' Wav2Vec2ForCTC (sdpa, the twin's load_aligner settings) through
# the Python twin's own compute_emissions_streaming (34 s windows, log-softmax,
# <star> column), on random weights of the MMS-300M architecture.
#
#   /work/origenv/bin/python tools/bench/bench_align_transformers.py --make /tmp/mms300m
#       writes config.json + model.safetensors (save_pretrained: the positional
#       conv as parametrizations.weight.original0/1), 315 M parameters, 1.26 GB f32
#   /work/origenv/bin/python tools/bench/bench_align_transformers.py --model /tmp/mms300m \
#       --seconds 120 --batch 4 --threads 2 [--dtype fp32|bf16] [--reps 1] [--save E.npy]
#
# The architecture is the one of MahmoudAshraf/mms-300m-1130-forced-aligner's
# config.json (MMS-300M: 7 conv layers of 512, hidden 1024, 24 layers, 16 heads,
# FFN 4096, positional conv 128 in 16 groups, 31 classes). Prints one JSON line
# per rep, as bench_align does, with the same fields (cpu_s: the process's CPU
# seconds over the emissions, all threads; on a loaded machine compare those). --save writes the
# emissions of the last rep (float32, frames x 32) for a parity check against
# ours (bench_align --save): the audio is the same LCG noise on both sides.
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from mms_aligner_config import mms300m_config  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--make")
ap.add_argument("--model")
ap.add_argument("--seconds", type=float, default=120)
ap.add_argument("--batch", type=int, default=4)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--reps", type=int, default=1)
ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
ap.add_argument("--save")
args = ap.parse_args()

import torch  # noqa: E402

torch.set_num_threads(args.threads)


def make(out):
    from transformers import Wav2Vec2ForCTC

    cfg = mms300m_config()
    torch.manual_seed(20261202)
    model = Wav2Vec2ForCTC(cfg).eval()
    model.save_pretrained(out)
    n = sum(p.numel() for p in model.parameters())
    print(json.dumps({"what": "random-aligner", "dir": out, "parameters": n}))


def pcm(n):
    # the LCG normal noise of bench_align.c (Box-Muller over a 64-bit LCG), 0.1 scale
    out = np.empty(n, dtype=np.float64)
    m = (1 << 64) - 1
    rng = 0x9E3779B97F4A7C15
    a, c = 6364136223846793005, 1442695040888963407
    for i in range(n):
        rng = (rng * a + c) & m
        u1 = ((rng >> 11) + 0.5) / 9007199254740992.0
        rng = (rng * a + c) & m
        u2 = ((rng >> 11) + 0.5) / 9007199254740992.0
        out[i] = np.sqrt(-2 * np.log(u1)) * np.cos(6.283185307179586 * u2)
    return (0.1 * out).astype(np.float32)


def bench():
    from transformers import Wav2Vec2ForCTC

    from cohere_transcribe.alignment.runtime import compute_emissions_streaming

    dt = torch.float32 if args.dtype == "fp32" else torch.bfloat16
    model = Wav2Vec2ForCTC.from_pretrained(args.model, dtype=dt, attn_implementation="sdpa").eval()
    n = int(args.seconds * 16000)
    audio = pcm(n)
    windows = -(-n // 480000)
    em = None
    for _ in range(args.reps):
        t0, c0 = time.perf_counter(), time.process_time()
        em, _stride = compute_emissions_streaming(audio, model, args.batch, "bench")
        dt_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
        print(json.dumps({"what": "emissions", "backend": "transformers-" + args.dtype, "threads": args.threads,
                          "batch": args.batch, "audio_s": args.seconds, "windows": windows,
                          "wall_s": round(dt_s, 3), "cpu_s": round(cpu_s, 3), "x_realtime": round(args.seconds / dt_s, 2),
                          "x_realtime_kept_30s": round(windows * 30.0 / dt_s, 2)}), flush=True)
    if args.save:
        np.save(args.save, em.astype(np.float32))


if args.make:
    make(args.make)
elif args.model:
    bench()
else:
    ap.error("--make DIR or --model DIR")
