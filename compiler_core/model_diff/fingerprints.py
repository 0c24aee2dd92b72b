"""What a node looks like without its id or its name: the keys the alignment compares.

Two models that share no ids (two exports of one network, a model and an optimized copy) still
share content: an op with the same attributes reading the same weights is very likely the same
node.  ``Fingerprints`` computes, once per graph:

- ``source(value)``: what an input slot reads, as far as content can say — a constant (by a
  hash of its bytes, whether an initializer or a Constant node's output), a graph input (by
  name), or a node's output;
- ``label(node)``: op, attributes (defaults left out, so an exporter writing ``axis=-1`` and one
  omitting it agree) and the constants it reads;
- ``neighbourhood(node, r)``: the label refined ``r`` times with the labels of the node's
  producers (by input slot) and consumers — Weisfeiler-Lehman colour refinement, directed.
  Equal neighbourhoods of radius r mean equal graphs r hops around the two nodes.

Hashes are Python ints of one process: they are compared, never stored.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

import numpy as np
import onnx

from ..ir import Graph, Node, Value
from ..ir.dtypes import raw_bytes
from ..ir.lazy_tensors import LazyTensor, values_of
from ..patterns.language import COMMUTATIVE_OPS
from ..patterns.schema_defaults import attribute_default

ROUNDS = 4   # the widest neighbourhood compared, in hops


def array_digest(array: np.ndarray) -> int:
    """A content hash of an array: dtype, shape and bytes (read in place, not copied)."""
    digest = hashlib.sha1(f"{array.dtype.str}{array.shape}".encode())
    if array.dtype.hasobject:
        digest.update(repr(array.tolist()).encode())
    else:
        digest.update(raw_bytes(array))
    return int.from_bytes(digest.digest()[:8], "little")


def is_commutative(node: Node) -> bool:
    """Add(x, b) and Add(b, x) are one computation: such ops' inputs compare as a multiset."""
    return node.domain in ("", "ai.onnx") and node.op_type in COMMUTATIVE_OPS


def in_slot_order(node: Node, keys: list) -> tuple:
    """Slot keys as compared: in order, or sorted for a commutative op."""
    return tuple(sorted(keys, key=repr)) if is_commutative(node) else tuple(keys)


def canonical_attrs(node: Node) -> dict[str, Any]:
    """The node's attributes without those equal to the schema's default."""
    kept = {}
    for name, value in node.attrs.items():
        if _is_plain(value):
            default = attribute_default(node.op_type, node.domain, name)
            if default is not None and _plain(value) == _plain(default):
                continue
        kept[name] = value
    return kept


def attribute_key(value: Any) -> Any:
    """A hashable stand-in for one attribute value (arrays and graphs by content; a Constant's
    weight kept in its file is read, as an array made in memory would be)."""
    if isinstance(value, LazyTensor):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        return ("tensor", array_digest(value))
    if isinstance(value, onnx.GraphProto):
        return ("graph", hashlib.blake2b(value.SerializeToString(), digest_size=8).hexdigest())
    if isinstance(value, tuple):
        return tuple(attribute_key(v) for v in value)
    if isinstance(value, (onnx.TypeProto, onnx.SparseTensorProto)):
        return (type(value).__name__, value.SerializeToString())
    return _plain(value)


def body_key(node: Node) -> tuple | None:
    """A fused node's body by content: its ops in order, with their attributes."""
    if node.body is None:
        return None
    return tuple((n.qualified_op, tuple(sorted((k, attribute_key(v))
                                               for k, v in canonical_attrs(n).items())))
                 for n in node.body.nodes)


def _is_plain(value: Any) -> bool:
    """Numbers, strings and tuples of them: what a schema's default can equal."""
    if isinstance(value, tuple):
        return all(isinstance(v, (int, float, str, bytes)) for v in value)
    return isinstance(value, (int, float, str, bytes))


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


class Fingerprints:
    """Content keys of one graph's nodes (see the module docstring)."""

    def __init__(self, graph: Graph, digests: dict[int, tuple] | None = None):
        self.graph = graph
        self.nodes = graph.nodes
        self.position = {n.id: i / max(1, len(self.nodes) - 1) for i, n in enumerate(self.nodes)}
        # id(data) -> (data, digest); shared by the two sides of a diff, so the weights a
        # pipeline's output shares with its input are hashed once.  The data is kept with its
        # digest: a lazy weight's values are a fresh array at each read, and an id is only
        # unique while its object lives
        self._constants = {} if digests is None else digests
        self.attrs = {n.id: canonical_attrs(n) for n in self.nodes}
        self.attr_key = {n.id: hash(tuple(sorted((k, attribute_key(v))
                                                 for k, v in self.attrs[n.id].items())))
                         for n in self.nodes}
        self.label = {n.id: hash((n.domain, n.op_type, self.attr_key[n.id], len(n.outputs),
                                  in_slot_order(n, [self._content(v) for v in n.inputs]),
                                  body_key(n)))
                      for n in self.nodes}
        self._rounds = [self.label]

    # -- what a slot reads ---------------------------------------------------------------------
    def constant_digest(self, value: Value) -> int | None:
        """The content hash of the value's data when it is known before run time."""
        data = value.constant_data()
        if data is None:
            return None
        key = id(data)
        if key not in self._constants:
            self._constants[key] = (data, array_digest(values_of(data)))
        return self._constants[key][1]

    def _content(self, value: Value | None) -> Any:
        """What a slot reads, by content only: a constant, a graph input, or 'computed'."""
        if value is None:
            return None
        digest = self.constant_digest(value)
        if digest is not None:
            return ("const", digest)
        if value.producer is None:
            return ("input", value.name)
        return "computed"

    # -- neighbourhoods -----------------------------------------------------------------------
    def neighbourhood(self, node_id: int, radius: int) -> int:
        while len(self._rounds) <= radius:
            self._rounds.append(self._refine(self._rounds[-1]))
        return self._rounds[radius][node_id]

    def _refine(self, colour: dict[int, int]) -> dict[int, int]:
        refined = {}
        for node in self.nodes:
            upstream = in_slot_order(node, [self._slot_colour(v, colour) for v in node.inputs])
            downstream = Counter((colour[user.id], index, out)
                                 for out, value in enumerate(node.outputs) if value is not None
                                 for user, index in value.uses if user.id in colour)
            refined[node.id] = hash((colour[node.id], upstream,
                                     tuple(sorted(downstream.items()))))
        return refined

    def _slot_colour(self, value: Value | None, colour: dict[int, int]) -> Any:
        content = self._content(value)
        if content != "computed":
            return content
        return (colour[value.producer.id], value.output_index)

    def unique(self, key_of) -> dict[Any, int]:
        """Keys held by exactly one node, mapped to that node's id."""
        counts = Counter(key_of(n.id) for n in self.nodes)
        return {key_of(n.id): n.id for n in self.nodes if counts[key_of(n.id)] == 1}
