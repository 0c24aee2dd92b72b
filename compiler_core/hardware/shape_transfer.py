"""Concrete shapes for an unspecialized graph, learnt from a specialized copy of it.

A dynamic export computes its shapes at run time (Shape -> Gather -> Concat -> Reshape), so
even with `batch` and `seq` bound, shape inference leaves dims like 'unk__7' behind; the cost
model would count them as 1 and the raw graph would look far cheaper than it is.  Specializing
a copy at the bound sizes (`specialize_dims`) and folding its shape arithmetic learns every
shape; the graph's values then borrow the shapes of the same-named values of that copy (names
survive passes, and a fused node's body keeps the values it swallowed), and shape inference
carries them to the values no pass kept.  A borrowed shape must agree with every concrete dim
already known.  The graph the user looks at keeps its own (symbolic) shapes: only the analyses
price the sized copy.

Calls of model-local functions (GraphLab's own fused nodes, read back from a file it wrote)
are given their functions' bodies in that copy, and fused bodies the bindings left unsized
are sized again (`function_bodies`), with the shape arithmetic the specialized copy folded:
a fused node, or a call, is priced as the nodes it stands for would be.
"""

from __future__ import annotations

from ..ir import Graph, Value, infer_shapes
from ..ir.function_bodies import needs_bodies, sized_bodies

# Shape arithmetic folds into tiny integer vectors; nothing bigger is worth computing here.
SHAPE_FOLD_LIMIT = 1 << 12
MAX_FOLD_ROUNDS = 16


def is_sized(graph: Graph, bindings: dict[str, int]) -> bool:
    """True when every node output's dims are ints or names ``bindings`` gives a size."""
    return all(value.shape is not None and all(
                   isinstance(d, int) or isinstance(d, str) and d in bindings
                   for d in value.shape)
               for node in graph.nodes for value in node.outputs
               if value is not None and value.is_tensor)


def sized(graph: Graph, bindings: dict[str, int] | None = None) -> Graph:
    """``graph`` itself when the bindings size every dim and every body; otherwise a
    copy whose shapes were learnt by specializing the inputs at ``bindings``, each call with
    its function's body (module docstring)."""
    bindings = bindings or {}
    if is_sized(graph, bindings) and not needs_bodies(graph):
        return graph
    reference = specialized(graph, bindings)
    return sized_bodies(borrow_shapes(graph, reference, bindings), _folded(reference),
                        _sized_body)


def _sized_body(body: Graph) -> Graph:
    """A body instantiated at its call's sizes, its shape arithmetic folded to learn the
    rest (its nodes stay as they are: they are what the call computes)."""
    return body if is_sized(body, {}) else borrow_shapes(body, specialized(body, {}))


def _folded(reference: Graph):
    """Small constants the specialized copy folded (shape arithmetic), by value name."""
    def lookup(name: str):
        value = reference.values.get(name)
        if value is None or not value.is_constant or value.constant_data().nbytes > 1024:
            return None
        return value.constant_value()
    return lookup


def specialized(graph: Graph, bindings: dict[str, int]) -> Graph:
    """A copy with its inputs bound and its shape queries folded until shapes stop changing.

    Best effort: a graph the passes cannot specialize is returned as copied, and the
    analyses mark every op whose size they still had to assume.
    """
    # The passes import the hardware models (partitioning prices ops), so import them here.
    from ..passes.framework.base import PassContext
    from ..passes.cleanup.specialize import SpecializeDims
    from ..passes.folding.constants import FoldConstants
    copy = graph.copy()
    ctx = PassContext(bindings=dict(bindings), explain=False, fold_size_limit=SHAPE_FOLD_LIMIT)
    try:
        SpecializeDims().run(copy, ctx)
        for _ in range(MAX_FOLD_ROUNDS):
            if not FoldConstants().run(copy, ctx).rewrites:
                break
    except Exception:  # noqa: BLE001 - sizes are best effort; unknown dims get marked instead
        return graph.copy()
    return copy


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
