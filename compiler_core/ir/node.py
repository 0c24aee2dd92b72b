"""Nodes: one operator application, with a stable id that survives every pass.

A node keeps its ``id`` across structural copies, so "which nodes did this pass remove, add or
change?" is a set difference of ids.  A node a pass creates records where it came from
(``provenance``): the rule that made it and the ids of the nodes it replaced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..records import record_field
from . import write_guard
from .lazy_tensors import LazyTensor, values_of

if TYPE_CHECKING:
    from .graph import Graph
    from .value import Value


@dataclass(frozen=True)
class Provenance:
    """Why a node exists: the pass and rule that created it, from which nodes, and where the
    rule is written (``source``, "compiler_core/passes/x.py:42"; empty when unknown).

    ``replaced`` are the nodes of the graph before the pass that the node took the place of
    (a fused node's body, node for node); ``sources`` are the input model's nodes they came
    from, through earlier rewrites (a MatMul merged from three counts as those three).  The
    two differ when the pass rewrote nodes an earlier pass had made."""

    pass_name: str = record_field(key="pass")
    rule: str
    sources: tuple[int, ...] = ()
    source: str = record_field(omit_empty=True, default="")
    replaced: tuple[int, ...] = record_field(omit=True, default=())

    json_derived = (("replaced", "replaced_ids"),)

    @property
    def replaced_ids(self) -> tuple[int, ...]:
        """The nodes of the graph before the pass this node replaced (records made before
        they were kept: the sources)."""
        return self.replaced or self.sources


_CONSTANT_SCALAR_ATTRS = {"value_float": np.float32, "value_int": np.int64}
_CONSTANT_LIST_ATTRS = {"value_floats": np.float32, "value_ints": np.int64}


class Node:
    """An operator application.

    ``attrs`` maps attribute names to immutable Python values: int, float, str, bytes, tuples of
    those, read-only numpy arrays (tensor attributes), or onnx protos for the rare kinds
    (graphs, sparse tensors, type protos) that GraphLab carries through untouched.
    ``body`` is the subgraph of a fused node (exported as a model-local function).
    ``implicit_inputs`` are outer values read by If/Loop/Scan bodies; they count as uses.
    ``inputs`` is read-only: rewiring goes through ``replace_input`` (or the graph's
    methods), which keep every value's list of uses true.
    """

    __slots__ = ("id", "op_type", "domain", "overload", "name", "attrs", "attr_types", "_inputs",
                 "outputs", "implicit_inputs", "body", "provenance", "metadata", "doc_string",
                 "order")

    def __init__(self, node_id: int, op_type: str, domain: str = "", name: str = ""):
        self.id = node_id
        self.op_type = op_type
        self.domain = domain
        self.overload = ""
        self.name = name
        self.attrs: dict[str, Any] = {}
        self.attr_types: dict[str, int] = {}  # ONNX attribute types, kept for exact round-trip
        self._inputs: tuple[Value | None, ...] = ()
        self.outputs: list[Value | None] = []
        self.implicit_inputs: list[Value] = []
        self.body: Graph | None = None
        self.provenance: Provenance | None = None
        self.metadata: dict[str, str] = {}
        self.doc_string = ""
        self.order = 0.0

    # -- wiring (keeps Value.uses consistent) ----------------------------------------------------
    @property
    def inputs(self) -> "tuple[Value | None, ...]":
        return self._inputs

    def attach_inputs(self, inputs: "Sequence[Value | None]") -> None:
        """Wire a new node's inputs, registering it as a user of each value."""
        if self._inputs:
            raise ValueError(f"node {self.name!r} is already wired; use replace_input")
        if write_guard._armed:
            write_guard.touch_wiring(self, inputs)
        self._inputs = tuple(inputs)
        for index, value in enumerate(self._inputs):
            if value is not None:
                value.uses.append((self, index))

    def replace_input(self, index: int, new: "Value | None") -> None:
        """Point input ``index`` (negative: implicit input ``-1 - index``) at another value."""
        old = self.inputs[index] if index >= 0 else self.implicit_inputs[-1 - index]
        if write_guard._armed:
            write_guard.touch_wiring(self, (old, new))
        if write_guard.changed_nodes is not None:
            write_guard.changed_nodes.add(self.id)
        if old is not None:
            _drop_use(old.uses, self, index)
        if index >= 0:
            self._inputs = self._inputs[:index] + (new,) + self._inputs[index + 1:]
        else:
            if new is None:
                raise ValueError("an implicit input cannot be removed, only renamed")
            self.implicit_inputs[-1 - index] = new
        if new is not None:
            new.uses.append((self, index))

    def detach_inputs(self) -> None:
        """Drop this node's uses of every value it reads (used when it leaves the graph)."""
        if write_guard._armed:
            write_guard.touch_wiring(self, (*self.inputs, *self.implicit_inputs))
        for index, value in enumerate(self.inputs):
            if value is not None:
                _drop_use(value.uses, self, index)
        for k, value in enumerate(self.implicit_inputs):
            _drop_use(value.uses, self, -1 - k)

    # -- convenience -------------------------------------------------------------------------------
    @property
    def qualified_op(self) -> str:
        """'Conv' for the default domain, 'com.microsoft.Attention' otherwise."""
        return self.op_type if self.domain in ("", "ai.onnx") else f"{self.domain}.{self.op_type}"

    @property
    def scope(self) -> str:
        """Name scope used to group nodes ('/encoder/layer.0/attention'), '' when none."""
        scopes = self.metadata.get("pkg.torch.onnx.name_scopes")
        if scopes:  # the dynamo exporter records the module path as a list literal
            parts = [p.strip(" '\"") for p in scopes.strip("[]").split(",") if p.strip(" '\"")]
            return "/" + "/".join(parts[:-1]) if len(parts) > 1 else ""
        if "/" in self.name:
            return self.name.rsplit("/", 1)[0]
        return ""

    def attr(self, name: str, default: Any = None) -> Any:
        return self.attrs.get(name, default)

    def input(self, index: int) -> "Value | None":
        """Input ``index`` or None if absent (optional inputs are often omitted)."""
        return self.inputs[index] if index < len(self.inputs) else None

    def constant_attr_data(self) -> "np.ndarray | LazyTensor | None":
        """The tensor a Constant node produces as it is kept (a weight stored in the model's
        file is not read), or None when it is not expressible here."""
        if "value" in self.attrs and isinstance(self.attrs["value"], (np.ndarray, LazyTensor)):
            return self.attrs["value"]
        return self.constant_attr_value()

    def constant_attr_value(self) -> np.ndarray | None:
        """The tensor a Constant node produces, or None when it is not expressible here (this
        reads a stored weight: ask ``constant_attr_data`` when the values are not needed)."""
        if "value" in self.attrs and isinstance(self.attrs["value"], (np.ndarray, LazyTensor)):
            return values_of(self.attrs["value"])
        for key, dtype in _CONSTANT_SCALAR_ATTRS.items():
            if key in self.attrs:
                return _readonly(np.array(self.attrs[key], dtype=dtype))
        for key, dtype in _CONSTANT_LIST_ATTRS.items():
            if key in self.attrs:
                return _readonly(np.array(self.attrs[key], dtype=dtype))
        return None

    def __repr__(self) -> str:
        return f"Node#{self.id}({self.qualified_op} {self.name!r})"


def _drop_use(uses: list, node: "Node", index: int) -> None:
    """Remove the use ``(node, index)``, searching from the newest: a rewrite removes the nodes
    it replaces last first, so the use it drops is near the end of the list even when
    thousands of nodes read the value (a shared constant); ``list.remove`` scans from the
    start, which made removing N readers of one value cost N²."""
    for position in range(len(uses) - 1, -1, -1):
        reader, at = uses[position]
        if reader is node and at == index:
            del uses[position]
            return
    raise ValueError(f"{node.name!r} does not read this value at input {index}")


def _readonly(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array
