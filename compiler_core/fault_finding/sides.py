"""The two models a bisection compares, and which of their values are counterparts.

Two files (the model diff's alignment); a model and onnxruntime's optimized model of it (the
alignment, and the names onnxruntime's fusions keep); a model and a pipeline's output, or one
pass's input and output (provenance: node ids, and what each new node replaced).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import GraphLabError
from ..ir import Graph
from ..compilation import compile_model
from .counterparts import Counterpart, by_alignment, by_provenance


@dataclass
class Sides:
    a: Graph
    b: Graph
    pairs: list[Counterpart]
    a_label: str
    b_label: str


def two_models(a: Graph, b: Graph, a_label: str, b_label: str) -> Sides:
    return Sides(a, b, by_alignment(a, b), a_label, b_label)


def with_onnxruntime(graph: Graph, level: str, label: str, original: bytes | None) -> Sides:
    from ..model_diff.sides import onnxruntime_label, onnxruntime_version

    optimized = onnxruntime_version(graph, level, original)
    return Sides(graph, optimized, by_alignment(graph, optimized), label,
                 onnxruntime_label(level))


def after_pipeline(graph: Graph, pipeline: str, label: str,
                   bindings: dict[str, int] | None = None,
                   inputs: dict | None = None) -> Sides:
    """The input and output of the first pass whose output the numerical check finds changed
    (on ``inputs``): provenance is exact within one pass.  When every pass keeps the outputs,
    the model and the pipeline's output."""
    result = compile_model(graph, pipeline, bindings, verify=True, verify_inputs=inputs).result
    failing = next((s.index for s in result.snapshots
                    if s.verify is not None and not s.verify.ok), None)
    if failing is not None:
        return _pass_sides(result, failing, label)
    return Sides(graph, result.final, by_provenance(graph, result.final, "sources"), label,
                 f"{label} after {pipeline}")


def around_pass(graph: Graph, pipeline: str, pass_name: str, label: str,
                bindings: dict[str, int] | None = None) -> Sides:
    """The input and output of ``pass_name`` in ``pipeline``: its first run that changed the
    graph, or its N-th pass when ``pass_name`` is a number N (1-based)."""
    result = compile_model(graph, pipeline, bindings).result
    names = [s.pass_name for s in result.snapshots]
    if pass_name.isdigit() and 1 <= int(pass_name) <= len(names):
        index = int(pass_name) - 1
    else:
        runs = [i for i, s in enumerate(result.snapshots) if s.pass_name == pass_name]
        if not runs:
            raise GraphLabError(f"pass {pass_name!r} is not in pipeline {pipeline!r}",
                                hint=f"its passes: {', '.join(names)}")
        index = next((i for i in runs if result.snapshots[i].changed), runs[0])
    return _pass_sides(result, index, label)


def _pass_sides(result, index: int, label: str) -> Sides:
    before, after = result.graph_before(index), result.snapshots[index].graph
    where = f"pass {index + 1} ({result.snapshots[index].pass_name})"
    return Sides(before, after, by_provenance(before, after, "replaced"),
                 f"{label} before {where}", f"{label} after {where}")
