"""check_gguf_conformance.py — check GGUF files against CrispASR's rules
(issue 17, docs/GGUF.md) with an independent reader (gguf-py's GGUFReader),
as a cross-check of tests/unit/test_gguf_conformance.c, which uses our own.

    python tools/reference/check_gguf_conformance.py NARROW FILE.gguf...

NARROW is the dtype the matrices must have (F32, F16 or BF16). Per file:
every 1-D tensor and attn.pos_bias_u/v is F32, every other tensor NARROW;
fe.mel_fb (ne [257, 128, 1]) and fe.window (ne [400]) are present; every
key has the type docs/GGUF.md lists (max_clip_s UINT32) and none else
appears; tokenizer.ggml.tokens / scores / token_type have one entry per id.
Prints one line per file; exit 1 on any finding.

Needs: gguf (0.19.0), numpy.
"""
import sys

import gguf

KEYS = {"general.architecture": "STRING", "general.name": "STRING",
        "cohere_transcribe.supported_languages": "ARRAY/STRING", "tokenizer.ggml.model": "STRING",
        "tokenizer.ggml.tokens": "ARRAY/STRING", "tokenizer.ggml.scores": "ARRAY/FLOAT32",
        "tokenizer.ggml.token_type": "ARRAY/INT32", "tokenizer.huggingface.json": "STRING"}
for k in ("vocab_size", "encoder.n_layers", "encoder.d_model", "encoder.n_heads", "encoder.head_dim",
          "encoder.ffn_dim", "encoder.conv_kernel", "decoder.n_layers", "decoder.d_model", "decoder.n_heads",
          "decoder.head_dim", "decoder.ffn_dim", "decoder.max_ctx", "audio.sample_rate", "audio.n_mels",
          "audio.n_fft", "audio.hop_length", "audio.win_length", "audio.max_clip_s", "decoder_start_token_id"):
    KEYS["cohere_transcribe." + k] = "UINT32"
for k in ("bos", "eos", "padding", "unknown"):
    KEYS[f"tokenizer.ggml.{k}_token_id"] = "UINT32"


def check(path, narrow):
    r = gguf.GGUFReader(path)
    bad = []
    for k, f in r.fields.items():
        if k.startswith("GGUF."):
            continue
        t = "/".join(x.name for x in f.types)
        if KEYS.get(k) != t:
            bad.append(f"key {k}: {t}, want {KEYS.get(k)}")
    for k in ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.model",
              "tokenizer.huggingface.json", "cohere_transcribe.vocab_size"):
        if k not in r.fields:
            bad.append(f"key {k} missing")
    n = [len(r.fields[k].data) for k in ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type")
         if k in r.fields]
    if len(set(n)) != 1:
        bad.append(f"token arrays of lengths {n}")
    names = {}
    for t in r.tensors:
        names[t.name] = t
        want = "F32" if len(t.shape) == 1 or t.name.endswith((".attn.pos_bias_u", ".attn.pos_bias_v")) else narrow
        if t.tensor_type.name != want:
            bad.append(f"{t.name} {list(map(int, t.shape))}: {t.tensor_type.name}, want {want}")
    for name, ne in (("fe.mel_fb", [257, 128, 1]), ("fe.window", [400])):
        if name not in names or list(map(int, names[name].shape)) != ne:
            bad.append(f"{name} missing or not ne {ne}")
    print(f"{path}: {len(r.tensors)} tensors, {len(r.fields)} fields, {n[0] if n else 0} tokens: "
          + ("ok" if not bad else "; ".join(bad[:8])))
    return not bad


ok = all([check(p, sys.argv[1]) for p in sys.argv[2:]])
sys.exit(0 if ok else 1)
