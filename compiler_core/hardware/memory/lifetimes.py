"""Which tensors a memory plan places, and at which steps each is live.

Step k is the k-th node of the execution order (`graph.nodes`). A tensor a node produces is
live from that node's step to the step of its last reader (an If/Loop body reading it counts as
its node reading it); a tensor nothing reads dies at the step that made it.

Not in the arena, because someone else owns their memory: graph inputs (the caller's buffers),
graph outputs (handed back to the caller, so they outlive the plan) and constants —
initializers and Constant-node results, which live with the weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...ir import Graph, Node, Value
from ..tensor_sizes import SizeResolver


@dataclass(frozen=True)
class TensorLife:
    """One arena tensor: its exact size in bytes and its live steps [first, last]."""

    name: str
    nbytes: int
    first: int
    last: int


@dataclass
class Lifetimes:
    """The arena's tensors (in the order they are produced) and everything kept out of it."""

    steps: list[Node]
    tensors: list[TensorLife] = field(default_factory=list)
    inputs: list[tuple[str, int | None]] = field(default_factory=list)
    outputs: list[tuple[str, int | None]] = field(default_factory=list)
    constants: list[tuple[str, int | None]] = field(default_factory=list)
    unsized: list[str] = field(default_factory=list)


def is_constant(value: Value) -> bool:
    producer = value.producer
    return value.is_initializer or (producer is not None and producer.op_type == "Constant"
                                    and producer.domain in ("", "ai.onnx"))


def tensor_lifetimes(graph: Graph, sizes: SizeResolver) -> Lifetimes:
    """Lifetimes of every node-produced tensor that belongs in the arena."""
    steps = graph.nodes
    step_of = {node.id: index for index, node in enumerate(steps)}
    found = Lifetimes(steps)
    found.inputs = [(v.name, sizes.nbytes(v)) for v in graph.inputs]
    found.outputs = [(v.name, sizes.nbytes(v)) for v in graph.outputs]
    found.constants = [(v.name, sizes.nbytes(v)) for v in graph.initializers.values()]
    for step, node in enumerate(steps):
        for value in node.outputs:
            if value is None or value.is_graph_output or not value.is_tensor:
                continue
            if is_constant(value):
                found.constants.append((value.name, sizes.nbytes(value)))
                continue
            nbytes = sizes.nbytes(value)
            if nbytes is None:
                found.unsized.append(value.name)
                continue
            last = max((step_of[user.id] for user, _ in value.uses), default=step)
            found.tensors.append(TensorLife(value.name, nbytes, step, last))
    return found
