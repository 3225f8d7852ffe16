# align_dtype_golden.py — the golden word-mode sets (tests/fixtures/golden,
# word-en, word-ar, word-cues: the original's inputs and argv, the tiny
# product model and tiny aligner) run through our cohere-transcribe twice,
# --align-dtype fp32 (the golden runs' setting) and bf16; counts the words
# whose start or end differ between the two transcript JSONs (frames of 20
# ms), and how many words match the golden JSON exactly in each run.
#
#   python3 tools/bench/align_dtype_golden.py BUILD/bin/cohere-transcribe
#
# Run from the repository root (needs build/testdata/silero/silero_vad.onnx).
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.getcwd()
GOLDEN = os.path.join(ROOT, "tests/fixtures/golden")


def words_of(out_dir):
    words = []
    for name in sorted(os.listdir(out_dir)):
        if name.endswith(".json"):
            with open(os.path.join(out_dir, name), encoding="utf-8") as fh:
                j = json.load(fh)
            words += [(name, w["text"], w["start"], w["end"], w["timing_source"]) for w in j.get("words", [])]
    return words


def run(binary, s, tmp, dtype):
    ind, out = os.path.join(tmp, "in", s["name"]), os.path.join(tmp, dtype, s["name"])
    os.makedirs(out, exist_ok=True)
    rep = {"{audio}": ind, "{model}": os.path.join(ROOT, "tests/fixtures/tiny-product"), "{out}": out,
           "{profile}": os.path.join(tmp, f"{s['name']}-{dtype}.json")}
    argv = [rep.get(a, a) for a in s["argv"]]
    argv += ["--vad-weights", os.path.join(ROOT, "build/testdata/silero/silero_vad.onnx"), "--align-dtype", dtype,
             "--dtype", "fp32"]  # the ASR at the golden runs' precision (CPU auto may pick bf16 here)
    env = dict(os.environ, HF_HUB_CACHE=os.path.join(ROOT, "tests/fixtures/tiny-aligner/hub"), HF_HUB_OFFLINE="1")
    subprocess.run([binary] + argv, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return words_of(out)


def main():
    binary = os.path.abspath(sys.argv[1])
    sets = [s for s in json.load(open(os.path.join(GOLDEN, "cases.json")))["sets"] if s["name"].startswith("word")]
    tmp = tempfile.mkdtemp()
    total = moved = gold32 = gold16 = total_ctc = 0
    try:
        for s in sets:
            ind = os.path.join(tmp, "in", s["name"])
            os.makedirs(ind)
            for i in s["inputs"]:
                shutil.copyfile(os.path.join(ROOT, i["source"]), os.path.join(ind, i["name"]))
            a, b = run(binary, s, tmp, "fp32"), run(binary, s, tmp, "bf16")
            g = words_of(os.path.join(GOLDEN, s["name"], "out"))
            assert len(a) == len(b) == len(g), (s["name"], len(a), len(b), len(g))
            m = sum(1 for x, y in zip(a, b) if x != y)
            for x, y in zip(a, b):
                if x != y:  # how far: frames of 20 ms
                    print(json.dumps({"moved": x[1], "fp32": x[2:4], "bf16": y[2:4],
                                      "frames": round(max(abs(x[2] - y[2]), abs(x[3] - y[3])) / 0.02)},
                                     ensure_ascii=False))
            ctc = sum(1 for x in a if x[4] == "ctc")
            total, moved, total_ctc = total + len(a), moved + m, total_ctc + ctc
            gold32 += sum(1 for x, y in zip(a, g) if x == y)
            gold16 += sum(1 for x, y in zip(b, g) if x == y)
            print(json.dumps({"set": s["name"], "words": len(a), "ctc_words": ctc, "moved_bf16_vs_fp32": m}))
    finally:
        shutil.rmtree(tmp)
    print(json.dumps({"what": "align-dtype-golden", "words": total, "ctc_words": total_ctc,
                      "moved_bf16_vs_fp32": moved,
                      "fp32_equal_golden": gold32, "bf16_equal_golden": gold16}))


if __name__ == "__main__":
    main()
