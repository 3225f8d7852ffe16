# mms_aligner_config.py — the Wav2Vec2Config of the MMS-300M forced aligner's
# architecture (MahmoudAshraf/mms-300m-1130-forced-aligner: 24 layers of
# 1024, 16 heads, the layer-norm feature encoder, 31 classes), dropout off,
# for the random full-size aligners of tools/bench/bench_align_transformers.py
# and tools/device/tf_align.py. One definition, so the CPU and the GPU
# baselines time the same model.
def mms300m_config():
    from transformers import Wav2Vec2Config

    return Wav2Vec2Config(
        vocab_size=31, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
        intermediate_size=4096, hidden_act="gelu", feat_extract_activation="gelu",
        conv_dim=(512,) * 7, conv_stride=(5, 2, 2, 2, 2, 2, 2), conv_kernel=(10, 3, 3, 3, 3, 2, 2),
        conv_bias=True, feat_extract_norm="layer", do_stable_layer_norm=True,
        num_conv_pos_embeddings=128, num_conv_pos_embedding_groups=16,
        hidden_dropout=0.0, activation_dropout=0.0, attention_dropout=0.0, feat_proj_dropout=0.0,
        final_dropout=0.0, layerdrop=0.0, mask_time_prob=0.0, layer_norm_eps=1e-5,
        pad_token_id=0, eos_token_id=2, ctc_loss_reduction="mean", ctc_zero_infinity=True,
    )
