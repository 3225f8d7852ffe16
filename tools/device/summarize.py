# summarize.py — one table from the JSON lines that run.sh's logs hold:
# ceilings, parity, transformers vs this engine with ratios, mixed lengths,
# OOM/fatal injection. Usage: python3 summarize.py LOG...
import json, sys

rows = []
for path in sys.argv[1:]:
    for line in open(path, errors="replace"):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                r = json.loads(line)
                if not isinstance(r, dict) or "what" not in r:
                    continue
                r["_log"] = path.rsplit("/", 1)[-1]
                rows.append(r)
            except ValueError:
                pass

def pick(what, **kw):
    return [r for r in rows if r.get("what") == what and all(r.get(k) == v for k, v in kw.items())]

out = []
def line(name, value, note=""):
    out.append(f"{name:<44} {value:>16}  {note}")

for r in pick("ceiling_gemm_bf16"):
    line("torch bf16 GEMM 8192^3 (TFLOP/s)", f"{r['tflops']:.0f}")
for r in pick("ceiling_copy"):
    line("device copy bandwidth (TB/s, r+w)", f"{r['tbps']:.2f}")
peak = None
for r in pick("ceiling_gemm_bf16_cublaslt"):
    peak = r["tflops"]
    line("cuBLASLt bf16 GEMM 8192^3 (TFLOP/s)", f"{peak:.0f}")
for r in pick("fixture_parity") + pick("fixture_parity_unfused"):
    if r["what"].endswith("unfused"):
        line("(next lines: the unfused reference attention path)", "")
    line("fixture bf16 CUDA vs fp32 reference: encoder rel L2", f"{r['enc_rel_l2']:.2e}",
         f"worst clip {r['enc_rel_l2_worst_clip']:.2e}, target ≤ 1e-2; lengths match {r['enc_lengths_match']}")
    line("fixture: greedy rows identical", f"{r['greedy_rows_identical']}/{r['rows']}", f"generated {r['generated']}")
    if "first_diff" in r:
        line("fixture: first differing step per row (-1 none)", str(r["first_diff"]),
             f"fp32 reference logit gap there (ref choice − ours) {r['ref_logit_gap_at_diff']}")
for r in pick("fixture_forced") + pick("fixture_forced_unfused"):
    line(f"{r['what']}: steps agreeing (teacher-forced)", f"{r['agree']}/{r['steps']}",
         f"near-tie flips {r['near_tie_flips']} (fp32 gap < {r['tie_bound']}), real differences "
         f"{r['real_differences']}, worst gap at a flip {r['worst_gap_at_flip']}, min reference margin "
         f"{r['min_ref_margin']}: pass {r['pass']}")
for r in pick("product_parity"):
    worst = max((x["enc_rel_l2"] for x in r["rows"]), default=float("inf"))
    same = sum(1 for x in r["rows"] if x["tokens_identical"])
    line("product path (inspect --device cuda bf16): pass", str(r["pass"]),
         f"tokens identical {same}/{r['clips']}, worst encoder rel L2 {worst:.2e} (target ≤ 1e-2)")
    for x in r["rows"]:
        if not x["tokens_identical"]:
            line(f"product clip {x['clip']}: first differing step", str(x.get("first_diff")),
                 f"fp32 reference logit gap there (ref choice − ours) {x.get('ref_logit_gap_at_diff')}")
for r in pick("parity"):
    tag = f"{r['_log'].split('.')[0]}/{r['input']}"
    line(f"parity {tag}: encoder rel L2", f"{r['enc_rel_l2']:.2e}", "target ≤ 2e-2 (bf16 vs bf16)")
    line(f"parity {tag}: first logits rel L2", f"{r['first_logits_rel_l2']:.2e}", "target ≤ 2e-2")
    if r["input"] == "pcm_gpu_mel":
        line(f"parity {tag}: GPU mel features rel L2", f"{r['features_rel_l2']:.2e}")
    line(f"parity {tag}: greedy tokens equal", f"{r['greedy_same']}/{r['greedy_total']}")
tf = pick("tf_bench", batch=128)
cu = [r for r in pick("cuda_bench") if r["batch"] == 128]
if tf:
    t = tf[-1]
    line("transformers: features (CPU) s", f"{t['fe_s']:.3f}")
    line("transformers: encoder s", f"{t['encoder_s']:.3f}")
    line("transformers: generate s", f"{t['generate_s']:.3f}")
    line("transformers: features + generate s", f"{t['fe_plus_generate_s']:.3f}", f"RTFx {t['rtfx_total']}")
if cu:
    c = cu[-1]
    line("cuda: mel (GPU) s", f"{c['mel_s']:.3f}")
    line("cuda: encoder s", f"{c['encoder_s']:.3f}", f"{c['encoder_tflops']:.0f} TFLOP/s of {c['encoder_tflop']:.0f} TFLOP")
    line("cuda: decoder (100 steps + prompt) s", f"{c['decoder_s']:.3f}")
    line("cuda: PCM -> tokens total s", f"{c['total_s']:.3f}", f"RTFx {c['rtfx_total']}")
    if peak:
        line("cuda encoder / cuBLASLt GEMM rate", f"{c['encoder_tflops'] / peak:.2f}", "target ≈ 0.6")
for c in cu[:-1]:  # variants (other logs)
    line(f"variant {c['_log']}: encoder s / total s", f"{c['encoder_s']:.3f} / {c['total_s']:.3f}",
         f"encoder ratio {tf[-1]['encoder_s'] / c['encoder_s']:.2f}x, total ratio "
         f"{tf[-1]['fe_plus_generate_s'] / c['total_s']:.2f}x" if tf else "")
if tf and cu:
    t, c = tf[-1], cu[-1]
    line("RATIO total (tf fe+generate / cuda)", f"{t['fe_plus_generate_s'] / c['total_s']:.2f}x", "target ≥ 3")
    line("RATIO encoder (tf / cuda)", f"{t['encoder_s'] / c['encoder_s']:.2f}x", "target ≥ 1.8")
    line("transformers encoder TFLOP/s (same FLOP count)", f"{c['encoder_tflop'] / t['encoder_s']:.0f}")
sched = {r["run"]: r for r in pick("sched")}
for name, r in sched.items():
    line(f"sched {name}: completed/items", f"{r['completed']}/{r['items']}",
         f"RTFx {r['rtfx']} batches {r['batches']} calls {r['calls']} oom_retries {r['oom_retries']} "
         f"cap {r['final_cap']} breaker {r['breaker_open']} {r['status']}")
if "mixed_2_35s" in sched and "uniform_30s" in sched:
    line("RATIO mixed RTFx / uniform RTFx", f"{sched['mixed_2_35s']['rtfx'] / sched['uniform_30s']['rtfx']:.2f}",
         "target ≥ 0.70")
if "noskip_mixed_2_35s" in sched and "noskip_uniform_30s" in sched:
    line("same without finished-row skipping (CT_CUDA_DEC_SKIP=0)",
         f"{sched['noskip_mixed_2_35s']['rtfx'] / sched['noskip_uniform_30s']['rtfx']:.2f}",
         f"mixed RTFx {sched['noskip_mixed_2_35s']['rtfx']} vs {sched['mixed_2_35s']['rtfx'] if 'mixed_2_35s' in sched else '?'} with")
for what in sorted({r.get("what", "") for r in rows if r.get("what", "").startswith("encoder_profile")}):
    for r in pick(what):
        items = sorted(((k[:-3], v) for k, v in r.items() if k.endswith("_ms")), key=lambda kv: -kv[1])
        tot = sum(v for _, v in items)
        line(what.replace("encoder_profile", "encoder profile ms") , f"{tot:.1f}", " ".join(f"{k}={v:.1f}" for k, v in items))
for r in pick("error"):
    line(f"ERROR in {r['_log']} at {r['at']}", "", r["message"][:200])
print("\n".join(out))
