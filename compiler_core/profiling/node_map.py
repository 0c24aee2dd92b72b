"""onnxruntime's nodes mapped back to GraphLab's node ids.

onnxruntime profiles the graph it optimized, not the one it was given: it writes a fused
node's function inline (``_inlfunc_<function>_<inner node>``), fuses nodes itself (MatMul +
Add into Gemm, Add + LayerNormalization into SkipLayerNormalization) and adds nodes of its own
(``gemm_input_reshape_token_8``).  GraphLab's nodes are exported with their id in their name
(`tagged_name`), and onnxruntime's optimized model is read back, so each of its nodes is
traced to ours in three ways, the first that answers wins:

1. its name carries one of our nodes: our tag (a node kept, or renamed from ours:
   "<name>@gl12@/MatMulAddFusion"), or the value its blocked-layout rewrite is named after
   ("<value>_nchwc").  Such a kernel also ran the nodes it absorbed (`_absorbed`): the nodes
   behind it whose values onnxruntime dropped and only it read, then those after it that
   read its dropped values (MatMul -> Gemm took the Add after it);
2. it writes values our graph has: it stands for the nodes that produced them and every node
   of ours whose outputs onnxruntime no longer has on the way back (the nodes it fused:
   SkipLayerNormalization = Add + LayerNormalization);
3. neither (a node inside a written-out function, or one onnxruntime added): it works for the
   nodes its outputs lead to, followed forward until nodes that answer 1 or 2 (or backward to
   its inputs' producers, for a node whose outputs lead nowhere).

Ids joined by 1 or 2 form one group: onnxruntime fused them, and the group says so.  A value
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
RENAMING_SUFFIXES = ("_nchwc",)   # its blocked-layout nodes: named after the value they write


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
    named = {node.name: _named(node.name, ids, producer) for node in optimized.node}
    absorbed = _absorbed(graph, {i for i in named.values() if i is not None}, present)
    cones: dict[str, frozenset[int]] = {}

    def cone(value: str) -> frozenset[int]:
        """The producer of ``value`` and, back through values onnxruntime dropped, the nodes
        whose work went into it (not those a named kernel absorbed)."""
        if value not in cones:
            start = producer[value]
            found, stack = set(), [start]
            while stack:
                node = stack.pop()
                if node.id in found or (node.id in absorbed and node is not start):
                    continue
                found.add(node.id)
                stack += [producer[v.name] for v in list(node.inputs) + node.implicit_inputs
                          if v is not None and v.name not in present and v.name in producer]
            cones[value] = frozenset(found)
        return cones[value]

    kept_by: dict[int, set[int]] = {}
    for node_id, owner in absorbed.items():
        kept_by.setdefault(owner, set()).add(node_id)
    direct: dict[str, KernelOwner] = {}
    for node in optimized.node:
        kept = named[node.name]
        if kept is not None:
            direct[node.name] = KernelOwner(frozenset(kept_by[kept]), "name")
            continue
        owned = frozenset().union(*(cone(value_name(v)) for v in node.output
                                    if value_name(v) in producer))
        if owned:
            direct[node.name] = KernelOwner(owned, "values")
    return {**direct, **_by_neighbours(optimized, direct)}


def _absorbed(graph: Graph, carried: set[int], present: set[str]) -> dict[int, int]:
    """Each node of ours a kernel named after another node ran too -> that named node.

    onnxruntime names a fusion after one of its nodes, not always the last: its blocked-layout
    convolution ``<Relu's value>_nchwc`` ran the Conv and BatchNormalization before the Relu,
    and ``<BatchNormalization's value>_nchwc`` the residual Add and Relu after it.  So a named
    node takes, nearest first, the nodes behind it through values onnxruntime dropped that
    only it read (a value read twice, a residual, had to be written out by its own kernel),
    then the nodes after it that read its dropped values."""
    producer = {v.name: n for n in graph.nodes for v in n.outputs if v is not None}
    behind = {node.id: [producer[v.name].id for v in node.inputs
                        if v is not None and v.name not in present and v.name in producer
                        and len(v.uses) == 1]
              for node in graph.nodes}
    after = {node.id: [use[0].id for v in node.outputs
                       if v is not None and v.name not in present for use in v.uses]
             for node in graph.nodes}
    owner = {node_id: node_id for node_id in carried}
    for step in (behind, after):
        frontier = sorted(owner)
        while frontier:
            following = []
            for node_id in frontier:
                for other in step.get(node_id, ()):
                    if other not in owner:
                        owner[other] = owner[node_id]
                        following.append(other)
            frontier = following
    return owner


def _named(name: str, ids: set[int], producer: dict) -> int | None:
    """The id a node of onnxruntime's carries in its name: our tag, or that of the node
    whose value its blocked-layout rewrite was named after (`_alias`)."""
    tag = _TAG.search(name)
    if tag and int(tag.group(1)) in ids:
        return int(tag.group(1))
    alias = _alias(name, producer)
    return producer[alias].id if alias else None


def _alias(name: str, producer: dict) -> str | None:
    """The value of ours an onnxruntime node is named after (``<value>_nchwc``), if any."""
    for suffix in RENAMING_SUFFIXES:
        if name.endswith(suffix) and name[:-len(suffix)] in producer:
            return name[:-len(suffix)]
    return None


def _by_neighbours(optimized: onnx.GraphProto,
                   direct: dict[str, KernelOwner]) -> dict[str, KernelOwner]:
    """Owners of the nodes neither their name nor their outputs trace (rule 3): the traced
    nodes first reached along their outputs' readers, else along their inputs' writers."""
    readers: dict[str, list[onnx.NodeProto]] = {}
    writers: dict[str, onnx.NodeProto] = {}
    for node in optimized.node:
        for value in node.input:
            readers.setdefault(value, []).append(node)
        for value in node.output:
            writers[value] = node

    def forward(node: onnx.NodeProto) -> list[onnx.NodeProto]:
        return [r for v in node.output for r in readers.get(v, [])]

    def backward(node: onnx.NodeProto) -> list[onnx.NodeProto]:
        return [writers[v] for v in node.input if v in writers]

    owners = {}
    for node in optimized.node:
        if node.name in direct:
            continue
        ids = _follow(node, direct, forward) or _follow(node, direct, backward)
        if ids:
            owners[node.name] = KernelOwner(ids, "neighbours")
    return owners


def _follow(start: onnx.NodeProto, direct: dict[str, KernelOwner], step) -> frozenset[int]:
    """The ids of the traced nodes first reached from ``start`` taking ``step``s."""
    found: set[int] = set()
    seen, stack = {start.name}, step(start)
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
