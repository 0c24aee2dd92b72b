"""onnxruntime's nodes mapped back to GraphLab's node ids.

onnxruntime profiles the graph it optimized, not the one it was given: it writes a fused
node's function inline (``_inlfunc_<function>_<inner node>``), fuses nodes itself (MatMul +
Add into Gemm, Add + LayerNormalization into SkipLayerNormalization) and adds nodes of its own
(``gemm_input_reshape_token_8``).  GraphLab's nodes are exported with their id in their name
(`tagged_name`), and onnxruntime's optimized model is read back, so each of its nodes is
traced to ours in three ways, the first that answers wins:

1. its name carries a tag: a node kept, or renamed from ours ("<name>/MatMulAddFusion");
2. it writes values our graph has: it stands for the nodes that produced them and every node
   of ours whose outputs onnxruntime no longer has on the way back (the nodes it fused);
3. neither (a node inside a written-out function, or one onnxruntime added): it works for the
   nodes its outputs lead to, followed forward until nodes that answer 1 or 2 (or backward to
   its inputs' producers, for a node whose outputs lead nowhere).

Ids joined by 2 form one group: onnxruntime fused them, and the group says so.  A value
onnxruntime computes in float32 where the model has float16 (its CPU kernels' own precision)
keeps its name behind a prefix (``InsertedPrecisionFreeCast_<name>``); it is read as the value
it stands for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import onnx

from ..ir import Graph

_TAG = re.compile(r"@gl(\d+)@")
RECAST_PREFIXES = ("InsertedPrecisionFreeCast_",)   # onnxruntime's names for recast values


def value_name(name: str) -> str:
    """The model's name of a value onnxruntime may have renamed while recasting it."""
    for prefix in RECAST_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix):]
    return name


def tagged_name(node_id: int, name: str) -> str:
    """The name a node is exported with for profiling: its own with its id appended."""
    return f"{name}@gl{node_id}@"


@dataclass(frozen=True)
class KernelOwner:
    """Which of our nodes one of onnxruntime's nodes works for, and how that was found."""

    ids: frozenset[int]
    how: str        # "name", "values" or "neighbours"


def map_nodes(graph: Graph, optimized: onnx.GraphProto) -> dict[str, KernelOwner]:
    """onnxruntime node name -> the ids of ``graph``'s nodes it works for (nodes that cannot
    be traced at all are left out)."""
    ids = {node.id for node in graph.nodes}
    producer = {value.name: node for node in graph.nodes for value in node.outputs
                if value is not None}
    present = {value_name(v) for n in optimized.node for v in n.output} | \
        {value_name(t.name) for t in optimized.initializer} | {i.name for i in optimized.input}
    cones: dict[str, frozenset[int]] = {}

    def cone(value: str) -> frozenset[int]:
        """The producer of ``value`` and, back through values onnxruntime dropped, the nodes
        whose work went into it."""
        if value not in cones:
            found, stack = set(), [producer[value]]
            while stack:
                node = stack.pop()
                if node.id in found:
                    continue
                found.add(node.id)
                stack += [producer[v.name] for v in list(node.inputs) + node.implicit_inputs
                          if v is not None and v.name not in present and v.name in producer]
            cones[value] = frozenset(found)
        return cones[value]

    direct: dict[str, KernelOwner] = {}
    for node in optimized.node:
        tag = _TAG.search(node.name)
        if tag and int(tag.group(1)) in ids:
            direct[node.name] = KernelOwner(frozenset({int(tag.group(1))}), "name")
            continue
        owned = frozenset().union(*(cone(value_name(v)) for v in node.output
                                    if value_name(v) in producer))
        if owned:
            direct[node.name] = KernelOwner(owned, "values")
    return {**direct, **_by_neighbours(optimized, direct)}


def _by_neighbours(optimized: onnx.GraphProto,
                   direct: dict[str, KernelOwner]) -> dict[str, KernelOwner]:
    """Owners of the nodes neither their name nor their outputs trace (rule 3)."""
    consumers: dict[str, list[onnx.NodeProto]] = {}
    producers: dict[str, onnx.NodeProto] = {}
    for node in optimized.node:
        for value in node.input:
            consumers.setdefault(value, []).append(node)
        for value in node.output:
            producers[value] = node

    def follow(start: onnx.NodeProto, step) -> frozenset[int]:
        found: set[int] = set()
        seen, stack = {start.name}, list(step(start))
        while stack:
            node = stack.pop()
            if node.name in seen:
                continue
            seen.add(node.name)
            if node.name in direct:
                found |= direct[node.name].ids
            else:
                stack += step(node)
        return frozenset(found)

    forward = lambda node: [c for v in node.output for c in consumers.get(v, [])]  # noqa: E731
    backward = lambda node: [producers[v] for v in node.input if v in producers]  # noqa: E731
    owners = {}
    for node in optimized.node:
        if node.name in direct:
            continue
        ids = follow(node, forward) or follow(node, backward)
        if ids:
            owners[node.name] = KernelOwner(ids, "neighbours")
    return owners
