"""make_st_fixture.py — write small safetensors files with the reference
`safetensors` library, so the C reader is tested against files it did not
write itself. Deterministic; run from the repository root:

    /work/refenv/bin/python tools/reference/make_st_fixture.py

Writes tests/fixtures/st/{ref.safetensors, sharded/...}. The expected values
are spelled out in tests/unit/test_safetensors.c.
"""
import json
import os

import torch
from safetensors.torch import save_file

out = "tests/fixtures/st"
os.makedirs(out + "/sharded", exist_ok=True)

t = {
    "a": torch.arange(6, dtype=torch.float32).reshape(2, 3) * 0.5,
    "b": torch.tensor([1.0, -2.0, 0.5, 3.140625], dtype=torch.bfloat16),
    "c": torch.tensor([1, -1, 1 << 40], dtype=torch.int64),
    "d": torch.tensor([0.5, -65504.0], dtype=torch.float16),
    "e": torch.tensor([7], dtype=torch.int32),
    "f": torch.tensor([1, 2, 255], dtype=torch.uint8),
    "g": torch.tensor([-128, 127], dtype=torch.int8),
    "s": torch.tensor(2.5, dtype=torch.float32),  # a scalar: shape []
}
save_file(t, out + "/ref.safetensors", metadata={"format": "pt", "note": "reference"})

# A two-shard checkpoint with the index transformers writes.
s1 = {"x.weight": torch.ones(3, 2), "x.bias": torch.zeros(3)}
s2 = {"y.weight": torch.full((2, 2), -1.5, dtype=torch.bfloat16)}
n1, n2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
save_file(s1, f"{out}/sharded/{n1}", metadata={"format": "pt"})
save_file(s2, f"{out}/sharded/{n2}", metadata={"format": "pt"})
idx = {"metadata": {"total_size": 4 * 9 + 2 * 4},
       "weight_map": {"x.weight": n1, "x.bias": n1, "y.weight": n2}}
with open(f"{out}/sharded/model.safetensors.index.json", "w") as f:
    json.dump(idx, f, indent=2, sort_keys=True)
    f.write("\n")
