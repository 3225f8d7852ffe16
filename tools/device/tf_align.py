# tf_align.py — the GPU oracle and baseline of the word aligner (issue 14),
# run by tools/device/gpu_tests.sh (stage "align"): transformers'
# Wav2Vec2ForCTC on random weights of the MMS-300M architecture (the config
# of tools/bench/bench_align_transformers.py), bf16, sdpa.
#
#   python3 tf_align.py --make DIR
#       config.json + model.safetensors (save_pretrained: the positional conv
#       as parametrizations.weight.original0/1), float32
#   python3 tf_align.py --model DIR --parity PCM.f32 --clips 10,70,35 --ours E.f32
#       emissions of the clips (PCM.f32: their samples one after the other,
#       as bench_align --save-pcm writes them), every window of every clip in
#       one zero-padded batch, assembled as the Python twin's
#       _compute_emissions_streaming does (34 s windows, 2 s context, crop,
#       float32 log-softmax, a zero <star> column, the last window trimmed);
#       prints the relative L2 of ours (bench_align --clips --save) per clip
#   python3 tf_align.py --model DIR --bench 16,32,64 [--reps 3]   (with --parity too: one load)
#       seconds per batch of 34 s windows (forward, crop, log-softmax, copy
#       to the host, as the twin does), x real time counting 30 s a window,
#       and the bf16 GEMM rate (8192³ torch.matmul) in the same process
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from mms_aligner_config import mms300m_config  # noqa: E402

SR, WIN, CTX = 16000, 30 * 16000, 2 * 16000

ap = argparse.ArgumentParser()
ap.add_argument("--make")
ap.add_argument("--model")
ap.add_argument("--parity")
ap.add_argument("--clips", default="10,70,35")
ap.add_argument("--ours")
ap.add_argument("--bench")
ap.add_argument("--reps", type=int, default=3)
args = ap.parse_args()


def make(out):
    from transformers import Wav2Vec2ForCTC

    cfg = mms300m_config()
    torch.manual_seed(20261202)
    with torch.device("cuda"):  # initialising 315 M parameters on the CPU takes longer than the run
        model = Wav2Vec2ForCTC(cfg).eval()
    model.save_pretrained(out)
    print(json.dumps({"what": "random-aligner", "dir": out, "parameters": sum(p.numel() for p in model.parameters())}))


def load():
    from transformers import Wav2Vec2ForCTC

    return Wav2Vec2ForCTC.from_pretrained(args.model, dtype=torch.bfloat16, attn_implementation="sdpa").cuda().eval()


def windows_of(audio):
    n = len(audio)
    count = math.ceil(n / WIN)
    rows = np.zeros((count, WIN + 2 * CTX), dtype=np.float32)
    for w in range(count):
        s0 = w * WIN - CTX
        a, b = max(s0, 0), min(s0 + WIN + 2 * CTX, n)
        if b > a:
            rows[w, a - s0 : b - s0] = audio[a:b]
    return rows


def parity(model):
    secs = [float(s) for s in args.clips.split(",")]
    pcm = np.fromfile(args.parity, dtype=np.float32)
    ours = np.fromfile(args.ours, dtype=np.float32).reshape(-1, 32)
    clips, off = [], 0
    for s in secs:
        n = int(s * SR)
        clips.append(pcm[off : off + n])
        off += n
    assert off == len(pcm), (off, len(pcm))
    rows = [windows_of(c) for c in clips]
    batch = torch.from_numpy(np.concatenate(rows)).cuda().to(torch.bfloat16)  # one zero-padded batch
    ratio, wf, cf = 320, WIN // 320, CTX // 320
    with torch.inference_mode():
        logits = model(batch).logits
        lp = torch.log_softmax(logits[:, cf : cf + wf, :].float(), dim=-1).cpu().numpy()
    w0, e0 = 0, 0
    for i, c in enumerate(clips):
        nw = rows[i].shape[0]
        ext = (nw * WIN - len(c)) // ratio
        em = lp[w0 : w0 + nw].reshape(-1, lp.shape[-1])[: nw * wf - ext]
        em = np.concatenate([em, np.zeros((em.shape[0], 1), np.float32)], axis=1)
        mine = ours[e0 : e0 + em.shape[0]]
        rel = float(np.linalg.norm(mine - em) / np.linalg.norm(em))
        agree = float(np.mean(mine[:, :-1].argmax(1) == em[:, :-1].argmax(1)))
        print(json.dumps({"what": "align-parity", "clip_s": secs[i], "windows": nw, "frames": em.shape[0],
                          "rel_l2": round(rel, 6), "argmax_agree": round(agree, 4), "max_abs": float(np.abs(mine - em).max())}))
        w0 += nw
        e0 += em.shape[0]
    assert e0 == ours.shape[0], (e0, ours.shape)


def bench(model):
    # "twin": what _compute_emissions_streaming does per batch (windows built
    # on the host from the file's samples, uploaded, forward, crop, float32
    # log-softmax, copied back), the path our bench_align times too;
    # "on-device": the same with the batch already on the GPU (forward only)
    cf, wf = CTX // 320, WIN // 320
    for b in [int(x) for x in args.bench.split(",")]:
        audio = (0.1 * np.random.default_rng(1).standard_normal(b * WIN)).astype(np.float32)
        for mode in ("twin", "on-device"):
            xd = torch.from_numpy(windows_of(audio)).to("cuda", dtype=torch.bfloat16) if mode == "on-device" else None
            best = 1e9
            for r in range(args.reps + 1):  # the first is warm-up
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                with torch.inference_mode():
                    x = xd if xd is not None else torch.from_numpy(windows_of(audio)).to("cuda", dtype=torch.bfloat16)
                    lg = model(x).logits
                    lp = torch.log_softmax(lg[:, cf : cf + wf, :].float(), dim=-1).cpu().numpy()
                dt = time.perf_counter() - t0
                if r:
                    best = min(best, dt)
                del x, lg, lp
            print(json.dumps({"what": "emissions", "backend": "transformers-bf16-sdpa", "path": mode, "batch": b,
                              "windows": b, "wall_s": round(best, 4), "x_realtime_kept_30s": round(b * 30.0 / best, 1)}),
                  flush=True)
            del xd
            torch.cuda.empty_cache()
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    bm = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ bm
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        a @ bm
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / 20
    print(json.dumps({"what": "gemm", "dtype": "bf16", "n": 8192, "tflop_s": round(2 * 8192**3 / dt / 1e12, 1)}))


if args.make:
    make(args.make)
elif args.parity or args.bench:
    m = load()  # once for both
    if args.parity:
        parity(m)
    if args.bench:
        bench(m)
else:
    ap.error("--make DIR, --parity PCM and/or --bench B,...")
