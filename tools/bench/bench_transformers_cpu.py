# bench_transformers_cpu.py — the CPU baseline for issue 16: transformers'
# CohereAsrForConditionalGeneration on a checkpoint directory (the full-size
# random model of cohere-transcribe-random-model), one clip of white noise,
# exactly N new tokens (EOS ignored), in the dtype asked for.
#   python3 tools/bench/bench_transformers_cpu.py --model /tmp/full --dtype bf16 \
#       --seconds 30 --tokens 100 --threads 2 [--reps 1]
# Prints one JSON line: encoder seconds (the encoder alone), generate seconds
# (features given; encoder + decoding), decoder = generate - encoder, RTFx,
# and the process CPU seconds of the encoder and generate runs.
import argparse, json, os, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--model", required=True)
ap.add_argument("--dtype", choices=["fp32", "bf16"], default="bf16")
ap.add_argument("--seconds", type=float, default=30)
ap.add_argument("--tokens", type=int, default=100)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--reps", type=int, default=1)
args = ap.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "reference", "shim"))
import torch, transformers
from transformers import CohereAsrForConditionalGeneration, CohereAsrFeatureExtractor

torch.set_num_threads(args.threads)
dt = torch.bfloat16 if args.dtype == "bf16" else torch.float32
t0 = time.time()
model = CohereAsrForConditionalGeneration.from_pretrained(args.model, dtype=dt, attn_implementation="sdpa").eval()
load_s = time.time() - t0
fe = CohereAsrFeatureExtractor.from_pretrained(args.model) if os.path.exists(
    os.path.join(args.model, "preprocessor_config.json")) else CohereAsrFeatureExtractor()
g = torch.Generator().manual_seed(1)
audio = (0.1 * torch.randn(int(args.seconds * 16000), generator=g)).numpy()
t = time.time()
feats = fe([audio], sampling_rate=16000, return_tensors="pt")
fe_s = time.time() - t
feats = {k: v for k, v in feats.items() if torch.is_tensor(v)}
feats["input_features"] = feats["input_features"].to(dt)
prompt = torch.tensor([[13764, 7, 4, 16, 62, 62, 5, 9, 11, 13]])
enc_t, gen_t, enc_c, gen_c = [], [], [], []
for r in range(args.reps + 1):  # the first run warms up
    t, c = time.time(), time.process_time()
    with torch.inference_mode():
        model.get_encoder()(input_features=feats["input_features"], attention_mask=feats.get("attention_mask"))
    te, ce = time.time() - t, time.process_time() - c
    t, c = time.time(), time.process_time()
    with torch.inference_mode():
        out = model.generate(**feats, decoder_input_ids=prompt, max_new_tokens=args.tokens,
                             min_new_tokens=args.tokens, do_sample=False)
    tg, cg = time.time() - t, time.process_time() - c
    if r > 0:
        enc_t.append(te); gen_t.append(tg); enc_c.append(ce); gen_c.append(cg)
te = min(enc_t); tg = min(gen_t)
# process CPU seconds (all threads) of the same best runs: robust to other load on shared cores
ce = enc_c[enc_t.index(te)]; cg = gen_c[gen_t.index(tg)]
print(json.dumps(dict(system="transformers", torch=torch.__version__, transformers=transformers.__version__,
                      dtype=args.dtype, threads=args.threads, seconds=args.seconds, tokens=args.tokens,
                      load_s=round(load_s, 2), features_s=round(fe_s, 3), encoder_s=round(te, 3),
                      generate_s=round(tg, 3), decoder_s=round(tg - te, 3),
                      encoder_cpu_s=round(ce, 2), generate_cpu_s=round(cg, 2),
                      ms_per_token=round((tg - te) / args.tokens * 1e3, 2),
                      rtfx=round(args.seconds / (tg + fe_s), 3), new_tokens=int(out.shape[1] - prompt.shape[1]))),
      flush=True)
