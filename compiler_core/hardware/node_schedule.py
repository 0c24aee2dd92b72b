"""Schedule a graph node on a systolic array: its GEMMs (see `gemm_shapes`) as one record.

A node whose GEMM the simulator runs once (a MatMul with shared weights, a Conv) gets the
simulator's own report. A node with several GEMMs (a grouped or depthwise Conv, a batched
MatMul, a fused node with two matrix products) runs them back to back with nothing overlapped
between them, so its totals add up: cycles + 1 = sum of each run's cycles + 1, and so on; the
per-GEMM reports are kept under ``parts``.
"""

from __future__ import annotations

from ..errors import GraphLabError
from ..ir import Graph
from ..records import to_json
from .cost import compute_dtype
from .gemm_shapes import GemmProblem, gemm_problems, has_gemm
from .systolic import Schedule, ScheduleError, schedule_conv, schedule_gemm
from .targets import get_target

LISTED_NODES = 5


def schedule_problem(problem: GemmProblem, **options) -> Schedule:
    """One instance of the problem; the conv form when it is exact (its report says so)."""
    conv = problem.conv
    if conv is not None:
        return schedule_conv(conv.H, conv.W, conv.FH, conv.FW, conv.C, conv.N, conv.S,
                             **options)
    return schedule_gemm(problem.M, problem.N, problem.K, **options)


def schedule_node(graph: Graph, name: str, *, bindings: dict[str, int] | None = None,
                  rows: int | None = None, cols: int | None = None, dataflow: str = "os",
                  timing: str = "overlap", target=None, memory=None) -> dict:
    """The schedule record of node ``name`` of a sized graph (keys: the simulator's report,
    plus node, op_type and parts); a clear error when the node does not exist or has no
    GEMM."""
    node = graph.node_by_name(name)
    candidates = [n.name for n in graph.nodes if has_gemm(n)]
    if node is None:
        raise GraphLabError(f"the model has no node named {name!r}", where=name,
                            hint=_listing(candidates))
    if not has_gemm(node):
        raise ScheduleError(f"node {name!r} ({node.qualified_op}) has no matrix multiply or "
                            f"convolution to put on the array", where=name,
                            hint=_listing(candidates))
    options = {"rows": rows, "cols": cols, "dataflow": dataflow, "timing": timing,
               "target": get_target(target), "dtype": compute_dtype(node), "memory": memory}
    runs = [(problem, schedule_problem(problem, **options))
            for problem in gemm_problems(node, bindings)]
    parts = [{**to_json(problem), "report": schedule.report()} for problem, schedule in runs]
    if len(runs) == 1 and runs[0][0].instances == 1:
        summary = parts[0]["report"]
    else:
        summary = _back_to_back(runs)
    return {**summary, "node": node.name, "op_type": node.qualified_op, "parts": parts}


def _listing(names: list[str]) -> str:
    if not names:
        return "this model has no MatMul, Gemm or Conv node"
    shown = ", ".join(names[:LISTED_NODES])
    more = f" and {len(names) - LISTED_NODES} more" if len(names) > LISTED_NODES else ""
    return f"nodes with a GEMM: {shown}{more}"


def _back_to_back(runs: list[tuple[GemmProblem, Schedule]]) -> dict:
    """Totals of running every instance of every GEMM one after another."""
    first = runs[0][1]
    rows, cols = first.mapping.rows, first.mapping.cols
    busy = sum(p.instances * (s.cycles + 1) for p, s in runs)
    folds = sum(p.instances * s.folds for p, s in runs)
    macs = sum(p.instances * s.macs for p, s in runs)
    per_fold: dict[int, int] = {}
    phases: dict[str, int] = {}
    for problem, schedule in runs:
        report = schedule.report()
        for cycles, count in report["cycles_per_fold"]:
            per_fold[cycles] = per_fold.get(cycles, 0) + problem.instances * count
        for phase, cycles in report["phases"].items():
            phases[phase] = phases.get(phase, 0) + problem.instances * cycles
    return {
        "cycles": busy - 1,
        "folds": folds,
        "cycles_per_fold": [[cycles, per_fold[cycles]] for cycles in sorted(per_fold)],
        "cycles_per_fold_form": "histogram",
        "mapping_efficiency": sum(p.instances * s.folds * s.mapping_efficiency
                                  for p, s in runs) / folds,
        "utilization": macs / (busy * rows * cols),
        "stall_cycles": sum(p.instances * s.stall_cycles for p, s in runs),
        "dataflow": first.mapping.dataflow,
        "array": f"{rows}x{cols}",
        "timing": first.timeline.timing,
        "macs": macs,
        "phases": phases,
        "target": first.target.name,
        "dtype": first.dtype,
        "seconds": busy / first.target.clock_hz,
        "instances": sum(p.instances for p, _ in runs),
        **sum_memory([(p.instances, s.report()) for p, s in runs], busy, first.target.clock_hz),
    }


MEMORY_COUNTS = ("sram_reads", "sram_writes", "dram_reads", "dram_writes")


def sum_memory(weighted: list[tuple[int, dict]], busy: int, clock_hz: float) -> dict:
    """Memory counts and energy of records run back to back (each `weight` times)."""
    totals = {key: {} for key in MEMORY_COUNTS}
    joules: dict[str, float] = {}
    for weight, record in weighted:
        for key in MEMORY_COUNTS:
            for operand, count in record[key].items():
                totals[key][operand] = totals[key].get(operand, 0) + weight * count
        for level, value in record["energy"]["joules"].items():
            joules[level] = joules.get(level, 0.0) + weight * value
    total = sum(joules.values())
    table = weighted[0][1]["energy"]["table"] if weighted else None
    return {**totals, "energy": {"table": table, "joules": joules, "total_joules": total,
                                 "energy_delay_product": total * busy / clock_hz}}


def schedule_model(graph: Graph, *, bindings: dict[str, int] | None = None, **options) -> dict:
    """Every GEMM and convolution of the graph on the array, one after another: totals
    (cycles, stalls, memory counts, energy) and one line per node; ``graph`` is sized."""
    nodes = []
    for node in graph.nodes:
        if not has_gemm(node):
            continue
        record = schedule_node(graph, node.name, bindings=bindings, **options)
        nodes.append(record)
    if not nodes:
        raise ScheduleError("the model has no MatMul, Gemm or Conv to put on the array",
                            hint="pick a model with matrix products or convolutions")
    first = nodes[0]
    busy = sum(r["cycles"] + 1 for r in nodes)
    clock = get_target(options.get("target")).clock_hz
    return {
        "cycles": busy - 1, "stall_cycles": sum(r["stall_cycles"] for r in nodes),
        "macs": sum(r["macs"] for r in nodes), "seconds": busy / clock,
        "dataflow": first["dataflow"], "array": first["array"], "timing": first["timing"],
        "target": first["target"],
        **sum_memory([(1, r) for r in nodes], busy, clock),
        "nodes": [{key: r[key] for key in ("node", "op_type", "cycles", "stall_cycles",
                                           "macs", *MEMORY_COUNTS)}
                  | {"energy_joules": r["energy"]["total_joules"]} for r in nodes],
    }
