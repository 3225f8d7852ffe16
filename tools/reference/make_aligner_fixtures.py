#!/usr/bin/env python3
"""Tiny random wav2vec2 CTC aligner + reference emissions for tests/unit/test_align_wav2vec2.c.

Run: /work/origenv/bin/python tools/reference/make_aligner_fixtures.py

Writes tests/fixtures/align/tiny-w2v2/ (config.json, model.safetensors, vocab.json as
save_pretrained writes them: the positional conv as parametrizations.weight.original0/1),
tests/fixtures/align/tiny-w2v2-gv/ (the same weights with the older weight_g/weight_v names)
and tests/fixtures/align/emissions.safetensors: the Python twin's own
cohere_transcribe.alignment.runtime.compute_emissions_streaming (34 s windows, log-softmax,
<star> column) on two clips — A (2.5 s, shorter than a window) and B (61 s, three windows) —
whose samples both sides make with the same integer generator (pcm_clip below,
tests/unit/test_align_wav2vec2.c). B is stored at every 5th frame and around the window joins.

Architecture as the MMS-300M forced aligner (feat_extract_norm "layer", stable layer norm,
strides 5,2,2,2,2,2,2, grouped positional conv with weight norm), at the sizes of the golden
helper's tiny aligner (tools/reference/make_tiny_aligner.py on branch h-golden: 32 conv
channels, 2 layers of width 32, 2 heads, FFN 64, 31 classes, seed 20261201), with the same
variance-preserving re-initialisation so the log-probs are not flat.
"""
import json
import os
import shutil
import tempfile

import numpy as np
import torch
from safetensors.numpy import save_file
from safetensors.torch import load_file, save_file as save_torch
from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

from cohere_transcribe.alignment.runtime import compute_emissions_streaming

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "align")
SEED = 20261201
VOCAB = ["<blank>", "<pad>", "</s>", "<unk>"] + list("aientousrmkldghybpwcvjzf'qx")


def build():
    cfg = Wav2Vec2Config(
        vocab_size=31, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, hidden_act="gelu", feat_extract_activation="gelu",
        conv_dim=(32,) * 7, conv_stride=(5, 2, 2, 2, 2, 2, 2), conv_kernel=(10, 3, 3, 3, 3, 2, 2),
        conv_bias=True, feat_extract_norm="layer", do_stable_layer_norm=True,
        num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
        hidden_dropout=0.0, activation_dropout=0.0, attention_dropout=0.0, feat_proj_dropout=0.0,
        final_dropout=0.0, layerdrop=0.0, mask_time_prob=0.0,
        pad_token_id=1, bos_token_id=None, eos_token_id=2,
        ctc_loss_reduction="mean", ctc_zero_infinity=True,
    )
    torch.manual_seed(SEED)
    model = Wav2Vec2ForCTC(cfg).eval()
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if "masked_spec_embed" in name:
                p.uniform_(0, 1, generator=g)
            elif p.dim() == 1 and ("layer_norm" in name or "layernorm" in name) and name.endswith("weight"):
                p.uniform_(0.8, 1.2, generator=g)
            elif p.dim() == 1:
                p.normal_(0.0, 0.02, generator=g)
            elif "parametrizations.weight.original0" in name:
                p.uniform_(0.8, 1.2, generator=g)
            else:
                fan_in = p[0].numel()
                gain = 2.0 if "conv" in name else 1.0
                p.normal_(0.0, (gain / fan_in) ** 0.5, generator=g)
        model.lm_head.weight.mul_(4.0)
        for _name, p in model.named_parameters():
            p.copy_(p.to(torch.bfloat16).to(torch.float32))
    return model


def pcm_clip(n, seed):
    """Deterministic int16-valued audio: a 32-bit LCG's noise under a slow integer envelope
    (the C test computes the same values)."""
    out = np.empty(n, dtype=np.float32)
    state = seed & 0xFFFFFFFF
    for i in range(n):
        state = (state * 1664525 + 1013904223) & 0xFFFFFFFF
        noise = (state >> 16) - 32768                    # [-32768, 32767]
        env = (i // 800) % 16                            # 0..15, 50 ms steps
        out[i] = np.float32((noise * env // 16) / 32768.0)
    return out


def main():
    model = build()
    model_dir = os.path.join(OUT, "tiny-w2v2")
    gv_dir = os.path.join(OUT, "tiny-w2v2-gv")
    for d in (model_dir, gv_dir):
        if os.path.exists(d):
            shutil.rmtree(d)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        os.makedirs(model_dir)
        for name in ("config.json", "model.safetensors"):
            shutil.copyfile(os.path.join(tmp, name), os.path.join(model_dir, name))
    with open(os.path.join(model_dir, "vocab.json"), "w", encoding="utf-8") as fh:
        json.dump({t: i for i, t in enumerate(VOCAB)}, fh, indent=1)
    # The older weight-norm spelling, same values.
    os.makedirs(gv_dir)
    tensors = load_file(os.path.join(model_dir, "model.safetensors"))
    renamed = {}
    for k, v in tensors.items():
        k = k.replace("conv.parametrizations.weight.original0", "conv.weight_g")
        k = k.replace("conv.parametrizations.weight.original1", "conv.weight_v")
        renamed[k] = v.contiguous()
    assert any(k.endswith("weight_g") for k in renamed)
    save_torch(renamed, os.path.join(gv_dir, "model.safetensors"), metadata={"format": "pt"})
    for name in ("config.json", "vocab.json"):
        shutil.copyfile(os.path.join(model_dir, name), os.path.join(gv_dir, name))

    a = pcm_clip(40000, 1)
    b = pcm_clip(976000, 2)
    ea, stride = compute_emissions_streaming(a, model, 2, "a")
    eb, _ = compute_emissions_streaming(b, model, 2, "b")
    assert stride == 20.0 and ea.shape == (125, 32) and eb.shape == (3050, 32), (ea.shape, eb.shape)
    keep = sorted(set(range(0, eb.shape[0], 5)) | set(range(1490, 1510)) | set(range(2990, 3010))
                  | set(range(eb.shape[0] - 10, eb.shape[0])))
    save_file({"a": np.ascontiguousarray(ea), "b": np.ascontiguousarray(eb[keep]),
               "b_frames": np.asarray(keep, dtype=np.int32)},
              os.path.join(OUT, "emissions.safetensors"))
    # The twin's align_words over clip A's emissions: the per-file word records.
    from cohere_transcribe.alignment.runtime import align_words

    class Tok:
        pad_token_id = 1

        def get_vocab(self):
            return {t: i for i, t in enumerate(VOCAB)}

    sets = {
        "en": [((0.0, 1.2), "la bi"), ((1.2, 2.5), "hello world again"), ((0.5, 0.52), "x"), ((2.0, 2.5), "  "),
               ((0.3, 2.1), "It’s 3 o'clock, Straße!"), ((1.0, 1.3), "a much longer sentence than fits here"),
               ((-0.2, 0.7), "<star> mark"), ((0.03, 0.05), "tiny"), ((2.2, 2.9), "past the end")],
        "ar": [((0.0, 1.3), "مرحبا بكم"), ((1.3, 2.5), "في العالم"), ((0.1, 2.4), "الإسلامُ مُحَمَّد ٣ إلى القاهرة"),
               ((0.61, 0.65), "لا"), ((0.0, 2.5), "ـــلا مؤمن (١٢) كتاب.")],
    }
    cases = []
    for lang, segs in sets.items():
        words, fallback = align_words(ea, 20.0, Tok(), [t for t, _ in segs], [x for _, x in segs], lang)
        cases.append({"language": lang, "segments": [[t[0], t[1], x] for t, x in segs], "fallback": fallback,
                      "words": [[w["start"], w["end"], w["text"], w["segment_index"], w["segment_word_index"],
                                 w["timing_source"]] for w in words]})
    with open(os.path.join(OUT, "file_words.json"), "w", encoding="utf-8") as fh:
        json.dump(cases, fh, ensure_ascii=False, indent=1)
    print("file words:", [(c["language"], len(c["words"]), c["fallback"]) for c in cases])
    print(f"emissions: a {ea.shape}, b {eb.shape} ({len(keep)} frames kept); log-prob std {eb[:, :31].std():.2f}")


if __name__ == "__main__":
    main()
