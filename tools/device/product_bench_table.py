# product_bench_table.py WORK [--cpu-smoke] — the one table of
# tools/device/product_bench.sh: the corpus, the product (wall from process
# start to exit, model load included), the engine alone over the same
# segments and token counts (the bound), the transformers baseline over the
# same batches, the GPU's utilisation while the product ran, and issue 15's
# targets beside them (not judged in a CPU smoke run: the targets are the GPU's).
import datetime, json, os, sys

work = sys.argv[1]
smoke = "--cpu-smoke" in sys.argv[2:]


def load(name):
    p = os.path.join(work, name)
    return json.load(open(p)) if os.path.exists(p) else None


def keyed(name):
    out = {}
    p = os.path.join(work, name)
    if os.path.exists(p):
        for line in open(p):
            k, *v = line.split()
            if v:
                out[k] = v
    return out


man, prof, tf = load("manifest.json"), load("product.json"), load("tf.json")
pt, eng, cl = keyed("product.time"), keyed("engine.txt"), keyed("corpus.log")
rows = []


def row(what, value, note=""):
    rows.append((what, value, note))


if man:
    codecs = {}
    for f in man["files"]:
        k = f"{f['codec']}"
        codecs[k] = codecs.get(k, 0) + 1
    rates = sorted({f["sample_rate"] for f in man["files"]})
    stereo = sum(f["channels"] == 2 for f in man["files"])
    lens = [f["duration_seconds"] for f in man["files"]]
    gen = ""
    if "corpus_start_end_unix" in cl:
        a, b = (float(x) for x in cl["corpus_start_end_unix"])
        gen = f"generated in {b - a:.1f} s"
    row("corpus", f"{len(lens)} files, {man['total_seconds'] / 3600:.2f} h", gen)
    row("  codecs", ", ".join(f"{k} {v}" for k, v in sorted(codecs.items())), f"{stereo} stereo; rates {rates[0]}-{rates[-1]} Hz")
    row("  file length", f"{min(lens):.1f}-{max(lens):.1f} s", f"speech {man['speech_seconds'] / man['total_seconds']:.0%}")
wall = None
if pt:
    wall = float(pt["product_end_unix"][0]) - float(pt["product_start_unix"][0])
if prof:
    run, a, t = prof["run"], prof["asr"], prof["timings"]
    audio = run["successful_audio_seconds"]
    row("product wall (start to exit)", f"{wall:.2f} s" if wall else "?",
        f"exit {pt.get('product_exit', ['?'])[0]}; {run['successful_files']} files ok, {run['failed_files']} failed")
    if wall:
        row("  product RTFx", f"{audio / wall:.1f}", f"{audio:.1f} s of audio / wall")
    row("  segments, batches, tokens", f"{a['processor_rows']}, {a['batches']}, {a['generated_tokens']}",
        f"rate {prof['configuration'].get('benchmark_tokens_per_second')} tokens/s; OOM retries {a['oom_retries']}")
    row("  model load", f"{t.get('asr_load_seconds', 0):.3f} s", "in the wall above")
    row("  ASR calls", f"{t.get('asr_generation_call_wall_seconds', 0):.2f} s", "sum of the engine calls' wall")
e_t = float(eng["engine_transcribe_seconds"][0]) if "engine_transcribe_seconds" in eng else None
if e_t is not None:
    e_load = float(eng["engine_load_seconds"][0])
    row("engine alone (bound)", f"{e_t:.2f} s", f"load {e_load:.2f} s apart; exit {eng.get('engine_exit', ['?'])[0]}")
    row("  engine RTFx", eng["engine_rtfx"][0], "file audio / transcribe seconds")
    row("  checks", f"batch_mismatches {eng['batch_mismatches'][0]}, formula_mismatches {eng['benchmark_tokens_per_second'][2]}",
        f"row steps {eng['engine_row_steps'][0]} vs product {eng['engine_row_steps'][2]}")
    if wall:
        row("  product wall / engine", f"{wall / e_t:.3f}", f"with the engine's load: {wall / (e_t + e_load):.3f}")
if tf:
    row("transformers baseline", f"{tf['total_s']:.2f} s", f"{tf['device']} {tf['dtype']}: features {tf['fe_s']:.2f} s + "
        f"generate {tf['generate_s']:.2f} s; load {tf['load_s']:.2f} s apart")
    row("  transformers RTFx", f"{tf['rtfx']:.1f}", f"{tf['batches']} batches, {tf['row_steps']} row steps")
    if wall and prof:
        row("  product RTFx / transformers", f"{prof['run']['successful_audio_seconds'] / wall / tf['rtfx']:.2f}", "")
gpu = os.path.join(work, "gpu.csv")
busy = None
if os.path.exists(gpu):
    s = []
    for line in open(gpu):
        parts = [p.strip() for p in line.split(",")]
        try:
            s.append((datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f"), float(parts[1])))
        except (ValueError, IndexError):
            pass
    act = [i for i, (_, u) in enumerate(s) if u > 0]
    if act:
        win = [u for _, u in s[act[0]:act[-1] + 1]]
        busy = sum(win) / len(win)
        row("GPU utilisation (nvidia-smi)", f"{busy:.1f} %", f"mean of {len(win)} samples (100 ms) from the first to the last nonzero one")
targets = [("product RTFx >= 5000 on >= 2 h", lambda: prof and wall and man["total_seconds"] >= 7200 and
            prof["run"]["successful_audio_seconds"] / wall >= 5000),
           ("product wall <= 1.2 x engine", lambda: wall and e_t and wall <= 1.2 * e_t),
           ("product >= 4 x transformers", lambda: wall and tf and prof["run"]["successful_audio_seconds"] / wall >= 4 * tf["rtfx"]),
           ("GPU busy >= 90 %", lambda: busy is not None and busy >= 90)]
w = max(len(r[0]) for r in rows) if rows else 10
v = max(len(r[1]) for r in rows) if rows else 10
print(f"issue 15 product benchmark ({'CPU smoke run: tiny model, not the targets' if smoke else 'device'})")
for what, value, note in rows:
    print(f"{what:<{w}}  {value:<{v}}  {note}")
for name, ok in targets:
    print(f"target: {name:<34} {'n/a (cpu smoke)' if smoke else ('met' if ok() else 'NOT met')}")
