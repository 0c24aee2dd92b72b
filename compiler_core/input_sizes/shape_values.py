"""Contents of the small integer tensors exporters build reshape targets from.

`Shape(x)` holds x's dims; Gather, Slice, Concat, Unsqueeze and arithmetic on it compute the
sizes a later Reshape or Expand receives.  Each rule returns output 0's contents as an object
array of ``Poly`` (or None when it cannot tell), so a target such as
Concat([5], Unsqueeze(Mul(Gather(Shape(x), 1), 4)), [16]) reads as [5, 4*batch, 16].
Integer division is taken as exact: the sizes a model divides (hidden by heads) divide evenly,
and a run at the sizes found checks it.
"""

from __future__ import annotations

import operator
from typing import Callable

import numpy as np

from ..ir import Node
from .algebra import Poly, product
from .shape_rules import axes_of
from .walk import Walk

ZERO, ONE = Poly.const(0), Poly.const(1)


def _shape(walk: Walk, node: Node) -> np.ndarray | None:
    data = walk.shape(node.inputs[0])
    if data is None:
        return None
    start, end = node.attr("start", 0), node.attr("end", len(data))
    return _array(data[start:end])


def _size(walk: Walk, node: Node) -> np.ndarray | None:
    data = walk.shape(node.inputs[0])
    return None if data is None else _array([product(data)]).reshape(())


def _passthrough(walk: Walk, node: Node) -> np.ndarray | None:
    return walk.content(node.inputs[0])


def _reshaped(walk: Walk, node: Node) -> np.ndarray | None:
    """Unsqueeze, Squeeze, Reshape, Flatten, Expand: same elements, the output's shape."""
    content = walk.content(node.inputs[0])
    shape = walk.shapes.get(node.outputs[0].name)
    numbers = None if shape is None else [d.as_int() for d in shape]
    if content is None or numbers is None or None in numbers:
        return None
    if node.op_type == "Expand":
        return np.broadcast_to(content, numbers).copy()
    return content.reshape(numbers) if content.size == int(np.prod(numbers)) else None


def _gather(walk: Walk, node: Node) -> np.ndarray | None:
    content, indices = walk.content(node.inputs[0]), walk.ints(node.input(1))
    index_shape = walk.shape(node.input(1))
    if content is None or indices is None or content.ndim != 1 or index_shape is None:
        return None
    try:
        picked = content[np.array(indices, dtype=np.int64)]
    except IndexError:
        return None
    return picked.reshape([d.as_int() for d in index_shape])


def _slice(walk: Walk, node: Node) -> np.ndarray | None:
    content = walk.content(node.inputs[0])
    starts, ends = walk.ints(node.input(1)), walk.ints(node.input(2))
    steps = walk.ints(node.input(4)) if node.input(4) is not None else [1]
    axes = walk.ints(node.input(3)) if node.input(3) is not None else [0]
    if content is None or content.ndim != 1 or starts is None or ends is None or \
            steps is None or axes not in ([0], [-1]) or len(starts) != 1 or not steps[0]:
        return None
    return content[starts[0]:ends[0]:steps[0]]


def _concat(walk: Walk, node: Node) -> np.ndarray | None:
    contents = [walk.content(v) for v in node.inputs if v is not None]
    if any(c is None for c in contents) or not contents:
        return None
    try:
        return np.concatenate(contents, axis=node.attr("axis", 0))
    except ValueError:
        return None


def _binary(function: Callable) -> Callable[[Walk, Node], np.ndarray | None]:
    def rule(walk: Walk, node: Node) -> np.ndarray | None:
        contents = [walk.content(v) for v in node.inputs[:2]]
        if any(c is None for c in contents):
            return None
        try:
            return _objects(np.frompyfunc(function, 2, 1)(*contents))
        except ValueError:
            return None
    return rule


def _divide(a: Poly, b: Poly) -> Poly:
    if a.value is not None and b.value:
        return Poly.const(int(a.value // b.value))
    quotient = a.divided_by(b)
    if quotient is None:
        raise ValueError("not divisible")
    return quotient


def _numeric(function: Callable) -> Callable:
    """An operation defined on numbers only (Mod, comparisons); a symbol makes it unknown."""
    def apply(*polys: Poly):
        values = [p.value for p in polys]
        if None in values:
            raise ValueError("symbolic")
        return Poly.const(int(function(*values)))
    return apply


def _equal(a: Poly, b: Poly) -> Poly:
    """Sizes are positive: a symbolic size never equals a number below 1."""
    difference = (a - b).value
    if difference is not None:
        return Poly.const(int(difference == 0))
    number = a.value if a.value is not None else b.value
    if number is not None and number < 1:
        return ZERO
    raise ValueError("undecided")


def _where(walk: Walk, node: Node) -> np.ndarray | None:
    condition, a, b = (walk.content(v) for v in node.inputs[:3])
    if condition is None or a is None or b is None:
        return None
    truth = np.vectorize(lambda p: p != ZERO, otypes=[bool])(condition)
    try:
        return np.where(truth, a, b)
    except ValueError:
        return None


def _constant_of_shape(walk: Walk, node: Node) -> np.ndarray | None:
    target = walk.ints(node.inputs[0])
    fill = node.attr("value")
    if target is None or int(np.prod(target)) > 64:
        return None
    number = 0 if fill is None else np.asarray(fill).reshape(-1)[0]
    if float(number) != int(number):
        return None
    return np.full(target, Poly.const(int(number)), dtype=object)


def _range(walk: Walk, node: Node) -> np.ndarray | None:
    numbers = [walk.ints(node.input(i)) for i in range(3)]
    if None in numbers or any(len(n) != 1 for n in numbers) or not numbers[2][0]:
        return None
    values = range(numbers[0][0], numbers[1][0], numbers[2][0])
    return _array([Poly.const(v) for v in values]) if len(values) <= 64 else None


def _objects(result) -> np.ndarray:
    """frompyfunc's answer as an array (it returns a bare element for 0-d inputs)."""
    if isinstance(result, np.ndarray):
        return result
    array = np.empty((), dtype=object)
    array[()] = result
    return array


def _array(polys) -> np.ndarray:
    array = np.empty(len(polys), dtype=object)
    array[:] = list(polys)
    return array


RULES: dict[str, Callable[[Walk, Node], np.ndarray | None]] = {
    "Shape": _shape, "Size": _size,
    "Identity": _passthrough, "Cast": _passthrough, "CastLike": _passthrough,
    "Unsqueeze": _reshaped, "Squeeze": _reshaped, "Reshape": _reshaped,
    "Flatten": _reshaped, "Expand": _reshaped,
    "Gather": _gather, "Slice": _slice, "Concat": _concat,
    "Add": _binary(operator.add), "Sub": _binary(operator.sub),
    "Mul": _binary(operator.mul), "Div": _binary(_divide),
    "Mod": _binary(_numeric(operator.mod)), "Max": _binary(_numeric(max)),
    "Min": _binary(_numeric(min)), "Equal": _binary(_equal),
    "Less": _binary(_numeric(operator.lt)), "Greater": _binary(_numeric(operator.gt)),
    "Where": _where, "ConstantOfShape": _constant_of_shape, "Range": _range,
    "Neg": lambda walk, node: None if walk.content(node.inputs[0]) is None
    else -walk.content(node.inputs[0]),
}

__all__ = ["RULES", "axes_of"]
