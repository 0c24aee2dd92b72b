"""Graphs at the decided sizes, for the hardware models (which read sized graphs and run no
pass themselves).

A dynamic export computes its shapes at run time (Shape -> Gather -> Concat -> Reshape), so
even with `batch` and `seq` bound, shape inference leaves dims like 'unk__7' behind; the cost
model would count them as 1 and the raw graph would look far cheaper than it is.  Here a copy
is specialized at the sizes (``SpecializeDims``) and its shape arithmetic folded
(``FoldConstants``); the graph's values then borrow that copy's shapes
(``hardware.shape_transfer.borrow_shapes``).  The graph the user looks at keeps its own
(symbolic) shapes: only the analyses price the sized copy.

Calls of model-local functions (GraphLab's own fused nodes, read back from a file it wrote)
are given their functions' bodies, and fused bodies the sizes left unsized are sized again
(``ir.function_bodies``), with the shape arithmetic the specialized copy folded: a fused
node, or a call, is priced as the nodes it stands for would be.
"""

from __future__ import annotations

from ..hardware.shape_transfer import borrow_shapes, is_sized
from ..ir import Graph
from ..ir.function_bodies import needs_bodies, sized_bodies
from ..passes import PassContext
from ..passes.cleanup.specialize import SpecializeDims
from ..passes.folding.constants import FoldConstants

# Shape arithmetic folds into tiny integer vectors; nothing bigger is worth computing here.
SHAPE_FOLD_LIMIT = 1 << 12
MAX_FOLD_ROUNDS = 16


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
