"""SSA values: every tensor in a graph has exactly one producer and a list of uses.

Keeping the uses on the value makes the questions compilers ask all the time O(1): "is this
intermediate used only once?", "who else reads it?", "is it a graph output?".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .dtypes import dtype_name

if TYPE_CHECKING:
    import onnx

    from .node import Node

Dim = "int | str | None"  # a concrete size, a symbolic name ('batch'), or unknown


class Value:
    """A tensor (or non-tensor ONNX value) flowing along an edge of the graph.

    ``shape`` is a tuple whose entries are ints, symbolic names or None (unknown), or None when
    even the rank is unknown.  ``const`` holds an initializer's data as a read-only numpy array,
    shared (never copied) between structural copies of a graph.  ``uses`` lists (node, input
    index) pairs; a negative index ``-1 - k`` means the node's subgraph reads the value
    implicitly (k-th entry of ``node.implicit_inputs``).
    """

    __slots__ = ("name", "elem_type", "shape", "type_proto", "const", "producer", "output_index",
                 "uses", "is_graph_input", "is_graph_output", "doc_string")

    def __init__(self, name: str, elem_type: int | None = None, shape: tuple | None = None,
                 const: np.ndarray | None = None, type_proto: "onnx.TypeProto | None" = None):
        self.name = name
        self.elem_type = elem_type
        self.shape = tuple(shape) if shape is not None else None
        self.type_proto = type_proto  # only for non-tensor types (sequence, map, optional, ...)
        self.const = const
        self.producer: Node | None = None
        self.output_index = -1
        self.uses: list[tuple[Node, int]] = []
        self.is_graph_input = False
        self.is_graph_output = False
        self.doc_string = ""

    # -- what kind of value is this ------------------------------------------------------------
    @property
    def is_initializer(self) -> bool:
        return self.const is not None and self.producer is None

    @property
    def is_tensor(self) -> bool:
        return self.type_proto is None

    def constant_value(self) -> np.ndarray | None:
        """The value's data if it is known before run time: an initializer or a Constant's output."""
        if self.const is not None:
            return self.const
        producer = self.producer
        if producer is not None and producer.op_type == "Constant" and producer.domain == "":
            return producer.constant_attr_value()
        return None

    # -- shape helpers --------------------------------------------------------------------------
    @property
    def rank(self) -> int | None:
        return None if self.shape is None else len(self.shape)

    def static_shape(self) -> tuple[int, ...] | None:
        """The shape if every dimension is a concrete int, else None."""
        if self.shape is None or not all(isinstance(d, int) for d in self.shape):
            return None
        return self.shape  # type: ignore[return-value]

    def numel(self) -> int | None:
        shape = self.static_shape()
        return None if shape is None else int(np.prod(shape, dtype=np.int64))

    # -- users ----------------------------------------------------------------------------------
    def users(self) -> list["Node"]:
        """Distinct consuming nodes, in the order they were attached."""
        seen: dict[int, Node] = {}
        for node, _ in self.uses:
            seen.setdefault(node.id, node)
        return list(seen.values())

    def describe_type(self) -> str:
        """'float32[batch,128]' style text used by printers and explanations."""
        if self.type_proto is not None:
            return self.type_proto.WhichOneof("value") or "?"
        if self.shape is None:
            return f"{dtype_name(self.elem_type)}[?]"
        dims = ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{dtype_name(self.elem_type)}[{dims}]"

    def __repr__(self) -> str:
        return f"Value({self.name!r}, {self.describe_type()})"
