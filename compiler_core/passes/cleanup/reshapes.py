"""Reshape chains: a Reshape only cares how many elements its input has, not how it was shaped.

ONNX Reshape targets have two special entries: 0 copies the input's dim at that position
(unless ``allowzero=1``, where 0 means a zero-sized dim) and -1 is inferred from the element
count.  Both refer to the Reshape's *own* input, which is what makes merging subtle.
"""

from __future__ import annotations

import numpy as np

from ...ir import Graph, Node, Value
from ...patterns import Pattern, any_value, op
from ..framework.base import Pass, PassContext, PassResult
from ..analyses.constants import constant_ints
from ..framework.rewrite import replace_node
from ..framework.pass_registry import register_pass

# Ops that only change how the same elements are shaped (row-major order is kept).
SHAPE_ONLY_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}


def reshape_is_noop(shape: tuple | None, target: tuple[int, ...], allowzero: bool) -> bool:
    """True if Reshape(x, target) returns x's shape unchanged, for x of shape ``shape``."""
    if shape is None or len(target) != len(shape):
        return False
    inferred = 0
    for dim, want in zip(shape, target):
        if want == 0 and not allowzero:
            continue  # copies the input's dim
        if want == -1:
            inferred += 1
        elif not (isinstance(dim, int) and dim == want):
            return False
    return inferred <= 1


def reshape_chain() -> Pattern:
    """A Reshape of a Reshape (the first one's output read by nothing else).

    Why: only the last shape matters, so the first Reshape can go (when the second shape has
    no 0 entries that copy a dimension of the intermediate: the pass checks ``shape``).

    Bindings: ``first``, ``second`` (the Reshape nodes, in data-flow order), ``input``,
    ``shape`` (the second Reshape's shape input).
    """
    first = op("Reshape", any_value().bind("input"), any_value()).bind("first")
    return op("Reshape", first, any_value().bind("shape")).bind("second").described_as(
        "A Reshape whose input is another Reshape used by nothing else.").named("reshape_chain")


@register_pass
class MergeReshapes(Pass):
    """Collapse a chain of reshapes into one Reshape of the original tensor.

    Reshape(Reshape(x, a), b) is Reshape(x, b): reshaping never moves elements, so the middle
    shape does not matter — except where b says 0 ("copy the dim of my input"), which refers to
    the middle shape; those entries are replaced by the middle dim when it is known.  Flatten,
    Squeeze and Unsqueeze before a Reshape are absorbed the same way.
    """

    name = "merge_reshapes"
    family = "cleanup"

    def patterns(self) -> list[Pattern]:
        return [reshape_chain()]

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        for node in graph.nodes_of_type("Reshape"):
            if not graph.has_node(node):
                continue
            inner = node.inputs[0].producer
            target = constant_ints(node.input(1))
            if inner is None or inner.op_type not in SHAPE_ONLY_OPS or inner.domain or (
                    target is None):
                continue
            merged = _merged_target(node, inner, target)
            if merged is None:
                result.decline(node, "reshape_chain", (
                    f"its target {list(target)} copies (0) a dim of {inner.name}'s output "
                    f"whose size is not known at compile time"))
                continue
            shape = node.inputs[1] if merged == target else graph.add_initializer(
                f"{node.name}_shape", np.array(merged, dtype=np.int64))
            attrs = {"allowzero": 1} if node.attr("allowzero", 0) else None
            replace_node(graph, ctx, "reshape_chain", node, "Reshape",
                         [inner.inputs[0], shape], attrs, absorbed=[inner])
            result.rewrites += 1
        return result


def _merged_target(outer: Node, inner: Node, target: tuple[int, ...]) -> tuple | None:
    """The outer target rewritten to apply to the inner node's input; None if impossible."""
    if outer.attr("allowzero", 0) or 0 not in target:
        return target
    middle: Value = inner.outputs[0]
    inner_target = constant_ints(inner.input(1)) if inner.op_type == "Reshape" else None
    copies_input = inner_target is not None and not inner.attr("allowzero", 0)
    merged = []
    for axis, want in enumerate(target):
        if want != 0:
            merged.append(want)
        elif copies_input and axis < len(inner_target) and inner_target[axis] == 0:
            merged.append(0)  # both copy the same dim of the original input
        elif middle.shape is not None and axis < len(middle.shape) and isinstance(
                middle.shape[axis], int):
            merged.append(middle.shape[axis])
        elif inner_target is not None and axis < len(inner_target) and inner_target[axis] > 0:
            merged.append(inner_target[axis])
        else:
            return None
    return tuple(merged)

