"""Failures injected into the commits of whole runs, and signals during a
commit (issue 12, fourth and sixth "Done when").

Faults: two files with complete sets; runs with `--existing overwrite`
(from the ASR checkpoints: no model) and CT_TEST_COMMIT_FAIL=<op>:<n>=<errno>
fail the n-th call of <op> (open, write, fsync, close, fchmod, link, rename,
unlink, dirsync) with ENOSPC or EIO, for n = 1, 2, ... until a run has no
n-th call. Each failed run: exit 1; exactly one file named under
"Failures:" with the operation's error; that set byte for byte the old one;
the other file's set new and complete. A failure after the commit point
(a cleanup unlink, the last folder fsync) publishes the set: exit 0, every
set new, and one "Output commit completed but cleanup was incomplete"
warning naming the file. Either way no temporary, backup, marker or journal anywhere.
Then a read-only output folder (a read-only bind mount, as root; else
chmod) and a source modified while its file is decoded (the run is paused
at its checkpoint commit): per-file errors, old sets intact, nothing left.

Signals: a run paused inside its second set's commit gets SIGINT / SIGTERM
/ SIGHUP: exit 130 / 143 / 129 with the original's message, the first set
published (new), the second rolled back (old, byte for byte), the third
untouched, nothing left.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import durability_lib as L  # noqa: E402

tmp = tempfile.mkdtemp(prefix="ct-faults-")


def snapshot(sets):
    return {s: {m: L.read(os.path.join(s[0], m)) for m in L.members(s[1])} for s in sets}


def failures(out):
    """{path: message} of the summary's "Failures:" section."""
    got = {}
    for m in re.finditer(r"^    - (/.+?): (\w+Error: .*)$", out, re.M):
        got[m.group(1)] = m.group(2)
    return got


def fresh(name, n):
    root = os.path.join(tmp, name)
    rels = L.make_corpus(root, n, sub_every=2)
    rc, out, err = L.run(L.base_args(["--max-chars", "80"]) + [root])
    if rc != 0:
        L.fail("%s: first run: exit %d\n%s%s" % (name, rc, out, err))
    return root, rels, L.sets_of(root, rels)


def is_new(s, before):
    ok, why, _ = L.verify_on_disk(*s)
    man = L.members(s[1])[-1]
    return ok and L.read(os.path.join(s[0], man)) != before[s][man]


# ---- injected failures at every call of every commit step ---------------
root, rels, sets = fresh("faults", 2)
paths = [os.path.realpath(os.path.join(root, r)) for r in rels]
cases = [(op, e) for op in ("write", "fsync", "rename", "dirsync") for e in ("ENOSPC", "EIO")] + \
        [(op, "EIO") for op in ("open", "close", "fchmod", "link", "unlink")]
chars = 80
runs = kept_old = completed = 0
for op, err_name in cases:
    n = 0
    while True:
        n += 1
        before = snapshot(sets)
        chars = 20 if chars == 80 else 80
        rc, out, err = L.run(L.base_args(["--existing", "overwrite", "--max-chars", str(chars)]) + [root],
                             env={"CT_TEST_COMMIT_FAIL": "%s:%d=%s" % (op, n, err_name)})
        runs += 1
        what = "%s:%d=%s" % (op, n, err_name)
        left = L.side_files(tmp)
        if left:
            L.fail("%s: left behind: %s\n%s" % (what, left, out))
        if rc == 0:
            for s in sets:
                if not is_new(s, before):
                    L.fail("%s: exit 0 but %s/%s is not the new set" % (what, s[0], s[1]))
            warned = re.findall(r"^cohere-transcribe: warn(?:ing)?: (/.+?): (Output commit completed but cleanup "
                                r"was incomplete.*)$", err, re.M)
            if warned:  # after the commit point: published, the warning says what failed
                if len(warned) != 1 or os.strerror(getattr(__import__("errno"), err_name)) not in warned[0][1]:
                    L.fail("%s: warnings %s" % (what, warned))
                completed += 1
                continue
            if n == 1:  # no n-th call: every set is new
                L.fail("%s: no call was failed (is the hook wired?)" % what)
            break
        if rc != 1:
            L.fail("%s: exit %d\n%s%s" % (what, rc, out, err))
        f = failures(out)
        if len(f) != 1:
            L.fail("%s: %d files named under Failures\n%s" % (what, len(f), out))
        (path, msg), = f.items()
        strerr = os.strerror(getattr(__import__("errno"), err_name))
        if strerr not in msg:
            L.fail("%s: the error does not say %r: %s" % (what, strerr, msg))
        for s, p in zip(sets, paths):
            if p == path:
                kept_old += 1
                if snapshot([s])[s] != before[s]:
                    L.fail("%s: the failed set %s is not the old set: %s" % (what, p, msg))
            elif not is_new(s, before):
                L.fail("%s: the other set %s is not the new set" % (what, p))
    print("%-8s %-6s: calls 1..%d failed in turn" % (op, err_name, n - 1))
print("%d runs: %d failed commits kept the old set, %d failed after the commit point (published, warned)" %
      (runs, kept_old, completed))

# ---- a read-only output folder -------------------------------------------
root, rels, sets = fresh("readonly", 2)
before = snapshot(sets)
ro = None
if os.geteuid() == 0:
    if subprocess.run(["mount", "--bind", root, root]).returncode == 0:
        if subprocess.run(["mount", "-o", "remount,ro,bind", root]).returncode == 0:
            ro = "bind"
        else:
            subprocess.run(["umount", root])
else:
    for d in {s[0] for s in sets}:
        os.chmod(d, 0o555)
    ro = "chmod"
try:
    if ro:
        rc, out, err = L.run(L.base_args(["--existing", "overwrite", "--max-chars", "20"]) + [root])
finally:
    if ro == "bind":
        subprocess.run(["umount", root])
    elif ro == "chmod":
        for d in {s[0] for s in sets}:
            os.chmod(d, 0o755)
if not ro:
    print("read-only folder: not tested (root without mount --bind)")
else:
    f = failures(out)
    want = {os.path.realpath(os.path.join(root, r)) for r in rels}
    if rc != 1 or set(f) != want:
        L.fail("read-only folder: exit %d, failures %s\n%s%s" % (rc, f, out, err))
    if snapshot(sets) != before or L.side_files(root):
        L.fail("read-only folder: outputs changed or side files left")
    print("read-only folder (%s): %s" % (ro, next(iter(f.values()))))

# ---- a source modified during its transcription --------------------------
root, rels, sets = fresh("modified", 2)
for d, stem in sets:
    os.unlink(os.path.join(d, L.checkpoint_name(stem)))  # decode again
before = snapshot(sets)
env = dict(os.environ, CT_TEST_COMMIT_PAUSE="stage:0")
p = subprocess.Popen(L.base_args(["--existing", "overwrite"]) + [root], env=env, stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE)
if not L.wait_stopped(p):
    L.fail("modified source: the run never reached its first commit")
victim = os.path.realpath(os.path.join(root, rels[0]))  # the first file's checkpoint commit, after its ASR
with open(victim, "ab") as fh:
    fh.write(b"\0" * 64)
while True:
    os.kill(p.pid, signal.SIGCONT)
    if not L.wait_stopped(p):
        break
out, err = p.communicate()
out = out.decode()
f = failures(out)
if p.returncode != 1 or list(f) != [victim] or "Source changed while processing: %s" % victim not in f[victim]:
    L.fail("modified source: exit %d, failures %s\n%s" % (p.returncode, f, out))
if snapshot([sets[0]])[sets[0]] != before[sets[0]] or not is_new(sets[1], before) or L.side_files(root):
    L.fail("modified source: the old set is not intact, the other not new, or side files left")
print("modified source: %s" % f[victim])

# ---- SIGINT, SIGTERM, SIGHUP inside the second set's commit -----------------
msgs = {signal.SIGINT: (130, "Interrupted; the active output commit was rolled back. Files completed earlier "
                             "remain published."),
        signal.SIGTERM: (143, "Termination requested; active work was cancelled and completed files remain "
                              "published."),
        signal.SIGHUP: (129, "Termination requested; active work was cancelled and completed files remain "
                             "published.")}
for sig, (code, msg) in msgs.items():
    root, rels, sets = fresh("signal%d" % sig, 3)
    before = snapshot(sets)
    env = dict(os.environ, CT_TEST_COMMIT_PAUSE="rename:2")
    p = subprocess.Popen(L.base_args(["--existing", "overwrite", "--max-chars", "20"]) + [root], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if not L.wait_stopped(p):
        L.fail("signal %d: no first stop" % sig)
    os.kill(p.pid, signal.SIGCONT)  # the first set goes through
    if not L.wait_stopped(p):
        L.fail("signal %d: no second stop" % sig)
    # the second set has renamed two of its five members; the signal waits
    # for SIGCONT, then the next step point sees the cancel
    os.kill(p.pid, sig)
    os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate()
    out = out.decode()
    if p.returncode != code or msg not in out:
        L.fail("signal %d: exit %d (want %d)\n%s%s" % (sig, p.returncode, code, out, err.decode()))
    order = sorted(sets, key=lambda s: os.path.join(*s))  # discovery order: casefolded full path
    now = snapshot(sets)
    if not is_new(order[0], before):
        L.fail("signal %d: the first set was not published" % sig)
    for s in order[1:]:
        if now[s] != before[s]:
            L.fail("signal %d: %s/%s is not the old set" % (sig, s[0], s[1]))
    if L.side_files(root):
        L.fail("signal %d: left %s" % (sig, L.side_files(root)))
    print("signal %d: exit %d, first set published, second rolled back, third untouched" % (sig, code))
shutil.rmtree(tmp, ignore_errors=True)
print("ok")
