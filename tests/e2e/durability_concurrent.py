"""Many processes on one corpus (issue 12, second and third "Done when").

1. 2 and then 8 processes started together on the same 12 files
   (`--existing skip`, the policy under which several processes share a
   corpus): every exit status is 0; every output set is published by exactly
   one process (the "published" files of the processes' profiles, and one
   generation_id per set: the manifest's equals the checkpoint's); none is
   corrupt (every output matches its manifest); every process names, in its
   summary, the files it left to another process, with their count; nothing
   but outputs, state files and lock files is left.
2. The same with 4 processes reaching one corpus through different paths:
   its real path, a symlinked root, a relative path from another working
   directory, "." from inside it, and a bind mount of it where `mount
   --bind` works (root); without a bind mount the test says so.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import durability_lib as L  # noqa: E402

tmp = tempfile.mkdtemp(prefix="ct-conc-")


def ident(path):
    """A source file's identity whatever the path (a bind mount keeps
    device and inode, not the path)."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino)


def contest(root, rels, launches, what, want_yield=False):
    """launches: [(path argument, cwd)], started together; checks above."""
    sets = L.sets_of(root, rels)
    procs = []
    for k, (arg, cwd) in enumerate(launches):
        prof = os.path.join(tmp, "%s-p%d.json" % (what.replace(" ", "_"), k))
        a = L.base_args(["--existing", "skip", "--profile-json", prof]) + [arg]
        procs.append((subprocess.Popen(a, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE), prof))
    published = {}  # real path of a set's json output -> processes that published it
    yielded = 0
    for k, (p, prof) in enumerate(procs):
        out, err = p.communicate(timeout=600)
        out = out.decode()
        if p.returncode != 0:
            L.fail("%s: process %d exit %d\n%s%s" % (what, k, p.returncode, out, err.decode()))
        n, named = L.busy_section(out)
        if n != len(named):
            L.fail("%s: process %d says %d left but names %d" % (what, k, n, len(named)))
        yielded += n
        files = json.load(open(prof))["files"]
        mine = set()
        for f in files:
            if f["published"]:
                mine.add(ident(f["path"]))
                published.setdefault(ident(f["path"]), []).append(k)
            elif f["error"] is not None:
                L.fail("%s: process %d failed %s: %s" % (what, k, f["path"], f["error"]))
        left = {ident(x) for x in named}
        if left & mine:
            L.fail("%s: process %d both published and left %s" % (what, k, left & mine))
        if len(left) != len(named) or not left <= {ident(f["path"]) for f in files}:
            L.fail("%s: process %d names files it was not given: %s" % (what, k, named))
    gens = set()
    for (d, stem), rel in zip(sets, rels):
        src = ident(os.path.join(root, rel))
        who = published.get(src, [])
        if len(who) != 1:
            L.fail("%s: %s published by %d processes %s" % (what, rel, len(who), who))
        ok, why, payload = L.verify_on_disk(d, stem)
        if not ok:
            L.fail("%s: %s corrupt: %s" % (what, rel, why))
        cp = json.load(open(os.path.join(d, L.checkpoint_name(stem))))["payload"]
        if cp["generation_id"] != payload["generation_id"]:
            L.fail("%s: %s: manifest generation %s, checkpoint generation %s: written twice" %
                   (what, rel, payload["generation_id"], cp["generation_id"]))
        gens.add(payload["generation_id"])
    if len(gens) != len(sets):
        L.fail("%s: %d generations for %d sets" % (what, len(gens), len(sets)))
    left = L.side_files(root)
    if left:
        L.fail("%s: left behind: %s" % (what, left))
    if want_yield and yielded == 0:
        L.fail("%s: no process yielded a file: the locks were never contended" % what)
    per = {}
    for who in published.values():
        per[who[0]] = per.get(who[0], 0) + 1
    print("%s: %d sets, each published once (by process: %s), %d files left to another process" %
          (what, len(sets), ", ".join("%d:%d" % (k, per.get(k, 0)) for k in range(len(launches))), yielded))


for n in (2, 8):
    root = os.path.join(tmp, "corpus%d" % n)
    rels = L.make_corpus(root, 12, sub_every=4)
    contest(root, rels, [(root, None)] * n, "%d processes" % n, want_yield=n == 8)

# different paths to one corpus
real = os.path.join(tmp, "real")
rels = L.make_corpus(real, 12, sub_every=4)
link = os.path.join(tmp, "link")
os.symlink(real, link)
launches = [(real, None), (link, None), ("real", tmp), (".", real)]
bind = os.path.join(tmp, "bind")
os.mkdir(bind)
mounted = subprocess.run(["mount", "--bind", real, bind], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL).returncode == 0 if os.geteuid() == 0 else False
try:
    if mounted:
        launches.append((bind, None))
    else:
        print("bind mount: not tested (mount --bind refused or not root)")
    contest(real, rels, launches, "%d paths to one corpus" % len(launches))
finally:
    if mounted:
        subprocess.run(["umount", bind])
print("ok")
