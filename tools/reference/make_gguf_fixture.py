"""make_gguf_fixture.py — write tests/fixtures/gguf/crisp-tiny.gguf with the
reference GGUF writer (gguf-py 0.19.0) in CrispASR's conventions for Cohere
Transcribe: its tensor names and metadata keys, f16 weight matrices and f32
vectors/norms/position tables, the BatchNorm counters dropped, the vocabulary
as tokenizer.ggml.tokens, a Hann window as fe.window, and no special-id keys
(readers look the special tokens up by string). The weights are the random
model below, so the C test regenerates them and compares.

With --q8_0 it writes tests/fixtures/gguf/crisp-tiny-q8_0.gguf instead: the
same file with every matrix whose rows are a multiple of 32 long quantized to
Q8_0, as CrispASR's quantizer does, for the test that such a file is refused
with a message naming the supported types (no int8 path exists yet).

    make && /work/refenv/bin/python tools/reference/make_gguf_fixture.py [--q8_0]

Needs: gguf==0.19.0, safetensors, numpy (in /work/refenv).
"""
import json
import os
import subprocess
import sys
import tempfile

import gguf
import numpy as np
from safetensors.numpy import load_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
Q8 = "--q8_0" in sys.argv[1:]
OUT = os.path.join(ROOT, "tests/fixtures/gguf/crisp-tiny-q8_0.gguf" if Q8 else "tests/fixtures/gguf/crisp-tiny.gguf")
ARGS = ["--enc-layers", "2", "--enc-d", "32", "--enc-heads", "2", "--enc-ff", "64", "--sub-channels", "8",
        "--dec-layers", "1", "--dec-d", "32", "--dec-heads", "2", "--dec-ff", "64", "--positions", "64",
        "--vocab", "330", "--seed", "3", "--dtype", "f32"]

ENC = [("norm_feed_forward1.", "ff1.norm."), ("feed_forward1.linear1.", "ff1.up."),
       ("feed_forward1.linear2.", "ff1.down."), ("norm_feed_forward2.", "ff2.norm."),
       ("feed_forward2.linear1.", "ff2.up."), ("feed_forward2.linear2.", "ff2.down."),
       ("norm_self_att.", "attn.norm."), ("self_attn.linear_q.", "attn.q."), ("self_attn.linear_k.", "attn.k."),
       ("self_attn.linear_v.", "attn.v."), ("self_attn.linear_out.", "attn.out."),
       ("self_attn.linear_pos.", "attn.pos."), ("self_attn.pos_bias_u", "attn.pos_bias_u"),
       ("self_attn.pos_bias_v", "attn.pos_bias_v"), ("norm_conv.", "conv.norm."),
       ("conv.pointwise_conv1.", "conv.pw1."), ("conv.depthwise_conv.", "conv.dw."),
       ("conv.batch_norm.running_mean", "conv.bn.mean"), ("conv.batch_norm.running_var", "conv.bn.var"),
       ("conv.batch_norm.weight", "conv.bn.weight"), ("conv.batch_norm.bias", "conv.bn.bias"),
       ("conv.pointwise_conv2.", "conv.pw2."), ("norm_out.", "out_norm.")]
DEC = [("layer_norm_1.", "attn_ln."), ("first_sub_layer.query_net.", "attn_q."),
       ("first_sub_layer.key_net.", "attn_k."), ("first_sub_layer.value_net.", "attn_v."),
       ("first_sub_layer.out_projection.", "attn_o."), ("layer_norm_2.", "cross_ln."),
       ("second_sub_layer.query_net.", "cross_q."), ("second_sub_layer.key_net.", "cross_k."),
       ("second_sub_layer.value_net.", "cross_v."), ("second_sub_layer.out_projection.", "cross_o."),
       ("layer_norm_3.", "ffn_ln."), ("third_sub_layer.dense_in.", "ffn_up."),
       ("third_sub_layer.dense_out.", "ffn_down.")]
FIXED = [("encoder.pre_encode.conv.", "enc.pre.conv."), ("encoder.pre_encode.out.", "enc.pre.out."),
         ("encoder_decoder_proj.", "enc.proj."),
         ("transf_decoder._embedding.token_embedding.weight", "dec.emb.weight"),
         ("transf_decoder._embedding.position_embedding.pos_enc", "dec.pos.weight"),
         ("transf_decoder._embedding.layer_norm.", "dec.emb_ln."),
         ("transf_decoder._decoder.final_layer_norm.", "dec.out_ln."), ("log_softmax.mlp.layer0.", "dec.head.")]


def gguf_name(n):
    if n.startswith("model."):
        n = n[6:]
    for pre, table, out in (("encoder.layers.", ENC, "enc.blk."), ("transf_decoder._decoder.layers.", DEC, "dec.blk.")):
        if n.startswith(pre):
            layer, rest = n[len(pre):].split(".", 1)
            for a, b in table:
                if rest.startswith(a):
                    return f"{out}{layer}.{b}{rest[len(a):]}"
            return None
    for a, b in FIXED:
        if n.startswith(a):
            return b + n[len(a):]
    return None


with tempfile.TemporaryDirectory() as d:
    subprocess.run([os.path.join(ROOT, "build/bin/cohere-transcribe-random-model"), "--out", d] + ARGS, check=True)
    sd = load_file(os.path.join(d, "model.safetensors"))
    cfg = json.load(open(os.path.join(d, "config.json")))
    vocab = [p for p, _ in json.load(open(os.path.join(d, "tokenizer.json")))["model"]["vocab"]]
    enc = cfg["encoder_config"]
    w = gguf.GGUFWriter(OUT, arch="cohere-transcribe")
    w.add_name("crisp-tiny")
    u32 = {"vocab_size": cfg["vocab_size"], "encoder.n_layers": enc["num_hidden_layers"],
           "encoder.d_model": enc["hidden_size"], "encoder.n_heads": enc["num_attention_heads"],
           "encoder.head_dim": enc["hidden_size"] // enc["num_attention_heads"],
           "encoder.ffn_dim": enc["intermediate_size"], "encoder.conv_kernel": enc["conv_kernel_size"],
           "decoder.n_layers": cfg["num_hidden_layers"], "decoder.d_model": cfg["hidden_size"],
           "decoder.n_heads": cfg["num_attention_heads"], "decoder.head_dim": cfg["head_dim"],
           "decoder.ffn_dim": cfg["intermediate_size"], "decoder.max_ctx": cfg["max_position_embeddings"],
           "audio.sample_rate": 16000, "audio.n_mels": 128, "audio.n_fft": 512, "audio.hop_length": 160,
           "audio.win_length": 400}
    for k, v in u32.items():
        w.add_uint32("cohere_transcribe." + k, v)
    w.add_token_list(vocab)
    w.add_tokenizer_model("llama")
    n = np.arange(400, dtype=np.float64)
    w.add_tensor("fe.window", (0.5 - 0.5 * np.cos(2 * np.pi * n / 399)).astype(np.float32))
    for name in sorted(sd):
        g = gguf_name(name)
        if g is None:  # the BatchNorm counters
            assert name.endswith("num_batches_tracked"), name
            continue
        t = sd[name]
        keep32 = g.endswith(".bias") or "norm" in g or g.endswith((".bn.mean", ".bn.var")) or "pos_bias" in g \
            or t.ndim <= 1 or g == "dec.pos.weight" or g.endswith("_ln.weight")
        if Q8 and not keep32 and t.ndim == 2 and t.shape[-1] % 32 == 0:
            q = gguf.quants.quantize(t.astype(np.float32), gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(g, q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
            continue
        w.add_tensor(g, t.astype(np.float32 if keep32 else np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
print("wrote", OUT, os.path.getsize(OUT), "bytes with gguf", gguf.__version__ if hasattr(gguf, "__version__") else "0.19.0")
