#!/usr/bin/env python3
"""dec_profile.py DIR — the tables of tools/device/dec_profile.sh.

slope.jsonl: per-step wall time (decoder seconds at two token counts).
kern-DEV-B.csv (ncu --page raw --csv, one row per kernel launch): the
decoder steps are the launches between two greedy kernels; the last steps
(not the first, which holds the encoder and the prompt) are summed per
kernel name and divided by their count: µs per step and launches per step.
graph-DEV-B.csv (--graph-profiling graph): each graph replay's GPU time.
"""
import csv
import glob
import json
import os
import re
import sys

d = sys.argv[1]


def rows_of(path):
    """ncu raw csv rows as dicts (the header starts with "ID"), the units row dropped."""
    lines = open(path, errors="replace").read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return [], None
    rd = list(csv.reader(lines[start:]))
    head, rest = rd[0], rd[1:]
    unit = None
    if rest and not rest[0][0].strip().isdigit():
        u = dict(zip(head, rest[0]))
        unit = u.get("gpu__time_duration.sum")
        rest = rest[1:]
    out = [dict(zip(head, r)) for r in rest if r and r[0].strip().isdigit()]
    return out, unit


def us(v, unit):
    x = float(str(v).replace(",", ""))
    return {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}.get(unit or "nsecond", 1e-3) * x


def short(n):
    n = re.sub(r"\(.*", "", n)
    n = re.sub(r"^void ", "", n)
    return n[:58]


# ---- slope ------------------------------------------------------------------
p = os.path.join(d, "slope.jsonl")
if os.path.exists(p):
    runs = {}
    for l in open(p):
        try:
            j = json.loads(re.sub(r"\binf\b", "1e309", l))  # the old engine prints inf
        except ValueError:
            continue
        runs[(j.get("device"), j.get("batch"), j.get("tokens"))] = j
    print("== per-step wall (bench_engine best of 3, decoder seconds)")
    keys = sorted({(k[0], k[1]) for k in runs}, key=lambda k: (k[1], k[0]))
    for dev, b in keys:
        ts = sorted(t for (dv, bb, t) in runs if dv == dev and bb == b)
        if len(ts) < 2:
            continue
        t1, t2 = ts[0], ts[-1]
        d1, d2 = runs[(dev, b, t1)]["decoder_s"], runs[(dev, b, t2)]["decoder_s"]
        step = (d2 - d1) / (t2 - t1)
        print("%-9s b%-4d dec(%d)=%.4f dec(%d)=%.4f  step %.1f us  fixed %.2f ms  enc %.4f" %
              (dev, b, t1, d1, t2, d2, step * 1e6, (d2 - step * t2) * 1e3, runs[(dev, b, t2)]["encoder_s"]))

# ---- per kernel ----------------------------------------------------------------
for f in sorted(glob.glob(os.path.join(d, "kern-*.csv"))):
    rows, unit = rows_of(f)
    name = os.path.basename(f)[5:-4]
    if not rows:
        print("==", name, "no rows")
        continue
    kn = "Kernel Name" if "Kernel Name" in rows[0] else "Function Name"
    g = [i for i, r in enumerate(rows) if "greedy" in r.get(kn, "")]
    print("== %s: %d launches, %d greedy" % (name, len(rows), len(g)))
    if len(g) < 3:
        continue
    # steps 2..: from after greedy[1] to greedy[-1]
    seg = rows[g[1] + 1:g[-1] + 1]
    nsteps = len(g) - 2
    agg = {}
    order = []
    for r in seg:
        k = short(r.get(kn, "?"))
        if k not in agg:
            agg[k] = [0, 0.0]
            order.append(k)
        agg[k][0] += 1
        agg[k][1] += us(r["gpu__time_duration.sum"], unit)
    tot = sum(v[1] for v in agg.values())
    print("   %d steps: %.1f us kernels per step, %.1f launches per step" % (nsteps, tot / nsteps, len(seg) / nsteps))
    for k in sorted(order, key=lambda k: -agg[k][1]):
        c, t = agg[k]
        print("   %-58s %5.1f/step %8.1f us/step %6.2f us each" % (k, c / nsteps, t / nsteps, t / c))
    # the prompt step / first step and decoder preparation: the launches before greedy[0] after the encoder's last
    pre = rows[max(0, g[0] - 160):g[0] + 1]
    tp = sum(us(r["gpu__time_duration.sum"], unit) for r in pre)
    print("   the 160 launches up to the first greedy: %.1f us" % tp)
    s1 = rows[g[0] + 1:g[1] + 1]
    print("   step after the first greedy: %d launches, %.1f us" % (len(s1), sum(us(r["gpu__time_duration.sum"], unit) for r in s1)))

# ---- graphs ---------------------------------------------------------------------
for f in sorted(glob.glob(os.path.join(d, "graph-*.csv"))):
    rows, unit = rows_of(f)
    name = os.path.basename(f)[6:-4]
    kn = "Kernel Name" if rows and "Kernel Name" in rows[0] else "Function Name"
    gr = [r for r in rows if "graph" in r.get(kn, "").lower() or r.get(kn, "") == ""]
    print("== graph %s: %d results, %d graph-like" % (name, len(rows), len(gr)))
    for r in rows[-14:]:
        print("   %-40s %9.1f us" % (short(r.get(kn, "?")), us(r["gpu__time_duration.sum"], unit)))
