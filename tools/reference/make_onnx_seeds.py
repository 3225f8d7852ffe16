#!/usr/bin/env python3
"""Seeds for tests/fuzz/fuzz_onnx.c: small ONNX models (made with the `onnx`
package, /work/refenv/bin/python) covering what the reader interprets —
initializers with raw_data, packed/unpacked float_data and int64_data,
Constant nodes, If subgraphs nested two deep, and a miniature of Silero's
layout (branch-prefixed names). Written to tests/fuzz/seeds/onnx/."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "fuzz", "seeds", "onnx")


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr))


def save(model, name):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(model.SerializeToString())


def main():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    # 1: raw initializer + Add
    w = numpy_helper.from_array(np.array([1.5, -2.0], np.float32), "w")
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g1", [x], [y], [w])
    save(helper.make_model(g), "raw_initializer.onnx")
    # 2: float_data / int64_data (not raw)
    wf = helper.make_tensor("wf", TensorProto.FLOAT, [2, 2], [1, 2, 3, 4])
    wi = helper.make_tensor("wi", TensorProto.INT64, [3], [7, -1, 1 << 40])
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g2", [x], [y], [wf, wi])
    save(helper.make_model(g), "typed_data.onnx")
    # 3: If with Constant nodes in both branches, one nested If
    inner_then = helper.make_graph([const("deep", np.arange(6, dtype=np.float32).reshape(2, 3)),
                                    helper.make_node("Identity", ["x"], ["t2"])], "inner_then", [],
                                   [helper.make_tensor_value_info("t2", TensorProto.FLOAT, [2])])
    inner_else = helper.make_graph([helper.make_node("Identity", ["x"], ["e2"])], "inner_else", [],
                                   [helper.make_tensor_value_info("e2", TensorProto.FLOAT, [2])])
    then_g = helper.make_graph([
        const("If_0_then_branch__Inline_0__encoder.0.reparam_conv.weight", np.ones((4, 3, 3), np.float32)),
        const("c16", np.array(True)),
        helper.make_node("If", ["c16"], ["t"], then_branch=inner_then, else_branch=inner_else)],
        "If_0_then_branch", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([
        const("If_0_else_branch__Inline_0__encoder.0.reparam_conv.weight", np.zeros((4, 2, 3), np.float32)),
        helper.make_node("Identity", ["x"], ["e"])],
        "If_0_else_branch", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    g = helper.make_graph([helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
                          "top", [x, cond], [y])
    save(helper.make_model(g), "if_constants.onnx")


if __name__ == "__main__":
    main()
