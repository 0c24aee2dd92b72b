"""onnxruntime's own operator schemas, to check its operators' nodes as onnx's schemas check
ONNX's.

onnxruntime publishes the schemas of its contrib operators (com.microsoft) in its Python
package; onnx knows none of them.  A node with more inputs than its operator takes, too few,
or an attribute the operator does not define is one onnxruntime refuses to load, so the
importer refuses it too, naming the node, instead of pricing or rewriting a node that cannot
run.  onnxruntime is imported only when a model holds such a node.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import onnx

from ..errors import ModelLoadError

ORT_DOMAINS = ("com.microsoft",)


@dataclass(frozen=True)
class Arity:
    """What onnxruntime's schema allows for one operator (its newest version)."""

    min_inputs: int
    max_inputs: int
    max_outputs: int
    attributes: frozenset[str]


@functools.lru_cache(maxsize=1)
def _schemas() -> dict[tuple[str, str], Arity]:
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as state
    except ImportError:   # no onnxruntime: nothing to check against
        return {}
    newest: dict[tuple[str, str], object] = {}
    for schema in state.get_all_operator_schema():
        key = (schema.domain, schema.name)
        if key not in newest or schema.since_version > newest[key].since_version:
            newest[key] = schema
    return {key: Arity(s.min_input, s.max_input, s.max_output, frozenset(s.attributes))
            for key, s in newest.items()}


def ort_arity(op_type: str, domain: str) -> Arity | None:
    """onnxruntime's schema of the op, or None when onnxruntime defines no such op."""
    return _schemas().get((domain, op_type))


def check_ort_node(node: onnx.NodeProto, label: str) -> None:
    """Raise ModelLoadError when a node of onnxruntime's domains breaks its operator's
    schema (input or output count, an attribute it does not define)."""
    arity = ort_arity(node.op_type, node.domain)
    if arity is None:
        return
    where = node.name or node.op_type
    inputs = len(node.input)
    while inputs and not node.input[inputs - 1]:
        inputs -= 1
    op = f"{node.domain}.{node.op_type}"
    if not arity.min_inputs <= inputs <= arity.max_inputs:
        raise ModelLoadError(
            f"{label} ({op}) has {inputs} inputs; onnxruntime's {op} takes "
            f"{arity.min_inputs} to {arity.max_inputs}", where=where,
            hint="the model was edited by hand or written for another onnxruntime release")
    if len(node.output) > arity.max_outputs:
        raise ModelLoadError(
            f"{label} ({op}) has {len(node.output)} outputs; onnxruntime's {op} has at most "
            f"{arity.max_outputs}", where=where, hint="re-export the model")
    unknown = sorted(a.name for a in node.attribute if a.name not in arity.attributes)
    if unknown:
        raise ModelLoadError(
            f"{label} ({op}) has attribute(s) {', '.join(map(repr, unknown))}, which "
            f"onnxruntime's {op} does not define", where=where,
            hint=f"its attributes are {', '.join(sorted(arity.attributes)) or 'none'}")
