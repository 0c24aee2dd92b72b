"""The array's figures of a pipeline: every GEMM and convolution summed after each pass
(`pass_schedules`), and what the report tells about the array (`systolic_story`).  Each graph
is sized at the decided sizes first (``sizing.sized``), so they live above the hardware
models, beside the compile entry."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import GraphLabError
from ..hardware.cost import compute_dtype
from ..hardware.gemm_shapes import gemm_problems, has_gemm
from ..hardware.node_schedule import schedule_model, schedule_node
from ..hardware.systolic import ScheduleError
from ..hardware.systolic_choices import choice_figures, compare_dataflows
from ..passes import PipelineResult
from .sizing import sized


def pass_schedules(result: PipelineResult, bindings: dict[str, int] | None = None,
                   **options) -> list[dict]:
    """Every GEMM and convolution on the array, summed, for the model as loaded (index -1)
    and after each pass: {"index", "pass", "changed", "gemms", figures...}. Most passes leave
    the GEMMs alone (cleanups, normalization and activation recognition), so graphs whose
    GEMM shapes and dtypes are the same, in the same order, share one schedule; a graph
    without GEMMs has `gemms` 0 and no figures."""
    rows, by_graph, by_gemms = [], {}, {}
    graphs = [(-1, "(input model)", True, result.initial)] + [
        (s.index, s.pass_name, bool(s.changed), s.graph) for s in result.snapshots]
    for index, name, changed, graph in graphs:
        if id(graph) not in by_graph:
            shaped = sized(graph, bindings)
            key = _gemm_shapes(shaped, bindings)
            if key not in by_gemms:
                by_gemms[key] = _model_figures(shaped, bindings, options)
            by_graph[id(graph)] = by_gemms[key]
        rows.append({"index": index, "pass": name, "changed": changed, **by_graph[id(graph)]})
    return rows


def _gemm_shapes(graph, bindings) -> tuple:
    """What the array's figures of a sized graph depend on: each GEMM node's problems and
    dtype, in order."""
    shapes = []
    for node in graph.nodes:
        if not has_gemm(node):
            continue
        try:
            problems = tuple((p.M, p.N, p.K, p.instances, repr(p.conv))
                             for p in gemm_problems(node, bindings))
        except GraphLabError as err:   # scheduling it fails the same way: keep it apart
            problems = (node.name, str(err))
        shapes.append((compute_dtype(node), problems))
    return tuple(shapes)


def _model_figures(graph, bindings, options) -> dict:
    try:
        record = schedule_model(graph, bindings=bindings, **options)
    except ScheduleError:
        return {"gemms": 0}
    return {"gemms": len(record["nodes"]), **choice_figures(record)}


@dataclass(frozen=True)
class SystolicStory:
    """What a report tells about the array: the model's GEMMs summed after every pass, and
    the final graph's busiest GEMM node (most MACs) with its memory figures and the three
    dataflows compared; `busiest` is None for a model without GEMMs."""

    passes: list[dict]
    busiest: dict | None
    dataflows: dict | None


def systolic_story(result: PipelineResult, target, bindings: dict[str, int] | None = None,
                   **options) -> SystolicStory:
    """The report's systolic figures on the target's array, memory and default dataflow."""
    options = {"target": target, **options}
    passes = pass_schedules(result, bindings, **options)
    graph = sized(result.final, bindings)
    weighed = []
    for node in graph.nodes:
        if has_gemm(node):
            try:
                problems = gemm_problems(node, bindings)
            except GraphLabError:   # a GEMM the array cannot take: priced nowhere
                continue
            weighed.append((sum(p.M * p.N * p.K * p.instances for p in problems), node.name))
    if not weighed:
        return SystolicStory(passes, None, None)
    name = max(weighed)[1]
    records: dict[str, dict] = {}

    def record_of(dataflow: str) -> dict:
        if dataflow not in records:
            records[dataflow] = schedule_node(graph, name, bindings=bindings,
                                              **{**options, "dataflow": dataflow})
        return records[dataflow]
    comparison = compare_dataflows(record_of)
    return SystolicStory(passes, record_of(options.get("dataflow", "os")), comparison)
