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

Also writes tests/fixtures/mel/chunks.json: the long-audio split of
CohereAsrFeatureExtractor (_split_audio_chunks_energy, behind __call__'s 30 s test) for
synthetic clips that C rebuilds bit for bit from integers: sample i is
amp(i) * (((i * 2654435761 + seed) mod 2^32 >> 8) * 2^-24 - 0.5) in float32, amp piecewise
constant from the listed segments (1.0 elsewhere).

Also writes tests/fixtures/mel/silence.json: features of all-zero clips with dither 0,
alone and in padded batches. Every valid value of such a clip is one constant that is
not 0 but the reference's float32 rounding of its own mean and variance, which depends
on the batch's padded length; the C normalisation must reproduce it bit for bit.

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


CHUNK_CASES = [
    # name, samples, seed, [(start, end, amp)]
    ("30s_exact", 480000, 1, []),
    ("30s_plus_1", 480001, 2, []),
    ("35s_exact", 560000, 3, []),
    ("35s_plus_1", 560001, 4, [(520000, 521600, 0.0)]),
    ("36s_quiet_at_32.3s", 576000, 5, [(516800, 520000, 0.01)]),
    ("70s_two_quiet", 1120000, 6, [(500000, 503000, 0.001), (990000, 994000, 0.02)]),
    ("100s_louder_tail", 1600000, 7, [(480000, 560000, 0.5), (1000000, 1100000, 0.25)]),
    ("80s_silence", 1280000, 8, [(0, 1280000, 0.0)]),
    ("75s_quiet_at_window_edges", 1200000, 9, [(478400, 480000, 0.0), (558399, 560000, 0.0)]),
]


def chunk_signal(n, seed, segs):
    import numpy as np
    i = np.arange(n, dtype=np.uint64)
    h = ((i * np.uint64(2654435761) + np.uint64(seed)) & np.uint64(0xFFFFFFFF)) >> np.uint64(8)
    v = h.astype(np.float32) * np.float32(2.0 ** -24) - np.float32(0.5)
    amp = np.ones(n, dtype=np.float32)
    for a, b, g in segs:
        amp[a:b] = np.float32(g)
    return (amp * v).astype(np.float32)


def chunks():
    sys.path.insert(0, os.path.join(HERE, "shim"))
    import torch, transformers
    from transformers import CohereAsrFeatureExtractor
    fe = CohereAsrFeatureExtractor()
    thr = max(0.0, fe.max_audio_clip_s - fe.overlap_chunk_second)
    cases = []
    for name, n, seed, segs in CHUNK_CASES:
        x = torch.from_numpy(chunk_signal(n, seed, segs))
        if n / fe.sampling_rate <= thr:
            parts = [x]
        else:
            parts = fe._split_audio_chunks_energy(x)
        bounds, pos = [], 0
        for c in parts:
            bounds.append([pos, pos + int(c.shape[0])])
            pos += int(c.shape[0])
        assert pos == n
        cases.append({"name": name, "n": n, "seed": seed, "segments": [list(t) for t in segs], "bounds": bounds})
    out = {"torch": torch.__version__, "transformers": transformers.__version__,
           "command": "python tools/reference/make_mel_fixtures.py",
           "max_audio_clip_s": fe.max_audio_clip_s, "overlap_chunk_second": fe.overlap_chunk_second,
           "min_energy_window_samples": fe.min_energy_window_samples, "cases": cases}
    path = os.path.join(ROOT, "tests", "fixtures", "mel", "chunks.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", path, os.path.getsize(path), "bytes")


SILENCE_BATCHES = [[2000], [16000], [32000], [48000], [160000], [480000], [16000, 160000],
                   [32000, 480000, 2000]]


def silence():
    sys.path.insert(0, os.path.join(HERE, "shim"))
    import numpy as np, torch, transformers
    from transformers import CohereAsrFeatureExtractor
    torch.set_num_threads(1)
    fe = CohereAsrFeatureExtractor(dither=0.0)
    cases = []
    for ns in SILENCE_BATCHES:
        f = fe([np.zeros(n, np.float32) for n in ns], sampling_rate=16000, return_tensors="pt")
        x = f["input_features"]
        vals = []
        for i, n in enumerate(ns):
            L = n // 160
            v = x[i, :L]
            u = torch.unique(v)
            assert u.numel() == 1, (ns, i)
            vals.append("%08x" % int(np.float32(u.item()).view(np.uint32)))
        cases.append({"samples": ns, "T": int(x.shape[1]), "value_bits": vals})
    out = {"torch": torch.__version__, "transformers": transformers.__version__,
           "command": "python tools/reference/make_mel_fixtures.py", "cases": cases}
    path = os.path.join(ROOT, "tests", "fixtures", "mel", "silence.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
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
    chunks()
    silence()
    path = os.path.join(ROOT, "tests", "fixtures", "mel", "randn.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
