"""Tiny models whose structure fixes or ties their input sizes, built with onnx.helper.

Each one fails to run at the generated default sizes (batch 2, other dims 8) unless those
sizes are found from the model — the way PyTorch's exports fix sizes inside.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64


def model(nodes, inputs, outputs, initializers=None, opset: int = 17,
          value_info=()) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()]
    graph = helper.make_graph(nodes, "sized", inputs, outputs, inits, value_info=value_info)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                    helper.make_opsetid("com.microsoft", 1)])
    proto.ir_version = 10
    return proto


def tensor(name, elem_type=F, shape=None):
    return helper.make_tensor_value_info(name, elem_type, shape)


def const(name: str, values) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.asarray(values, np.int64), name))


def _dim_of(source: str, axis: int, out: str) -> list[onnx.NodeProto]:
    """out = [Shape(source)[axis]] as a 1-element int64 tensor (the exporters' way)."""
    return [helper.make_node("Shape", [source], [f"{out}_shape"], name=f"{out}_shape"),
            const(f"{out}_axis", axis),
            helper.make_node("Gather", [f"{out}_shape", f"{out}_axis"], [f"{out}_scalar"],
                             name=f"{out}_gather"),
            const(f"{out}_zero", [0]),
            helper.make_node("Unsqueeze", [f"{out}_scalar", f"{out}_zero"], [out],
                             name=f"{out}_unsqueeze")]


def seq_first_heads() -> onnx.ModelProto:
    """nn.MultiheadAttention's way: x [seq, batch, 16] viewed as [5, batch*4, 4] with the
    sequence length a constant — so it runs at seq 5 only."""
    nodes = _dim_of("x", 1, "batch") + [
        const("four", [4]), helper.make_node("Mul", ["batch", "four"], ["heads"], name="heads"),
        const("seq_fixed", [5]), const("head_dim", [4]),
        helper.make_node("Concat", ["seq_fixed", "heads", "head_dim"], ["target"], axis=0,
                         name="target"),
        helper.make_node("Reshape", ["x", "target"], ["split"], name="split_heads"),
        helper.make_node("Transpose", ["split"], ["q"], perm=[1, 0, 2], name="to_heads"),
        helper.make_node("Transpose", ["split"], ["kt"], perm=[1, 2, 0], name="keys_t"),
        helper.make_node("MatMul", ["q", "kt"], ["scores"], name="scores"),
        helper.make_node("Softmax", ["scores"], ["probs"], axis=-1, name="softmax"),
        helper.make_node("MatMul", ["probs", "q"], ["mixed"], name="mix"),
        helper.make_node("Transpose", ["mixed"], ["back"], perm=[1, 0, 2], name="from_heads"),
        helper.make_node("Shape", ["x"], ["x_shape"], name="x_shape"),
        helper.make_node("Reshape", ["back", "x_shape"], ["y"], name="merge_heads")]
    return model(nodes, [tensor("x", F, ["seq", "batch", 16])], [tensor("y", F, None)])


def expanded() -> onnx.ModelProto:
    """m [batch, k] expanded to [batch, 6]: k must be 6 (or 1)."""
    nodes = _dim_of("m", 0, "rows") + [
        const("six", [6]),
        helper.make_node("Concat", ["rows", "six"], ["target"], axis=0, name="target"),
        helper.make_node("Expand", ["m", "target"], ["e"], name="expand"),
        helper.make_node("Add", ["e", "w"], ["y"], name="bias")]
    return model(nodes, [tensor("m", F, ["batch", "k"])], [tensor("y", F, None)],
                 {"w": np.ones(6, np.float32)})


def position_table() -> onnx.ModelProto:
    """Token ids [batch, seq] < 50 embedded, a position table of 12 rows added (seq = 12),
    and a padding mask [batch, seq] applied."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["tokens"], name="embed"),
             helper.make_node("Add", ["tokens", "positions"], ["h"], name="add_positions"),
             helper.make_node("Cast", ["mask"], ["maskf"], to=F, name="mask_float"),
             const("last", [2]),
             helper.make_node("Unsqueeze", ["maskf", "last"], ["mask3"], name="mask_axis"),
             helper.make_node("Mul", ["h", "mask3"], ["y"], name="apply_mask")]
    return model(nodes, [tensor("ids", I64, ["batch", "seq"]),
                         tensor("mask", I64, ["batch", "seq"])], [tensor("y", F, None)],
                 {"emb": rng.standard_normal((50, 8)).astype(np.float32),
                  "positions": rng.standard_normal((1, 12, 8)).astype(np.float32)})


def tied_names() -> onnx.ModelProto:
    """Two inputs whose first dims have different names (rows, n) but are added together,
    so they must be equal — their defaults (2 and 8) are not."""
    nodes = [helper.make_node("Add", ["a", "b"], ["y"], name="add")]
    return model(nodes, [tensor("a", F, ["rows", 4]), tensor("b", F, ["n", 4])],
                 [tensor("y", F, None)])


def unnamed_dim() -> onnx.ModelProto:
    """x [?, 4] reshaped to a constant [3, 8]: the dim nobody named must be 6."""
    nodes = [const("target", [3, 8]),
             helper.make_node("Reshape", ["x", "target"], ["y"], name="to_3x8")]
    return model(nodes, [tensor("x", F, [None, 4])], [tensor("y", F, None)])


def kv_cache() -> onnx.ModelProto:
    """A decode step: keys = past [batch, 2, past, 4] + new [batch, 2, seq, 4]; the additive
    mask [batch, total] must cover all of them (total = past + seq)."""
    nodes = [helper.make_node("Concat", ["past_key", "key"], ["keys"], axis=2, name="cache"),
             helper.make_node("Transpose", ["keys"], ["keys_t"], perm=[0, 1, 3, 2],
                              name="keys_t"),
             helper.make_node("MatMul", ["key", "keys_t"], ["scores"], name="scores"),
             const("mask_axes", [1, 2]),
             helper.make_node("Unsqueeze", ["mask", "mask_axes"], ["mask4"], name="mask4"),
             helper.make_node("Add", ["scores", "mask4"], ["y"], name="add_mask")]
    return model(nodes, [tensor("key", F, ["batch", 2, "seq", 4]),
                         tensor("past_key", F, ["batch", 2, "past", 4]),
                         tensor("mask", F, ["batch", "total"])], [tensor("y", F, None)])


def padding_lookup() -> onnx.ModelProto:
    """The TorchScript exporter's padding-mask lookup: the flattened mask [batch*total] read
    at b*total + j for j < past + 1 — only in range when total > past."""
    nodes = (_dim_of("mask", 1, "total") + _dim_of("past_key", 2, "past") + [
        const("one", [1]), const("zero", 0), const("step", 1),
        helper.make_node("Add", ["past", "one"], ["kv_1d"], name="kv_length"),
        const("axis0", [0]),
        helper.make_node("Squeeze", ["kv_1d", "axis0"], ["kv"], name="kv_scalar"),
        helper.make_node("Range", ["zero", "kv", "step"], ["j"], name="key_positions"),
        helper.make_node("Shape", ["mask"], ["mask_shape"], name="mask_shape"),
        const("first", 0),
        helper.make_node("Gather", ["mask_shape", "first"], ["batch"], name="batch"),
        helper.make_node("Range", ["zero", "batch", "step"], ["b"], name="rows"),
        const("axis1", [1]),
        helper.make_node("Unsqueeze", ["b", "axis1"], ["b2"], name="rows_column"),
        helper.make_node("Mul", ["b2", "total"], ["offsets"], name="row_offsets"),
        helper.make_node("Unsqueeze", ["j", "axis0"], ["j2"], name="positions_row"),
        helper.make_node("Add", ["offsets", "j2"], ["index"], name="index"),
        const("flat", [-1]),
        helper.make_node("Reshape", ["mask", "flat"], ["mask_flat"], name="flatten_mask"),
        helper.make_node("Gather", ["mask_flat", "index"], ["y"], name="lookup")])
    return model(nodes, [tensor("mask", I64, ["batch", "total"]),
                         tensor("past_key", F, ["batch", 2, "past", 4])],
                 [tensor("y", I64, None)])


def expression_dim() -> onnx.ModelProto:
    """The dynamo exporter names a decode step's mask dim 'past + 1'."""
    nodes = [helper.make_node("ReduceSum", ["past_key"], ["s"], keepdims=0, name="sum"),
             helper.make_node("Cast", ["mask"], ["y"], to=F, name="cast")]
    return model(nodes, [tensor("mask", I64, ["batch", "past + 1"]),
                         tensor("past_key", F, ["batch", 2, "past", 4])],
                 [tensor("y", F, None), tensor("s", F, None)])


def hidden_target(domain: str = "") -> onnx.ModelProto:
    """m [batch, k] expanded to a target computed by an op whose value nothing follows (Abs):
    only k = 1 or 6 runs, and only a try finds it.  With ``domain`` 'com.microsoft' the
    path holds a contrib op, so tries run in a child process."""
    act = helper.make_node("Gelu", ["m"], ["g"], name="gelu", domain=domain) if domain else \
        helper.make_node("Relu", ["m"], ["g"], name="relu")
    nodes = [act, const("negative", [-6]),
             helper.make_node("Abs", ["negative"], ["target"], name="abs"),
             helper.make_node("Expand", ["g", "target"], ["y"], name="expand")]
    return model(nodes, [tensor("m", F, ["batch", "k"])], [tensor("y", F, None)])


def stated_sizes() -> onnx.ModelProto:
    """Like ``hidden_target``, with the file stating (value_info) the size it was made at."""
    proto = hidden_target()
    proto.graph.value_info.append(tensor("g", F, [3, 6]))
    return proto


def impossible() -> onnx.ModelProto:
    """x [n, 4] reshaped to [3, 5]: 4·n = 15 has no whole solution."""
    nodes = [const("target", [3, 5]),
             helper.make_node("Reshape", ["x", "target"], ["y"], name="to_3x5")]
    return model(nodes, [tensor("x", F, ["n", 4])], [tensor("y", F, None)])
