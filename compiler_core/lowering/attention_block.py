"""A fused Attention node read back for lowering: the pattern's bindings on its body, and the
values they stand for once the body is written inline.

The body is matched again with the attention rule's own pattern, on a copy in which the inputs
fed constants from outside are constants again (the pattern's constant checks need them).  A
lowering first decides on this copy whether an onnxruntime operator fits, then writes the
body inline and builds the operator from the inlined values (``Block.outer``): the
projections, rotary and mask computations stay as they are, and what the operator replaces
(the core from head split to head merge) is left unread for dead-code elimination.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph, Node, Value
from ..passes.fusion.attention import ATTENTION
from ..patterns import Match, match_all


@dataclass
class Block:
    """The body of fused ``node`` matched by the attention pattern (``match``, on ``probe``)."""

    node: Node
    probe: Graph
    match: Match
    outer_inputs: list[Value | None]    # the fused node's inputs, in body-input order
    constant_of: dict[str, Value]       # probe constants standing for outer inputs

    def __getitem__(self, name: str):
        return self.match[name]

    def attr(self, name: str, default=None):
        return self.node.attrs.get(name, default)

    def constant(self, inner: Value | None) -> np.ndarray | None:
        return None if inner is None else inner.constant_value()

    def is_output(self, inner: Value | None) -> bool:
        """Whether the body's value is one of the fused node's outputs (read outside)."""
        return inner is not None and any(v.name == inner.name for v in self.probe.outputs)

    def outer(self, graph: Graph, inner: Value) -> Value:
        """The graph value standing for the probe's ``inner`` once the body is inline: a
        body node's output (the inlined copy keeps the node's id), or the fused node's input."""
        if inner.name in self.constant_of:
            return self.constant_of[inner.name]
        producer = inner.producer
        if producer is not None:
            return graph.node_by_id(producer.id).outputs[inner.output_index]
        for index, value in enumerate(self.probe.inputs):
            if value is inner:
                return self.outer_inputs[index]
        return graph.add_initializer(f"{self.node.name}/{inner.name}", inner.constant_value())


def read_block(node: Node) -> Block | str:
    """The attention pattern's one match on ``node``'s body, or why there is none."""
    probe = node.body.copy()
    constant_of: dict[str, Value] = {}
    for inner, outer in zip(list(probe.inputs), node.inputs):
        data = outer.constant_value() if outer is not None else None
        if data is not None:
            constant = probe.add_initializer(f"{inner.name}_constant", data)
            probe.replace_all_uses(inner, constant)  # the input stays, unread
            constant_of[constant.name] = outer
    matches = match_all(probe, ATTENTION.named_pattern())
    roots = [m for m in matches if any(v.name == m.root.outputs[0].name for v in probe.outputs)]
    if len(matches) != 1 or not roots:
        return "its body is not one attention block as the attention pattern describes it"
    return Block(node, probe, matches[0], list(node.inputs), constant_of)
