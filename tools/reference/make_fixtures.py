#!/usr/bin/env python3
"""Make the committed reference fixtures under tests/fixtures/.

Writes test audio (espeak-ng + sox, generated once and committed; reused unless
--regen-audio), a small SentencePiece-style tokenizer.json, a tiny random
CohereAsr model in both checkpoint layouts (tiny-hf: save_pretrained, f32;
tiny-nemo: Hub-release layout, bf16, same values) and reference.safetensors
(features, encoder outputs, greedy tokens and logits from transformers 5.17).
Deterministic: same versions in, same bytes out. Run from the repository root:

    /work/refenv/bin/python tools/reference/make_fixtures.py [--regen-audio | --regen-clip NAME]

Needs torch, transformers==5.17.0, tokenizers, safetensors, soundfile (or the
wave module), numpy. The librosa/soxr shim in tools/reference/shim goes first
on sys.path (the device machine has no librosa).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import wave

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "shim"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import fixture_tokenizer  # noqa: E402

FIX = os.path.join(ROOT, "tests", "fixtures")
AUDIO = os.path.join(FIX, "audio")
SR = 16000
MAX_NEW_TOKENS = 40
SEED = 20261130

# ---------------------------------------------------------------------------
# Audio. Sample counts are deliberately not multiples of the 160-sample hop.
# Each entry: name, exact sample count, list of (kind, args) pieces, noise.
CLIPS = [
    ("c0_tones_1s", 16037, None),
    ("c1_en_us_3s", 43517, ("en-us", 160, "Hello world. This is a short test of the system.")),
    ("c2_de_noise_6s", 97213, ("de", 150, "Guten Morgen. Heute ist das Wetter schön, und wir gehen "
                                         "in den Park, um einen langen Spaziergang zu machen.")),
    ("c3_fr_ar_10s", 161999, None),
    ("c4_en_gb_30s", 473611, ("en-gb-x-rp", 165,
                              "The quick brown fox jumps over the lazy dog. A journey of a thousand "
                              "miles begins with a single step. All that glitters is not gold, and "
                              "not all those who wander are lost. The early bird catches the worm, "
                              "but the second mouse gets the cheese. Speech recognition turns sound "
                              "into text, one frame at a time, and every frame counts. Numbers like "
                              "twelve, three hundred and forty five, and nineteen eighty four are "
                              "spoken too. That is the end of this rather long English passage.")),
    ("c5_es_en_34s", 545123, None),
]


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def espeak(tmp, name, voice, speed, text):
    path = os.path.join(tmp, name + ".wav")
    run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", path, text])
    return path


def to16k(tmp, src, name, pad_start=0.0):
    """Resample to 16 kHz mono s16, optionally with leading silence."""
    out = os.path.join(tmp, name + ".16k.wav")
    cmd = ["sox", "-R", src, "-r", str(SR), "-c", "1", "-b", "16", out]
    if pad_start > 0:
        cmd += ["pad", str(pad_start), "0"]
    run(cmd)
    return out


def finish(tmp, src, dst, nsamples, noise_db):
    """Pad/trim to exactly nsamples and mix in repeatable noise (sox -R)."""
    body = os.path.join(tmp, "body.wav")
    run(["sox", "-R", src, "-r", str(SR), "-c", "1", "-b", "16", body, "pad", "0", "60",
         "trim", "0", "%ds" % nsamples])
    if noise_db is None:
        shutil.copyfile(body, dst)
        return
    noise = os.path.join(tmp, "noise.wav")
    run(["sox", "-R", "-n", "-r", str(SR), "-c", "1", "-b", "16", noise, "synth",
         "%ds" % nsamples, noise_db[0], "vol", str(noise_db[1])])
    run(["sox", "-R", "-m", body, noise, "-b", "16", dst, "trim", "0", "%ds" % nsamples])


def make_audio(names):
    """Make the WAVs of the clips in names; the others are left as they are."""
    os.makedirs(AUDIO, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, n, speech in CLIPS:
            if name not in names:
                continue
            dst = os.path.join(AUDIO, name + ".wav")
            if name == "c0_tones_1s":
                src = os.path.join(tmp, "tones.wav")
                run(["sox", "-R", "-n", "-r", str(SR), "-c", "1", "-b", "16", src, "synth", "1.1",
                     "sine", "440", "sine", "1250", "remix", "-", "vol", "0.4",
                     "fade", "q", "0.05", "1.1", "0.1"])
                # Pink noise ~22 dB under the tones, loud enough in every mel bin: with the
                # earlier quiet brown noise the bins between and above the tones held so little
                # power that the reference's float32 FFT rounding noise decided their log-mel
                # values to ~1e-4 (the features bound), see docs/TESTING.md (mel).
                finish(tmp, src, dst, n, ("pinknoise", 0.15))
            elif name == "c3_fr_ar_10s":
                a = to16k(tmp, espeak(tmp, "fr", "fr", 150,
                                      "Bonjour à tous. Je voudrais un café au lait, s'il vous plaît."),
                          "fr", pad_start=0.4)
                b = to16k(tmp, espeak(tmp, "ar", "ar", 140, "مرحبا بكم في هذا الاختبار الصغير"), "ar",
                          pad_start=0.6)
                cat = os.path.join(tmp, "cat3.wav")
                run(["sox", "-R", a, b, cat])
                finish(tmp, cat, dst, n, ("whitenoise", 0.01))
            elif name == "c5_es_en_34s":
                a = to16k(tmp, espeak(tmp, "es", "es", 140,
                                      "Buenos días. Esta es una prueba del reconocimiento de voz en "
                                      "español, con frases largas y pausas entre ellas. El perro corre "
                                      "por el parque mientras los niños juegan con la pelota."),
                          "es", pad_start=0.3)
                b = to16k(tmp, espeak(tmp, "en2", "en-us", 150,
                                      "After a long pause, the second speaker begins. This part is in "
                                      "English, and it continues past the thirty second mark, so the "
                                      "reference has to treat the clip as long audio. Counting now: "
                                      "one, two, three, four, five, six, seven, eight, nine, ten."),
                          "en2", pad_start=2.5)
                cat = os.path.join(tmp, "cat5.wav")
                run(["sox", "-R", a, b, cat])
                finish(tmp, cat, dst, n, ("pinknoise", 0.015))
            else:
                voice, speed, text = speech
                s = to16k(tmp, espeak(tmp, name, voice, speed, text), name, pad_start=0.25)
                noise = {"c1_en_us_3s": None, "c2_de_noise_6s": ("pinknoise", 0.05),
                         "c4_en_gb_30s": ("whitenoise", 0.005)}[name]
                finish(tmp, s, dst, n, noise)


def read_wav(path):
    """s16 mono WAV -> float32 samples / 32768, as the C reader does."""
    with wave.open(path, "rb") as w:
        if w.getnchannels() != 1 or w.getsampwidth() != 2 or w.getframerate() != SR:
            raise SystemExit("%s: expected 16 kHz mono s16" % path)
        raw = w.readframes(w.getnframes())
    return (np.frombuffer(raw, dtype="<i2").astype(np.float32) / np.float32(32768.0))


# ---------------------------------------------------------------------------
# Model.

def build_config(tok):
    from transformers import CohereAsrConfig
    return CohereAsrConfig(
        encoder_config=dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=256, subsampling_conv_channels=16, num_mel_bins=128),
        vocab_size=tok.vocab_size, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, max_position_embeddings=128,
        pad_token_id=tok.id("<pad>"), eos_token_id=tok.id("<|endoftext|>"),
        bos_token_id=tok.id("<|startoftranscript|>"), decoder_start_token_id=tok.id("▁"))


def bf16_round_(t):
    t.copy_(t.to(torch.bfloat16).to(t.dtype))


# Modules whose input comes straight out of a ReLU: variance x2 (He init).
AFTER_RELU = ("mlp.fc2", "subsampling.layers.2", "subsampling.layers.5", "subsampling.linear")


def reinit(model, gen):
    """Variance-preserving re-initialisation (REFERENCE.md 'Making fixtures')."""
    import torch.nn as nn

    def normal(t, std):
        t.copy_(torch.randn(t.shape, generator=gen) * std)

    def uniform(t, lo, hi):
        t.copy_(lo + (hi - lo) * torch.rand(t.shape, generator=gen))

    with torch.no_grad():
        for mname, m in model.named_modules():
            if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d)):
                w = m.weight
                fan_in = w.shape[1] * (int(np.prod(w.shape[2:])) if w.dim() > 2 else 1)
                gain = 2.0 if any(mname.endswith(s) for s in AFTER_RELU) else 1.0
                normal(w, (gain / fan_in) ** 0.5)
                if m.bias is not None:
                    normal(m.bias, 0.02)
            elif isinstance(m, (nn.LayerNorm,)):
                uniform(m.weight, 0.8, 1.2)
                normal(m.bias, 0.02)
            elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                uniform(m.weight, 0.8, 1.2)
                normal(m.bias, 0.02)
                normal(m.running_mean, 0.1)
                uniform(m.running_var, 0.5, 2.0)
            elif isinstance(m, nn.Embedding):
                normal(m.weight, 1.0)
        for pname, p in model.named_parameters():
            if pname.endswith("bias_u") or pname.endswith("bias_v"):
                normal(p, 0.1)
        # Confident head: logit std ~8 so greedy tokens survive bf16/fp16 engines.
        model.proj_out.weight.mul_(8.0)
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point():
                bf16_round_(t)
    seen = {n for n, _ in model.named_parameters()}
    return seen


def nemo_config(cfg, tok):
    """NeMo-style config.json as the Hub release has it (MODEL.md)."""
    e = cfg.encoder_config
    return {
        "model_type": "cohere_asr",
        "architectures": ["CohereAsrForConditionalGeneration"],
        "sample_rate": SR,
        "vocab_size": cfg.vocab_size,
        "supported_languages": ["ar", "de", "el", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt",
                                "vi", "zh"],
        "max_audio_clip_s": 35,
        "overlap_chunk_second": 5,
        "preprocessor": {"sample_rate": SR, "window_size": 0.025, "window_stride": 0.01,
                         "features": 128, "n_fft": 512, "window": "hann", "normalize": "per_feature",
                         "dither": 1e-5, "pad_to": 0, "log": True, "frame_splicing": 1},
        "encoder": {"feat_in": 128, "n_layers": e.num_hidden_layers, "d_model": e.hidden_size,
                    "n_heads": e.num_attention_heads,
                    "ff_expansion_factor": e.intermediate_size // e.hidden_size,
                    "conv_kernel_size": e.conv_kernel_size, "subsampling": "dw_striding",
                    "subsampling_factor": e.subsampling_factor,
                    "subsampling_conv_channels": e.subsampling_conv_channels,
                    "pos_emb_max_len": e.max_position_embeddings, "xscaling": bool(e.scale_input),
                    "self_attention_model": "rel_pos", "untie_biases": True},
        "transf_decoder": {"config_dict": {"num_layers": cfg.num_hidden_layers,
                                           "hidden_size": cfg.hidden_size,
                                           "num_attention_heads": cfg.num_attention_heads,
                                           "inner_size": cfg.intermediate_size,
                                           "max_sequence_length": cfg.max_position_embeddings,
                                           "hidden_act": cfg.hidden_act, "pre_ln": True,
                                           "vocab_size": cfg.vocab_size}},
        "head": {"num_classes": cfg.vocab_size, "hidden_size": cfg.hidden_size, "log_softmax": True},
    }


def write_nemo(hf_dir, nemo_dir, cfg, tok, fe):
    from safetensors.torch import load_file, save_file
    os.makedirs(nemo_dir, exist_ok=True)
    sd = load_file(os.path.join(hf_dir, "model.safetensors"))
    out = {}
    for k, v in sd.items():
        name = k[len("model."):] if k.startswith("model.") else k
        if v.is_floating_point():
            b = v.to(torch.bfloat16)
            if not torch.equal(b.to(torch.float32), v):
                raise SystemExit("%s: not bf16-representable" % k)
            v = b
        out[name] = v.contiguous()
    out["preprocessor.featurizer.fb"] = fe.mel_filters.reshape(1, 128, 257).to(torch.bfloat16).contiguous()
    out["preprocessor.featurizer.window"] = torch.hann_window(400, periodic=False).to(torch.bfloat16)
    save_file(out, os.path.join(nemo_dir, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(nemo_dir, "config.json"), "w") as f:
        json.dump(nemo_config(cfg, tok), f, indent=2)
        f.write("\n")
    for name in ("generation_config.json", "tokenizer.json", "preprocessor_config.json"):
        shutil.copyfile(os.path.join(hf_dir, name), os.path.join(nemo_dir, name))
    return out


def generate(model, feats, mask, prompt, max_new_tokens):
    B = feats.shape[0]
    dec = torch.tensor([prompt] * B, dtype=torch.long)
    with torch.no_grad():
        out = model.generate(input_features=feats, attention_mask=mask, decoder_input_ids=dec,
                             max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                             output_logits=True, output_scores=True, return_dict_in_generate=True)
    seq = out.sequences[:, len(prompt):]
    logits = torch.stack(out.logits, dim=1).float()  # (B, steps, V)
    scores = torch.stack(out.scores, dim=1).float()
    if not torch.equal(logits, scores):
        raise SystemExit("generate applied logits processors; the reference expects plain greedy")
    rows = []
    eos = model.config.eos_token_id
    for b in range(B):
        ids = seq[b].tolist()
        n = len(ids)
        stop = "max_new_tokens"
        if eos in ids:
            n = ids.index(eos) + 1
            stop = "eos"
        toks = torch.tensor(ids[:n], dtype=torch.int32)
        lg = logits[b, :n].contiguous()
        if not torch.equal(lg.argmax(-1).to(torch.int32), toks):
            raise SystemExit("row %d: argmax of logits != generated tokens" % b)
        top2 = lg.topk(2, dim=-1).values
        rows.append({"tokens": toks, "logits": lg, "stop": stop,
                     "min_margin": float((top2[:, 0] - top2[:, 1]).min())})
    return rows


MODEL_SEEDS = range(1, 17)
# Cross-attention queries x3: with plain variance-preserving weights the attention over
# hundreds of encoder frames is nearly flat, so the first tokens hardly depend on the audio.
CROSS_Q_SCALE = 3.0


def try_model(cfg, info, seed, feats, mask, prompt):
    """Random model for one seed, eos bias set so that exactly one row stops early.

    Raising the eos logit by d makes a row stop at the first step where
    (max logit - eos logit) < d, and changes nothing before it; so d goes halfway
    between the smallest and second smallest per-row gap.
    """
    from transformers import CohereAsrForConditionalGeneration, GenerationConfig
    torch.manual_seed(seed)
    model = CohereAsrForConditionalGeneration(cfg).eval()
    reinit(model, torch.Generator().manual_seed(seed))
    with torch.no_grad():
        for layer in model.model.decoder.layers:
            layer.encoder_attn.q_proj.weight.mul_(CROSS_Q_SCALE)
            bf16_round_(layer.encoder_attn.q_proj.weight)
    model.generation_config = GenerationConfig(
        decoder_start_token_id=info.id("▁"), bos_token_id=cfg.bos_token_id, eos_token_id=cfg.eos_token_id,
        pad_token_id=cfg.pad_token_id)
    if model.config._attn_implementation != "sdpa":
        raise SystemExit("expected sdpa attention, got %s" % model.config._attn_implementation)
    eos = cfg.eos_token_id
    rows = generate(model, feats, mask, prompt, MAX_NEW_TOKENS)
    if any(r["stop"] == "eos" for r in rows):
        return None
    gaps = []
    for r in rows:
        lg = r["logits"]
        g = lg.max(-1).values - lg[:, eos]
        gaps.append((float(g.min()), int(g.argmin())))
    order = sorted(range(len(rows)), key=lambda i: gaps[i][0])
    if gaps[order[0]][1] < 3:
        return None  # the stop would come right after the prompt; not much of a test
    d = 0.5 * (gaps[order[0]][0] + gaps[order[1]][0])
    with torch.no_grad():
        model.proj_out.bias[eos] += d
        bf16_round_(model.proj_out.bias)
    rows = generate(model, feats, mask, prompt, MAX_NEW_TOKENS)
    stops = [r["stop"] for r in rows]
    if stops.count("eos") != 1:
        return None
    toks = [tuple(r["tokens"].tolist()) for r in rows]
    if len(set(toks)) != len(toks):
        return None
    return model, rows


ST_DTYPES = {torch.float32: "F32", torch.int32: "I32", torch.int64: "I64", torch.uint8: "U8",
             torch.bfloat16: "BF16", torch.float16: "F16"}


def write_safetensors(path, tensors, metadata):
    """safetensors writer with a byte-stable header (sorted names and metadata keys);
    safetensors.torch.save_file orders metadata differently from run to run."""
    header = {"__metadata__": dict(sorted(metadata.items()))}
    blobs, off = [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        b = t.view(torch.uint8).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
        header[name] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--regen-audio", action="store_true", help="remake all WAVs with espeak-ng + sox")
    ap.add_argument("--regen-clip", action="append", default=[], metavar="NAME",
                    help="remake only this clip's WAV (repeatable), e.g. c0_tones_1s")
    args = ap.parse_args()
    names = [c[0] for c in CLIPS]
    for name in args.regen_clip:
        if name not in names:
            raise SystemExit("--regen-clip %s: not one of %s" % (name, ", ".join(names)))

    import transformers
    from transformers import CohereAsrFeatureExtractor, CohereAsrForConditionalGeneration, GenerationConfig

    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)

    # Missing WAVs are made; existing ones are reused byte for byte unless asked for.
    todo = set(names if args.regen_audio else args.regen_clip)
    todo |= {n for n in names if not os.path.exists(os.path.join(AUDIO, n + ".wav"))}
    if todo:
        make_audio(todo)
    clips = [read_wav(os.path.join(AUDIO, c[0] + ".wav")) for c in CLIPS]
    for (name, n, _), x in zip(CLIPS, clips):
        if len(x) != n:
            raise SystemExit("%s: %d samples, expected %d" % (name, len(x), n))

    # Tokenizer.
    tok = fixture_tokenizer.make("main")
    tok_meta = fixture_tokenizer.make("metaspace")
    info = fixture_tokenizer.Info(tok)
    tok_path = os.path.join(FIX, "tokenizer.json")
    tok.save(tok_path, pretty=True)
    tok_meta.save(os.path.join(FIX, "tokenizer_metaspace.json"), pretty=True)
    fixture_tokenizer.write_cases(os.path.join(FIX, "tokenizer_cases.json"), tok, tok_meta)
    prompt = fixture_tokenizer.prompt_ids(info, "en", True)

    # Feature extraction, one padded batch, dither off and on.
    fe = CohereAsrFeatureExtractor()
    fe0 = CohereAsrFeatureExtractor(dither=0.0)
    batch = [torch.from_numpy(x.copy()) for x in clips]
    f_nd = fe0(batch, sampling_rate=SR, return_tensors="pt")
    f_d = fe(batch, sampling_rate=SR, return_tensors="pt")
    for f in (f_nd, f_d):
        if len(f["audio_chunk_index"]) != len(clips):
            raise SystemExit("feature extractor split a clip: %r" % (f["audio_chunk_index"],))
    valid = f_nd["attention_mask"].sum(-1)

    # Model: try a fixed list of seeds, keep the one whose greedy decisions are the least
    # close to ties (the smallest top-1/top-2 logit gap over all steps of all rows).
    cfg = build_config(info)
    feats, mask = f_nd["input_features"], f_nd["attention_mask"]
    best = None
    for seed in MODEL_SEEDS:
        cand = try_model(cfg, info, seed, feats, mask, prompt)
        if cand is None:
            continue
        model, rows = cand
        score = min(r["min_margin"] for r in rows)
        print("seed %d: stops %s, min top-2 margin %.4f" % (seed, [r["stop"] for r in rows], score),
              file=sys.stderr)
        if best is None or score > best[0]:
            best = (score, seed, model, rows)
    if best is None:
        raise SystemExit("no seed gave a usable model")
    _, seed, model, rows = best
    toks = [tuple(r["tokens"].tolist()) for r in rows]
    eos = cfg.eos_token_id

    hf_dir = os.path.join(FIX, "tiny-hf")
    nemo_dir = os.path.join(FIX, "tiny-nemo")
    for d in (hf_dir, nemo_dir):
        shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(hf_dir)
    model.generation_config.save_pretrained(hf_dir)
    fe.save_pretrained(hf_dir)
    pp = os.path.join(hf_dir, "preprocessor_config.json")
    with open(pp) as f:
        ppc = json.load(f)
    ppc["processor_class"] = "CohereAsrProcessor"  # as the release's file has it
    with open(pp, "w") as f:
        json.dump(dict(sorted(ppc.items())), f, indent=2)
        f.write("\n")
    shutil.copyfile(tok_path, os.path.join(hf_dir, "tokenizer.json"))
    write_nemo(hf_dir, nemo_dir, cfg, info, fe)

    # Reload from disk and recompute everything from the saved weights.
    model = CohereAsrForConditionalGeneration.from_pretrained(hf_dir).eval()
    rows = generate(model, feats, mask, prompt, MAX_NEW_TOKENS)
    if [tuple(r["tokens"].tolist()) for r in rows] != toks:
        raise SystemExit("reloaded model gives other tokens")
    with torch.no_grad():
        enc = model.model.encoder(feats, attention_mask=mask)
        hid = enc.last_hidden_state
        enc_mask = enc.attention_mask
        proj = model.model.decoder.proj(hid)

    T = {}
    B = len(clips)
    T["batch.audio_samples"] = torch.tensor([len(x) for x in clips], dtype=torch.int64)
    T["batch.feature_frames_valid"] = valid.to(torch.int64)
    T["batch.attention_mask"] = mask.to(torch.uint8).contiguous()
    T["batch.encoder_frames_valid"] = enc_mask.sum(-1).to(torch.int64)
    T["batch.encoder_attention_mask"] = enc_mask.to(torch.uint8).contiguous()
    T["prompt"] = torch.tensor(prompt, dtype=torch.int32)
    T["stop_eos"] = torch.tensor([1 if r["stop"] == "eos" else 0 for r in rows], dtype=torch.int32)
    for i in range(B):
        L = int(valid[i])
        for tag, f in (("nodither", f_nd), ("dither", f_d)):
            x = f["input_features"][i]
            if x[L:].abs().max().item() != 0.0 if x.shape[0] > L else False:
                raise SystemExit("padded feature frames are not zero")
            T["features.%s.%d" % (tag, i)] = x[:L].contiguous().float()
        Le = int(enc_mask[i].sum())
        T["encoder.%d" % i] = hid[i, :Le].contiguous().float()
        T["encoder_proj.%d" % i] = proj[i, :Le].contiguous().float()
        T["tokens.%d" % i] = rows[i]["tokens"].contiguous()
        T["logits.%d" % i] = rows[i]["logits"].contiguous()
    T["batch.features_shape"] = torch.tensor(list(f_nd["input_features"].shape), dtype=torch.int64)

    # Long-audio energy split as transformers computes it, for the concatenation of all clips
    # in order (the fixture clips are all <= 35 s, so none of them is split on its own).
    cat = torch.from_numpy(np.concatenate(clips))
    chunks = fe._split_audio_chunks_energy(cat)
    bounds, pos = [], 0
    for c in chunks:
        bounds.append([pos, pos + c.shape[0]])
        pos += c.shape[0]
    T["split.concat_all.bounds"] = torch.tensor(bounds, dtype=torch.int64)
    T["split.clip5.bounds"] = torch.tensor(
        [[0, c.shape[0]] for c in fe._split_audio_chunks_energy(batch[5])], dtype=torch.int64)

    meta = {
        "torch": torch.__version__, "transformers": transformers.__version__,
        "tokenizers": __import__("tokenizers").__version__, "numpy": np.__version__,
        "command": "python tools/reference/make_fixtures.py",
        "clips": json.dumps([c[0] for c in CLIPS]),
        "max_new_tokens": str(MAX_NEW_TOKENS),
        "stop_reasons": json.dumps([r["stop"] for r in rows]),
        "min_top2_margin": json.dumps([round(r["min_margin"], 4) for r in rows]),
        "eos_bias": repr(model.proj_out.bias[eos].item()),
        "model_seed": str(seed),
    }
    write_safetensors(os.path.join(FIX, "reference.safetensors"), T, meta)
    summary = {"stops": [r["stop"] for r in rows], "n_tokens": [len(r["tokens"]) for r in rows],
               "min_margin": [round(r["min_margin"], 3) for r in rows],
               "valid_frames": valid.tolist(), "encoder_frames": enc_mask.sum(-1).tolist(),
               "split_concat": bounds, "eos_bias": model.proj_out.bias[eos].item(),
               "prompt": prompt, "texts": [tok.decode(r["tokens"].tolist(), skip_special_tokens=True)
                                           for r in rows]}
    print(json.dumps(summary, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
