"""Which dataflow, how much SRAM, how much bandwidth: a layer's schedule compared across the
three dataflows and swept over SRAM sizes and DRAM bandwidths, and a whole model's GEMMs and
convolutions summed pass by pass (`schedule_model`).

A layer is *memory-bound on the array* when it waits for memory for at least half its cycles
(`stall_cycles >= (cycles + 1) / 2`). The sweep keeps the figures a chart needs (cycles and
stalls), read from the schedule's properties, so 48 schedules cost milliseconds under the
overlap model; under SCALE-Sim's each is a replay of its memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import GraphLabError
from .cost import compute_dtype
from .gemm_shapes import gemm_problems, has_gemm
from .node_schedule import schedule_model, schedule_node
from .shape_transfer import sized
from .systolic import DATAFLOWS, ScheduleError
from .systolic.memory_config import OPERANDS, MemoryConfig

if TYPE_CHECKING:
    from ..passes import PipelineResult

SWEEP_SRAM_KB = (1, 2, 4, 8, 16, 32, 64, 128, 256)
SWEEP_BANDWIDTH = (1, 2, 4, 8, 16, 32, 64)
COMPARED = ("cycles", "stall_cycles", "dram", "energy_joules")


def memory_bound(cycles: int, stall_cycles: int) -> bool:
    return stall_cycles * 2 >= cycles + 1


def choice_figures(record: dict) -> dict:
    """The figures a comparison shows, from a schedule record (`Schedule.report()`,
    `schedule_node` or `schedule_model`): DRAM traffic in elements, reads and writes."""
    dram = sum(record["dram_reads"].values()) + sum(record["dram_writes"].values())
    return {"cycles": record["cycles"], "stall_cycles": record["stall_cycles"],
            "compute_cycles": record["cycles"] - record["stall_cycles"],
            "dram": dram, "dram_reads": dict(record["dram_reads"]),
            "dram_writes": dict(record["dram_writes"]),
            "energy_joules": record["energy"]["total_joules"],
            "memory_bound": memory_bound(record["cycles"], record["stall_cycles"])}


def memory_of_record(record: dict) -> dict:
    """The memory configuration a schedule record ran with (`sram_kb`,
    `bandwidth_words_per_cycle`); a node of several GEMMs states it in each part."""
    return record["memory"] if "memory" in record else record["parts"][0]["report"]["memory"]


def compare_dataflows(record_of: Callable[[str], dict]) -> dict:
    """{"dataflows": {os|ws|is: figures}, "best": {figure: dataflow}}: `record_of(dataflow)`
    gives a schedule record of the same problem and memory under that dataflow."""
    rows = {dataflow: choice_figures(record_of(dataflow)) for dataflow in DATAFLOWS}
    best = {figure: min(DATAFLOWS, key=lambda d: (rows[d][figure], DATAFLOWS.index(d)))
            for figure in COMPARED}
    return {"dataflows": rows, "best": best}


def sweep_memory(schedule_of: Callable[[str, MemoryConfig], object], memory: MemoryConfig,
                 sram_kb: tuple[int, ...] = SWEEP_SRAM_KB,
                 bandwidth: tuple[int, ...] = SWEEP_BANDWIDTH) -> dict:
    """Cycles and stalls of each dataflow with every operand's SRAM at each size (the
    bandwidths as given), and with every interface at each bandwidth (the SRAMs as given).
    `schedule_of(dataflow, memory)` returns a `Schedule`.
    {"sram_kb": [...], "bandwidth": [...], "by_sram": {dataflow: [[cycles, stalls], ...]},
     "by_bandwidth": {...}, "memory": the configuration swept around}."""
    by_sram, by_bandwidth = {}, {}
    for dataflow in DATAFLOWS:
        by_sram[dataflow] = [_point(schedule_of(dataflow, memory.with_values(
            sram=dict.fromkeys(OPERANDS, size)))) for size in sram_kb]
        by_bandwidth[dataflow] = [_point(schedule_of(dataflow, memory.with_values(
            bandwidth=dict.fromkeys(OPERANDS, words)))) for words in bandwidth]
    return {"sram_kb": list(sram_kb), "bandwidth": list(bandwidth), "by_sram": by_sram,
            "by_bandwidth": by_bandwidth, "memory": memory.to_dict()}


def _point(schedule) -> list[int]:
    return [schedule.cycles, schedule.stall_cycles]


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


SWEEP_REPLAY_REQUESTS = 50_000   # a replay this small takes at most ~60 ms: 48 in ~3 s


def sweep_timing(schedule) -> str:
    """The timing model a sweep of this schedule can afford: its own, unless that is a
    SCALE-Sim replay too big to run 48 times while a person waits (then the overlap
    model's closed form)."""
    timeline, mapping = schedule.timeline, schedule.mapping
    if timeline.timing != "scalesim":
        return timeline.timing
    requests = schedule.folds * timeline.fold_alone * (mapping.rows + mapping.cols)
    return "scalesim" if requests <= SWEEP_REPLAY_REQUESTS else "overlap"


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
                                              already_sized=True,
                                              **{**options, "dataflow": dataflow})
        return records[dataflow]
    comparison = compare_dataflows(record_of)
    return SystolicStory(passes, record_of(options.get("dataflow", "os")), comparison)
