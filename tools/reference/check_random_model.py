"""check_random_model.py — does transformers load a checkpoint written by
cohere-transcribe-random-model, with no missing/unexpected/mismatched keys,
and does save_pretrained of the loaded model give back the same tensor names,
shapes, dtypes and values (i.e. we wrote the layout save_pretrained writes)?

    /work/refenv/bin/python tools/reference/check_random_model.py DIR [--load-only]

--load-only skips the save_pretrained comparison (for the full-size model on a
machine with little memory: loading alone holds one copy of the weights).
Exit status 0 only when every check holds. Needs torch + transformers 5.17.
"""
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "shim"))
import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402
from transformers import CohereAsrForConditionalGeneration, GenerationConfig  # noqa: E402

d = sys.argv[1]
load_only = "--load-only" in sys.argv[2:]
cfg = json.load(open(os.path.join(d, "config.json")))
dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[cfg["dtype"]]
m, info = CohereAsrForConditionalGeneration.from_pretrained(d, output_loading_info=True, dtype=dtype)
problems = {k: v for k, v in info.items() if v}
print("loading info:", {k: (sorted(v) if isinstance(v, set) else v) for k, v in info.items()})
gen = GenerationConfig.from_pretrained(d)
tok = json.load(open(os.path.join(d, "tokenizer.json")))
space = [i for i, (p, _) in enumerate(tok["model"]["vocab"]) if p == "\u2581"]
print("decoder_start_token_id", gen.decoder_start_token_id, "id of '\u2581'", space)
if space != [gen.decoder_start_token_id] or m.config.decoder_start_token_id != gen.decoder_start_token_id:
    problems["decoder_start"] = "decoder_start_token_id is not the id of '\u2581'"
n_params = sum(p.numel() for p in m.parameters())
print("parameters", n_params, "dtype", next(m.parameters()).dtype)

with tempfile.TemporaryDirectory() as tmp:
    if load_only:
        print("PROBLEMS:", problems if problems else "none")
        sys.exit(1 if problems else 0)
    m.save_pretrained(tmp)
    with safe_open(os.path.join(d, "model.safetensors"), "pt") as a, \
         safe_open(os.path.join(tmp, "model.safetensors"), "pt") as b:
        ka, kb = set(a.keys()), set(b.keys())
        if ka != kb:
            problems["names"] = {"only ours": sorted(ka - kb), "only save_pretrained": sorted(kb - ka)}
        diff = 0
        for k in sorted(ka & kb):
            x, y = a.get_tensor(k), b.get_tensor(k)
            if x.dtype != y.dtype or x.shape != y.shape or not torch.equal(x, y):
                diff += 1
                if diff <= 5:
                    print("differs:", k, x.dtype, y.dtype, tuple(x.shape), tuple(y.shape))
        print("tensors compared", len(ka & kb), "differing", diff)
        if diff:
            problems["values"] = diff
print("PROBLEMS:", problems if problems else "none")
sys.exit(1 if problems else 0)
