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
ALIGNER_HUB = os.path.join(FIX, "tiny-aligner", "hub")
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
    ("default-grouped", CLIPS, BUDGET,
     "as default, but the original believes it has 8 CPUs (GOLDEN_CPU_COUNT=8 in the tracing "
     "wrapper): it then probes every input, puts all six files in one preparation group and "
     "batches segments across files, longest first (what it does on a >= 4-core host)"),
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

# Extra environment of a set (read by golden_trace.py).
SET_ENV = {"default-grouped": {"GOLDEN_CPU_COUNT": "8"}}

# Word mode needs the aligner: the tiny random one in tests/fixtures/tiny-aligner
# (an HF cache; see make_tiny_aligner.py). Emissions are kept per file.
WORD = ["--alignment", "word"]
WORD_SETS = [
    ("word-en", ["c1_en_us_3s.wav", "c5_es_en_34s.wav"], ["--language", "en"] + WORD + BUDGET,
     "word alignment (tiny random MMS aligner), English prompt, several segments per file"),
    ("word-ar", ["ar_pauses_17s.flac", "c3_fr_ar_10s.wav"], ["--language", "ar"] + WORD + BUDGET,
     "word alignment, Arabic (uroman romanisation), several segments per file"),
    ("word-cues", ["c4_en_gb_30s.wav"],
     ["--language", "en"] + WORD + ["--max-chars", "20", "--max-cue-dur", "2", "--max-gap", "0.2"] + BUDGET,
     "word alignment with tight cue limits, so word cues split"),
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


EMPTY_HUB = "/tmp/ct-golden-empty-hub"


def child_env(extra=None):
    os.makedirs(EMPTY_HUB, exist_ok=True)
    env = dict(os.environ)
    env.update({
        "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "",
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TZ": "UTC",
        "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
        "HF_HUB_CACHE": EMPTY_HUB,
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
    records = []
    if os.path.exists(trace_path):
        with open(trace_path, encoding="utf-8") as fh:
            records = [json.loads(line) for line in fh if line.strip()]
    calls = [r for r in records if "call" in r]
    emissions = [r for r in records if "emissions" in r]
    aligner_text = [r for r in records if "preprocess_text" in r]
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
    out = {"calls": calls, "final_segments": final}
    if emissions:
        out["emissions"] = emissions
    if aligner_text:
        out["aligner_text"] = aligner_text
    return out


def save_emissions(em_dir, dest):
    """All files' emissions of a set in one safetensors file, tensor name = the
    audio file name, F32 [frames, 32] (31 aligner classes + the <star> column)."""
    if not os.path.isdir(em_dir):
        return
    import numpy as np
    from safetensors.numpy import save_file
    tensors = {}
    for f in sorted(os.listdir(em_dir)):
        if f.endswith(".npy"):
            tensors[f[:-4]] = np.ascontiguousarray(np.load(os.path.join(em_dir, f)), dtype=np.float32)
    save_file(tensors, os.path.join(dest, "emissions.safetensors"),
              metadata={"generator": "tools/reference/make_golden.py",
                        "content": "log_softmax emissions as align_words receives them; "
                                   "last column is <star> (0.0)"})


def snapshot_out(d):
    out = {}
    for f in sorted(os.listdir(d)):
        out[f] = sha256_file(os.path.join(d, f))
    return out


def run_followups(name, argv, paths):
    """Re-runs on the finished output folder: `--existing skip` (every set is
    verified complete: no model load, nothing written) and `--existing
    overwrite` (the ASR checkpoints are reused, outputs re-rendered). Records
    what the original said and which files changed; the folder committed as
    <set>/out is the first run's."""
    results = []
    for policy in ("skip", "overwrite"):
        before = snapshot_out(paths["{out}"])
        fu_argv = argv + ["--existing", policy]
        fu_argv[fu_argv.index("{profile}")] = "{profile}." + policy
        proc = subprocess.run([ORIG_BIN] + expand(fu_argv, paths), capture_output=True,
                              env=child_env(), cwd=RUN_ROOT)
        after = snapshot_out(paths["{out}"])
        prof_path = paths["{profile}"] + "." + policy
        prof = None
        if os.path.exists(prof_path):
            with open(prof_path, encoding="utf-8") as fh:
                p = json.load(fh)
            prof = {"timings.asr_load_seconds": p["timings"]["asr_load_seconds"],
                    "asr.batches": p["asr"]["batches"],
                    "files[].resumed_from_asr_checkpoint": [f.get("resumed_from_asr_checkpoint") for f in p["files"]],
                    "files[].published": [f.get("published") for f in p["files"]]}
        results.append({
            "argv": fu_argv,
            "exit_code": proc.returncode,
            "stdout": unexpand(proc.stdout.decode("utf-8", "replace"), paths),
            "stderr": unexpand(proc.stderr.decode("utf-8", "replace"), paths),
            "changed_files": sorted(f for f in set(before) | set(after) if before.get(f) != after.get(f)),
            "profile_excerpt": prof,
        })
    return results


def run_set(name, inputs, extra, desc, vers, word=False):
    paths = run_root_paths(name)
    stage_inputs(name, inputs)
    os.makedirs(paths["{out}"])
    argv = ["{audio}"] + COMMON + extra
    if "--text-only" not in extra:
        argv += FORMATS
    trace_path = os.path.join(RUN_ROOT, "trace-%s.jsonl" % name)
    cmd = [sys.executable, TRACE] + expand(argv, paths)
    env_extra = {"GOLDEN_TRACE": trace_path}
    env_extra.update(SET_ENV.get(name, {}))
    em_dir = os.path.join(RUN_ROOT, "emissions-" + name)
    if word:
        env_extra.update({"HF_HUB_CACHE": ALIGNER_HUB, "GOLDEN_EMISSIONS": em_dir})
    proc = subprocess.run(cmd, capture_output=True, env=child_env(env_extra), cwd=RUN_ROOT)
    dest = os.path.join(GOLDEN, name)
    if os.path.exists(dest):
        shutil.rmtree(dest)
    shutil.copytree(paths["{out}"], os.path.join(dest, "out"))
    if os.path.exists(paths["{profile}"]):
        shutil.copyfile(paths["{profile}"], os.path.join(dest, "profile.json"))
    with open(os.path.join(dest, "trace.json"), "w", encoding="utf-8") as fh:
        json.dump(trace_summary(trace_path, paths), fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    if word:
        save_emissions(em_dir, dest)
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
    if name == "default":
        case["followups"] = run_followups(name, argv, paths)
    if name in SET_ENV:
        case["wrapper_environment"] = SET_ENV[name]
    if word:
        case["environment"] = {"HF_HUB_CACHE": "tests/fixtures/tiny-aligner/hub", "HF_HUB_OFFLINE": "1"}
        for k in ("stdout", "stderr"):
            case[k] = case[k].replace(ALIGNER_HUB, "{aligner_hub}")
    print("  %-16s rc=%d  %d files" % (name, proc.returncode, len(outputs)), flush=True)
    return case


# ---------------------------------------------------------------------------
# CLI behaviour: parse rules (PRODUCT-DETAILS 10.3) and validation messages
# (10.5). Every case runs in CLI_ROOT with relative paths; M = the local tiny
# model, so nothing reaches the Hub. Cases are chosen to stop at an error (or
# help/version), never to transcribe.

CLI_ROOT = "/tmp/ct-golden-cli"
M = ["--model", "model"]
CLI_CASES = [
    # name, argv, what it checks
    ("no-args", [], "missing audio"),
    ("help-short", ["-h"], "help to stdout, exit 0"),
    ("help-long", ["--help"], "help to stdout, exit 0"),
    ("help-prefix", ["--he"], "unique prefix of --help"),
    ("version", ["--version"], "version line"),
    ("version-after-unknown", ["--bogus", "--version"], "--version wins over an earlier unknown option"),
    ("help-after-unknown", ["--bogus", "-h"], "-h wins over an earlier unknown option"),
    ("unknown-option", ["a.wav", "--bogus"] + M, "unrecognized arguments"),
    ("device-invalid", ["a.wav", "--device", "gpu"] + M, "invalid choice"),
    ("device-prefix-value", ["a.wav", "--device", "cu"] + M, "value prefixes are not accepted (0.1.3 rule)"),
    ("device-mps", ["a.wav", "--device", "mps"] + M, "mps not available"),
    ("device-cuda", ["a.wav", "--device", "cuda"] + M, "cuda not available"),
    ("ambiguous-max", ["a.wav", "--max", "3"] + M, "ambiguous prefix"),
    ("ambiguous-mod", ["a.wav", "--mod", "x"], "ambiguous prefix (--model, --model-revision)"),
    ("ambiguous-no", ["a.wav", "--no"] + M, "ambiguous prefix of the --no-* switches"),
    ("prefix-language", ["a.wav", "--lang", "xx"] + M, "unique prefix accepted; the message names --language"),
    ("prefix-model-revision", ["a.wav", "--model", "model", "--model-r", "main"],
     "unique prefix --model-r; local model with a revision"),
    ("exact-beats-prefix", ["a.wav", "--vad", "bogus"] + M, "--vad is exact although it prefixes --vad-*"),
    ("formats-eats-audio", ["--formats", "txt", "a.wav"] + M, "--formats takes a.wav as a format"),
    ("formats-eats-audio-after", M + ["--formats", "txt", "a.wav"], "same, audio after the options"),
    ("formats-missing", ["a.wav", "--formats"] + M, "--formats with no value before an option"),
    ("formats-missing-end", ["a.wav"] + M + ["--formats"], "--formats with no value at the end"),
    ("formats-equals-one", ["a.wav", "--formats=txt", "srt"] + M, "--formats=x takes one value; srt is a late positional"),
    ("formats-invalid", ["a.wav", "--formats", "txt", "csv"] + M, "invalid format value"),
    ("formats-dash", ["a.wav", "--formats", "-"] + M, "a lone - is a value"),
    ("formats-text-only", ["a.wav", "--text-only", "--formats", "srt"] + M, "text mode takes txt only"),
    ("formats-text-only-txt-srt", ["a.wav", "--text-only", "--formats", "txt", "srt"] + M, "text mode takes txt only"),
    ("formats-alignment-none", ["a.wav", "--alignment", "none", "--formats", "json"] + M, "alignment none is text mode"),
    ("negative-int-value", ["a.wav", "--max-new-tokens", "-5"] + M, "-5 is a value (negative number)"),
    ("negative-float-value", ["a.wav", "--max-dur", "-.5"] + M, "-.5 is a value"),
    ("negative-exp-not-value", ["a.wav", "--max-new-tokens", "-1e3"] + M, "-1e3 does not look negative: missing argument"),
    ("dash-word-not-value", ["a.wav", "--max-dur", "-x"] + M, "-x is an option: missing argument"),
    ("missing-argument-end", ["a.wav"] + M + ["--vad-threshold"], "missing argument"),
    ("missing-argument-before-option", ["a.wav", "--vad-threshold", "--max-dur", "3"] + M, "missing argument"),
    ("text-only-with-alignment", ["a.wav", "--text-only", "--alignment", "segment"] + M, "conflict"),
    ("text-only-with-alignment-none", ["a.wav", "--text-only", "--alignment", "none"] + M, "conflict even for none"),
    ("alignment-then-text-only", ["a.wav", "--alignment", "word", "--text-only"] + M, "conflict, other order"),
    ("text-only-alignment-before-help", ["a.wav", "--text-only", "--alignment", "none", "-h"], "conflict is seen before -h"),
    ("help-before-text-only-alignment", ["-h", "--text-only", "--alignment", "none"], "-h first wins"),
    ("late-positional", ["a.wav"] + M + ["b.wav"], "no positional after an option followed one"),
    ("double-dash-after-option", ["a.wav"] + M + ["--", "b.wav"], "-- after an option that followed a positional"),
    ("double-dash-audio", M + ["--", "-dash.wav"], "-- ends options: -dash.wav is audio (missing input)"),
    ("double-dash-between", ["a.wav", "--", "nope.wav"], "a.wav -- nope.wav: both audio (missing input)"),
    ("int-invalid", ["a.wav", "--max-new-tokens", "x"] + M, "invalid int"),
    ("int-float-text", ["a.wav", "--max-new-tokens", "1.5"] + M, "invalid int"),
    ("int-unicode-digits", ["a.wav", "--max-new-tokens", "\u0663", "--max-retry-tokens", "\u0662"] + M,
     "Arabic-Indic digits parse (3, 2): retry < new"),
    ("int-underscore", ["a.wav", "--max-new-tokens", "1_0", "--max-retry-tokens", "9"] + M,
     "1_0 is 10: retry < new"),
    ("int-double-underscore", ["a.wav", "--max-new-tokens", "1__0"] + M, "invalid int"),
    ("int-leading-underscore", ["a.wav", "--max-new-tokens", "_10"] + M, "invalid int"),
    ("int-whitespace", ["a.wav", "--max-new-tokens", " 7 ", "--max-retry-tokens", "6"] + M,
     "surrounding whitespace ignored: retry < new"),
    ("int-plus-sign", ["a.wav", "--max-new-tokens", "+0"] + M, "+0 parses; must be positive"),
    ("float-invalid", ["a.wav", "--max-dur", "abc"] + M, "invalid float"),
    ("float-inf", ["a.wav", "--max-dur", "inf"] + M, "inf parses; must be finite"),
    ("float-infinity-case", ["a.wav", "--max-dur", "-InFiNiTy"] + M, "any case, sign"),
    ("float-nan", ["a.wav", "--max-dur", "nan"] + M, "nan parses; must be finite"),
    ("float-nan-threshold", ["a.wav", "--vad-threshold", "NaN"] + M, "nan threshold"),
    ("float-inf-gap", ["a.wav", "--max-gap", "inf"] + M, "inf cue limit"),
    ("float-exponent-dot", ["a.wav", "--max-dur", "5.", "--min-dur", "1e1"] + M, "5. and 1e1 parse: min > max"),
    ("float-underscore", ["a.wav", "--max-dur", "1_0.5", "--min-dur", "11"] + M, "1_0.5 parses (10.5)"),
    ("choice-existing", ["a.wav", "--existing", "replace"] + M, "invalid choice"),
    ("choice-language", ["a.wav", "--language", "fr"] + M, "invalid choice"),
    ("choice-truncation", ["a.wav", "--truncation-policy", "drop"] + M, "invalid choice"),
    ("model-empty", ["a.wav", "--model", ""], "empty model"),
    ("model-whitespace", ["a.wav", "--model", " model"], "leading whitespace"),
    ("model-bad-hub-id", ["a.wav", "--model", "not a/valid id"], "bad Hub id"),
    ("model-bad-hub-id-slashes", ["a.wav", "--model", "a/b/c"], "bad Hub id"),
    ("model-hub-offline", ["a.wav", "--model", "someone/missing-model"], "valid id, no network"),
    ("adapter-x", ["a.wav", "--adapter", "x"] + M, "adapter that is neither local nor reachable"),
    ("adapter-local", ["a.wav", "--adapter", "model"] + M, "a local adapter directory"),
    ("adapter-revision-alone", ["a.wav", "--adapter-revision", "main"] + M, "requires --adapter"),
    ("model-revision-blank", ["a.wav", "--model-revision", " "] + M, "blank revision"),
    ("audio-memory-zero", ["a.wav", "--audio-memory-gb", "0"] + M, "positive"),
    ("audio-memory-inf", ["a.wav", "--audio-memory-gb", "inf"] + M, "finite"),
    ("preprocess-workers-zero", ["a.wav", "--preprocess-workers", "0"] + M, "positive"),
    ("vad-batch-zero", ["a.wav", "--vad-batch-size", "0"] + M, "positive"),
    ("vad-batch-product", ["a.wav", "--vad-batch-size", "65", "--vad-block-frames", "512"] + M, "product cap"),
    ("vad-batch-ignored-auditok", ["a.wav", "--vad", "auditok", "--vad-batch-size", "0", "--max-new-tokens", "0"] + M,
     "vad batch not checked for auditok (next check fires)"),
    ("vad-threads-zero", ["a.wav", "--vad-threads", "0"] + M, "positive"),
    ("vad-threads-auditok", ["a.wav", "--vad", "auditok", "--vad-threads", "2"] + M, "packed torch only"),
    ("batch-size-zero", ["a.wav", "--batch-size", "0"] + M, "positive"),
    ("batch-max-zero", ["a.wav", "--batch-max-size", "0"] + M, "positive"),
    ("batch-max-lt-size", ["a.wav", "--batch-size", "8", "--batch-max-size", "4", "--adaptive-batch"] + M, "max >= size"),
    ("batch-max-no-adaptive", ["a.wav", "--batch-max-size", "8"] + M, "requires --adaptive-batch"),
    ("batch-audio-zero", ["a.wav", "--batch-audio-seconds", "0"] + M, "positive"),
    ("batch-vram-low", ["a.wav", "--batch-vram-target", "0.4"] + M, "range"),
    ("align-batch-zero", ["a.wav", "--alignment", "word", "--align-batch-size", "0"] + M, "positive (word mode)"),
    ("align-batch-zero-segment", ["a.wav", "--align-batch-size", "0", "--max-new-tokens", "0"] + M,
     "align batch not checked outside word mode"),
    ("max-dur-zero", ["a.wav", "--max-dur", "0"] + M, "positive"),
    ("min-dur-nan", ["a.wav", "--min-dur", "nan"] + M, "finite"),
    ("min-dur-negative", ["a.wav", "--min-dur", "-1"] + M, "range"),
    ("min-dur-gt-max", ["a.wav", "--min-dur", "40"] + M, "range"),
    ("vad-none-short-max", ["a.wav", "--vad", "none", "--max-dur", "0.5"] + M, ">= 1 s"),
    ("vad-none-min-gt-max", ["a.wav", "--vad", "none", "--min-dur", "40", "--max-new-tokens", "0"] + M,
     "min/max not compared for vad none"),
    ("vad-threshold-high", ["a.wav", "--vad-threshold", "1.5"] + M, "range"),
    ("min-silence-negative", ["a.wav", "--min-silence-ms", "-1"] + M, "non-negative"),
    ("speech-pad-negative", ["a.wav", "--speech-pad-ms", "-1"] + M, "non-negative"),
    ("auditok-silence-negative", ["a.wav", "--vad", "auditok", "--max-silence", "-1"] + M, "non-negative"),
    ("auditok-energy-negative", ["a.wav", "--vad", "auditok", "--energy-threshold", "-1"] + M, "non-negative"),
    ("auditok-min-dur-zero", ["a.wav", "--vad", "auditok", "--min-dur", "0"] + M, "> 0"),
    ("auditok-silence-ge-max", ["a.wav", "--vad", "auditok", "--max-silence", "30"] + M, "< max-dur"),
    ("auditok-energy-inf", ["a.wav", "--vad", "auditok", "--energy-threshold", "inf"] + M, "finite"),
    ("vad-merge-auditok", ["a.wav", "--vad", "auditok", "--vad-merge"] + M, "silero only"),
    ("max-new-tokens-zero", ["a.wav", "--max-new-tokens", "0"] + M, "positive"),
    ("max-retry-lt-new", ["a.wav", "--max-new-tokens", "100", "--max-retry-tokens", "99"] + M, ">= new"),
    ("max-chars-zero", ["a.wav", "--max-chars", "0"] + M, "cue limits"),
    ("max-cue-dur-zero", ["a.wav", "--max-cue-dur", "0"] + M, "cue limits"),
    ("max-gap-negative", ["a.wav", "--max-gap", "-0.1"] + M, "cue limits"),
    ("max-chars-zero-text-only", ["a.wav", "--text-only", "--max-chars", "0", "--max-new-tokens", "0"] + M,
     "cue limits not checked in text mode (next check fires)"),
    ("align-dtype-fp16-cpu", ["a.wav", "--alignment", "word", "--align-dtype", "fp16", "--device", "cpu"] + M,
     "runtime: fp16 alignment needs CUDA"),
    ("existing-error", ["done"] + M, "--existing error (default) with outputs present: fails at planning"),
    ("existing-error-explicit", ["done/x.wav", "--existing", "error"] + M, "explicit, file input"),
    ("no-audio-found", ["empty"] + M, "directory without audio"),
    ("no-audio-found-non-recursive", ["nested", "--no-recursive"] + M, "audio only in a subdirectory"),
    ("missing-input", ["nope.wav"] + M, "input does not exist"),
    ("input-not-regular", ["/dev/null"] + M, "character device"),
    ("formats-wav", ["a.wav", "--formats", "wav"] + M, "wav is not a format"),
    ("output-collides-input", ["clip.txt", "--formats", "txt"] + M,
     "a file input of any extension; its txt output would overwrite it"),
    ("output-collision", ["a.wav", "same/a.flac", "--output-dir", "o"] + M, "two inputs claim the same outputs"),
    ("float-neg-inf-equals", ["a.wav", "--max-dur=-inf"] + M, "--opt=value takes a dash value"),
    ("profile-collides-input", ["a.wav", "--profile-json", "a.wav"] + M, "profile path equals the input"),
    ("profile-collides-output", ["a.wav", "--profile-json", "a.txt"] + M, "profile path equals an output"),
]


def prepare_cli_root():
    if os.path.exists(CLI_ROOT):
        shutil.rmtree(CLI_ROOT)
    os.makedirs(CLI_ROOT)
    shutil.copytree(TINY_PRODUCT, os.path.join(CLI_ROOT, "model"))
    shutil.copyfile(os.path.join(FIX, "audio", "c1_en_us_3s.wav"), os.path.join(CLI_ROOT, "a.wav"))
    shutil.copyfile(os.path.join(FIX, "audio", "c0_tones_1s.wav"), os.path.join(CLI_ROOT, "b.wav"))
    os.makedirs(os.path.join(CLI_ROOT, "empty"))
    os.makedirs(os.path.join(CLI_ROOT, "nested", "sub"))
    shutil.copyfile(os.path.join(FIX, "audio", "c0_tones_1s.wav"),
                    os.path.join(CLI_ROOT, "nested", "sub", "n.wav"))
    shutil.copyfile(os.path.join(FIX, "audio", "c0_tones_1s.wav"), os.path.join(CLI_ROOT, "clip.txt"))
    os.makedirs(os.path.join(CLI_ROOT, "same"))
    shutil.copyfile(os.path.join(FIX, "audio", "c0_tones_1s.wav"), os.path.join(CLI_ROOT, "same", "a.flac"))
    os.makedirs(os.path.join(CLI_ROOT, "done"))
    shutil.copyfile(os.path.join(FIX, "audio", "c0_tones_1s.wav"), os.path.join(CLI_ROOT, "done", "x.wav"))
    with open(os.path.join(CLI_ROOT, "done", "x.txt"), "w") as fh:
        fh.write("an earlier transcript\n")


def tree_files(root):
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


def tree_dirs(root):
    return {os.path.relpath(os.path.join(d, x), root) for d, xs, _ in os.walk(root) for x in xs}


def run_cli(cmd, env_extra=None):
    proc = subprocess.run(cmd, capture_output=True, env=child_env(env_extra), cwd=CLI_ROOT)
    paths = {"{root}": CLI_ROOT}
    return {
        "exit_code": proc.returncode,
        "stdout": unexpand(proc.stdout.decode("utf-8", "replace"), paths),
        "stderr": unexpand(proc.stderr.decode("utf-8", "replace"), paths),
    }


def make_cli(aligner_hub=None):
    prepare_cli_root()
    initial = tree_files(CLI_ROOT)
    initial_dirs = tree_dirs(CLI_ROOT)
    cases = []
    for name, argv, what in CLI_CASES:
        r = run_cli([ORIG_BIN] + argv)
        # the [1/4] stage line and a failed run leave no outputs behind, but a
        # case must never have transcribed: check, so the table stays honest
        left = sorted(tree_files(CLI_ROOT) - initial)
        if left:
            raise SystemExit("cli case %s wrote outputs: %s" % (name, left))
        # an --output-dir is created before planning fails: note it, remove it
        new_dirs = sorted(tree_dirs(CLI_ROOT) - initial_dirs)
        for d in reversed(new_dirs):
            os.rmdir(os.path.join(CLI_ROOT, d))
        case = dict(name=name, argv=argv, checks=what, **r)
        if new_dirs:
            case["created_directories"] = new_dirs
        cases.append(case)
        print("  %-36s rc=%d" % (name, r["exit_code"]), flush=True)
    write_json(os.path.join(GOLDEN, "cli_cases.json"), {
        "generator": "tools/reference/make_golden.py --part cli",
        "command": "cohere-transcribe (PyPI cohere-transcribe==0.1.4, argparse)",
        "cwd": "{root} = " + CLI_ROOT + ": model/ (tests/fixtures/tiny-product), a.wav (c1), "
               "b.wav (c0), clip.txt (c0), same/a.flac (c0), empty/, nested/sub/n.wav, "
               "done/x.wav with done/x.txt present",
        "environment": "as cases.json (CPU only, HF_HUB_OFFLINE=1, empty HF_HUB_CACHE, no HF_TOKEN)",
        "versions": versions(),
        "cases": cases,
    })
    help_text = run_cli([ORIG_BIN, "--help"])
    with open(os.path.join(GOLDEN, "help.txt"), "w", encoding="utf-8") as fh:
        fh.write(help_text["stdout"])
    make_doctor(aligner_hub)


def make_doctor(aligner_hub=None):
    runs = []
    variants = [
        ("help", ["--help"], None),
        ("default", [], None),
        ("mode-word-no-aligner", ["--mode", "word"], None),
        ("model-access-tiny", ["--model-access", "--model", "model"], None),
        ("model-access-hub-offline", ["--model-access"], None),
        ("version-invalid", ["--version"], None),
        ("positional-invalid", ["x"], None),
    ]
    if aligner_hub:
        variants += [
            ("mode-word-tiny-aligner", ["--mode", "word"], {"HF_HUB_CACHE": aligner_hub}),
            ("mode-word-model-access-tiny", ["--mode", "word", "--model-access", "--model", "model"],
             {"HF_HUB_CACHE": aligner_hub}),
        ]
    for name, argv, env_extra in variants:
        r = run_cli([ORIG_DOCTOR] + argv, env_extra)
        if aligner_hub:
            for k in ("stdout", "stderr"):
                r[k] = r[k].replace(aligner_hub, "{aligner_hub}")
        runs.append(dict(name=name, argv=argv,
                         hub_cache="{aligner_hub}" if env_extra else "empty", **r))
        print("  doctor %-30s rc=%d" % (name, r["exit_code"]), flush=True)
    write_json(os.path.join(GOLDEN, "doctor.json"), {
        "generator": "tools/reference/make_golden.py --part cli",
        "command": "cohere-transcribe-doctor (PyPI cohere-transcribe==0.1.4)",
        "cwd": "{root} = " + CLI_ROOT,
        "versions": versions(),
        "runs": runs,
    })


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, ensure_ascii=False, indent=1)
        fh.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", help="option sets to (re)make; default all")
    ap.add_argument("--part", nargs="*", default=["sets", "word", "cli", "silero"],
                    choices=["sets", "cli", "word", "silero"], help="what to make")
    ap.add_argument("--regen-audio", action="store_true", help="remake the Arabic clip")
    args = ap.parse_args()
    vers = versions()
    make_tiny_product()
    make_ar_clip(args.regen_audio)
    if "word" in args.part and not os.path.isdir(ALIGNER_HUB):
        subprocess.run([sys.executable, os.path.join(HERE, "make_tiny_aligner.py")], check=True)
    if "sets" in args.part or "word" in args.part:
        prepare_root()
    os.makedirs(GOLDEN, exist_ok=True)
    cases_path = os.path.join(GOLDEN, "cases.json")
    if "sets" in args.part or "word" in args.part:
        old = {}
        if os.path.exists(cases_path):
            with open(cases_path, encoding="utf-8") as fh:
                old = {c["name"]: c for c in json.load(fh)["sets"]}
        cases = []
        all_sets = [s + (False,) for s in SETS] + [s + (True,) for s in WORD_SETS]
        for name, inputs, extra, desc, word in all_sets:
            wanted = ("word" if word else "sets") in args.part and (not args.only or name in args.only)
            if wanted:
                cases.append(run_set(name, inputs, extra, desc, vers, word))
            elif name in old:
                cases.append(old[name])
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
    if "silero" in args.part:
        subprocess.run([sys.executable, os.path.join(HERE, "golden_silero.py")], check=True,
                       env=child_env())
    if "cli" in args.part:
        make_cli(aligner_hub=ALIGNER_HUB if os.path.isdir(ALIGNER_HUB) else None)


if __name__ == "__main__":
    main()
