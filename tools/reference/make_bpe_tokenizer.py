"""make_bpe_tokenizer.py — write tests/fixtures/tokenizer_bpe.json: the fixture
vocabulary (tests/fixtures/tokenizer.json, Unigram, 495 pieces) as a
SentencePiece-style BPE model (the layout Llama's tokenizer.json uses:
model.vocab a {piece: id} object, merges, byte_fallback, the same added
tokens, pre-tokenizer and decoder chain). Every id keeps its piece, so a
model runs with either file and decodes to the same text: the GGUF tests use
it as the second tokenizer type. The script checks with the `tokenizers`
library that the file loads, that decode() of random id sequences equals the
Unigram file's, and that decode(encode(text)) gives the text back.

    /work/origenv/bin/python tools/reference/make_bpe_tokenizer.py

Needs: tokenizers (0.22.2 in /work/origenv). Deterministic (seeded).
"""
import json
import os
import random

from tokenizers import Tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "tests/fixtures/tokenizer.json")
OUT = os.path.join(ROOT, "tests/fixtures/tokenizer_bpe.json")

uni = json.load(open(SRC, encoding="utf-8"))
pieces = [p for p, _ in uni["model"]["vocab"]]
vocab = {p: i for i, p in enumerate(pieces)}
assert len(vocab) == len(pieces), "duplicate pieces cannot be a BPE vocabulary"
special = {a["content"] for a in uni["added_tokens"]}

# One merge per piece that two shorter pieces make (the first split, left to
# right); the order is the piece's id, so shorter pieces come first where the
# Unigram file has them first.
merges = []
for p in pieces:
    if p in special or (p.startswith("<0x") and p.endswith(">")) or len(p) < 2:
        continue
    for k in range(1, len(p)):
        a, b = p[:k], p[k:]
        if a in vocab and b in vocab:
            merges.append([a, b])
            break

bpe = {k: v for k, v in uni.items() if k != "model"}
bpe["model"] = {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                "vocab": vocab, "merges": merges}
text = json.dumps(bpe, indent=2, ensure_ascii=False) + "\n"

t_uni = Tokenizer.from_file(SRC)
t_bpe = Tokenizer.from_str(text)
assert t_bpe.get_vocab_size() == t_uni.get_vocab_size() == len(pieces)
for i, p in enumerate(pieces):
    assert t_bpe.id_to_token(i) == p, (i, p)
rng = random.Random(17)
for _ in range(2000):
    ids = [rng.randrange(len(pieces)) for _ in range(rng.randrange(0, 24))]
    for skip in (True, False):
        a, b = t_uni.decode(ids, skip_special_tokens=skip), t_bpe.decode(ids, skip_special_tokens=skip)
        assert a == b, (ids, skip, a, b)
for s in ["hello world", "Guten Tag, wie geht es?", "¿Qué tal? 1234", "naïve café ñ"]:
    assert t_bpe.decode(t_bpe.encode(s).ids) == s, s
with open(OUT, "w", encoding="utf-8") as f:
    f.write(text)
print("wrote", OUT, len(text), "bytes,", len(merges), "merges")
