"""Small helpers patterns share: a scalar constant, its value, an attribute with its default."""

from __future__ import annotations

from ...ir import Node, Value
from ..checks import predicate
from ..language import ConstPattern, const

SCALAR = predicate(lambda a: a.size == 1, "(a scalar)")


def scalar_const() -> ConstPattern:
    return const(where=SCALAR)


def as_float(value: Value) -> float:
    """A scalar constant's value as a Python float (for bindings such as epsilon)."""
    return float(value.constant_value().reshape(-1)[0])


def attr_or_default(name: str, default):
    """An extractor binding a node's attribute (with the ONNX default when omitted)."""
    def extract(node: Node):
        return node.attrs.get(name, default)
    return extract
