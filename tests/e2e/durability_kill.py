"""kill -9 during runs that overwrite existing outputs (issue 12, first "Done
when"): a corpus of 6 files in two folders, all four formats. Most kills
are aimed: the run stops itself at a commit step point
(CT_TEST_COMMIT_PAUSE=<label>, SIGSTOP), is let go past a random number of
sets, then gets SIGKILL; the rest fall at random times of runs slowed at
every step point (CT_TEST_COMMIT_PAUSE_MS), a few of them runs that decode
again (checkpoints removed, so the ASR checkpoint commit is hit as well).
After each kill every set, resolved as the next run's recovery resolves it,
is the old complete set (byte for byte) or a new complete one (every output
matches the new manifest's size and sha256). Then `--existing skip`
finishes, every set verifies on disk, and nothing but outputs, state files
and lock files is left. Prints how many kills landed inside a commit."""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import durability_lib as L  # noqa: E402

AIMED = int(os.environ.get("CT_KILL_AIMED", "42"))
RANDOM_KILLS = int(os.environ.get("CT_KILL_RANDOM", "12"))
SEED = int(os.environ.get("CT_KILL_SEED", str(int(time.time()))))
rng = random.Random(SEED)
print("seed %d (CT_KILL_SEED to replay)" % SEED)

tmp = tempfile.mkdtemp(prefix="ct-kill-")
root = os.path.join(tmp, "corpus")
rels = L.make_corpus(root, 6)
sets = L.sets_of(root, rels)
N_MEMBERS = len(L.FORMATS) + 1  # formats + manifest
LABELS = (["stage:%d" % i for i in range(N_MEMBERS)] + ["backup:%d" % i for i in range(N_MEMBERS)] +
          ["journal", "source", "barrier"] + ["rename:%d" % i for i in range(N_MEMBERS)] +
          ["dirsync", "commit", "cleanup"])


def args(chars, policy="overwrite"):
    return L.base_args(["--existing", policy, "--max-chars", str(chars)]) + [root]


def state():
    """Each set's resolved contents and whether a side file of it was there."""
    return {s: L.resolved(*s) for s in sets}


def check_after_kill(old, what):
    """Every set old-complete or new-complete; returns (#old, #new, inside)."""
    n_old = n_new = 0
    inside = False
    for s, (contents, had_side) in state().items():
        inside |= had_side
        # the output set (outputs + manifest); the checkpoint is its own commit
        if all(contents[m] == old[s][m] for m in L.members(s[1])):
            n_old += 1
            continue
        ok, why, _ = L.verify(contents, s[1])
        if not ok:
            L.fail("%s: set %s/%s is neither the old nor a complete new set: %s" % (what, s[0], s[1], why))
        if contents[L.members(s[1])[-1]] == old[s][L.members(s[1])[-1]]:
            L.fail("%s: set %s/%s changed outputs under its old manifest" % (what, s[0], s[1]))
        n_new += 1
    return n_old, n_new, inside


# generation 0: a full run (decoding), every set complete
rc, out, err = L.run(args(80, "error"))
if rc != 0:
    L.fail("first run: exit %d\n%s%s" % (rc, out, err))
for s in sets:
    ok, why, _ = L.verify_on_disk(*s)
    if not ok:
        L.fail("first run: %s/%s: %s" % (s[0], s[1], why))

kills = inside = landed_old = landed_new = 0
chars = 80
i = 0
while kills < AIMED and i < 3 * AIMED:
    i += 1
    old = {s: c for s, (c, _) in state().items()}
    chars = 20 if chars == 80 else 80
    label = rng.choice(LABELS)
    skip = rng.randrange(len(sets))  # sets let through before the kill
    env = dict(os.environ, CT_TEST_COMMIT_PAUSE=label)
    p = subprocess.Popen(args(chars), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stopped = L.wait_stopped(p)
    for _ in range(skip):
        if not stopped:
            break
        os.kill(p.pid, signal.SIGCONT)
        stopped = L.wait_stopped(p)
    if not stopped:  # the run ended first (fewer sets reached this label)
        p.wait()
        continue
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    kills += 1
    inside += 1  # stopped at a step point of ct_publish_set: inside a commit by construction
    o, n, _ = check_after_kill(old, "aimed kill %d at %s (+%d sets)" % (i, label, skip))
    landed_old += o
    landed_new += n

# the duration of a slowed run, to spread the random kills over it
t0 = time.time()
rc, out, err = L.run(args(chars, "overwrite"), env={"CT_TEST_COMMIT_PAUSE": "*", "CT_TEST_COMMIT_PAUSE_MS": "3"})
slow = time.time() - t0
if rc != 0:
    L.fail("slowed run: exit %d\n%s%s" % (rc, out, err))
random_inside = random_kills = 0
i = 0
while random_kills < RANDOM_KILLS and i < 4 * RANDOM_KILLS:
    i += 1
    old = {s: c for s, (c, _) in state().items()}
    chars = 20 if chars == 80 else 80
    decode = i % 4 == 3  # every fourth: checkpoints gone, the file is decoded and its checkpoint committed
    if decode:
        for d, stem in sets:
            cp = os.path.join(d, L.checkpoint_name(stem))
            if os.path.exists(cp):
                os.unlink(cp)
        old = {s: c for s, (c, _) in state().items()}
    env = dict(os.environ, CT_TEST_COMMIT_PAUSE="*", CT_TEST_COMMIT_PAUSE_MS="3")
    p = subprocess.Popen(args(chars), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(rng.uniform(0.05, slow * (2.0 if decode else 1.0)))
    if p.poll() is not None:
        continue
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    kills += 1
    random_kills += 1
    o, n, ins = check_after_kill(old, "random kill %d" % i)
    landed_old += o
    landed_new += n
    random_inside += ins

inside += random_inside
print("%d kills: %d inside a commit (%d aimed at step points, %d random ones that left a commit's side files); "
      "after them %d sets resolved to the old set, %d to a new one" %
      (kills, inside, inside - random_inside, random_inside, landed_old, landed_new))
if kills < 50:
    L.fail("only %d kills landed (need 50)" % kills)
if inside * 2 <= kills:
    L.fail("only %d of %d kills inside a commit" % (inside, kills))

# the re-run: finishes, every set verifies, nothing else is left
rc, out, err = L.run(args(chars, "skip"))
if rc != 0:
    L.fail("skip run after the kills: exit %d\n%s%s" % (rc, out, err))
for s in sets:
    ok, why, _ = L.verify_on_disk(*s)
    if not ok:
        L.fail("after the skip run: %s/%s: %s" % (s[0], s[1], why))
left = L.side_files(tmp)
if left:
    L.fail("left after the skip run: %s" % left)
rc, out, err = L.run(args(chars, "skip"))
if rc != 0 or "All inputs were skipped; no model was loaded." not in out:
    L.fail("second skip run: exit %d\n%s%s" % (rc, out, err))
print("ok: every set verified after %d kills and a skip run; no temporary, backup, marker or journal left" % kills)
