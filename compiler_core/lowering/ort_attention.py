"""A fused Attention node as onnxruntime's com.microsoft Attention.

onnxruntime's Attention computes softmax(scale · Q·Kᵀ + attention_bias) · V per head from the
hidden states and one packed [H_in, 3H] projection, which is what GraphLab's Attention bodies
hold once horizontal fusion has packed the Q, K, V weights (GPT-2's c_attn is packed already).
The additive mask — computed once and shared by every layer; it broadcasts to the scores
[B, heads, S, S] since the body adds it to them — becomes the attention_bias input, expanded
to [B or 1, 1 or heads, S, S] as the op requires (one Expand per model); a causal mask already
holds the causality, so ``unidirectional`` stays off.
The body is read back with the library's attention pattern, on a copy in which the weights fed
from outside are constants again.
"""

from __future__ import annotations

import numpy as np
import onnx

from ..ir import Graph, Node, Value
from ..patterns import Match, get_pattern, match_all
from .ort_ops import add_before, replace_fused

_FLOAT = onnx.TensorProto.FLOAT


def lower_attention(graph: Graph, node: Node) -> Node | str:
    num_heads = node.attrs.get("num_heads")
    if num_heads is None or len(node.outputs) != 1:
        return "the number of heads is unknown" if num_heads is None else (
            "the attention's intermediates are read outside it")
    probe, outer_of = _probe(node)
    matches = match_all(probe, get_pattern("attention"))
    if len(matches) != 1 or matches[0].root.outputs[0].name != probe.outputs[0].name:
        return "its body is not one attention block as the attention pattern describes it"
    match = matches[0]
    x = outer_of.get(match["input"].name)
    if x is None or x.rank != 3 or x.elem_type != _FLOAT:
        return ("onnxruntime's Attention takes float32 hidden states [B, S, H] read from "
                "outside the block")
    if match["qkv"] != "packed":
        return ("its Q, K, V projections are separate (horizontal fusion did not pack them); "
                "onnxruntime's Attention takes one packed projection")
    projection = _packed_projection(match, x.name, outer_of)
    if isinstance(projection, str):
        return projection
    weights, bias, sizes = projection
    if sizes[0] != sizes[1] or sizes[0] % num_heads or sizes[2] % num_heads:
        return f"Q, K, V sizes {sizes} do not split into {num_heads} heads of equal Q/K size"
    attention_bias = _attention_bias(graph, node, match, x, outer_of)
    if isinstance(attention_bias, str):
        return attention_bias
    attrs = {"num_heads": int(num_heads), "scale": float(node.attrs["scale"])}
    if len(set(sizes)) > 1:
        attrs["qkv_hidden_sizes"] = [int(s) for s in sizes]
    return replace_fused(graph, node, "Attention",
                         [x, _initializer(graph, node, weights, "qkv_weight"),
                          _initializer(graph, node, bias, "qkv_bias"), None, None,
                          attention_bias], attrs)


def _probe(node: Node) -> tuple[Graph, dict[str, Value]]:
    """A copy of the body in which inputs fed constants from outside are constants, so the
    pattern's constant checks hold; and, per probe value read from outside, the outer value."""
    probe = node.body.copy()
    outer_of: dict[str, Value] = {}
    for inner, outer in zip(list(probe.inputs), node.inputs):
        data = outer.constant_value() if outer is not None else None
        if data is None:
            outer_of[inner.name] = outer
            continue
        constant = probe.add_initializer(f"{inner.name}_constant", data)
        probe.replace_all_uses(inner, constant)  # the input stays, unread
        outer_of[constant.name] = outer
    return probe, outer_of


def _packed_projection(match: Match, x_name: str, outer_of: dict[str, Value],
                       ) -> tuple[Value | np.ndarray, Value | np.ndarray | None, list[int]] | str:
    """(weights [H_in, q+k+v], bias or None, [q, k, v] sizes) of the packed projection."""
    split = match["q_heads"].inputs[0].producer.inputs[0].producer
    source = split.inputs[0].producer
    bias = None
    if source.op_type == "Reshape":  # GPT-2: Gemm on the hidden states flattened to 2-D
        gemm = source.inputs[0].producer
        if any(gemm.attrs.get(k, d) != d for k, d in (("alpha", 1.0), ("beta", 1.0),
                                                       ("transA", 0))):
            return "its packed projection is a Gemm with alpha, beta or transA set"
        flat = gemm.inputs[0].producer
        if flat is None or flat.inputs[0].name != x_name:
            return "its packed projection does not read the hidden states"
        weight, bias = gemm.inputs[1], gemm.input(2)
        transposed = bool(gemm.attrs.get("transB", 0))
    else:
        matmul = source
        if source.op_type == "Add":
            matmul = next(v.producer for v in source.inputs if v.producer is not None
                          and v.producer.op_type == "MatMul")
            bias = next(v for v in source.inputs if v is not matmul.outputs[0])
        weight, transposed = matmul.inputs[1], False
    weight_data = weight.constant_value()
    if weight_data is None or weight_data.ndim != 2:
        return "its packed projection weight is not a 2-D constant"
    if bias is not None and (not bias.is_constant or bias.constant_data().ndim != 1):
        return "its packed projection bias is not a constant vector"
    total = weight_data.shape[0 if transposed else 1]
    sizes = _split_sizes(split, total)
    if sizes is None:
        return "the packed projection's Split sizes are not known"
    weights = weight_data.T if transposed else outer_of.get(weight.name, weight_data)
    biases = outer_of.get(bias.name, bias.constant_value()) if bias is not None else (
        np.zeros(total, dtype=weight_data.dtype))
    return weights, biases, sizes


def _split_sizes(split: Node, total: int) -> list[int] | None:
    sizes = split.input(1).constant_value() if split.input(1) is not None else None
    if sizes is None and "split" in split.attrs:
        sizes = split.attrs["split"]
    if sizes is None:
        return [total // 3] * 3 if total % 3 == 0 else None
    sizes = [int(s) for s in np.asarray(sizes).reshape(-1)]
    return sizes if len(sizes) == 3 and sum(sizes) == total else None


def _attention_bias(graph: Graph, node: Node, match: Match, x: Value,
                    outer_of: dict[str, Value]) -> Value | None | str:
    """The additive mask as attention_bias [B or 1, 1 or heads, S, S]; None without a mask."""
    kind = match["mask_kind"]
    if kind == "none":
        return None
    if kind != "additive":
        return (f"its mask is {kind!r} (Where selects a fill value): onnxruntime's Attention "
                f"adds its bias, which is not the same computation")
    mask = outer_of.get(match["mask"].name)
    if mask is None:
        return "its mask is computed inside the block; onnxruntime's Attention reads it as input"
    if mask.elem_type != _FLOAT or mask.rank is None or mask.rank > 4:
        return (f"its additive mask {mask.name!r} ({mask.describe_type()}) is not a float32 "
                f"tensor of rank 4 or less")
    shared = graph.node_by_name(f"{mask.name}/attention_bias")
    if shared is not None:  # one broadcast serves every layer
        return shared.outputs[0]
    sequence = add_before(graph, node, "Slice", [
        add_before(graph, node, "Shape", [x]), _initializer(graph, node, np.array([1]), "one"),
        _initializer(graph, node, np.array([2]), "two")])
    target = add_before(graph, node, "Concat", [
        _initializer(graph, node, np.array([1, 1], dtype=np.int64), "ones"), sequence,
        sequence], {"axis": 0})
    made = graph.add_node("Expand", [mask, target], 1, name=f"{mask.name}/attention_bias",
                          provenance=node.provenance, order=node.order - 0.25)
    return made.outputs[0]


def _initializer(graph: Graph, node: Node, data: Value | np.ndarray | None,
                 hint: str) -> Value | None:
    """``data`` as a graph value: a value already in the graph as is, an array as a new
    initializer named after the node."""
    if data is None or isinstance(data, Value):
        return data
    if data.dtype.kind == "i":
        data = data.astype(np.int64)
    return graph.add_initializer(f"{node.name}/{hint}", np.ascontiguousarray(data))
