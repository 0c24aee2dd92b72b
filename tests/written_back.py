"""Every snapshot of a run written as ONNX and read back: the weights a pass computed come
back equal (used by the backend-test sweep and the fuzz suite, which export after each pass)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from compiler_core.ir import Graph, to_bytes
from compiler_core.ir.lazy_tensors import values_of


def written_back_problem(graph: Graph) -> str | None:
    """None if ``graph`` writes and its initializers read back equal, else what went wrong."""
    model = onnx.load_from_string(to_bytes(graph))
    for tensor in model.graph.initializer:
        expected = values_of(graph.initializers[tensor.name].const)
        got = numpy_helper.to_array(tensor)
        if got.shape != expected.shape or not np.array_equal(
                got, expected, equal_nan=got.dtype.kind in "fc"):
            return f"initializer {tensor.name!r} reads back different from what was written"
    return None


def first_snapshot_written_wrong(snapshots) -> str | None:
    """The first pass whose output does not write and read back whole, and why."""
    for snapshot in snapshots:
        problem = written_back_problem(snapshot.graph)
        if problem:
            return f"after {snapshot.pass_name}: {problem}"
    return None
