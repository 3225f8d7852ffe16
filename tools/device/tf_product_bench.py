# tf_product_bench.py — the transformers baseline over the product's own work:
# the segments and batches that bench_product_engine --dump wrote (PCM of every
# segment, the batches as the product ran them, each row's token count, the
# prompt). Per batch, as the original does it: CohereAsrFeatureExtractor on the
# CPU (its default dither), then generate with min_new_tokens = max_new_tokens
# = the batch's largest count (generate keeps every row of a batch until the
# last one ends, so this is the original's cost for those counts; EOS cannot
# end a row early). The model as tf_bench.py loads it (bf16, sdpa, on cuda;
# fp32 on cpu for the CPU smoke run). One untimed warm-up of the first batch.
#   python3 tools/device/tf_product_bench.py --model DIR --plan DIR [--device cuda|cpu]
# Prints one JSON line; writes it to --json too when given.
import argparse, json, os, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--model", required=True)
ap.add_argument("--plan", required=True, help="bench_product_engine --dump folder (plan.json, segments.f32)")
ap.add_argument("--device", default="cuda")
ap.add_argument("--json")
args = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "reference", "shim"))
import numpy as np
import torch
from transformers import CohereAsrFeatureExtractor, CohereAsrForConditionalGeneration

plan = json.load(open(os.path.join(args.plan, "plan.json")))
pcm = np.fromfile(os.path.join(args.plan, "segments.f32"), dtype="<f4")
segs = plan["segments"]
dev = args.device
dtype = torch.bfloat16 if dev == "cuda" else torch.float32
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
t0 = time.time()
model = CohereAsrForConditionalGeneration.from_pretrained(args.model, dtype=dtype, attn_implementation="sdpa").to(dev).eval()
sync()
load_s = time.time() - t0
fe = CohereAsrFeatureExtractor()
prompt = plan["prompt"]


def run(batch):
    audio = [pcm[segs[i]["offset"]:segs[i]["offset"] + segs[i]["samples"]] for i in batch]
    n = max(segs[i]["tokens"] for i in batch)
    t = time.time()
    feats = fe(audio, sampling_rate=16000, return_tensors="pt")
    feats = {k: v.to(dev) for k, v in feats.items() if torch.is_tensor(v)}
    feats["input_features"] = feats["input_features"].to(dtype)
    sync()
    tf = time.time() - t
    t = time.time()
    ids = torch.tensor([prompt], device=dev).repeat(len(batch), 1)
    with torch.inference_mode():
        out = model.generate(**feats, decoder_input_ids=ids, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                             decoder_start_token_id=prompt[0])
    sync()
    assert out.shape[1] - len(prompt) == n, (out.shape, n)  # exactly n new tokens, every row
    return tf, time.time() - t, n * len(batch)


batches = plan["batches"]
run(batches[0])  # warm-up, untimed
fe_s = gen_s = 0.0
row_steps = 0
t0 = time.time()
for b in batches:
    tf, tg, rs = run(b)
    fe_s += tf
    gen_s += tg
    row_steps += rs
total = time.time() - t0
seg_audio = sum(s["samples"] for s in segs) / 16000.0
row = dict(what="tf_product_bench", device=dev, dtype=str(dtype).replace("torch.", ""), batches=len(batches),
           segments=len(segs), tokens=sum(s["tokens"] for s in segs), row_steps=row_steps, load_s=round(load_s, 3),
           fe_s=round(fe_s, 3), generate_s=round(gen_s, 3), total_s=round(total, 3),
           file_audio_s=round(plan["file_audio_seconds"], 3), segment_audio_s=round(seg_audio, 3),
           rtfx=round(plan["file_audio_seconds"] / total, 2), rtfx_with_load=round(plan["file_audio_seconds"] / (total + load_s), 2))
print(json.dumps(row), flush=True)
if args.json:
    with open(args.json, "w") as f:
        json.dump(row, f)
