#!/usr/bin/env python3
"""Reference data for the mel frontend's pieces that reference.safetensors does not hold.

Writes tests/fixtures/mel/randn.json: torch.randn(N) after manual_seed(N) (CPU, float32)
for several N, once as torch runs on this CPU (AVX2/AVX-512 kernel) and once with
ATEN_CPU_CAPABILITY=default (the scalar kernel). Values are float32 bit patterns in hex:
every value for N <= 64, else a head, a middle slice and a tail, plus the FNV-1a 64-bit
hash of all N values' little-endian bytes.

Also writes tests/fixtures/mel/frontend.json: the Hann window torch.stft uses
(torch.hann_window(400, periodic=False), float32 bits) and the filterbank of
CohereAsrFeatureExtractor (librosa slaney, float32 bits; each row's nonzero run with its
first bin), as transformers computes them. Needs the librosa shim on sys.path (done here).

Run: /work/refenv/bin/python tools/reference/make_mel_fixtures.py   (deterministic)
"""
import json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NS = [1, 2, 3, 5, 8, 15, 16, 17, 31, 32, 33, 47, 100, 1000, 12345, 16000, 160001, 480000, 480017, 559999]


def fnv1a64(b):
    h = 0xcbf29ce484222325
    for x in b:
        h ^= x
        h = (h * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def child():
    import numpy as np, torch
    out = {"capability": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__, "cases": []}
    for n in NS:
        g = torch.Generator()
        g.manual_seed(n)
        v = torch.randn(n, generator=g, dtype=torch.float32).numpy()
        bits = v.view(np.uint32)
        hexs = lambda a: ["%08x" % int(x) for x in a]
        case = {"n": n, "fnv1a64": fnv1a64(v.astype("<f4").tobytes())}
        if n <= 64:
            case["all"] = hexs(bits)
        else:
            mid = n // 2
            case["head"] = hexs(bits[:32])
            case["mid_at"] = mid
            case["mid"] = hexs(bits[mid:mid + 16])
            case["tail"] = hexs(bits[-48:])
        out["cases"].append(case)
    json.dump(out, sys.stdout)


def frontend():
    sys.path.insert(0, os.path.join(HERE, "shim"))
    import numpy as np, torch, transformers
    from transformers import CohereAsrFeatureExtractor
    fe = CohereAsrFeatureExtractor()
    w = torch.hann_window(fe.win_length, periodic=False).numpy().view(np.uint32)
    fb = fe.mel_filters.numpy()
    rows = []
    for r in range(fb.shape[0]):
        nz = np.nonzero(fb[r])[0]
        a, b = int(nz[0]), int(nz[-1]) + 1
        rows.append({"start": a, "bits": ["%08x" % int(x) for x in fb[r, a:b].view(np.uint32)]})
    out = {"torch": torch.__version__, "transformers": transformers.__version__,
           "command": "python tools/reference/make_mel_fixtures.py",
           "n_fft": fe.n_fft, "win_length": fe.win_length, "n_mels": int(fb.shape[0]), "n_bins": int(fb.shape[1]),
           "window_bits": ["%08x" % int(x) for x in w], "filterbank_rows": rows}
    path = os.path.join(ROOT, "tests", "fixtures", "mel", "frontend.json")
    with open(path, "w") as f:
        json.dump(out, f)
        f.write("\n")
    print("wrote", path, os.path.getsize(path), "bytes")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child()
        return
    res = {}
    for name, env in (("torch_avx2", {}), ("torch_default", {"ATEN_CPU_CAPABILITY": "default"})):
        e = dict(os.environ)
        e.update(env)
        r = subprocess.run([sys.executable, __file__, "--child"], env=e, check=True, capture_output=True, text=True)
        res[name] = json.loads(r.stdout)
    if res["torch_avx2"]["capability"] not in ("AVX2", "AVX512"):
        raise SystemExit("run this on a CPU with AVX2: got %s" % res["torch_avx2"]["capability"])
    res["command"] = "python tools/reference/make_mel_fixtures.py"
    frontend()
    path = os.path.join(ROOT, "tests", "fixtures", "mel", "randn.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
