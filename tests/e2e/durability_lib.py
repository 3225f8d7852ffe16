"""Helpers of the durability tests (tests/e2e/durability_*.sh): corpora,
runs of the command, the state of every output set read from disk, and the
side files a commit may leave. Standard library only (CI has no packages).

The set checker never trusts the command: it reads the manifest envelope
({"schema_version", "payload_sha256", "payload": {"outputs": {fmt: {name,
size, sha256}}, "generation_id", ...}}) and hashes every output itself.
"""
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

BIN = os.path.abspath(os.path.join(os.environ.get("CT_BIN", "build/bin"), "cohere-transcribe"))
FIX = os.path.abspath(os.environ.get("CT_FIXTURES", "tests/fixtures"))
MODEL = os.path.join(FIX, "tiny-product")
AUDIO = os.path.join(FIX, "audio")
FORMATS = ["txt", "srt", "vtt", "json"]
# what a commit may leave beside the outputs: .<member>.<24 hex>.{tmp,bak,new,jnl}
SIDE = re.compile(r"^\..+\.[0-9a-f]{24}\.(tmp|bak|new|jnl)$")
# the twin's leftovers, in case ours ever copied its naming
TWIN_SIDE = re.compile(r"\.(bak|tmp|partial|journal)$|\.tmp\.")


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def base_args(extra=()):
    """The cheap configuration of every run: tiny model, fixed windows."""
    return [BIN, "--model", MODEL, "--vad", "none", "--max-new-tokens", "60",
            "--max-retry-tokens", "114", "--threads", "1", "--formats"] + FORMATS + list(extra)


def make_corpus(root, n, sub_every=3):
    """n short clips; every sub_every-th one in a sub-folder (two parents)."""
    clips = ["c0_tones_1s.wav", "c1_en_us_3s.wav"]
    os.makedirs(root, exist_ok=True)
    rels = []
    for i in range(n):
        rel = "f%02d.wav" % i if i % sub_every else os.path.join("sub", "g%02d.wav" % i)
        os.makedirs(os.path.dirname(os.path.join(root, rel)) or root, exist_ok=True)
        shutil.copy(os.path.join(AUDIO, clips[i % len(clips)]), os.path.join(root, rel))
        rels.append(rel)
    return rels


def sets_of(root, rels):
    """(folder, stem) of every input's output set."""
    out = []
    for r in rels:
        p = os.path.join(root, r)
        out.append((os.path.dirname(p), os.path.splitext(os.path.basename(p))[0]))
    return out


def members(stem):
    return ["%s.%s" % (stem, f) for f in FORMATS] + [".%s.cohere-transcribe.manifest.json" % stem]


def checkpoint_name(stem):
    return ".%s.cohere-transcribe.asr.json" % stem


def side_files(root):
    """Every temporary, backup, marker or journal under root."""
    found = []
    for d, _, files in os.walk(root):
        for f in files:
            if SIDE.match(f) or (f.startswith(".") and TWIN_SIDE.search(f) and ".cohere-transcribe-locks" not in d):
                found.append(os.path.join(d, f))
    return found


def read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def resolved(folder, stem):
    """The contents of every member (the four outputs, the manifest, the
    checkpoint) as the next run's recovery will leave them, computed from
    what is on disk without changing it (docs/DURABILITY.md §5): with a
    journal, a backup that is not the destination's inode is the member's
    content, a marker without a backup means "absent"; without a journal
    the destinations are the set. Also returns whether any side file of the
    stem was there (the process died inside a commit of this set)."""
    names = members(stem) + [checkpoint_name(stem)]
    side = {}
    for f in os.listdir(folder):
        m = SIDE.match(f)
        if not m:
            continue
        for n in names:
            if f.startswith("." + n + ".") and len(f) == len(n) + 1 + 1 + 24 + 4:
                side.setdefault(n, []).append((m.group(1), f))
    journal = any(k == "jnl" for v in side.values() for k, _ in v)
    out = {}
    for n in names:
        dest = os.path.join(folder, n)
        content = read(dest)
        if journal:
            kinds = {k: f for k, f in side.get(n, [])}
            if "bak" in kinds:
                bak = os.path.join(folder, kinds["bak"])
                same = os.path.exists(dest) and os.stat(bak).st_ino == os.stat(dest).st_ino
                if not same:
                    content = read(bak)
            elif "new" in kinds:
                content = None
        out[n] = content
    return out, bool(side)


def verify(contents, stem):
    """(ok, why, manifest payload) of a set's contents against its manifest."""
    man = contents.get(members(stem)[-1])
    if man is None:
        return False, "no manifest", None
    try:
        env = json.loads(man)
        payload = env["payload"]
        outs = payload["outputs"]
    except (ValueError, KeyError, TypeError) as e:
        return False, "manifest unreadable: %r" % e, None
    if sorted(outs) != sorted(FORMATS):
        return False, "manifest formats %s" % sorted(outs), payload
    for fmt, rec in outs.items():
        data = contents.get(rec["name"])
        if data is None:
            return False, "%s missing" % rec["name"], payload
        if len(data) != rec["size"] or hashlib.sha256(data).hexdigest() != rec["sha256"]:
            return False, "%s does not match the manifest (size %d vs %d)" % (rec["name"], len(data), rec["size"]), payload
    return True, "", payload


def verify_on_disk(folder, stem):
    return verify({n: read(os.path.join(folder, n)) for n in members(stem) + [checkpoint_name(stem)]}, stem)


def run(args, cwd=None, env=None, timeout=300):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(args, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def wait_stopped(proc, timeout=120.0):
    """True once proc is stopped (state T: it raised SIGSTOP at a pause
    point), False if it exited first or the time ran out."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            return False
        try:
            with open("/proc/%d/stat" % proc.pid) as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        if state in ("T", "t"):
            return True
        time.sleep(0.002)
    return False


def busy_section(stdout):
    """Files a run's summary says it left to another process, and the count
    it gives ("Left to another process: N files" then "- <path>: <msg>")."""
    lines = stdout.splitlines()
    for i, l in enumerate(lines):
        m = re.match(r"^    Left to another process: (\d+) files?$", l)
        if m:
            n = int(m.group(1))
            named = []
            for l2 in lines[i + 1:i + 1 + n]:
                m2 = re.match(r"^    - (.+?): Another transcription process owns output set ", l2)
                if not m2:
                    fail("summary line after the busy header: %r" % l2)
                named.append(m2.group(1))
            return n, named
    return 0, []


def kill_group(proc, sig=signal.SIGKILL):
    try:
        os.kill(proc.pid, sig)
    except ProcessLookupError:
        pass
