"""Common-subexpression elimination: compute each distinct expression once."""

from __future__ import annotations

import hashlib
from typing import Any, Hashable

import numpy as np
import onnx

from ...ir import Graph, Node, Value
from ...ir.computed_tensors import ComputedTensor
from ...ir.dtypes import raw_bytes
from ...ir.lazy_tensors import StoredTensor, values_of
from ...wording import plural
from ..framework.base import Pass, PassContext, PassResult
from ..analyses.constants import remove_dead
from ..framework.pass_registry import register_pass

FINGERPRINT_ELEMENTS = 64
# Two draws from a random op differ even with identical inputs.
NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                    "Multinomial", "Bernoulli", "Dropout"}


def _element_bytes(array: np.ndarray) -> bytes | memoryview:
    """The elements' bytes (without copying); string tensors hold references, so use their text."""
    if array.dtype == object:
        return repr(array.reshape(-1).tolist()).encode()
    return raw_bytes(array)


def _digest(array) -> tuple:
    """Exact identity of a constant: dtype, shape and a hash of its bytes (so -0.0 != 0.0)."""
    if isinstance(array, ComputedTensor):
        return array.recipe()
    array = values_of(array)
    return (array.dtype.str, array.shape,
            hashlib.blake2b(_element_bytes(array), digest_size=16).digest())


def _fingerprint(data) -> tuple:
    """A cheap necessary condition for equality: dtype, shape and the first and last elements.

    Hashing every weight of a 440 MB model takes most of a second; different weights almost
    always differ in their first elements, so only look-alikes are hashed in full.  Both ends
    are contiguous: a weight still in its file is read a page or two, not a page per sample.
    A weight computed lazily is known by its recipe (computing it to compare would cost more
    than the duplicate could save).
    """
    if isinstance(data, ComputedTensor):
        return data.recipe()
    if isinstance(data, StoredTensor) and data.zero_copy:   # the same key, read from its bytes
        return data.dtype.str, data.shape, data.end_bytes(FINGERPRINT_ELEMENTS)
    array = values_of(data)
    flat = array.reshape(-1)
    sample = np.concatenate([flat[:FINGERPRINT_ELEMENTS], flat[-FINGERPRINT_ELEMENTS:]])
    return array.dtype.str, array.shape, bytes(_element_bytes(sample))


def _attr_key(value: Any) -> Hashable:
    if isinstance(value, np.ndarray):
        return _digest(value)
    if isinstance(value, onnx.GraphProto | onnx.SparseTensorProto | onnx.TypeProto):
        return value.SerializeToString(deterministic=True)
    if isinstance(value, tuple):
        return tuple(_attr_key(v) for v in value)
    if isinstance(value, float):
        return ("float", value.hex())
    return value


def _node_key(node: Node) -> Hashable:
    """What two nodes computing the same share (lists, not generators, made into tuples:
    this runs for every node of the graph)."""
    attrs = node.attrs
    return (node.domain, node.op_type, node.overload, id(node.body),
            tuple([id(v) if v is not None else None for v in node.inputs]),
            tuple(map(id, node.implicit_inputs)),
            tuple([v is not None for v in node.outputs]),
            tuple(sorted([(k, _attr_key(v)) for k, v in attrs.items()])) if attrs else ())


def _merge_values(graph: Graph, duplicate: list[Value], kept: list[Value]) -> bool:
    """Readers of ``duplicate`` read ``kept``, keeping graph outputs' names; False if blocked."""
    pairs = [(d, k) for d, k in zip(duplicate, kept) if d is not None]
    if not all(graph.can_replace_uses(d, k) for d, k in pairs):
        return False
    for d, k in pairs:
        graph.replace_all_uses(d, k)
    return True


@register_pass
class EliminateCommonSubexpressions(Pass):
    """Merge nodes that compute the same thing: same op, same attributes, same inputs.

    Exporters repeat themselves — the same Shape of the same tensor in every layer, the same
    scalar constant a hundred times.  Two identical nodes on identical inputs give identical
    results, so one of them is enough; identical constants are stored once.  Merging makes
    more nodes identical downstream, so one sweep in execution order catches whole chains.
    """

    name = "cse"
    family = "cleanup"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        merged_constants = self._dedupe_initializers(graph)
        if merged_constants:
            result.notes.append(f"stored {plural(merged_constants, 'duplicate constant')} once")
        seen: dict[Hashable, Node] = {}
        for node in graph.nodes:
            if node.op_type in NONDETERMINISTIC and not node.domain:
                continue
            key = _node_key(node)
            kept = seen.get(key)
            if kept is None:
                seen[key] = node
            elif _merge_values(graph, node.outputs, kept.outputs):
                remove_dead(graph, [node])
                result.rewrites += 1
            elif _merge_values(graph, kept.outputs, node.outputs):
                remove_dead(graph, [kept])
                seen[key] = node
                result.rewrites += 1
        result.rewrites += merged_constants
        return result

    @staticmethod
    def _dedupe_initializers(graph: Graph) -> int:
        lookalikes: dict[tuple, list[Value]] = {}
        for value in graph.initializers.values():
            lookalikes.setdefault(_fingerprint(value.stored), []).append(value)
        merged = 0
        for group in lookalikes.values():
            if len(group) < 2:
                continue
            first_by_digest: dict[tuple, Value] = {}
            for value in group:
                kept = first_by_digest.setdefault(_digest(value.stored), value)
                if kept is not value and _merge_values(graph, [value], [kept]):
                    graph.remove_initializer(value)
                    merged += 1
        return merged
