#!/usr/bin/env python3
"""A tiny random MMS-style CTC aligner in a Hugging Face cache layout, so the
original product (cohere-transcribe 0.1.4) runs `--alignment word` offline:

    tests/fixtures/tiny-aligner/hub/models--MahmoudAshraf--mms-300m-1130-forced-aligner/
        refs/main                      (the pinned revision)
        snapshots/49402e9577b1158620820667c218cd494cc44486/
            config.json model.safetensors vocab.json tokenizer_config.json
            special_tokens_map.json preprocessor_config.json

Point HF_HUB_CACHE at tests/fixtures/tiny-aligner/hub and set HF_HUB_OFFLINE=1.
Architecture as the real checkpoint (Wav2Vec2ForCTC, layer-norm feature
encoder, stable layer norm, conv strides 5,2,2,2,2,2,2 = 320 samples per
frame), tiny sizes (7 conv layers of 32 channels, 2 transformer layers of
width 32, 2 heads, FFN 64), vocab 31 in the order of PRODUCT-DETAILS 9.5.
Seeded; every weight re-initialised variance-preserving so the emissions
depend on the audio (the default 0.02 init gives nearly flat log-probs,
where forced-alignment paths would be decided by rounding noise).

    /work/origenv/bin/python tools/reference/make_tiny_aligner.py
"""

import json
import os
import shutil
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "tests", "fixtures", "tiny-aligner")
MODEL_ID = "MahmoudAshraf/mms-300m-1130-forced-aligner"
REVISION = "49402e9577b1158620820667c218cd494cc44486"
SEED = 20261201
# PRODUCT-DETAILS 9.5 (emission column order); check() also compares it with
# the original's own list (cohere_transcribe.doctor_support.ALIGN_VOCABULARY).
VOCAB = ["<blank>", "<pad>", "</s>", "<unk>", "a", "i", "e", "n", "o", "u", "t", "s", "r", "m",
         "k", "l", "d", "g", "h", "y", "b", "p", "w", "c", "v", "j", "z", "f", "'", "q", "x"]
HEAD_SCALE = 4.0


def snapshot_dir(root=OUT):
    repo_dir = "models--" + MODEL_ID.replace("/", "--")
    return os.path.join(root, "hub", repo_dir, "snapshots", REVISION)


def build():
    import torch
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    assert len(VOCAB) == 31
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
                # weight-norm magnitude of the positional conv
                p.uniform_(0.8, 1.2, generator=g)
            else:
                fan_in = p[0].numel()
                gain = 2.0 if "conv" in name else 1.0
                p.normal_(0.0, (gain / fan_in) ** 0.5, generator=g)
        model.lm_head.weight.mul_(HEAD_SCALE)
        # round to bf16 so any later dtype round trip is exact
        for _name, p in model.named_parameters():
            p.copy_(p.to(torch.bfloat16).to(torch.float32))
    return model


def write(root=OUT):
    snap = snapshot_dir(root)
    if os.path.exists(os.path.join(root, "hub")):
        shutil.rmtree(os.path.join(root, "hub"))
    os.makedirs(snap)
    model = build()
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        for name in ("config.json", "model.safetensors"):
            shutil.copyfile(os.path.join(tmp, name), os.path.join(snap, name))
    with open(os.path.join(snap, "vocab.json"), "w", encoding="utf-8") as fh:
        json.dump({t: i for i, t in enumerate(VOCAB)}, fh, indent=1)
        fh.write("\n")
    tok_cfg = {
        "tokenizer_class": "Wav2Vec2CTCTokenizer",
        "bos_token": None, "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>",
        "word_delimiter_token": None, "do_lower_case": False,
        "replace_word_delimiter_char": " ", "target_lang": None,
    }
    with open(os.path.join(snap, "tokenizer_config.json"), "w", encoding="utf-8") as fh:
        json.dump(tok_cfg, fh, indent=1)
        fh.write("\n")
    with open(os.path.join(snap, "special_tokens_map.json"), "w", encoding="utf-8") as fh:
        json.dump({"eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}, fh, indent=1)
        fh.write("\n")
    pre = {
        "feature_extractor_type": "Wav2Vec2FeatureExtractor", "feature_size": 1,
        "padding_side": "right", "padding_value": 0.0, "sampling_rate": 16000,
        "do_normalize": True, "return_attention_mask": True,
    }
    with open(os.path.join(snap, "preprocessor_config.json"), "w", encoding="utf-8") as fh:
        json.dump(pre, fh, indent=1)
        fh.write("\n")
    refs = os.path.join(root, "hub", "models--" + MODEL_ID.replace("/", "--"), "refs")
    os.makedirs(refs)
    with open(os.path.join(refs, "main"), "w") as fh:
        fh.write(REVISION)
    # huggingface_hub reads HF_HUB_CACHE when imported: check in a fresh process
    import subprocess
    import sys
    env = dict(os.environ, HF_HUB_CACHE=os.path.join(root, "hub"), HF_HUB_OFFLINE="1")
    subprocess.run([sys.executable, os.path.abspath(__file__), "--check", root], env=env, check=True)


def check(root=OUT):
    """Loads as the original does (offline, through the cache) and reports the
    emission spread, so a flat (useless) aligner is noticed."""
    import numpy as np
    import torch
    from transformers import AutoTokenizer, Wav2Vec2ForCTC
    tok = AutoTokenizer.from_pretrained(MODEL_ID, revision=REVISION, word_delimiter_token=None)
    from cohere_transcribe.doctor_support import ALIGN_VOCABULARY
    assert tuple(VOCAB) == tuple(ALIGN_VOCABULARY), "vocabulary order differs from the original's"
    assert tok.get_vocab() == {t: i for i, t in enumerate(VOCAB)}, tok.get_vocab()
    assert tok.pad_token_id == 1
    model = Wav2Vec2ForCTC.from_pretrained(MODEL_ID, revision=REVISION, attn_implementation="sdpa").eval()
    assert model.config.inputs_to_logits_ratio == 320
    import wave
    with wave.open(os.path.join(REPO, "tests", "fixtures", "audio", "c1_en_us_3s.wav")) as w:
        x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768
    with torch.inference_mode():
        lp = torch.log_softmax(model(torch.from_numpy(x)[None]).logits.float(), -1)[0]
    top2 = lp.topk(2, dim=-1).values
    argmax = lp.argmax(-1)
    print("tiny aligner: %d params, %d frames, log-prob std %.2f, smallest top1-top2 gap %.4f, "
          "%d distinct argmax classes" % (
              sum(p.numel() for p in model.parameters()), lp.shape[0], lp.std().item(),
              (top2[:, 0] - top2[:, 1]).min().item(), len(set(argmax.tolist()))))


if __name__ == "__main__":
    import sys
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(sys.argv[2])
    else:
        write()
