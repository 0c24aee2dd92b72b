"""Attention fusion: each scaled-dot-product attention block becomes one Attention node.

The fusion's modules: this one (the rule, its pass, the nodes a block takes along),
``pattern`` (what a block looks like), ``layout`` and ``mask`` (what the fused node records).
"""

from __future__ import annotations

import inspect

from ....ir import Graph, Node, Value
from ....patterns import Failure, Match, Pattern
from ....wording import plural
from ...analyses.projections import projection_ending_at
from ...framework.base import PassContext
from ...framework.pass_registry import register_pass
from ...framework.rewrite import with_private_shape_arithmetic
from ...framework.rules import Rule, RuleSet
from .layout import describe
from .pattern import attention

FUSED_OP = "Attention"
# The ops between the head split and the linear layer: its bias and the ops that split a
# packed projection into Q, K and V.
_LAYOUT_OPS = frozenset({"Add", "Split", "Reshape", "Unsqueeze", "Transpose", "Squeeze",
                         "Gather", "Slice"})
_PROJECTION_DEPTH = 8  # ops between the head split and the linear layer, at most


class AttentionRule(Rule):
    """Pattern ``attention`` plus what only it reads (its projections, the shape arithmetic of
    its Reshapes, a mask computed from its own intermediates) -> one Attention node; refused,
    as a near miss naming the consumer, when an intermediate other than the present keys and
    values is read outside.  Its ordinary near misses are not declines: most are other code
    that starts like it."""

    name = "fuse_attention"
    declines = False

    def pattern(self) -> Pattern:
        return attention().named("attention")

    def pattern_doc(self) -> str:
        return inspect.getdoc(attention) or ""

    def rewrite(self, graph: Graph, ctx: PassContext, match: Match) -> Node | str | Failure:
        nodes = block_nodes(graph, match)
        results = _results(match, nodes)
        return (self.outside_reader_failure(match, nodes, results)
                or self.fuse(graph, ctx, nodes, FUSED_OP, describe(match, nodes),
                             results=results))


ATTENTION = AttentionRule()


def _note(graph: Graph, made: list[Node]) -> str:
    return (f"fused {plural(len(made), 'attention block')} into "
            f"{plural(len(made), FUSED_OP + ' node')}")


FUSE_ATTENTION = register_pass(RuleSet(
    "fuse_attention", "fusion", (ATTENTION,), note=_note,
    doc="""Fuse each scaled-dot-product attention block — head split, rotary, KV cache,
    repeat-kv, Q·Kᵀ, scale, mask, Softmax, ·V and head merge, with the Q/K/V projections only
    it reads — into one Attention node.

    Unfused, attention writes the [heads, seq, seq] scores to memory and reads them back for
    the scale, the mask, the Softmax and the ·V product; a fused kernel (onnxruntime's
    Attention, MultiHeadAttention, GroupQueryAttention, FlashAttention) keeps them on chip,
    and its memory traffic no longer grows with seq².  The pattern (``attention``, in
    ``pattern.py``) covers eager, SDPA and dynamo exports: multi-head, grouped- and multi-query
    attention, self- and cross-attention, batch- and sequence-first layouts, rotary (as
    recognize_rotary's node), a KV cache, float32 and float16.  A projection shared with other
    blocks (the encoder output's K/V projections, packed across decoder layers) stays outside
    and is read as an input.  Without bindings, exporters compute the Reshape targets at run
    time from Shape nodes: the arithmetic only this attention reads moves into the fused node.
    The present keys and values of a KV cache stay outputs of the fused node; a block whose
    other intermediates are read elsewhere (a model that also outputs the attention
    probabilities) is left alone, and the pattern report says which consumer blocks.  The
    mask stays an input when it is computed outside (once, shared by all layers).
    """))


# ------------------------------------------------------------------------------- the node set
def block_nodes(graph: Graph, match: Match) -> list[Node]:
    """The matched nodes plus what must or may move inside with them.

    Must: nodes computed from the block's intermediates that the block reads again (SDPA's
    causal mask built from Q's shape), or the fused node would feed itself.  May, when only
    the block reads them: the integer shape arithmetic of its Reshape targets, and the
    projections computing Q, K and V (a node joins once every reader of its outputs is a
    member, so a chain shared with another layer stays outside).
    """
    members = {node.id: node for node in match.nodes}
    for node in _sandwiched(graph, members):
        members[node.id] = node
    starts = [match[name] for name in ("q_in", "k_in", "v_in")]
    changed = True
    while changed:
        count = len(members)
        members = {n.id: n for n in with_private_shape_arithmetic(list(members.values()))}
        changed = _absorb_projections(starts, members) or len(members) > count
    return list(members.values())


def _results(match: Match, nodes: list[Node]) -> list[Value]:
    """What the fused node returns: the merged heads, then the present keys and values when
    the model reads them (a KV cache's outputs)."""
    inside = {node.id for node in nodes}
    present = [v for v in (match["key_cache"], match["value_cache"]) if v is not None and (
        v.is_graph_output or any(u.id not in inside for u in v.users()))]
    return [match.root.outputs[0], *present]


def _sandwiched(graph: Graph, members: dict[int, Node]) -> list[Node]:
    """Nodes outside the match that depend on one of its outputs and feed one of its nodes.
    Only nodes after the block's first node (in execution order) can depend on it, which
    bounds the walk up."""
    position = {node.id: i for i, node in enumerate(graph.nodes)}
    first = min(position[i] for i in members)
    upstream: dict[int, Node] = {}
    stack = [v.producer for n in members.values() for v in n.inputs
             if v is not None and v.producer is not None]
    while stack:
        node = stack.pop()
        if node.id in members or node.id in upstream or position[node.id] < first:
            continue
        upstream[node.id] = node
        stack += [v.producer for v in node.inputs if v is not None and v.producer is not None]
    depends: set[int] = set()
    for node in sorted(upstream.values(), key=lambda n: position[n.id]):
        if any(v.producer.id in members or v.producer.id in depends
               for v in node.inputs if v is not None and v.producer is not None):
            depends.add(node.id)
    return [upstream[i] for i in depends]


def _absorb_projections(starts: list[Value], members: dict[int, Node]) -> bool:
    """The private part of each chain from a head split's input up to its linear layer,
    taken from the head split upwards until a node is also read elsewhere (the quantizer of
    activations that Q, K and V share joins with the last of them)."""
    changed = False
    for start in starts:
        for node in _projection_chain(start):
            if node.id not in members:
                if not _read_only_by(node, members):
                    break
                members[node.id] = node
                changed = True
    return changed


def _projection_chain(start: Value) -> list[Node]:
    """The nodes from ``start`` up to the linear layer (float or quantized, see
    ``projections``) through the ops that split and lay out a projection, nearest first;
    empty when the chain does not end at one."""
    chain: list[Node] = []
    value = start
    for _ in range(_PROJECTION_DEPTH):
        node = value.producer if value is not None else None
        projection = projection_ending_at(node)
        if projection is not None:
            flat = projection.reads.producer if node.op_type == "Gemm" else None
            chain += [*projection.nodes, *filter(None, (projection.quantizer,))]
            return chain + [flat] if flat is not None and flat.op_type == "Reshape" else chain
        if node is None or node.op_type not in _LAYOUT_OPS:
            return []
        chain.append(node)
        value = _data_input(node)
    return []


def _data_input(node: Node) -> Value | None:
    """The run-time tensor a projection op works on (an Add's non-constant operand, else
    input 0); None when an Add adds two run-time tensors (not a bias)."""
    if node.op_type != "Add":
        return node.input(0)
    runtime = [v for v in node.inputs if v is not None and not v.is_constant]
    return runtime[0] if len(runtime) == 1 else None


def _read_only_by(node: Node, members: dict[int, Node]) -> bool:
    return all(v is None or (not v.is_graph_output and all(u.id in members for u in v.users()))
               for v in node.outputs)
