"""Concrete shapes for an unspecialized graph, borrowed from a sized copy of it.

A dynamic export computes its shapes at run time (Shape -> Gather -> Concat -> Reshape), so
even with `batch` and `seq` bound, shape inference leaves dims like 'unk__7' behind.  A copy
specialized at the bound sizes, its shape arithmetic folded (``compilation.sizing``: that runs
passes, which live above the hardware models), knows every shape; the graph's values then
borrow the shapes of the same-named values of that copy (names survive passes, and a fused
node's body keeps the values it swallowed), and shape inference carries them to the values no
pass kept.  A borrowed shape must agree with every concrete dim already known.
"""

from __future__ import annotations

from ..ir import Graph, Value, infer_shapes


def is_sized(graph: Graph, bindings: dict[str, int]) -> bool:
    """True when every node output's dims are ints or names ``bindings`` gives a size."""
    return all(value.shape is not None and all(
                   isinstance(d, int) or isinstance(d, str) and d in bindings
                   for d in value.shape)
               for node in graph.nodes for value in node.outputs
               if value is not None and value.is_tensor)


def borrow_shapes(graph: Graph, reference: Graph,
                  bindings: dict[str, int] | None = None) -> Graph:
    """A structural copy of ``graph`` with its inputs bound and its symbolic shapes made
    concrete from ``reference`` (see the module docstring); ``graph`` is not changed."""
    bindings = bindings or {}
    copy = graph.copy()
    for value in copy.inputs:
        if value.shape is not None:
            value.shape = tuple(bindings.get(d, d) if isinstance(d, str) else d
                                for d in value.shape)
    known = _static_shapes(reference)
    _borrow(copy, known)
    infer_shapes(copy)
    return copy


def _borrow(graph: Graph, known: dict[str, tuple[int, ...]]) -> None:
    """Give ``graph``'s values, and those inside its fused bodies, the shapes ``known`` has."""
    for name, value in graph.values.items():
        if name in known and _agrees(value, known[name]):
            value.shape = known[name]
    for node in graph.nodes:
        if node.body is not None:
            _borrow(node.body, known)


def _static_shapes(graph: Graph) -> dict[str, tuple[int, ...]]:
    """Every value name with a static shape, fused bodies included."""
    shapes = {name: value.static_shape() for name, value in graph.values.items()
              if value.static_shape() is not None}
    for node in graph.nodes:
        if node.body is not None:
            shapes.update((name, shape) for name, shape in _static_shapes(node.body).items()
                          if name not in shapes)
    return shapes


def _agrees(value: Value, shape: tuple[int, ...]) -> bool:
    if value.shape is None or value.static_shape() is not None:
        return False
    return len(value.shape) == len(shape) and all(
        not isinstance(mine, int) or mine == theirs for mine, theirs in zip(value.shape, shape))
