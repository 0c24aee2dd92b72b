"""A model whose attention pattern matches twice but whose pass fuses only one block: in the
second, the scaled scores (an interior value) are also read by a node outside the block,
``scores_probe``, so fusing would hide what it reads.  Used by the explain, app and browser
tests of declines."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

SEQ, HIDDEN, HEADS = 4, 8, 2
HEAD_SIZE = HIDDEN // HEADS
BLOCKING = "scores_probe"      # the consumer that refuses block b's fusion
DECLINED_ROOT = "b_merge"      # the declined block's root
FUSED_ROOT = "a_merge"


def _block(prefix: str, x: str, rng, inits: dict, probe: bool) -> tuple[list, str]:
    nodes = []
    for name, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        w, b = f"{prefix}_w{name}", f"{prefix}_b{name}"
        inits[w] = rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32)
        inits[b] = rng.standard_normal(HIDDEN).astype(np.float32)
        nodes += [helper.make_node("MatMul", [x, w], [f"{prefix}_{name}_mm"],
                                   name=f"{prefix}_{name}_matmul"),
                  helper.make_node("Add", [f"{prefix}_{name}_mm", b], [f"{prefix}_{name}_proj"],
                                   name=f"{prefix}_{name}_bias"),
                  helper.make_node("Reshape", [f"{prefix}_{name}_proj", "split_shape"],
                                   [f"{prefix}_{name}_4d"], name=f"{prefix}_{name}_split"),
                  helper.make_node("Transpose", [f"{prefix}_{name}_4d"],
                                   [f"{prefix}_{name}_heads"], perm=perm,
                                   name=f"{prefix}_{name}_heads")]
    p = prefix
    nodes += [helper.make_node("MatMul", [f"{p}_q_heads", f"{p}_k_heads"], [f"{p}_qk"],
                               name=f"{p}_qk"),
              helper.make_node("Mul", [f"{p}_qk", "scale"], [f"{p}_scores"], name=f"{p}_scale"),
              helper.make_node("Add", [f"{p}_scores", "mask"], [f"{p}_masked"],
                               name=f"{p}_mask"),
              helper.make_node("Softmax", [f"{p}_masked"], [f"{p}_probs"], axis=-1,
                               name=f"{p}_softmax"),
              helper.make_node("MatMul", [f"{p}_probs", f"{p}_v_heads"], [f"{p}_context"],
                               name=f"{p}_context"),
              helper.make_node("Transpose", [f"{p}_context"], [f"{p}_merged"],
                               perm=[0, 2, 1, 3], name=f"{p}_merge_heads"),
              helper.make_node("Reshape", [f"{p}_merged", "merge_shape"], [f"{p}_y"],
                               name=f"{p}_merge")]
    if probe:
        nodes.append(helper.make_node("ReduceMax", [f"{p}_scores"], ["peek"], keepdims=0,
                                      name=BLOCKING))
    return nodes, f"{p}_y"


def declined_attention_model() -> bytes:
    """Two attention blocks in a row; the second's scores are also read by ``scores_probe``."""
    rng = np.random.default_rng(0)
    inits = {"split_shape": np.array([1, SEQ, HEADS, HEAD_SIZE], np.int64),
             "merge_shape": np.array([1, SEQ, HIDDEN], np.int64),
             "scale": np.array(HEAD_SIZE ** -0.5, np.float32)}
    first, y = _block("a", "x", rng, inits, probe=False)
    second, z = _block("b", y, rng, inits, probe=True)
    F = TensorProto.FLOAT
    graph = helper.make_graph(
        first + second, "declined_attention",
        [helper.make_tensor_value_info("x", F, [1, SEQ, HIDDEN]),
         helper.make_tensor_value_info("mask", F, [1, 1, 1, SEQ])],
        [helper.make_tensor_value_info(z, F, [1, SEQ, HIDDEN]),
         helper.make_tensor_value_info("peek", F, None)],
        [numpy_helper.from_array(a, n) for n, a in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model.SerializeToString()


def write_declined_attention(directory) -> str:
    path = directory / "declined_attention.onnx"
    path.write_bytes(declined_attention_model())
    return str(path)
