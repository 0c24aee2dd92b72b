"""SSA values: every tensor in a graph has exactly one producer and a list of uses.

Keeping the uses on the value makes the questions compilers ask all the time O(1): "is this
intermediate used only once?", "who else reads it?", "is it a graph output?".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .dtypes import dtype_name
from .lazy_tensors import values_of

if TYPE_CHECKING:
    import onnx

    from .node import Node
    from .lazy_tensors import LazyTensor

Dim = "int | str | None"  # a concrete size, a symbolic name ('batch'), or unknown


class Value:
    """A tensor (or non-tensor ONNX value) flowing along an edge of the graph.

    ``shape`` is a tuple whose entries are ints, symbolic names or None (unknown), or None when
    even the rank is unknown.  An initializer's data is ``stored``: a read-only numpy array or
    a ``LazyTensor`` (e.g. a range of a file, read only when asked), shared (never copied)
    between structural copies of a graph; ``const`` gives its values as an array.  ``uses``
    lists (node, input index) pairs; a negative index ``-1 - k`` means the node's subgraph
    reads the value implicitly (k-th entry of ``node.implicit_inputs``).
    """

    __slots__ = ("name", "elem_type", "shape", "type_proto", "stored", "producer",
                 "output_index", "uses", "is_graph_input", "is_graph_output", "doc_string")

    def __init__(self, name: str, elem_type: int | None = None, shape: tuple | None = None,
                 const: "np.ndarray | LazyTensor | None" = None,
                 type_proto: "onnx.TypeProto | None" = None):
        self.name = name
        self.elem_type = elem_type
        self.shape = tuple(shape) if shape is not None else None
        self.type_proto = type_proto  # only for non-tensor types (sequence, map, optional, ...)
        self.stored = const
        self.producer: Node | None = None
        self.output_index = -1
        self.uses: list[tuple[Node, int]] = []
        self.is_graph_input = False
        self.is_graph_output = False
        self.doc_string = ""

    # -- what kind of value is this ------------------------------------------------------------
    @property
    def is_initializer(self) -> bool:
        return self.stored is not None and self.producer is None

    @property
    def is_tensor(self) -> bool:
        return self.type_proto is None

    @property
    def const(self) -> np.ndarray | None:
        """The initializer's values as a read-only array (reads a stored tensor's bytes)."""
        return None if self.stored is None else values_of(self.stored)

    @const.setter
    def const(self, data: "np.ndarray | LazyTensor | None") -> None:
        self.stored = data

    @property
    def is_constant(self) -> bool:
        """True if the data is known before run time (an initializer or a Constant's output),
        answered without reading it."""
        if self.stored is not None:
            return True
        producer = self.producer
        return (producer is not None and producer.op_type == "Constant"
                and producer.domain == "" and producer.constant_attr_data() is not None)

    def constant_data(self) -> "np.ndarray | LazyTensor | None":
        """The constant's data as it is kept: a lazy tensor is returned unread (it answers
        shape and dtype like an array; ``values_of`` reads it)."""
        if self.stored is not None:
            return self.stored
        producer = self.producer
        if producer is not None and producer.op_type == "Constant" and producer.domain == "":
            return producer.constant_attr_data()
        return None

    def constant_value(self) -> np.ndarray | None:
        """The value's data if it is known before run time: an initializer or a Constant's
        output.  This reads the data: ask ``is_constant`` when the values are not needed."""
        if self.stored is not None:
            return values_of(self.stored)
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
