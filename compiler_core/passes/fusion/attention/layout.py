"""The layout a fused Attention node records for display: heads, scale, mask, Q/K/V form.

Read from the pattern's bindings and the inferred shapes.  The node's body stays the original
ops, so these attributes describe it; they never change what it computes.  The onnxruntime
lowering reads them to choose an operator, and checks again what that operator needs.
"""

from __future__ import annotations

import numpy as np

from ....ir import Node, Value
from ....patterns import Match
from ...analyses.projections import projection_ending_at
from .mask import mask_facts

_LAYOUT_OPS = frozenset({"Reshape", "Unsqueeze", "Transpose", "Squeeze", "Gather", "Slice",
                         "Split", "Add"})
# Norms over each token's features (OLMo2's Q/K norm on the projection): the tokens stay.
_TOKEN_NORMS = frozenset({"SimplifiedLayerNormalization", "RMSNormalization",
                          "LayerNormalization"})


def describe(match: Match, nodes: list[Node]) -> dict:
    """Attributes of the fused node: num_heads, kv_num_heads, head_size, scale, mask (its form),
    causal, window, padding, qkv (where the projections are), cross, rotary, past, layout."""
    head_size = _head_size(match)
    attrs: dict = {"scale": _scale(match), "mask": match["mask_kind"]}
    facts = mask_facts(match["mask"], match["mask_kind"])
    attrs.update(causal=int(facts.causal), window=facts.window, padding=int(facts.padding))
    for name, role in (("num_heads", "q"), ("kv_num_heads", "k")):
        heads = _num_heads(match, role, head_size)
        if heads is not None:
            attrs[name] = heads
    if head_size is not None:
        attrs["head_size"] = head_size
    inside = {node.id for node in nodes}
    attrs["qkv"] = _qkv_form([match[f"{r}_in"] for r in "qkv"], inside)
    attrs["cross"] = int(source_of(match["q_in"]) is not source_of(match["k_in"]))
    attrs["rotary"] = int(bool(match["q_rotary"] or match["k_rotary"]))
    attrs["past"] = int(match["past_key"] is not None)
    attrs["layout"] = match["q_layout"]
    return attrs


def _scale(match: Match) -> float:
    factors = [match[name] for name in ("q_scale", "k_scale", "score_scale", "product_scale")]
    return float(np.prod([f for f in factors if f is not None]))


def _head_size(match: Match) -> int | None:
    """The last dim of Q's per-head tensor, from its inferred shape or its Reshape target."""
    heads: Value = match["q_heads"]
    size = _positive((heads.shape or (None,))[-1])
    if size is None:
        split = _first_reshape(heads)
        target = _target_entries(split.inputs[1]) if split is not None else None
        size = _positive(target[-1]) if target else None
    return size


def _num_heads(match: Match, role: str, head_size: int | None) -> int | None:
    """Heads of Q (or K): the heads axis of the 4-D per-head tensor, else the projection's
    width over the head size (not for packed heads: their projection holds Q, K and V)."""
    heads: Value | None = match[f"{role}_heads"]
    shape = heads.shape if heads is not None else None
    if shape is not None and len(shape) == 4 and _positive(shape[1]):
        return _positive(shape[1])
    width = _positive((match[f"{role}_in"].shape or (None,))[-1])
    if width is not None and head_size and width % head_size == 0 and not match["heads_packed"]:
        return width // head_size
    return None


def _first_reshape(value: Value) -> Node | None:
    node = value.producer
    while node is not None and node.op_type != "Reshape":
        node = node.inputs[0].producer if node.inputs else None
    return node


def _positive(dim) -> int | None:
    return dim if isinstance(dim, (int, np.integer)) and dim > 0 else None


def _target_entries(shape: Value) -> list[int] | None:
    """A Reshape target's entries, -1 where computed at run time (a Concat of constants and
    run-time pieces keeps its constant entries)."""
    data = shape.constant_value()
    if data is not None:
        return [int(d) for d in data.reshape(-1)]
    node = shape.producer
    if node is None or node.op_type != "Concat":
        return None
    entries: list[int] = []
    for part in node.inputs:
        data = part.constant_value()
        length = part.static_shape()
        if data is not None:
            entries += [int(d) for d in data.reshape(-1)]
        elif length is not None and len(length) == 1:
            entries += [-1] * length[0]
        else:
            return None
    return entries


def source_of(value: Value) -> Value:
    """The activations a projection reads: up from ``value`` through the ops that split and
    lay out a packed projection, a norm over its features, its bias Add and the linear layer
    (float or quantized, see ``projections``); ``value`` itself when no projection produces
    it."""
    current = value
    for _ in range(10):
        node = current.producer
        if node is None:
            return value
        projection = projection_ending_at(node)
        if projection is not None:
            flat = projection.reads.producer
            return flat.inputs[0] if flat is not None and flat.op_type == "Reshape" else (
                projection.reads)
        if node.op_type not in _LAYOUT_OPS and node.op_type not in _TOKEN_NORMS:
            return value
        runtime = [v for v in node.inputs if v is not None and not v.is_constant]
        if node.op_type == "Add" and len(runtime) != 1:
            return value
        current = runtime[0] if node.op_type == "Add" else node.inputs[0]
    return value


def _qkv_form(starts: list[Value], inside: set[int]) -> str:
    """Where Q, K, V are projected: "packed" (one projection inside, split three ways),
    "separate" (three inside), "outside" (none inside: the node reads Q, K, V), or "mixed"
    (cross-attention: Q's projection inside, the shared K/V projection outside)."""
    projections = [_projection_inside(v, inside) for v in starts]
    if all(p is None for p in projections):
        return "outside"
    if any(p is None for p in projections):
        return "mixed"
    return "packed" if len({p.id for p in projections}) < 3 else "separate"


def _projection_inside(value: Value, inside: set[int]) -> Node | None:
    """The linear layer's product (MatMul, Gemm or a quantized matmul) computing ``value``
    when it is inside the fused node."""
    node = value.producer
    for _ in range(10):
        if node is None or node.id not in inside:
            return None
        projection = projection_ending_at(node)
        if projection is not None:
            return projection.matmul
        runtime = [v for v in node.inputs if v is not None and not v.is_constant]
        node = runtime[0].producer if runtime else None
    return None
