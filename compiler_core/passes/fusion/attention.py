"""Attention fusion: each multi-head self-attention block becomes one Attention node."""

from __future__ import annotations

import numpy as np
import onnx

from ...ir import Graph, Node, Value
from ...patterns import Failure, Match, Pattern, get_pattern
from ..base import PassContext
from ..registry import register
from ..rules import RewritePass, Rule

FUSED_OP = "Attention"
_INTEGER_TYPES = frozenset({onnx.TensorProto.INT64, onnx.TensorProto.INT32})
_COMPARISONS = frozenset({"Less", "LessOrEqual", "Greater", "GreaterOrEqual"})


class AttentionRule(Rule):
    """Library pattern ``attention`` plus the shape arithmetic only it reads -> one Attention
    node; refused, as a near miss naming the consumer, when an intermediate is read outside.
    Its ordinary near misses are not declines: most are other code that starts like it."""

    name = "fuse_attention"
    declines = False

    def pattern(self) -> Pattern:
        return get_pattern("attention")

    def check(self, match: Match) -> Failure | None:
        return _outside_reader(_with_private_shape_arithmetic(match.nodes), match)

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str:
        return self.fuse(graph, ctx, _with_private_shape_arithmetic(match.nodes), FUSED_OP,
                         _describe(match))


@register
class FuseAttention(RewritePass):
    """Fuse each multi-head self-attention block — Q/K/V projections, head split, Q·Kᵀ, scale,
    mask, Softmax, ·V and head merge — into one Attention node.

    Unfused, attention writes the [heads, seq, seq] scores to memory and reads them back for
    the scale, the mask, the Softmax and the ·V product; a fused kernel (onnxruntime's
    Attention, FlashAttention) keeps them on chip, and its memory traffic no longer grows with
    seq².  The pattern (library pattern ``attention``) covers eager, SDPA and dynamo exports and
    GPT-2's packed QKV projection.  Without bindings, exporters compute the Reshape targets at
    run time from Shape nodes: the arithmetic that only this attention reads moves into the
    fused node; shared arithmetic (one target for every layer) stays outside and is read as an
    input.  A block whose intermediates are read elsewhere (a model that also outputs the
    attention probabilities) is left alone, and the pattern report says which consumer blocks.
    The mask stays an input: it is computed once and shared by all layers.
    """

    name = "fuse_attention"
    family = "fusion"
    rules = (AttentionRule(),)

    def note(self, graph: Graph, made: list[Node]) -> str:
        return f"fused {len(made)} attention blocks into {FUSED_OP} nodes"


# ------------------------------------------------------------------------------- the node set
def _with_private_shape_arithmetic(nodes: list[Node]) -> list[Node]:
    """The matched nodes plus the integer shape arithmetic that only they read.

    Without bindings, Reshape targets come from Shape → Gather → Unsqueeze → Concat chains,
    some of which read the attention's own intermediates (SDPA reads Q's shape): those must
    move inside, or the fused node would feed itself.  A node joins once every reader of its
    outputs is a member, so a chain shared with another layer stays outside.
    """
    members = {node.id: node for node in nodes}
    frontier = list(nodes)
    while frontier:
        for value in frontier.pop().inputs:
            producer = value.producer if value is not None else None
            if (producer is not None and producer.id not in members
                    and _integer_valued(producer) and _read_only_by(producer, members)):
                members[producer.id] = producer
                frontier.append(producer)
    return list(members.values())


def _integer_valued(node: Node) -> bool:
    return all(v is None or v.elem_type in _INTEGER_TYPES for v in node.outputs)


def _read_only_by(node: Node, members: dict[int, Node]) -> bool:
    return all(v is None or (not v.is_graph_output and all(u.id in members for u in v.users()))
               for v in node.outputs)


def _outside_reader(members: list[Node], match: Match) -> Failure | None:
    """Why the set cannot become one node — an intermediate also read outside it, or a model
    output — as a near miss in the matcher's own words; None when nothing blocks."""
    inside = {node.id for node in members}
    for node in members:
        if node is match.root:
            continue
        for value in filter(None, node.outputs):
            reader = next((u for u in value.users() if u.id not in inside), None)
            if reader is not None:
                blocker = f"{reader.op_type} '{reader.name}'"
                return _blocked(match, node, f"also used by {blocker}",
                                f"{node.op_type} output has another consumer ({blocker})", reader)
            if value.is_graph_output:
                return _blocked(match, node, f"graph output '{value.name}'",
                                f"{node.op_type} output is a graph output")
    return None


def _blocked(match: Match, node: Node, found: str, reason: str,
             reader: Node | None = None) -> Failure:
    size = len(match.nodes)  # the whole structure matched
    return Failure((), node.op_type, node.op_type, "output used only inside the match", found,
                   failed_node=node, blocking_node=reader, matched_nodes=tuple(match.nodes),
                   matched=size, custom_reason=reason).with_score(size)


# ------------------------------------------------------------------------ describing the node
def _describe(match: Match) -> dict:
    """Attributes for display: head layout, scale, mask kind, causality, QKV form."""
    attrs: dict = {"scale": _scale(match), "mask": match["mask_kind"], "qkv": match["qkv"]}
    mask: Value | None = match["mask"]
    attrs["causal"] = int(mask is not None and _is_causal(mask))
    num_heads, head_size = _head_layout(match["q_heads"])
    if num_heads is not None:
        attrs["num_heads"] = num_heads
    if head_size is not None:
        attrs["head_size"] = head_size
    return attrs


def _scale(match: Match) -> float:
    factors = [match[name] for name in ("q_scale", "k_scale", "score_scale")]
    return float(np.prod([f for f in factors if f is not None]))


def _head_layout(q_heads: Node) -> tuple[int | None, int | None]:
    """(num_heads, head_size) of Q's [batch, heads, seq, head_size], from the inferred shape,
    else from the head split's Reshape target and the hidden size."""
    shape = q_heads.outputs[0].shape or (None,) * 4
    heads, size = _positive(shape[1]), _positive(shape[3])
    split = q_heads.inputs[0].producer
    target = _target_entries(split.inputs[1])
    if target is not None and len(target) == 4:
        heads, size = heads or _positive(target[2]), size or _positive(target[3])
    hidden = (split.inputs[0].shape or (None,))[-1]
    if isinstance(hidden, int) and (heads is None) != (size is None):
        heads, size = (heads, hidden // heads) if heads else (hidden // size, size)
    return heads, size


def _positive(dim) -> int | None:
    return dim if isinstance(dim, int) and dim > 0 else None


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


def _is_causal(mask: Value) -> bool:
    """Whether the mask hides later positions: somewhere upstream it compares two run-time
    position ranges (query ≥ key), or it reads a constant lower-triangular boolean matrix (that
    comparison folded for bound sizes)."""
    seen: set[int] = set()
    stack = [mask]
    while stack:
        value = stack.pop()
        data = value.constant_value()
        if data is not None:
            if _lower_triangular(data):
                return True
            continue
        node = value.producer
        if node is None or node.id in seen:
            continue
        seen.add(node.id)
        if node.op_type in _COMPARISONS and all(
                not v.is_constant for v in node.inputs):
            return True
        stack.extend(v for v in node.inputs if v is not None)
    return False


def _lower_triangular(data: np.ndarray) -> bool:
    """A boolean [..., n, n] matrix (n > 1) that allows exactly the positions at or before the
    diagonal."""
    if data.dtype != np.bool_ or data.ndim < 2 or data.shape[-1] != data.shape[-2] or (
            data.shape[-1] < 2):
        return False
    allowed = np.tril(np.ones(data.shape[-2:], dtype=bool))
    return bool(np.all(data == allowed))
