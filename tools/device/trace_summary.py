#!/usr/bin/env python3
"""trace_summary.py TRACE.json [--wall S] — what a `--trace` timeline says
about the GPU's critical path, as text (the device has no browser):

- per span name: count, total seconds, first start and last end (seconds
  since process start);
- the engine's timeline: when the first `asr call` starts, the gaps between
  consecutive calls (time the GPU gets no work from the product), and what
  overlaps the largest gaps (spans of other threads inside them);
- the tail: from the last call's end to the last span's end (or --wall).
"""
import json
import sys
from collections import defaultdict


def main():
    args = sys.argv[1:]
    wall = None
    if "--wall" in args:
        i = args.index("--wall")
        wall = float(args[i + 1])
        del args[i:i + 2]
    ev = json.load(open(args[0]))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    threads = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
    spans = [e for e in ev if e.get("ph") == "X"]
    for e in spans:
        e["t0"] = e["ts"] / 1e6
        e["t1"] = (e["ts"] + e["dur"]) / 1e6
    by = defaultdict(list)
    for e in spans:
        by[e["name"]].append(e)
    print(f"{'span':<14} {'count':>6} {'total s':>9} {'first':>8} {'last end':>9}")
    for name, es in sorted(by.items(), key=lambda kv: min(e["t0"] for e in kv[1])):
        print(f"{name:<14} {len(es):>6} {sum(e['dur'] for e in es) / 1e6:>9.3f} "
              f"{min(e['t0'] for e in es):>8.3f} {max(e['t1'] for e in es):>9.3f}")
    calls = sorted(by.get("asr call", []), key=lambda e: e["t0"])
    if not calls:
        print("no asr call spans")
        return
    end = wall if wall is not None else max(e["t1"] for e in spans)
    busy = sum(e["dur"] for e in calls) / 1e6
    print(f"\nfirst asr call at {calls[0]['t0']:.3f} s; calls {len(calls)}, in calls {busy:.3f} s; "
          f"last call ends {calls[-1]['t1']:.3f} s; end {end:.3f} s")
    gaps = [(b["t0"] - a["t1"], a["t1"], b["t0"]) for a, b in zip(calls, calls[1:])]
    tot = sum(g for g, _, _ in gaps)
    print(f"gaps between calls: {tot:.3f} s in {len(gaps)}; before the first {calls[0]['t0']:.3f} s; "
          f"after the last {end - calls[-1]['t1']:.3f} s")
    print(f"engine-thread share of [first call, last call end]: "
          f"{busy / max(1e-9, calls[-1]['t1'] - calls[0]['t0']):.3f}")
    for g, a, b in sorted(gaps, reverse=True)[:8]:
        inside = defaultdict(float)
        for e in spans:
            lo, hi = max(a, e["t0"]), min(b, e["t1"])
            if hi > lo and e["name"] != "asr call":
                inside[f"{e['name']}@{threads.get(e['tid'], e['tid'])}"] += hi - lo
        top = ", ".join(f"{k} {v:.3f}" for k, v in sorted(inside.items(), key=lambda kv: -kv[1])[:5])
        print(f"  gap {g:.3f} s at {a:.3f}: {top}")


if __name__ == "__main__":
    main()
