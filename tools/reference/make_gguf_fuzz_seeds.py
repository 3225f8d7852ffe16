"""make_gguf_fuzz_seeds.py — write two small GGUF seeds that carry a
vocabulary, so that fuzz_gguf reaches the vocabulary read-back
(ct_convert_gguf_tokenizer_text) and the tokenizer loader:
tests/fuzz/seeds/fuzz_gguf/vocab_tokens.gguf (CrispASR-style: only
tokenizer.ggml.tokens/scores/token_type) and vocab_json.gguf (also the
tokenizer.json verbatim as tokenizer.huggingface.json). Each holds one tiny
tensor.

    python tools/reference/make_gguf_fuzz_seeds.py

Needs: gguf (0.19.0), numpy.
"""
import json
import os

import gguf
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIR = os.path.join(ROOT, "tests/fuzz/seeds/fuzz_gguf")
PIECES = ["<unk>", "<|endoftext|>", "<|startoftranscript|>", "<|pnc|>", "<|nopnc|>", "<|startofcontext|>",
          "<|noitn|>", "<|notimestamp|>", "<|nodiarize|>", "<|emo:undefined|>", "<|en|>", "<0x41>", "\u2581",
          "\u2581a", "b"]
SPECIAL = [p.startswith("<") and not p.startswith("<0x") for p in PIECES]
TOK = {"version": "1.0", "added_tokens": [{"id": i, "content": p, "special": True} for i, p in enumerate(PIECES)
                                          if SPECIAL[i]],
       "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                                                    {"type": "ByteFallback"}, {"type": "Fuse"},
                                                    {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
       "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": True, "vocab": [[p, -1.0] for p in PIECES]}}

for name, embed in (("vocab_tokens.gguf", False), ("vocab_json.gguf", True)):
    w = gguf.GGUFWriter(os.path.join(DIR, name), arch="cohere-transcribe")
    w.add_tokenizer_model("llama")
    w.add_token_list(PIECES)
    w.add_token_scores([-1.0] * len(PIECES))
    w.add_token_types([3 if s else 6 if p.startswith("<0x") else 1 for p, s in zip(PIECES, SPECIAL)])
    if embed:
        w.add_string("tokenizer.huggingface.json", json.dumps(TOK, ensure_ascii=False))
    w.add_tensor("dec.head.bias", np.zeros(4, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote", name, os.path.getsize(os.path.join(DIR, name)), "bytes")
