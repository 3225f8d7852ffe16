#!/usr/bin/env python3
"""cli_golden.py BIN GOLDEN — run cohere-transcribe on every argv recorded from
the Python twin (tests/fixtures/golden/cli_cases.json, made by
tools/reference/make_golden.py --part cli) in a folder laid out as the
recording's, and compare exit codes; for configuration errors (exit 1 from
the option check) also the message. Where we differ from the twin on
purpose, the case is listed below with the reason (docs/USAGE.md,
"Differences from the Python twin").

While src/cli/cohere-transcribe.c is the parse-only harness (it prints the
resolved options as JSON instead of running), cases the twin fails only when
it runs (inputs, planning, model access, CUDA) cannot be reached: they are
counted as skipped, by name below, and must pass once the real main is in.
Exit 1 with a diff per mismatch."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

# name -> (our exit codes, why)
DIFFERENT_EXIT = {
    "prefix-language": ((1,), "any language the model's config lists is accepted by the parser; the "
                              "model refuses xx when it is resolved (exit 1, not 2)"),
    "choice-language": ((0,), "the parser accepts fr and so does the tiny model: its config lists no "
                              "languages and its tokenizer has <|fr|>, so the file is transcribed"),
}
# name -> why our (gem) message differs from the twin's
DIFFERENT_MESSAGE = {
    "audio-memory-zero": "gem: '--audio-memory-gb must be finite and positive'",
    "audio-memory-inf": "gem: '--audio-memory-gb must be finite and positive'",
    "vad-batch-product": "gem: 32768 without the thousands separator",
    "model-bad-hub-id": "our Hub id rule text after the colon, not huggingface_hub's",
    "model-bad-hub-id-slashes": "resolve.c's wording for a path-like model that does not exist",
    "adapter-x": "adapters are refused by the option check, before any Hub access",
    "adapter-local": "adapters are refused by the option check, before any Hub access",
    "device-mps": "mps is refused by the option check (no Metal backend here)",
    "device-cuda": "our runtime's wording",
    "model-hub-offline": "our Hub client's wording",
    "existing-error": "gem wording (PRODUCT-DETAILS Appendix A)",
    "existing-error-explicit": "gem wording (PRODUCT-DETAILS Appendix A)",
    "profile-collides-input": "absolute paths in the message",
    "profile-collides-output": "absolute paths in the message",
    "input-not-regular": "our wording",
    "output-collides-input": "gem wording: 'Output path for <src> collides with an input: <p>'",
    "output-collision": "gem wording: 'Output collision between <a> and <b>: <p>' (the twin names the state marker)",
    "prefix-language": "the model's config refuses the language",
    "choice-language": "accepted: fr is one of the model's languages",
}
# the twin fails these only once it runs (not reachable by the harness main)
RUN_LEVEL = {
    "device-cuda", "model-hub-offline", "double-dash-audio", "double-dash-between", "existing-error",
    "existing-error-explicit", "no-audio-found", "no-audio-found-non-recursive", "missing-input",
    "input-not-regular", "profile-collides-input", "profile-collides-output", "prefix-language",
    "choice-language",
}


def prepare(root):
    fix = os.environ.get("CT_FIXTURES", os.path.join(os.path.dirname(__file__), "..", "fixtures"))
    tiny = os.path.join(fix, "tiny-product")
    if os.path.isdir(tiny):
        shutil.copytree(tiny, os.path.join(root, "model"))
    else:
        os.makedirs(os.path.join(root, "model"))
    for name, src in (("a.wav", "c1_en_us_3s.wav"), ("b.wav", "c0_tones_1s.wav")):
        shutil.copyfile(os.path.join(fix, "audio", src), os.path.join(root, name))
    os.makedirs(os.path.join(root, "empty"))
    os.makedirs(os.path.join(root, "nested", "sub"))
    shutil.copyfile(os.path.join(fix, "audio", "c0_tones_1s.wav"), os.path.join(root, "nested", "sub", "n.wav"))
    # an input of any extension whose txt output would be itself; two inputs claiming one set
    shutil.copyfile(os.path.join(fix, "audio", "c0_tones_1s.wav"), os.path.join(root, "clip.txt"))
    os.makedirs(os.path.join(root, "same"))
    shutil.copyfile(os.path.join(fix, "audio", "c0_tones_1s.wav"), os.path.join(root, "same", "a.flac"))
    os.makedirs(os.path.join(root, "done"))
    shutil.copyfile(os.path.join(fix, "audio", "c0_tones_1s.wav"), os.path.join(root, "done", "x.wav"))
    with open(os.path.join(root, "done", "x.txt"), "w") as fh:
        fh.write("an earlier transcript\n")


def listing(root):
    out = set()
    for d, dirs, files in os.walk(root):
        out.update(os.path.join(d, x) for x in dirs + files)
    return out


def clean(root, initial):
    """Remove what a case left (a run that transcribed), so that every case
    sees the recorded layout."""
    for path in sorted(listing(root) - initial, key=len, reverse=True):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)


def last_line(text):
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def main():
    binary, golden = os.path.abspath(sys.argv[1]), sys.argv[2]
    cases = json.load(open(golden, encoding="utf-8"))["cases"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", CUDA_VISIBLE_DEVICES="", LC_ALL="C.UTF-8")
    env.pop("HF_TOKEN", None)
    bad, skipped, compared = [], [], 0
    with tempfile.TemporaryDirectory() as tmp:
        env["HF_HUB_CACHE"] = os.path.join(tmp, "empty-hub")
        root = os.path.join(tmp, "root")
        os.makedirs(root)
        prepare(root)
        initial = listing(root)
        for c in cases:
            name, argv, want = c["name"], c["argv"], c["exit_code"]
            p = subprocess.run([binary] + argv, cwd=root, env=env, capture_output=True, timeout=300)
            clean(root, initial)
            out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
            harness = p.returncode == 0 and '"effective_formats"' in out
            if harness and name in RUN_LEVEL:
                skipped.append(name)
                continue
            compared += 1
            expect = DIFFERENT_EXIT.get(name, ((want,), None))[0]
            if p.returncode not in expect:
                bad.append("%s %s: exit %d, the twin %d%s (%s)" % (
                    name, argv, p.returncode, want, "" if expect == (want,) else ", we expect %s" % (expect,),
                    last_line(err)[:200]))
                continue
            # messages: the option check's (ours to match); a run-level
            # failure's wording belongs to the pipeline, its exit code is compared
            if want == 1 and name not in DIFFERENT_MESSAGE and name not in RUN_LEVEL:
                theirs, ours = last_line(c["stderr"]), last_line(err)
                if ours != theirs:
                    bad.append("%s: message '%s', the twin's '%s'" % (name, ours, theirs))
    for b in bad:
        print("cli_golden: " + b)
    print("cli_golden: %d cases compared, %d not reachable by the harness main (%s), %d differ" % (
        compared, len(skipped), " ".join(skipped), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
