"""Helpers for tests of passes: count matches before/after, assert a site matches or fails.

    conv_bn = ConvBatchNormRule().named_pattern()
    assert count_matches(after, conv_bn) == 0
    assert_fails(graph, conv_bn, "bn2", reason="has another consumer", blocking_node="relu")
"""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from ..ir import Graph, Node, load_model
from .failure import Failure
from .language import Pattern
from .matcher import Match, explain_at, match_all


def build_graph(nodes: list, inputs: dict[str, tuple], outputs: dict[str, tuple],
                initializers: dict[str, np.ndarray] | None = None, opset: int = 17) -> Graph:
    """A small IR graph from onnx.helper nodes; inputs/outputs map names to shapes (float32)."""
    def infos(specs: dict[str, tuple]) -> list:
        return [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in specs.items()]
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in (initializers or {}).items()]
    graph = helper.make_graph(nodes, "test", infos(inputs), infos(outputs), inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return load_model(model.SerializeToString())


def count_matches(graph: Graph, pattern: Pattern) -> int:
    """How many non-overlapping matches ``pattern`` has."""
    return len(match_all(graph, pattern))


def assert_matches(graph: Graph, pattern: Pattern, node: Node | str,
                   **bindings: str | None) -> Match:
    """Assert the pattern matches at ``node``; keyword arguments name expected bindings
    (a node or value name, or None for an absent optional)."""
    result = explain_at(graph, pattern, node)
    if isinstance(result, Failure):
        raise AssertionError(f"expected a match at {_name(node)}, but: {result.reason} "
                             f"(at {result.path_text})")
    for name, expected in bindings.items():
        got = result.bindings.get(name)
        got_name = getattr(got, "name", got)
        if got_name != expected:
            raise AssertionError(f"binding {name!r}: expected {expected!r}, got {got_name!r}")
    return result


def assert_fails(graph: Graph, pattern: Pattern, node: Node | str, reason: str | None = None,
                 *, failed_node: str | None = None, blocking_node: str | None = None) -> Failure:
    """Assert the pattern fails at ``node`` — with ``reason`` in the failure's reason, and at /
    blocked by the named nodes when given."""
    result = explain_at(graph, pattern, node)
    if not isinstance(result, Failure):
        raise AssertionError(f"expected no match at {_name(node)}, but it matched "
                             f"{[n.name for n in result.nodes]}")
    if reason is not None and reason not in result.reason:
        raise AssertionError(f"expected a reason containing {reason!r}, got {result.reason!r}")
    for what, expected, got in (("failed_node", failed_node, result.failed_node),
                                ("blocking_node", blocking_node, result.blocking_node)):
        if expected is not None and (got is None or got.name != expected):
            raise AssertionError(f"expected {what} {expected!r}, got "
                                 f"{got.name if got is not None else None!r} ({result.reason})")
    return result


def _name(node: Node | str) -> str:
    return node if isinstance(node, str) else node.name
