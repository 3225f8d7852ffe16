#!/usr/bin/env python3
"""Float test vectors for tests/unit/test_output_json.c: random doubles with
Python's repr (the shortest round-trip digits, closest on ties), one per line
as "<16 hex digits of the IEEE bits> <repr>". Deterministic (seeded).

    python3 tools/reference/make_float_vectors.py > tests/fixtures/output/float_repr.txt
"""
import random
import struct
import math

rng = random.Random(20261201)
values = []
# random bit patterns over the whole finite range (normals and subnormals)
while len(values) < 1500:
    bits = rng.getrandbits(64)
    v = struct.unpack("<d", struct.pack("<Q", bits))[0]
    if math.isfinite(v):
        values.append(v)
# values like the pipeline's: sample counts / 16000, uniform word bounds
for _ in range(1000):
    start = rng.randrange(0, 16000 * 3600) / 16000
    end = start + rng.randrange(1, 16000 * 30) / 16000
    n = rng.randrange(1, 40)
    d = max(0.0, end - start) / n
    k = rng.randrange(0, n)
    values += [start, end, start + k * d, start + (k + 1) * d]
# short decimals and powers of ten around the layout thresholds
for e in range(-330, 310):
    for m in (1, 5, 1.5, 123, 9.999):
        try:
            values.append(float(f"{m}e{e}"))
        except OverflowError:
            pass
values += [0.1, 0.2, 0.30000000000000004, 1e-05, 1e15, 1e16, 3599.9995, 100.0, 5e-324,
           2.2250738585072014e-308, 1.7976931348623157e308, 123456789012345.0, 1234567890123456.0]
for v in values:
    if v == 0 or not math.isfinite(v):
        continue
    print(f"{struct.unpack('<Q', struct.pack('<d', v))[0]:016x} {v!r}")
