#!/usr/bin/env python3
"""make_cli_argparse_cases.py — record how the Python twin (cohere-transcribe
0.1.4) classifies many generated command lines, for tests/unit/test_cli_args.c.

Each case is an argv built from a fixed-seed random mix of option names (full,
unique prefixes, ambiguous prefixes, unknown, --no-* forms, `=` forms),
values (valid, invalid, negative numbers, Unicode digits, underscores,
inf/nan), positionals before/between/after options, `--`, `-h`, `--version`.
For each, the twin's own parse_args + validate_args run in-process and the
outcome is recorded: "help" (exit 0 from -h/--help/--version), "parse"
(argparse error, exit 2), "config" with the message (validate_args, exit 1)
or "ok" (valid). The generator avoids what we change on purpose (a language
other than ar/en, --adapter, --device mps, our own options, sndfile).

    /work/origenv/bin/python tools/reference/make_cli_argparse_cases.py \
        > tests/fixtures/cli/argparse_cases.json
"""
import contextlib
import io
import json
import os
import random
import sys
import tempfile

from cohere_transcribe.config import parse_args, validate_args

FLOATS = ["0", "0.5", "1", "30", "40", "-1", "-.5", "1e1", "inf", "-inf", "nan", "abc", "1_0.5", "5.", "1__0",
          "\u0663.\u0665", " 2 ", "0.95", "0.4"]
INTS = ["0", "1", "4", "8", "100", "445", "900", "-5", "x", "1__0", "\u0663", " 7 ", "+0", "1_0", "1.5", "-\u0663",
        "99999999999999999999"]
VALUES = {
    "--model": ["", "   ", " x", "a/b", "a--b", "/", "a/b.git", "-m"],
    "--model-revision": ["main", " ", ""],
    "--adapter-revision": ["main"],
    "--language": ["ar", "en"],
    "--existing": ["error", "skip", "overwrite", "replace"],
    "--device": ["auto", "cpu", "cuda", "cu", "gpu"],
    "--dtype": ["auto", "bf16", "fp16", "fp32", "f"],
    "--audio-backend": ["auto", "ffmpeg", "librosa", "torchcodec", "sox"],
    "--audio-memory-gb": ["4", "0", "-1", "inf", "nan", "x", "0.5"],
    "--preprocess-workers": ["1", "0", "-1", "x", "2"],
    "--vad": ["silero", "auditok", "none", "bogus"],
    "--vad-engine": ["auto", "onnx", "torch", "jit", "x"],
    "--vad-batch-size": ["16", "0", "65", "x", "64"],
    "--vad-block-frames": ["512", "0", "1024"],
    "--vad-threads": ["2", "0", "-1"],
    "--truncation-policy": ["retry", "warn", "drop"],
    "--alignment": ["word", "segment", "none", "w"],
    "--align-dtype": ["fp32", "fp16", "bf16"],
    "--profile-json": ["p.json"],
    "--output-dir": ["out"],
}
for opt in ("--min-dur", "--max-dur", "--max-silence", "--energy-threshold", "--vad-threshold", "--max-cue-dur",
            "--max-gap", "--batch-audio-seconds", "--batch-vram-target"):
    VALUES[opt] = FLOATS
for opt in ("--min-silence-ms", "--speech-pad-ms", "--batch-size", "--batch-max-size", "--max-new-tokens",
            "--max-retry-tokens", "--align-batch-size", "--max-chars"):
    VALUES[opt] = INTS
FLAGS = ["--recursive", "--no-recursive", "--text-only", "--vad-merge", "--no-vad-merge", "--adaptive-batch",
         "--no-adaptive-batch", "--pin-memory", "--no-pin-memory", "--stop-repetition-loops",
         "--no-stop-repetition-loops", "--pipeline-preparation", "--no-pipeline-preparation", "--no-stop",
         "--text", "--recursive=yes"]
FORMATS = ["txt", "srt", "vtt", "json", "csv", "-"]
POSITIONALS = ["a.wav", "b.wav", "-5", "-", "-x y", "c.wav"]
ODD = ["--", "-h", "--help", "--he", "--version", "--vers", "--bogus", "-x", "--bogus=1", "--max", "--no", "--v",
       "--mod", "--al", "-hx"]
# unique prefixes of options, to exercise abbreviation
PREFIXES = {"--max-n": "--max-new-tokens", "--max-r": "--max-retry-tokens", "--min-d": "--min-dur",
            "--dev": "--device", "--vad-th": "--vad-threshold", "--ex": "--existing", "--align-b": "--align-batch-size",
            "--trunc": "--truncation-policy", "--max-g": "--max-gap", "--batch-s": "--batch-size",
            "--energy": "--energy-threshold", "--lang": "--language", "--model-r": "--model-revision",
            "--form": "--formats"}


def item(rng):
    r = rng.random()
    if r < 0.12:
        return [rng.choice(FLAGS)]
    if r < 0.17:
        return [rng.choice(ODD)]
    if r < 0.3:
        if rng.random() < 0.3:
            return ["--formats=" + rng.choice(FORMATS)]
        return ["--formats"] + [rng.choice(FORMATS) for _ in range(rng.randint(0, 3))]
    if r < 0.4:
        name = rng.choice(list(PREFIXES))
        full = PREFIXES[name]
        if full == "--formats":
            return [name, rng.choice(FORMATS)]
        return [name, rng.choice(VALUES[full])]
    name = rng.choice(list(VALUES))
    value = rng.choice(VALUES[name])
    if rng.random() < 0.25:
        return [name + "=" + value]
    if rng.random() < 0.05:
        return [name]  # value missing or taken from the next token
    return [name, value]


def make_argv(rng):
    argv = []
    for _ in range(rng.choice([0, 1, 1, 1, 2])):
        argv.append(rng.choice(POSITIONALS))
    for _ in range(rng.choice([1, 1, 2, 2, 3, 4, 5])):
        argv += item(rng)
        if rng.random() < 0.1:
            argv.append(rng.choice(POSITIONALS))
    if rng.random() < 0.3:
        argv.append(rng.choice(POSITIONALS))
    return argv


def excluded(argv):
    """What we change on purpose (docs/USAGE.md): --device mps, and
    --align-dtype fp16 with an explicit --device cpu (we refuse it at once,
    the twin when it runs)."""
    joined = " ".join(argv)
    return "mps" in argv or ("fp16" in joined and "cpu" in joined)


def classify(argv):
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = parse_args(argv)
    except SystemExit as e:
        return {"outcome": "help" if e.code == 0 else "parse"}
    try:
        validate_args(args)
    except SystemExit as e:
        return {"outcome": "config", "message": str(e.code)}
    return {"outcome": "ok"}


def main():
    rng = random.Random(20261201)
    seen, cases = set(), []
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # no "model" or "a/b" here: paths resolve the same for every reader
        while len(cases) < 1200:
            argv = make_argv(rng)
            key = "\0".join(argv)
            if key in seen or excluded(argv):
                continue
            seen.add(key)
            cases.append(dict(argv=argv, **classify(argv)))
    json.dump({"generator": "tools/reference/make_cli_argparse_cases.py (cohere-transcribe 0.1.4 parse_args + "
                            "validate_args, Python %d.%d)" % sys.version_info[:2],
               "cases": cases}, sys.stdout, ensure_ascii=False, indent=0)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
