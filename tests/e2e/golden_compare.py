#!/usr/bin/env python3
"""Compare one output folder of ours with the original's golden folder
(tests/fixtures/golden/<set>/out): txt/srt/vtt byte for byte, the transcript
JSON field by field, the manifest and ASR checkpoint payloads field by field.

Fields that are legitimately implementation-specific are ignored, each with
its reason (IGNORED below); absolute paths are compared after replacing each
side's run folder by a placeholder. Exits 1 listing every difference.

usage: golden_compare.py GOLDEN_OUT OURS_OUT GOLDEN_ROOT OURS_ROOT
  GOLDEN_ROOT / OURS_ROOT: the prefixes of absolute paths on each side
  (the golden run's /tmp/ct-golden and ours), replaced by "{root}".
"""
import json
import os
import sys

# path in the document -> why it is not compared
IGNORED = {
    "implementation": "package version and the sha256 of each implementation's own files",
    "source.decode_backend": "the Python twin names its decoder 'torchcodec'; ours is 'ffmpeg' (the gem's name)",
    "segmentation_details.actual_engine": "twin: packed torch Silero ('torch'); ours: native ONNX graph ('onnx', the gem's)",
    "segmentation_details.provider": "twin: 'CPU' (torch); ours: 'CPUExecutionProvider' (the gem's ONNX provider)",
    "segmentation_details.provider_options": "follows the provider (null for torch, {provider: {}} for ONNX)",
    "segmentation_details.fallback_reason": "wording of the engine mapping differs (ours names the native engine)",
    "models.vad.weight_asset": "the weight file each implementation ships",
    "models.vad.implementation": "the Silero executor of each implementation",
    "models.vad.version": "package version",
    "models.asr.id": "a local model directory: each run's own absolute path",
    "models.aligner.kernel": "the Viterbi implementation of each (torchaudio's forced_align vs ours)",
    "models.aligner.utility_package": "the text-utility package of each implementation",
    "models.aligner.romanizer": "uroman itself vs our table generated from uroman 1.3.1.1",
    # state files
    "payload.generation_id": "random per output generation",
    "payload.asr_contract_key": "fingerprints the implementation's own files (PRODUCT-DETAILS 3.6)",
    "payload.render_contract_key": "fingerprints the implementation's own files (PRODUCT-DETAILS 3.6)",
    "payload.source.snapshot": "device, inode, size, mtime/ctime of each run's own copy of the input",
    "payload.updated_unix_seconds": "wall clock of the run",
    "payload.outputs.json": "the JSON holds the implementation fields above, so its size and hash differ",
    "payload.checkpoint.decode_backend": "see source.decode_backend",
    "payload.checkpoint.vad_engine_actual": "see segmentation_details.actual_engine",
    "payload.checkpoint.vad_provider": "see segmentation_details.provider",
    "payload.checkpoint.vad_provider_options": "see segmentation_details.provider_options",
    "payload.checkpoint.vad_fallback_reason": "see segmentation_details.fallback_reason",
    "payload_sha256": "digest over a payload that holds the fields above",
}
PATH_FIELDS = {"source.path", "models.asr.id", "payload.source.canonical_path"}


def subst(v, root):
    return v.replace(root, "{root}") if isinstance(v, str) else v


def compare(a, b, path, roots, diffs):
    if path in IGNORED:
        return
    if path in PATH_FIELDS:
        a, b = subst(a, roots[0]), subst(b, roots[1])
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a.keys()) != list(b.keys()):
            diffs.append(f"{path}: keys {list(a.keys())} != {list(b.keys())}")
        for k in a:
            if k in b:
                compare(a[k], b[k], f"{path}.{k}" if path else k, roots, diffs)
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            diffs.append(f"{path}: {len(a)} items != {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            compare(x, y, f"{path}[{i}]", roots, diffs)
        return
    # ints and floats: equal values (the float text of the twin is Python's
    # repr, ours the gem's json 2.18 form: PRODUCT-DETAILS Appendix A)
    if type(a) is bool or type(b) is bool:
        ok = a is b
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
        ok = a == b and (isinstance(a, float) == isinstance(b, float))
    else:
        ok = a == b
    if not ok:
        diffs.append(f"{path}: golden {a!r} != ours {b!r}")


def main():
    gold, ours, groot, oroot = sys.argv[1:5]
    diffs = []
    names = sorted(os.listdir(gold))
    ours_names = sorted(n for n in os.listdir(ours) if not n.startswith(".cohere-transcribe-locks"))
    if names != ours_names:
        diffs.append(f"files: golden {names} != ours {ours_names}")
    for n in names:
        g, o = os.path.join(gold, n), os.path.join(ours, n)
        if not os.path.exists(o):
            continue
        if n.endswith((".txt", ".srt", ".vtt")):
            if open(g, "rb").read() != open(o, "rb").read():
                diffs.append(f"{n}: bytes differ")
        elif n.endswith(".json"):
            compare(json.load(open(g)), json.load(open(o)), "", (groot, oroot), diffs)
    for d in diffs:
        print("DIFF", os.path.basename(gold.rstrip("/")), d)
    print(f"{len(names)} files compared, {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
