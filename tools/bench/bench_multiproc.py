"""Several processes on one corpus: are locks and yielding cheap? (issue 12)

    python3 tools/bench/bench_multiproc.py [--files 1000] [--procs 4] [--repeat 1] [--bin build/bin/cohere-transcribe]

Makes two identical corpora of N one-second clips (tests/fixtures/audio),
then, in this order:
  1. one process over corpus A (the baseline);
  2. P processes started together over corpus B with `--existing skip`;
  3. one `--existing skip` run over the finished corpus A with a profile.
With --repeat K, steps 1 and 2 run K times, alternating, on fresh corpora
(the machine's noise drifts: compare each pair, and the median ratio).
Reports each process's CPU time (user + system, from wait4), the total of
the P processes against the baseline, wall times, how many files each
process published / left to another process, and for run 3 its wall time,
the profile's asr.batches and timings.asr_load_seconds. CPU time, not wall:
the machine may be shared. Every run uses the tiny test model, --vad none
and --threads 1 (one core per process, no thread spinning in the count).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--files", type=int, default=1000)
ap.add_argument("--procs", type=int, default=4)
ap.add_argument("--bin", default="build/bin/cohere-transcribe")
ap.add_argument("--fixtures", default="tests/fixtures")
ap.add_argument("--repeat", type=int, default=1)
ap.add_argument("--keep", action="store_true")
a = ap.parse_args()
BIN = os.path.abspath(a.bin)
FIX = os.path.abspath(a.fixtures)
tmp = tempfile.mkdtemp(prefix="ct-bench-mp-")
ARGS = [BIN, "--model", os.path.join(FIX, "tiny-product"), "--vad", "none", "--threads", "1",
        "--max-new-tokens", "60", "--max-retry-tokens", "114", "--formats", "txt", "srt", "vtt", "json"]


def corpus(name):
    root = os.path.join(tmp, name)
    clip = os.path.join(FIX, "audio", "c0_tones_1s.wav")
    for i in range(a.files):  # 100 per folder, as a corpus of many short files is laid out
        d = os.path.join(root, "d%02d" % (i // 100))
        os.makedirs(d, exist_ok=True)
        shutil.copy(clip, os.path.join(d, "f%04d.wav" % i))
    return root


def start(args):
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL), time.time()


def finish(p, t0):
    """(rc, cpu seconds, wall seconds, stdout) of one process, its own rusage."""
    out = p.stdout.read().decode()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, ru.ru_utime + ru.ru_stime, time.time() - t0, out


def published(out):
    m = re.search(r"^    (\d+)/\d+ files finished", out, re.M)
    return int(m.group(1)) if m else 0


def left(out):
    m = re.search(r"^    Left to another process: (\d+) files?$", out, re.M)
    return int(m.group(1)) if m else 0


ratios = []
for rep in range(a.repeat):
    A, B = corpus("A%d" % rep), corpus("B%d" % rep)
    print("round %d: corpora 2 x %d one-second clips in %s" % (rep + 1, a.files, tmp))
    rc, cpu1, wall1, out = finish(*start([BIN, A] + ARGS[1:]))
    if rc != 0:
        sys.exit("baseline: exit %d\n%s" % (rc, out))
    print("1 process : cpu %.2f s  wall %.2f s  published %d" % (cpu1, wall1, published(out)))

    procs = [start([BIN, B] + ARGS[1:] + ["--existing", "skip"]) for _ in range(a.procs)]
    res = [finish(*p) for p in procs]
    total = sum(r[1] for r in res)
    for k, (rc, cpu, wall, out) in enumerate(res):
        if rc != 0:
            sys.exit("process %d: exit %d\n%s" % (k, rc, out))
        print("process %d : cpu %.2f s  wall %.2f s  published %d  left to another process %d" %
              (k, cpu, wall, published(out), left(out)))
    n_pub = sum(published(r[3]) for r in res)
    print("%d processes: total cpu %.2f s = %.3f x the one process (target <= 1.15); wall %.2f s; %d sets published"
          % (a.procs, total, total / cpu1, max(r[2] for r in res), n_pub))
    if n_pub != a.files:
        sys.exit("published %d sets of %d" % (n_pub, a.files))
    ratios.append(total / cpu1)
    if rep + 1 < a.repeat:
        shutil.rmtree(B, ignore_errors=True)
print("ratios: %s; median %.3f" % (", ".join("%.3f" % r for r in ratios), sorted(ratios)[len(ratios) // 2]))

prof = os.path.join(tmp, "skip.json")
rc, cpu, wall, out = finish(*start([BIN, A] + ARGS[1:] + ["--existing", "skip", "--profile-json", prof]))
p = json.load(open(prof))
print("skip re-run over %d finished files: exit %d, wall %.2f s (target <= 2 s), cpu %.2f s, asr batches %d, "
      "asr_load_seconds %s, \"no model was loaded\" printed: %s" %
      (a.files, rc, wall, cpu, p["asr"]["batches"], p["timings"]["asr_load_seconds"],
       "All inputs were skipped; no model was loaded." in out))
if not a.keep:
    shutil.rmtree(tmp, ignore_errors=True)
