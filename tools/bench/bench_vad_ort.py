#!/usr/bin/env python3
"""Baseline for bench_vad: ONNX Runtime (CPU, one intra-op and one inter-op
thread, as the silero-vad package configures it) running silero_vad.onnx
over a 16 kHz mono file, `batch` copies advancing together (input
[batch, 576], state [2, batch, 128]), one session.run per 512-sample frame.
  bench_vad_ort.py WEIGHTS AUDIO [batch=8] [reps=3]
Run with /work/refenv/bin/python (onnxruntime, soundfile, numpy)."""
import sys
import time

import numpy as np
import onnxruntime
import soundfile


def main():
    weights, audio = sys.argv[1], sys.argv[2]
    batch = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    x, sr = soundfile.read(audio, dtype="float32")
    assert sr == 16000 and x.ndim == 1
    opts = onnxruntime.SessionOptions()
    opts.inter_op_num_threads = 1
    opts.intra_op_num_threads = 1
    sess = onnxruntime.InferenceSession(weights, sess_options=opts, providers=["CPUExecutionProvider"])
    frames = (len(x) + 511) // 512
    padded = np.zeros(frames * 512 + 64, np.float32)
    padded[64:64 + len(x)] = x
    rows = np.stack([padded[512 * i:512 * i + 576] for i in range(frames)])  # (frames, 576)
    sr_arr = np.array(16000, dtype=np.int64)
    best = best_cpu = 1e30
    for _ in range(reps):
        state = np.zeros((2, batch, 128), np.float32)
        c0 = time.process_time()
        t0 = time.perf_counter()
        for i in range(frames):
            inp = np.repeat(rows[i:i + 1], batch, axis=0)
            out, state = sess.run(None, {"input": inp, "state": state, "sr": sr_arr})
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    audio_s = len(x) * batch / 16000
    print("onnxruntime %s (1 thread): batch %d, %.1f s of audio: wall %.3f s = %.0fx real time, "
          "CPU %.3f s = %.0fx real time per core (best of %d)"
          % (onnxruntime.__version__, batch, audio_s, best, audio_s / best, best_cpu, audio_s / best_cpu, reps))


if __name__ == "__main__":
    main()
