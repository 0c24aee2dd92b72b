"""The memory figures of a schedule, in the same keys under both timing models.

    cycles, stall_cycles, sram_reads {ifmap, filter}, sram_writes {ofmap},
    dram_reads {ifmap, filter}, dram_writes {ofmap}      (counts of elements)
    sram_cycles / dram_cycles {operand: [start, stop]}, memory {...}, energy {...}

timing="scalesim": SCALE-Sim 3.0.0's USER-mode figures, replayed exactly
(`scalesim_memory`), with its per-row stalls, refill arrivals and ofmap drains as events.
timing="overlap": GraphLab's double-buffered fold model (`timing`, `traffic`): whole tiles
move between folds on per-operand interfaces and a fold waits only for what its other half
SRAM could not prefetch during the previous fold. They differ on purpose: SCALE-Sim refills
fixed slices of an SRAM ring back to back and charges a late refill twice, while the overlap
model moves exactly the tiles a fold needs and hides them behind compute when they fit.
Per-fold records (`memory.folds`, overlap) and per-row events (scalesim) are capped at
RECORD_LIMIT entries for the step-through.
"""

from __future__ import annotations

from compiler_core.hardware.energy import get_table, layer_energy
from compiler_core.hardware.systolic.memory_config import GEMM_OPERAND, OPERANDS

RECORD_LIMIT = 512


def memory_figures(schedule) -> dict:
    run = schedule.memory_run
    if run is not None:
        figures = _scalesim_figures(run)
    else:
        figures = _overlap_figures(schedule)
    figures["energy"] = _energy(schedule, figures)
    return figures


def _scalesim_figures(run) -> dict:
    return {
        "cycles": run.cycles, "stall_cycles": run.stall_cycles,
        "sram_reads": run.sram_reads, "sram_writes": run.sram_writes,
        "dram_reads": run.dram_reads, "dram_writes": run.dram_writes,
        "sram_cycles": run.sram_cycles, "dram_cycles": run.dram_cycles,
        "memory_details": {
            "model": "scalesim",
            "cycles_with_prefetch": run.cycles_with_prefetch,
            "bandwidth_report": run.bandwidth_report(),
            "compute_utilization": run.compute_utilization,
            "refills": run.refills,
            "refill_arrivals": {k: v[:RECORD_LIMIT] for k, v in run.refill_arrivals.items()},
            "stall_rows": run.stall_rows[:RECORD_LIMIT],
            "drains": run.drains[:RECORD_LIMIT],
        },
    }


def _tile_sum(mapping, operand: str) -> int:
    return sum(mapping.tile_elements(operand, b.row_lo, b.group_lo) * b.size
               for b in mapping.fold_blocks)


def _overlap_figures(schedule) -> dict:
    mapping, timeline = schedule.mapping, schedule.timeline
    traffic = timeline.traffic
    size = traffic.element_bytes
    last = mapping.folds - 1
    read_stop = timeline.fold_begin(last)
    first_store = next((f for f in range(mapping.folds)
                        if traffic.store_bytes(*mapping.fold_position(f))), last)
    return {
        "cycles": schedule.cycles, "stall_cycles": schedule.stall_cycles,
        "sram_reads": {"ifmap": _tile_sum(mapping, "A"), "filter": _tile_sum(mapping, "B")},
        "sram_writes": {"ofmap": _tile_sum(mapping, "C")},
        "dram_reads": {o: round(traffic.operand_read_bytes(GEMM_OPERAND[o]) / size)
                       for o in ("ifmap", "filter")},
        "dram_writes": {"ofmap": round(traffic.dram_write_bytes / size)},
        "sram_cycles": {o: [timeline.preload, schedule.cycles] for o in OPERANDS},
        "dram_cycles": {
            "ifmap": [-traffic.initial_load_cycles, read_stop],
            "filter": [-traffic.initial_load_cycles, read_stop],
            "ofmap": [timeline.stream_start(first_store) + timeline.skew + timeline.stream,
                      schedule.cycles + traffic.final_store_cycles],
        },
        "memory_details": {
            "model": "overlap", "fits": traffic.fits,
            "double_buffered": traffic.double_buffered,
            "folds": [fold_record(schedule, f) for f in range(min(mapping.folds,
                                                                  RECORD_LIMIT))],
        },
    }


def fold_record(schedule, fold: int) -> dict:
    """One fold for the step-through: when it waits and starts, what its SRAM halves hold
    (bytes of the tile in use, bytes of the next fold's tile arriving) and what moves."""
    mapping, timeline = schedule.mapping, schedule.timeline
    traffic = timeline.traffic
    row_fold, col_fold = mapping.fold_position(fold)
    following = mapping.fold_position(fold + 1) if fold + 1 < mapping.folds else None
    halves = {}
    for operand, gemm in GEMM_OPERAND.items():
        in_use = traffic.tile_bytes(gemm, row_fold, col_fold)
        arriving = 0
        if following is not None and gemm != "C":
            arriving = traffic.operand_fetch_bytes(gemm, *following)
        halves[operand] = {"half_bytes": traffic.sram_bytes(gemm) // 2, "in_use": in_use,
                           "arriving": arriving}
    moved = traffic.window_bytes(row_fold, col_fold)
    return {"fold": fold, "begin": timeline.fold_begin(fold), "stall": timeline.stall(fold),
            "stream_start": timeline.stream_start(fold),
            "refill_bytes": {"ifmap": moved["A"], "filter": moved["B"]},
            "drain_bytes": moved["C"], "sram": halves}


def _energy(schedule, figures: dict) -> dict:
    table = get_table(schedule.target.energy_table)
    array = {"ifmap": figures["sram_reads"]["ifmap"], "filter": figures["sram_reads"]["filter"],
             "ofmap": figures["sram_writes"]["ofmap"]}
    dram = {"ifmap": figures["dram_reads"]["ifmap"], "filter": figures["dram_reads"]["filter"],
            "ofmap": figures["dram_writes"]["ofmap"]}
    seconds = (figures["cycles"] + 1) / schedule.target.clock_hz
    return layer_energy(table, macs=schedule.macs, dtype=schedule.dtype,
                        element_bytes=schedule.timeline.traffic.element_bytes,
                        sram_bytes={o: schedule.memory.sram_bytes(o) for o in OPERANDS},
                        array_accesses=array, dram_accesses=dram, seconds=seconds)
