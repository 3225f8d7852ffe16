#!/usr/bin/env python3
"""fake_hub.py — a local stand-in for the Hugging Face Hub, for tests only.

Two HTTP servers on 127.0.0.1 with ephemeral ports:
  * the Hub origin: GET /api/models/{repo}/revision/{rev} (JSON with "sha" and
    "siblings"), HEAD/GET /{repo}/resolve/{rev}/{file} with X-Repo-Commit and
    ETag (git blob sha1) for small files, and for LFS files a 302 to the second
    origin carrying X-Linked-Etag (sha256) and X-Linked-Size, as the real Hub;
    X-Error-Code headers (RepoNotFound, RevisionNotFound, EntryNotFound,
    GatedRepo) on errors; gated repos answer 401 without a token and 403 with a
    wrong one (the revision API stays open, as on the Hub).
  * the file server ("CDN"): serves LFS blobs with Range support and counts
    GETs per blob. It must never receive an Authorization header: if it does
    it answers 400, appends to <state>/violations.log and shouts on stderr.

Failures on demand through POST /_ctl/fail on the Hub origin, JSON
{"mode": M, "file": F, "count": N, "rate": R}: mode "drop" (send part of the
body then close), "badlen" (a Content-Length 7 bytes short, and that many
bytes), "err500" (HTTP 500), "slow" (R bytes/s), "stall" (half the body,
then silence for "secs" seconds with the connection open), "loop" (the Hub origin redirects the file to itself),
"norange" (ignore a Range header: 200 with the whole file),
"longloc" (the LFS redirect's Location gets "&sig=" + "pad" bytes + "&end=1",
as a long signed CDN URL; the file server answers 403 when "sig" arrives
without the final "end=1", i.e. a URL cut short),
"api503" (the Hub origin
answers 503 to any request; file ignored). count -1 = until reset;
POST /_ctl/reset clears failures and counters; GET /_ctl/stats returns the
counters. The ports are written to <state>/ports.json once both listen.
The process exits by itself after --lifetime seconds (default 600).

Usage: fake_hub.py --state DIR --repo owner/name=DIR[,gated][,commit=HEX] ... [--token T]
"""
import argparse
import hashlib
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LFS_SUFFIXES = (".safetensors", ".onnx", ".bin", ".gguf", ".pt")


class Repo:
    def __init__(self, repo_id, path, gated, commit=None):
        self.id = repo_id
        self.gated = gated
        self.files = {}  # name -> bytes
        for root, _, names in os.walk(path):
            for n in names:
                full = os.path.join(root, n)
                rel = os.path.relpath(full, path).replace(os.sep, "/")
                with open(full, "rb") as f:
                    self.files[rel] = f.read()
        h = hashlib.sha1(repo_id.encode())
        for name in sorted(self.files):
            h.update(name.encode() + b"\0" + hashlib.sha256(self.files[name]).digest())
        self.commit = commit or h.hexdigest()
        self.refs = {"main": self.commit, "v1.0": self.commit}

    def is_lfs(self, name):
        return name.endswith(LFS_SUFFIXES) or len(self.files[name]) >= (1 << 20)

    @staticmethod
    def git_sha1(data):
        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class State:
    def __init__(self, state_dir, repos, token):
        self.dir = state_dir
        self.repos = repos
        self.token = token
        self.lock = threading.Lock()
        self.blobs = {}  # sha256 -> (bytes, filename)
        for r in repos.values():
            for name, data in r.files.items():
                if r.is_lfs(name):
                    self.blobs[hashlib.sha256(data).hexdigest()] = (data, name)
        self.reset()
        self.cdn_port = None

    def reset(self):
        with getattr(self, "lock", threading.Lock()):
            self.fail = []  # dicts: mode, file, count, rate
            self.stats = {"cdn_gets": {}, "cdn_full_gets": {}, "cdn_ranges": [], "hub_gets": {},
                          "hub_heads": {}, "api_gets": 0, "auth_seen_hub": 0, "auth_seen_cdn": 0,
                          "violations": 0}

    def take_failure(self, file, modes):
        """The first active failure for this file among modes (consumes one count)."""
        with self.lock:
            for f in self.fail:
                if f["mode"] in modes and (f.get("file") in (None, file)) and f["count"] != 0:
                    if f["count"] > 0:
                        f["count"] -= 1
                    return dict(f)
        return None

    def bump(self, key, name):
        with self.lock:
            d = self.stats[key]
            d[name] = d.get(name, 0) + 1

    def log(self, record):
        with self.lock:
            with open(os.path.join(self.dir, "requests.log"), "a") as f:
                f.write(json.dumps(record) + "\n")


def send_body(handler, data, rate=None, cut=None):
    """Write data (maybe throttled to rate bytes/s, maybe cut after cut bytes)."""
    if cut is not None:
        data = data[:cut]
    chunk = 16384
    if rate:
        chunk = max(1, min(chunk, int(rate) // 10 or 1))
    for i in range(0, len(data), chunk):
        handler.wfile.write(data[i:i + chunk])
        handler.wfile.flush()
        if rate:
            time.sleep(len(data[i:i + chunk]) / float(rate))


class HubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    state = None  # set on the class by main()

    def log_message(self, fmt, *args):
        pass

    def _auth(self):
        h = self.headers.get("Authorization")
        if h:
            with self.state.lock:
                self.state.stats["auth_seen_hub"] += 1
        return h

    def _send(self, status, headers=None, body=b"", head=False):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and not head:
            self.wfile.write(body)

    def _error(self, status, code, msg, head=False):
        body = json.dumps({"error": msg}).encode()
        hdrs = {"Content-Type": "application/json"}
        if not self.state.plain_errors:  # a server or proxy that sends only statuses
            hdrs.update({"X-Error-Code": code, "X-Error-Message": msg})
        self._send(status, hdrs, body, head)

    def _token_ok(self, repo, head):
        """Gated repos need the right token: 401 without, 403 with a wrong one."""
        if not repo.gated:
            return True
        auth = self._auth()
        if not auth:
            self._error(401, "GatedRepo", "Access to model %s is restricted. You must be "
                        "authenticated to access it." % repo.id, head)
            return False
        if auth != "Bearer " + (self.state.token or ""):
            self._error(403, "GatedRepo", "Access to model %s is restricted and you are not in "
                        "the authorized list." % repo.id, head)
            return False
        return True

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        if self.path == "/_ctl/fail":
            f = json.loads(body)
            f.setdefault("count", 1)
            with self.state.lock:
                self.state.fail.append(f)
            return self._send(200, body=b"ok")
        if self.path == "/_ctl/reset":
            self.state.reset()
            return self._send(200, body=b"ok")
        return self._send(404)

    def do_HEAD(self):
        self._serve(head=True)

    def do_GET(self):
        if self.path == "/_ctl/stats":
            with self.state.lock:
                body = json.dumps(self.state.stats).encode()
            return self._send(200, {"Content-Type": "application/json"}, body)
        self._serve(head=False)

    def _serve(self, head):
        st = self.state
        path = urllib.parse.urlsplit(self.path).path
        parts = [urllib.parse.unquote(p) for p in path.split("/")]
        st.log({"origin": "hub", "method": self.command, "path": self.path,
                "auth": bool(self.headers.get("Authorization")),
                "range": self.headers.get("Range")})
        if st.take_failure(None, ("api503",)):
            return self._send(503, body=b"busy")
        self._auth()
        # /api/models/<owner>/<name>/revision/<rev...>
        if len(parts) >= 7 and parts[1] == "api" and parts[2] == "models" and parts[5] == "revision":
            with st.lock:
                st.stats["api_gets"] += 1
            repo_id = parts[3] + "/" + parts[4]
            rev = "/".join(parts[6:])
            repo = st.repos.get(repo_id)
            if repo is None:
                return self._error(401 if not self.headers.get("Authorization") else 404,
                                   "RepoNotFound", "Repository not found", head)
            commit = repo.refs.get(rev, rev if rev == repo.commit else None)
            if commit is None:
                return self._error(404, "RevisionNotFound", "Invalid rev id: " + rev, head)
            doc = {"_id": "fake", "id": repo.id, "modelId": repo.id, "sha": commit,
                   "private": False, "gated": "manual" if repo.gated else False,
                   "siblings": [{"rfilename": n} for n in sorted(repo.files)]}
            return self._send(200, {"Content-Type": "application/json"},
                              json.dumps(doc).encode(), head)
        # /<owner>/<name>/resolve/<rev>/<file...>
        if len(parts) >= 6 and parts[3] == "resolve":
            repo_id = parts[1] + "/" + parts[2]
            rev, name = parts[4], "/".join(parts[5:])
            repo = st.repos.get(repo_id)
            if repo is None:
                return self._error(401 if not self.headers.get("Authorization") else 404,
                                   "RepoNotFound", "Repository not found", head)
            commit = repo.refs.get(rev, rev if rev == repo.commit else None)
            if commit is None:
                return self._error(404, "RevisionNotFound", "Invalid rev id: " + rev, head)
            if not self._token_ok(repo, head):
                return
            if name not in repo.files:
                return self._error(404, "EntryNotFound", "Entry not found", head)
            data = repo.files[name]
            if st.take_failure(name, ("loop",)):
                # a same-origin redirect back to this very URL (counts as one failure per hop)
                return self._send(307, {"Location": self.path}, b"", head)
            st.bump("hub_heads" if head else "hub_gets", repo_id + "/" + name)
            if repo.is_lfs(name):
                sha = hashlib.sha256(data).hexdigest()
                loc = "http://%s:%d/lfs/%s?name=%s" % (
                    st.cdn_host, st.cdn_port, sha, urllib.parse.quote(name))
                longloc = st.take_failure(name, ("longloc",))
                if longloc:
                    loc += "&sig=" + "s" * int(longloc.get("pad", 3000)) + "&end=1"
                return self._send(302, {"Location": loc, "X-Repo-Commit": commit,
                                        "X-Linked-Etag": '"%s"' % sha,
                                        "X-Linked-Size": str(len(data)),
                                        "ETag": '"%s"' % Repo.git_sha1(b"pointer:" + data[:64])},
                                  b"", head)
            fail = None if head else st.take_failure(name, ("err500",))
            if fail:
                return self._send(500, body=b"internal error")
            self.send_response(200)
            self.send_header("X-Repo-Commit", commit)
            self.send_header("ETag", '"%s"' % Repo.git_sha1(data))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if not head:
                self.wfile.write(data)
            return
        return self._error(404, "EntryNotFound", "no such route", head)


class CdnHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    state = None

    def log_message(self, fmt, *args):
        pass

    def do_HEAD(self):
        self._serve(head=True)

    def do_GET(self):
        self._serve(head=False)

    def _serve(self, head):
        st = self.state
        rng = self.headers.get("Range")
        st.log({"origin": "cdn", "method": self.command, "path": self.path,
                "auth": bool(self.headers.get("Authorization")), "range": rng})
        if self.headers.get("Authorization") is not None:
            with st.lock:
                st.stats["auth_seen_cdn"] += 1
                st.stats["violations"] += 1
                with open(os.path.join(st.dir, "violations.log"), "a") as f:
                    f.write("Authorization header sent to the file server: %s %s\n"
                            % (self.command, self.path))
            sys.stderr.write("fake_hub: VIOLATION: Authorization header reached the second "
                             "origin (%s %s)\n" % (self.command, self.path))
            self.send_response(400)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        parts = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(parts.query)
        if "sig" in query and query.get("end") != ["1"]:  # a signed URL cut short
            self.send_response(403)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        sha = parts.path.rsplit("/", 1)[-1]
        blob = st.blobs.get(sha)
        if blob is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data, name = blob
        start = 0
        if rng and not head and st.take_failure(name, ("norange",)):
            rng = None  # answer 200 with the whole file, as servers without Range support do
        if rng and rng.startswith("bytes="):
            a = rng[6:].split("-", 1)[0]
            start = int(a) if a else 0
        if not head:
            st.bump("cdn_gets", name)
            if start == 0:
                st.bump("cdn_full_gets", name)
            with st.lock:
                st.stats["cdn_ranges"].append([name, start])
        fail = None if head else st.take_failure(name, ("err500", "drop", "badlen", "stall"))
        slow = None if head else st.take_failure(name, ("slow",))
        if fail and fail["mode"] == "err500":
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if start >= len(data) and len(data) > 0:
            self.send_response(416)
            self.send_header("Content-Range", "bytes */%d" % len(data))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = data[start:]
        if start:
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        else:
            self.send_response(200)
        length = len(body)
        cut = None
        if fail and fail["mode"] == "badlen":
            length = max(0, len(body) - 7)
            cut = length
        elif fail and fail["mode"] == "drop":
            cut = len(body) // 2
        elif fail and fail["mode"] == "stall":
            cut = len(body) // 2
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if head:
            return
        try:
            send_body(self, body, rate=slow["rate"] if slow else None, cut=cut)
            if fail and fail["mode"] == "stall":
                time.sleep(float(fail.get("secs", 5)))  # the connection stays open, silent
        except (BrokenPipeError, ConnectionResetError):
            pass
        if cut is not None:
            self.close_connection = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--state", required=True)
    ap.add_argument("--repo", action="append", default=[])
    ap.add_argument("--token", default=None)
    ap.add_argument("--lifetime", type=float, default=600.0)
    ap.add_argument("--plain-errors", action="store_true", help="no X-Error-Code headers")
    # another host name than the Hub's 127.0.0.1 (both loopback), so that even
    # clients that compare host names only (not ports) see a foreign origin
    ap.add_argument("--cdn-host", default="localhost")
    a = ap.parse_args()
    os.makedirs(a.state, exist_ok=True)
    repos = {}
    for spec in a.repo:
        rid, rest = spec.split("=", 1)
        opts = rest.split(",")
        commit = [o[7:] for o in opts[1:] if o.startswith("commit=")]
        repos[rid] = Repo(rid, opts[0], "gated" in opts[1:], commit[0] if commit else None)
    st = State(a.state, repos, a.token)
    HubHandler.state = st
    CdnHandler.state = st
    hub = ThreadingHTTPServer(("127.0.0.1", 0), HubHandler)
    cdn = ThreadingHTTPServer(("127.0.0.1", 0), CdnHandler)
    hub.daemon_threads = cdn.daemon_threads = True
    st.cdn_port = cdn.server_address[1]
    st.cdn_host = a.cdn_host
    st.plain_errors = a.plain_errors
    for srv in (hub, cdn):
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    info = {"hub": hub.server_address[1], "cdn": cdn.server_address[1],
            "commits": {r.id: r.commit for r in repos.values()}}
    tmp = os.path.join(a.state, "ports.json.tmp")
    with open(tmp, "w") as f:
        json.dump(info, f)
    os.replace(tmp, os.path.join(a.state, "ports.json"))
    time.sleep(a.lifetime)
    sys.stderr.write("fake_hub: lifetime over, exiting\n")
    os._exit(3)


if __name__ == "__main__":
    main()
