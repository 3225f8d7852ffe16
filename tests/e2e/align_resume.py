"""--alignment word resumes from ASR checkpoints as the original does
(PRODUCT-DETAILS §3.5 and §4.2 step 3; seen with the Python twin 0.1.4:
a segment run, then a word run with --existing overwrite, says "resuming ...:
verified ASR checkpoint loaded", runs no ASR batch, and its profile counts
checkpoint_resumed_files 2, checkpoint_written_files 0).

1. A segment run writes the checkpoints; a word run over them decodes
   nothing (profile: no ASR batch, no generated token, every file resumed
   from its checkpoint, none written), and its words, srt and vtt equal those
   of a fresh word run of the same files in another folder.
2. A fresh word run whose set commit fails (CT_TEST_COMMIT_FAIL, the second
   rename: the checkpoint is the first) fails the file but leaves its
   checkpoint, written before the aligner ran; the next run (--existing
   skip: the other file's set is verified) resumes from it.
3. A checkpoint whose recorded decode backend is not a concrete one fails
   the file with the original's message instead of aligning other audio.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import durability_lib as L  # noqa: E402

tmp = tempfile.mkdtemp(prefix="ct-align-resume-")
ENV = {"HF_HUB_CACHE": os.path.join(L.FIX, "tiny-aligner", "hub"), "HF_HUB_OFFLINE": "1"}
WEIGHTS = os.path.join(os.environ.get("CT_TESTDATA", "build/testdata"), "silero", "silero_vad.onnx")
CLIPS = ["c1_en_us_3s.wav", "c3_fr_ar_10s.wav"]


def corpus(name):
    root = os.path.join(tmp, name)
    os.makedirs(root)
    for c in CLIPS:
        shutil.copy(os.path.join(L.AUDIO, c), os.path.join(root, c))
    return root


def run(root, extra, env=None):
    prof = os.path.join(tmp, "profile-%d.json" % len(os.listdir(tmp)))
    args = [L.BIN, root, "--model", L.MODEL, "--vad-weights", WEIGHTS, "--language", "en", "--max-new-tokens",
            "60", "--max-retry-tokens", "114", "--threads", "1", "--profile-json", prof,
            "--formats"] + L.FORMATS + list(extra)
    e = dict(os.environ, **ENV)
    e.update(env or {})
    p = subprocess.run(args, capture_output=True, text=True, env=e)
    prof_json = json.load(open(prof)) if os.path.exists(prof) else None
    return p.returncode, p.stdout + p.stderr, prof_json


def asr_counts(prof):
    a = prof["asr"]
    return a["batches"], a["generated_tokens"], a["checkpoint_resumed_files"], a["checkpoint_written_files"]


def outputs(root, stem):
    j = json.load(open(os.path.join(root, stem + ".json")))
    words = [(w["start"], w["end"], w["word"] if "word" in w else w.get("text")) for w in j["words"]]
    return words, L.read(os.path.join(root, stem + ".srt")), L.read(os.path.join(root, stem + ".vtt"))


def stems():
    return [os.path.splitext(c)[0] for c in CLIPS]


# ---- 1. segment run, then a word run over its checkpoints ------------------
fresh = corpus("fresh")
rc, out, prof = run(fresh, ["--alignment", "word"])
if rc != 0:
    L.fail("fresh word run: exit %d\n%s" % (rc, out))
if asr_counts(prof)[0] == 0 or asr_counts(prof)[3] != len(CLIPS):
    L.fail("fresh word run: ASR batches / checkpoints written %s" % (asr_counts(prof),))
res = corpus("resumed")
rc, out, prof = run(res, ["--alignment", "segment"])
if rc != 0:
    L.fail("segment run: exit %d\n%s" % (rc, out))
rc, out, prof = run(res, ["--alignment", "word", "--existing", "overwrite"])
if rc != 0:
    L.fail("word run over checkpoints: exit %d\n%s" % (rc, out))
b, tok, resumed, written = asr_counts(prof)
if (b, tok, resumed, written) != (0, 0, len(CLIPS), 0):
    L.fail("word run over checkpoints decoded: batches %d, tokens %d, resumed %d, written %d "
           "(want 0, 0, %d, 0)" % (b, tok, resumed, written, len(CLIPS)))
flags = [f.get("resumed_from_asr_checkpoint") for f in prof["files"]]
if flags != [True] * len(CLIPS):
    L.fail("resumed_from_asr_checkpoint per file: %s" % flags)
for s in stems():
    got, want = outputs(res, s), outputs(fresh, s)
    if not got[0]:
        L.fail("%s: no words after the resume" % s)
    if got != want:
        L.fail("%s: words/srt/vtt of the resumed word run differ from a fresh word run's" % s)
print("ok: word run over %d checkpoints: no ASR, words equal a fresh run's" % len(CLIPS))

# ---- 2. a failed word commit keeps the checkpoint written before alignment --
cut = corpus("cut")
rc, out, prof = run(cut, ["--alignment", "word"], env={"CT_TEST_COMMIT_FAIL": "rename:2=EIO"})
if rc != 1:
    L.fail("word run with a failing set commit: exit %d (want 1)\n%s" % (rc, out))
ck = os.path.join(cut, ".%s.cohere-transcribe.asr.json" % stems()[0])
if not os.path.exists(ck):
    L.fail("the failed word run left no ASR checkpoint for %s\n%s" % (stems()[0], out))
if os.path.exists(os.path.join(cut, stems()[0] + ".json")):
    L.fail("the failed set was published")
rc, out, prof = run(cut, ["--alignment", "word", "--existing", "skip"])
if rc != 0:
    L.fail("word run after the failed commit: exit %d\n%s" % (rc, out))
flags = {os.path.basename(f["path"]): f.get("resumed_from_asr_checkpoint") for f in prof["files"]}
if flags.get(CLIPS[0]) is not True:
    L.fail("the file whose commit failed was not resumed from its checkpoint: %s" % flags)
if outputs(cut, stems()[0]) != outputs(fresh, stems()[0]):
    L.fail("%s: words after the resume differ from a fresh word run's" % stems()[0])
print("ok: a failed word commit leaves the checkpoint; the next run resumes from it")

# ---- 3. a checkpoint without a concrete decode backend ----------------------
# rewrite the checkpoint's payload with decode_backend "auto" and its digest
# (§3.2: SHA-256 of the canonical JSON: sorted keys, no whitespace, raw UTF-8)
import hashlib  # noqa: E402

bad = corpus("bad")
rc, out, prof = run(bad, ["--alignment", "segment"])
if rc != 0:
    L.fail("segment run (part 3): exit %d\n%s" % (rc, out))
ck = os.path.join(bad, ".%s.cohere-transcribe.asr.json" % stems()[0])
env = json.load(open(ck))
env["payload"]["checkpoint"]["decode_backend"] = "auto"
canon = json.dumps(env["payload"], ensure_ascii=False, sort_keys=True, separators=(",", ":"))
env["payload_sha256"] = hashlib.sha256(canon.encode("utf-8")).hexdigest()
with open(ck, "w") as fh:
    json.dump(env, fh, ensure_ascii=False, indent=2)
rc, out, prof = run(bad, ["--alignment", "word", "--existing", "overwrite"])
want = "Cannot re-decode %s for word alignment without a concrete ASR backend" % os.path.realpath(
    os.path.join(bad, CLIPS[0]))
if rc != 1 or want not in out:
    L.fail("a checkpoint without a concrete decode backend: exit %d (want 1 and %r)\n%s" % (rc, want, out))
if asr_counts(prof)[0] != 0:
    L.fail("the other file was decoded again: %s" % (asr_counts(prof),))
print("ok: a checkpoint without a concrete decode backend fails its file with the original's message")
shutil.rmtree(tmp)
