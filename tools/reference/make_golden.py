#!/usr/bin/env python3
"""Golden data from the original product (PyPI cohere-transcribe==0.1.4).

Runs the original `cohere-transcribe` on the project's fixture corpus with the
tiny fixture model for a list of option sets and commits what it writes
(outputs, state files, profile) plus what it said (exit code, stdout, stderr)
under tests/fixtures/golden/, so our command can be compared with it in CI,
where the original is not installed. Also records the original's CLI
behaviour (cli_cases.json), help and doctor texts. Run from anywhere:

    /work/origenv/bin/python tools/reference/make_golden.py            # everything
    /work/origenv/bin/python tools/reference/make_golden.py --only default lang-en
    /work/origenv/bin/python tools/reference/make_golden.py --part cli

Every run happens under the fixed root /tmp/ct-golden (wiped first), so the
absolute paths inside the committed files are always the same; cases.json
names them with placeholders ({root}, {model}, {audio}, {out}, {profile}).
CPU only, one thread. See tests/fixtures/golden/README.md.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(REPO, "tests", "fixtures")
GOLDEN = os.path.join(FIX, "golden")
TINY_HF = os.path.join(FIX, "tiny-hf")
TINY_PRODUCT = os.path.join(FIX, "tiny-product")
RUN_ROOT = "/tmp/ct-golden"
ORIG_BIN = os.path.join(os.path.dirname(sys.executable), "cohere-transcribe")
ORIG_DOCTOR = os.path.join(os.path.dirname(sys.executable), "cohere-transcribe-doctor")
TRACE = os.path.join(HERE, "golden_trace.py")
FIXED_MTIME = 1767225600  # 2026-01-01T00:00:00Z, given to every copied input

# The tiny decoder has 128 positions and the prompt is 10 tokens; the original
# does not clamp its budget to the context (REFERENCE.md), so every set passes
# a first budget of 60 and a retry ceiling of 114 (10 + 114 = 124 <= 128).
BUDGET = ["--max-new-tokens", "60", "--max-retry-tokens", "114"]
FORMATS = ["--formats", "txt", "srt", "vtt", "json"]
COMMON = ["--model", "{model}", "--device", "cpu", "--output-dir", "{out}",
          "--profile-json", "{profile}"]

CLIPS = ["c0_tones_1s.wav", "c1_en_us_3s.wav", "c2_de_noise_6s.wav",
         "c3_fr_ar_10s.wav", "c4_en_gb_30s.wav", "c5_es_en_34s.wav"]


def src(name):
    """Repository path of a corpus file."""
    if name == "speech_pauses.flac":
        return "tests/fixtures/vad/speech_pauses.flac"
    if name.startswith("ar_"):
        return "tests/fixtures/golden/audio/" + name
    return "tests/fixtures/audio/" + name


# name, inputs, extra options (after the common ones), what it exercises.
# Audio comes first in argv: --formats takes every following word.
SETS = [
    ("default", CLIPS, BUDGET,
     "defaults (Silero packed torch, language ar, segment timing, cues 80/6/0.6)"),
    ("lang-en", CLIPS, ["--language", "en"] + BUDGET,
     "--language en (the original's default language is ar)"),
    ("vad-auditok", CLIPS, ["--vad", "auditok"] + BUDGET, "energy VAD"),
    ("vad-none", CLIPS, ["--vad", "none"] + BUDGET,
     "no VAD: fixed --max-dur (30 s) windows; c5 (34 s) gives two"),
    ("vad-merge", CLIPS + ["speech_pauses.flac"], ["--vad-merge"] + BUDGET,
     "Silero spans merged greedily up to --max-dur"),
    ("text-only", CLIPS, ["--text-only"] + BUDGET,
     "plain-text mode: txt only (--formats omitted: text mode takes txt only)"),
    ("cues", CLIPS, ["--max-chars", "20", "--max-cue-dur", "2", "--max-gap", "0.2"] + BUDGET,
     "custom cue limits so cues split on characters, duration and gaps"),
    ("multiseg-en", ["speech_pauses.flac", "c5_es_en_34s.wav"], ["--language", "en"] + BUDGET,
     "many segments per file, English prompt"),
    ("multiseg-ar", ["ar_pauses_17s.flac", "c3_fr_ar_10s.wav"], ["--language", "ar"] + BUDGET,
     "many segments per file, explicit --language ar"),
    ("retry", ["c1_en_us_3s.wav", "c3_fr_ar_10s.wav", "c5_es_en_34s.wav"],
     ["--max-new-tokens", "5", "--max-retry-tokens", "114"],
     "first budget 5: rows that hit it are retried at 114 (min(114, max(5+128, 10)))"),
    ("truncation-warn", ["c1_en_us_3s.wav", "c3_fr_ar_10s.wav", "c5_es_en_34s.wav"],
     ["--max-new-tokens", "20", "--max-retry-tokens", "114", "--truncation-policy", "warn"],
     "budget 20, no retry: rows stop at 20 tokens and are flagged token_limit"),
]


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def versions():
    import importlib.metadata as md
    out = {"python": sys.version.split()[0]}
    for pkg in ("cohere-transcribe", "torch", "torchaudio", "torchcodec", "transformers",
                "tokenizers", "numpy", "onnxruntime", "auditok", "uroman", "librosa",
                "huggingface_hub"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = None
    return out


# ---------------------------------------------------------------------------
# The tiny model directory both tools load.

def make_tiny_product():
    """tests/fixtures/tiny-product = tiny-hf's files + the processor files the
    original's AutoProcessor needs. tokenizer.json stays byte-identical to
    tiny-hf's (save_pretrained would add a post_processor; decoding does not
    use it, and our loader should read the very same file)."""
    from transformers import (CohereAsrFeatureExtractor, CohereAsrProcessor,
                              PreTrainedTokenizerFast)
    os.makedirs(TINY_PRODUCT, exist_ok=True)
    for name in ("config.json", "generation_config.json", "model.safetensors",
                 "preprocessor_config.json", "tokenizer.json"):
        shutil.copyfile(os.path.join(TINY_HF, name), os.path.join(TINY_PRODUCT, name))
    with tempfile.TemporaryDirectory() as tmp:
        tok = PreTrainedTokenizerFast(
            tokenizer_file=os.path.join(TINY_HF, "tokenizer.json"),
            eos_token="<|endoftext|>", pad_token="<pad>",
            bos_token="<|startoftranscript|>", unk_token="<unk>")
        proc = CohereAsrProcessor(feature_extractor=CohereAsrFeatureExtractor(), tokenizer=tok)
        proc.save_pretrained(tmp)
        for name in ("processor_config.json", "tokenizer_config.json"):
            shutil.copyfile(os.path.join(tmp, name), os.path.join(TINY_PRODUCT, name))


# ---------------------------------------------------------------------------
# Extra audio: an Arabic clip with several pauses (espeak-ng ar + sox).

AR_CLIP = "ar_pauses_17s.flac"
AR_PARTS = [
    ("pause", 0.6),
    ("say", "مرحبا بكم في هذا الاختبار القصير"),
    ("pause", 0.9),
    ("say", "الطقس جميل اليوم في المدينة"),
    ("pause", 1.4),
    ("say", "نحن نتحدث ببطء ثم نتوقف قليلا"),
    ("pause", 0.45),
    ("say", "وهذه هي الجملة الأخيرة"),
    ("pause", 0.8),
]


def make_ar_clip(force=False):
    """Committed once; remade only when missing or with --regen-audio (espeak-ng
    output changes between versions, so the file, not the recipe, is the fixture)."""
    out = os.path.join(GOLDEN, "audio", AR_CLIP)
    if os.path.exists(out) and not force:
        return
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        parts = []
        for i, (kind, arg) in enumerate(AR_PARTS):
            p = os.path.join(tmp, "p%02d.wav" % i)
            if kind == "pause":
                subprocess.run(["sox", "-n", "-r", "16000", "-c", "1", "-b", "16", p,
                                "trim", "0", str(arg)], check=True)
            else:
                raw = os.path.join(tmp, "r%02d.wav" % i)
                subprocess.run(["espeak-ng", "-v", "ar", "-s", "150", "-w", raw, arg], check=True)
                subprocess.run(["sox", "-R", raw, "-r", "16000", "-c", "1", "-b", "16", p],
                               check=True)
            parts.append(p)
        cat = os.path.join(tmp, "cat.wav")
        subprocess.run(["sox", "-R"] + parts + [cat], check=True)
        # a quiet white-noise floor throughout, repeatable (-R)
        n = os.path.join(tmp, "noise.wav")
        dur = subprocess.run(["soxi", "-D", cat], check=True, capture_output=True,
                             text=True).stdout.strip()
        subprocess.run(["sox", "-R", "-n", "-r", "16000", "-c", "1", "-b", "16", n,
                        "synth", dur, "whitenoise", "vol", "0.01"], check=True)
        subprocess.run(["sox", "-R", "-m", cat, n, "-b", "16", out], check=True)


# ---------------------------------------------------------------------------
# Running the original.

def run_root_paths(set_name):
    return {
        "{root}": RUN_ROOT,
        "{model}": os.path.join(RUN_ROOT, "model"),
        "{audio}": os.path.join(RUN_ROOT, "in", set_name),
        "{out}": os.path.join(RUN_ROOT, "out", set_name),
        "{profile}": os.path.join(RUN_ROOT, "profile", set_name + ".json"),
    }


def expand(argv, paths):
    out = []
    for a in argv:
        for k, v in paths.items():
            a = a.replace(k, v)
        out.append(a)
    return out


def unexpand(text, paths):
    # longest first, so {out} wins over {root}
    for k, v in sorted(paths.items(), key=lambda kv: -len(kv[1])):
        text = text.replace(v, k)
    return text


def child_env(extra=None):
    env = dict(os.environ)
    env.update({
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TZ": "UTC",
        "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
        "HF_HUB_CACHE": os.path.join(RUN_ROOT, "empty-hub"),
        "COLUMNS": "80",
    })
    env.pop("HF_TOKEN", None)
    if extra:
        env.update(extra)
    return env


def prepare_root():
    if os.path.exists(RUN_ROOT):
        shutil.rmtree(RUN_ROOT)
    os.makedirs(os.path.join(RUN_ROOT, "profile"))
    os.makedirs(os.path.join(RUN_ROOT, "empty-hub"))
    shutil.copytree(TINY_PRODUCT, os.path.join(RUN_ROOT, "model"))


def stage_inputs(set_name, inputs):
    d = os.path.join(RUN_ROOT, "in", set_name)
    os.makedirs(d)
    for name in inputs:
        dst = os.path.join(d, name)
        shutil.copyfile(os.path.join(REPO, src(name)), dst)
        os.utime(dst, (FIXED_MTIME, FIXED_MTIME))
    return d


def trace_summary(trace_path, paths):
    calls = []
    if os.path.exists(trace_path):
        with open(trace_path, encoding="utf-8") as fh:
            calls = [json.loads(line) for line in fh if line.strip()]
    files = {}
    for c in calls:
        for r in c["rows"]:
            r.pop("path", None)
            f = files.setdefault(r["file"], {})
            # the last call that ran a segment is its final attempt
            f[str(r["segment_index"])] = {
                "start": r["start"], "end": r["end"], "call": c["call"],
                "max_new_tokens": c["max_new_tokens"],
                "generated_tokens": r["generated_tokens"],
                "stopped_by_max_tokens": r["stopped_by_max_tokens"],
                "repetition_stopped": r["repetition_stopped"],
                "generated_ids": r["generated_ids"],
            }
    final = {name: [dict(index=int(k), **v) for k, v in sorted(segs.items(), key=lambda kv: int(kv[0]))]
             for name, segs in sorted(files.items())}
    return {"calls": calls, "final_segments": final}


def run_set(name, inputs, extra, desc, vers):
    paths = run_root_paths(name)
    stage_inputs(name, inputs)
    os.makedirs(paths["{out}"])
    argv = ["{audio}"] + COMMON + extra
    if "--text-only" not in extra:
        argv += FORMATS
    trace_path = os.path.join(RUN_ROOT, "trace-%s.jsonl" % name)
    cmd = [sys.executable, TRACE] + expand(argv, paths)
    proc = subprocess.run(cmd, capture_output=True, env=child_env({"GOLDEN_TRACE": trace_path}),
                          cwd=RUN_ROOT)
    dest = os.path.join(GOLDEN, name)
    if os.path.exists(dest):
        shutil.rmtree(dest)
    shutil.copytree(paths["{out}"], os.path.join(dest, "out"))
    if os.path.exists(paths["{profile}"]):
        shutil.copyfile(paths["{profile}"], os.path.join(dest, "profile.json"))
    with open(os.path.join(dest, "trace.json"), "w", encoding="utf-8") as fh:
        json.dump(trace_summary(trace_path, paths), fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    outputs = sorted(os.listdir(paths["{out}"]))
    case = {
        "name": name,
        "description": desc,
        "argv": argv,
        "inputs": [{"name": n, "source": src(n),
                    "sha256": sha256_file(os.path.join(REPO, src(n)))} for n in inputs],
        "exit_code": proc.returncode,
        "stdout": unexpand(proc.stdout.decode("utf-8", "replace"), paths),
        "stderr": unexpand(proc.stderr.decode("utf-8", "replace"), paths),
        "outputs": outputs,
        "paths": paths,
    }
    print("  %-16s rc=%d  %d files" % (name, proc.returncode, len(outputs)), flush=True)
    return case


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, ensure_ascii=False, indent=1)
        fh.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", help="option sets to (re)make; default all")
    ap.add_argument("--part", nargs="*", default=["sets"],
                    choices=["sets", "cli", "word", "silero"], help="what to make")
    ap.add_argument("--regen-audio", action="store_true", help="remake the Arabic clip")
    args = ap.parse_args()
    vers = versions()
    make_tiny_product()
    make_ar_clip(args.regen_audio)
    prepare_root()
    os.makedirs(GOLDEN, exist_ok=True)
    cases_path = os.path.join(GOLDEN, "cases.json")
    if "sets" in args.part:
        old = {}
        if os.path.exists(cases_path) and args.only:
            with open(cases_path, encoding="utf-8") as fh:
                old = {c["name"]: c for c in json.load(fh)["sets"]}
        cases = []
        for name, inputs, extra, desc in SETS:
            if args.only and name not in args.only:
                if name in old:
                    cases.append(old[name])
                continue
            cases.append(run_set(name, inputs, extra, desc, vers))
        write_json(cases_path, {
            "generator": "tools/reference/make_golden.py",
            "run_root": RUN_ROOT,
            "placeholders": "{root} {model} {audio} {out} {profile}: see each set's paths",
            "input_mtime_unix": FIXED_MTIME,
            "environment": {k: v for k, v in child_env().items()
                            if k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES",
                                     "HF_HUB_OFFLINE", "TZ", "LC_ALL", "COLUMNS")},
            "versions": vers,
            "sets": cases,
        })


if __name__ == "__main__":
    main()
