#!/usr/bin/env python3
"""Baseline for bench_mel: transformers' CohereAsrFeatureExtractor on one core.

Same shape of work as build/bin/bench_mel (30 s of 16 kHz audio, a chirp plus noise,
dither on), torch limited to one thread. Prints wall median/min and CPU median per call.
Run: OMP_NUM_THREADS=1 /work/refenv/bin/python tools/bench/bench_mel_reference.py [seconds] [reps]
"""
import os, sys, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference", "shim"))
import numpy as np, torch
from transformers import CohereAsrFeatureExtractor

secs = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
torch.set_num_threads(1)
n = int(secs * 16000)
t = np.arange(n) / 16000.0
x = (0.3 * np.sin(2 * np.pi * (200 + 100 * t) * t) + 0.01 * np.random.default_rng(0).standard_normal(n)).astype(np.float32)
fe = CohereAsrFeatureExtractor()
fe([x], sampling_rate=16000, return_tensors="pt")  # warm-up
walls, cpus = [], []
for _ in range(reps):
    w0, c0 = time.perf_counter(), time.process_time()
    fe([x], sampling_rate=16000, return_tensors="pt")
    walls.append(time.perf_counter() - w0)
    cpus.append(time.process_time() - c0)
walls.sort(); cpus.sort()
wm, cm = walls[len(walls) // 2], cpus[len(cpus) // 2]
print("transformers %s CohereAsrFeatureExtractor, torch %s, 1 thread: %.1f s clip, %d reps: "
      "wall median %.2f ms (%.0fx real time), wall min %.2f ms (%.0fx), CPU median %.2f ms (%.0fx)"
      % (__import__("transformers").__version__, torch.__version__, secs, reps, 1e3 * wm, secs / wm,
         1e3 * walls[0], secs / walls[0], 1e3 * cm, secs / cm))
