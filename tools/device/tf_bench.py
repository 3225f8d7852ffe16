# tf_bench.py — the transformers baseline and the device ceilings, run on the GPU device.
#
# Measures, in one process: the bf16 GEMM rate (8192^3, random data) and the
# device-to-device copy bandwidth (the ceilings METHOD.md asks for), then the
# transformers reference (CohereAsrForConditionalGeneration, bf16, sdpa) on a
# full-size random-weight model: CPU feature extraction, the encoder alone and
# generate with exactly N new tokens. Derived from ../shared/reference/
# transformers_baseline.py (same model construction and timing scheme).
#   python3 tools/device/tf_bench.py [--model DIR] [--save DIR] [--cases 128x30x100,...]
# Prints one JSON line per measurement; writes $OUT/tf_bench.json.
import argparse, json, os, sys, time

ap = argparse.ArgumentParser()
ap.add_argument("--model", help="load this checkpoint directory instead of random init")
ap.add_argument("--save", help="save the random model (bf16, save_pretrained) here")
ap.add_argument("--cases", default="128x30x100")
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--ceilings", action="store_true")
ap.add_argument("--dump", help="write parity tensors (features, encoder out, first logits) here")
ap.add_argument("--tiny", action="store_true", help="a 2+2-layer random model (memcheck and quick parity)")
args = ap.parse_args()
OUT = os.environ.get("OUT", "/tmp/out")
os.makedirs(OUT, exist_ok=True)
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "reference", "shim"))
import torch, transformers
from transformers import CohereAsrConfig, CohereAsrForConditionalGeneration, CohereAsrFeatureExtractor
results = []
def emit(**row):
    print(json.dumps(row), flush=True)
    results.append(row)

emit(what="versions", torch=torch.__version__, transformers=transformers.__version__,
     gpu=torch.cuda.get_device_name(0), sms=torch.cuda.get_device_properties(0).multi_processor_count)

def cuda_time(fn, reps=10, warm=3):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    return sorted(ts)[len(ts) // 2]

if args.ceilings:
    n = 8192
    A = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    t = cuda_time(lambda: A @ B)
    emit(what="ceiling_gemm_bf16", n=n, seconds=t, tflops=2 * n**3 / t / 1e12)
    del A, B
    x = torch.randn(1 << 30, device="cuda", dtype=torch.float32)  # 4 GiB
    y = torch.empty_like(x)
    t = cuda_time(lambda: y.copy_(x))
    emit(what="ceiling_copy", bytes_rw=2 * x.numel() * 4, seconds=t, tbps=2 * x.numel() * 4 / t / 1e12)
    del x, y
    torch.cuda.empty_cache()

torch.manual_seed(0)
t0 = time.time()
if args.model:
    model = CohereAsrForConditionalGeneration.from_pretrained(args.model, dtype=torch.bfloat16,
                                                              attn_implementation="sdpa").to("cuda").eval()
else:
    if args.tiny:
        cfg = CohereAsrConfig(encoder_config=dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                                                  intermediate_size=1024, subsampling_conv_channels=64),
                              hidden_size=256, num_hidden_layers=2, num_attention_heads=2, intermediate_size=1024)
    else:
        cfg = CohereAsrConfig()
    with torch.device("cuda"):
        model = CohereAsrForConditionalGeneration._from_config(cfg, attn_implementation="sdpa",
                                                               torch_dtype=torch.bfloat16)
    model = model.to(torch.bfloat16).eval()
nparam = sum(p.numel() for p in model.parameters())
emit(what="model", params=nparam, load_s=round(time.time() - t0, 2), attn=model.config._attn_implementation)
if args.save:
    t0 = time.time()
    model.save_pretrained(args.save)
    from safetensors import safe_open
    names = []
    for fn in sorted(os.listdir(args.save)):
        if fn.endswith(".safetensors"):
            with safe_open(os.path.join(args.save, fn), "pt") as f:
                names += list(f.keys())
    emit(what="saved", dir=args.save, seconds=round(time.time() - t0, 1), files=sorted(os.listdir(args.save)),
         n_tensors=len(names), some_names=sorted(names)[:3] + [n for n in names if "pos_enc" in n or "log_softmax" in n])

fe = CohereAsrFeatureExtractor()
sr = 16000
PROMPT = [13764, 7, 4, 16, 62, 62, 5, 9, 11, 13]

def make_audio(B, secs, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [(0.1 * torch.randn(int(secs * sr), generator=g)).numpy() for _ in range(B)]

def bench(B, secs, ntok, reps):
    audio = make_audio(B, secs)
    prompt = torch.tensor([PROMPT], device="cuda").repeat(B, 1)
    enc_t, gen_t, fe_t = [], [], []
    for r in range(reps + 1):
        t = time.time()
        feats = fe(audio, sampling_rate=sr, return_tensors="pt")
        feats = {k: v.to("cuda") for k, v in feats.items() if torch.is_tensor(v)}
        feats["input_features"] = feats["input_features"].to(torch.bfloat16)
        torch.cuda.synchronize(); tf = time.time() - t
        t = time.time()
        with torch.inference_mode():
            model.get_encoder()(input_features=feats["input_features"], attention_mask=feats["attention_mask"])
        torch.cuda.synchronize(); te = time.time() - t
        t = time.time()
        with torch.inference_mode():
            out = model.generate(**feats, decoder_input_ids=prompt, max_new_tokens=ntok, min_new_tokens=ntok,
                                 do_sample=False, decoder_start_token_id=PROMPT[0])
        torch.cuda.synchronize(); tg = time.time() - t
        if r > 0:
            enc_t.append(te); gen_t.append(tg); fe_t.append(tf)
    med = lambda v: sorted(v)[len(v) // 2]
    tf, te, tg = med(fe_t), med(enc_t), med(gen_t)
    emit(what="tf_bench", batch=B, secs=secs, new_tokens=ntok, fe_s=round(tf, 4), encoder_s=round(te, 4),
         generate_s=round(tg, 4), fe_plus_generate_s=round(tf + tg, 4), rtfx_total=round(B * secs / (tf + tg), 1),
         rtfx_encoder=round(B * secs / te, 1), out_shape=list(out.shape))

for case in args.cases.split(","):
    if not case:
        continue
    B, secs, ntok = (float(x) for x in case.split("x"))
    try:
        bench(int(B), secs, int(ntok), args.reps)
    except Exception as e:  # record and go on: one failed case must not hide the others
        emit(what="tf_bench_failed", case=case, error=repr(e)[:400])
        torch.cuda.empty_cache()

if args.dump:
    # Parity tensors for the CUDA engine: features of a mixed-length batch, the
    # encoder output and the first generated step's logits, all float32.
    from safetensors.torch import save_file
    lens = [30.0, 21.3, 7.7, 2.05]
    g = torch.Generator().manual_seed(7)
    audio = [(0.1 * torch.randn(int(s * sr), generator=g)).numpy() for s in lens]
    fe0 = CohereAsrFeatureExtractor(dither=0.0)
    feats = fe0(audio, sampling_rate=sr, return_tensors="pt")
    x = feats["input_features"].to("cuda", torch.bfloat16)
    m = feats["attention_mask"].to("cuda")
    with torch.inference_mode():
        enc = model.get_encoder()(input_features=x, attention_mask=m)
        prompt = torch.tensor([PROMPT], device="cuda").repeat(len(lens), 1)
        o = model(input_features=x, attention_mask=m, decoder_input_ids=prompt)
        # decoder_start_token_id = the prompt's first token, else generate prepends bos (random
        # config has no generation_config) and the prompt would differ from the engine's
        gen = model.generate(input_features=x, attention_mask=m, decoder_input_ids=prompt, max_new_tokens=20,
                             min_new_tokens=20, do_sample=False, decoder_start_token_id=PROMPT[0])
    tensors = {"pcm_%d" % i: torch.tensor(a) for i, a in enumerate(audio)}
    tensors.update({"features": feats["input_features"].float().contiguous(),
                    "feature_lengths": feats["attention_mask"].sum(-1).to(torch.int32),
                    "encoder_out": enc.last_hidden_state.float().cpu().contiguous(),
                    "logits_last_prompt": o.logits[:, -1].float().cpu().contiguous(),
                    "greedy_tokens": gen.to(torch.int32).cpu().contiguous()})
    save_file(tensors, args.dump)
    emit(what="dumped", file=args.dump, enc_shape=list(enc.last_hidden_state.shape))

with open(os.path.join(OUT, "tf_bench.json"), "w") as f:
    json.dump(results, f, indent=1)
emit(what="peak_gib", value=round(torch.cuda.max_memory_allocated() / 2**30, 2))
