"""The least and greatest element of integer tensors built from sizes, and what indexing needs.

Exporters build index tensors from sizes: Range(0, kv_length) for key positions, a batch
offset b·total added to them to pick from a flattened padding mask.  Following each such
tensor's (least, greatest) element as polynomials lets a Gather say what it needs: every
index below the size of the axis it picks from.  For the mask lookup that reads
(batch-1)·total + past < batch·total — the mask must be longer than the past.
"""

from __future__ import annotations

from typing import Callable

from ..ir import Node, Value
from .algebra import Poly
from .walk import Walk

Span = tuple[Poly, Poly]   # (least, greatest) element, inclusive
ONE = Poly.const(1)


def span(walk: Walk, value: Value | None) -> Span | None:
    """The value's span, recorded or read off its known contents."""
    if value is None:
        return None
    if value.name in walk.spans:
        return walk.spans[value.name]
    content = walk.content(value)
    if content is None or not content.size:
        return None
    elements = list(content.reshape(-1))
    if len(set(elements)) == 1:
        return elements[0], elements[0]
    numbers = [p.value for p in elements]
    if None in numbers:
        return None
    return Poly.const(min(numbers)), Poly.const(max(numbers))


def _range(walk: Walk, node: Node) -> Span | None:
    start, limit, delta = (span(walk, node.input(i)) for i in range(3))
    if start is None or limit is None or delta is None or delta != (ONE, ONE) or \
            start[0] != start[1] or limit[0] != limit[1]:
        return None
    return start[0], limit[0] - 1


def _same(walk: Walk, node: Node) -> Span | None:
    """Ops that move or repeat elements but make none: the span is the input's."""
    return span(walk, node.inputs[0])


def _add(walk: Walk, node: Node) -> Span | None:
    a, b = span(walk, node.inputs[0]), span(walk, node.input(1))
    return None if a is None or b is None else (a[0] + b[0], a[1] + b[1])


def _sub(walk: Walk, node: Node) -> Span | None:
    a, b = span(walk, node.inputs[0]), span(walk, node.input(1))
    return None if a is None or b is None else (a[0] - b[1], a[1] - b[0])


def _mul(walk: Walk, node: Node) -> Span | None:
    """Products of non-negative spans (sizes and positions are)."""
    a, b = span(walk, node.inputs[0]), span(walk, node.input(1))
    if a is None or b is None or not (_non_negative(a[0]) and _non_negative(b[0])):
        return None
    return a[0] * b[0], a[1] * b[1]


def _non_negative(poly: Poly) -> bool:
    """True when the polynomial cannot be negative: a number >= 0, or only positive terms."""
    return all(c >= 0 for c in poly.terms.values())


def check_indices(walk: Walk, node: Node) -> None:
    """A Gather whose indices' greatest element is known needs it below its axis's size."""
    data, indices = walk.shape(node.inputs[0]), span(walk, node.input(1))
    if data is None or indices is None or not data:
        return
    axis = node.attr("axis", 0) % len(data)
    walk.bound(indices[1] + 1, data[axis], node,
               f"a Gather needs its largest index ({indices[1]}) below the size of the "
               f"axis it picks from ({data[axis]})")


RULES: dict[str, Callable[[Walk, Node], Span | None]] = {
    "Range": _range, "Add": _add, "Sub": _sub, "Mul": _mul,
    **{op: _same for op in ("Identity", "Cast", "Unsqueeze", "Squeeze", "Reshape", "Flatten",
                            "Expand", "Transpose", "Slice", "Tile")},
}
CHECKS: dict[str, Callable[[Walk, Node], None]] = {"Gather": check_indices}
