"""The JSON-able summary of a schedule: what `graphlab schedule` prints.

Keys: cycles, folds, cycles_per_fold, cycles_per_fold_form, mapping_efficiency, utilization,
stall_cycles, dataflow, array ("RxC"), timing, gemm {M, N, K}, macs, phases, plus target,
dtype, seconds, fold_grid, memory and (for a convolution) conv; and the memory figures of
`memory_report` (sram_reads, sram_writes, dram_reads, dram_writes, their start and stop
cycles, energy).

`cycles_per_fold` is a list of [cycles, count] pairs. With `cycles_per_fold_form` "runs" they
are run-lengths in fold order (expand them to get every fold's cycles; the counts sum to
`folds`); when that would take more than RUNS_LIMIT pairs the form is "histogram": distinct
values with how many folds have each, sorted by cycles. Either way the pairs' cycles x count
sum to cycles + 1. `phases` holds preload, fill, stream, drain, stall and overlapped, with
preload + fill + stream + drain + stall - overlapped = cycles + 1. `utilization` is
macs / ((cycles + 1) x R x C): `cycles` numbers the last busy cycle, so cycles + 1 of them.
"""

from __future__ import annotations

from dataclasses import fields

from compiler_core.hardware.systolic.memory_report import memory_figures

RUNS_LIMIT = 256


def build_report(schedule) -> dict:
    mapping, timeline, run = schedule.mapping, schedule.timeline, schedule.memory_run
    cycles, stall_cycles = schedule.cycles, schedule.stall_cycles   # each read once
    form, per_fold = timeline.cycles_per_fold(RUNS_LIMIT)
    utilization = schedule.macs / ((cycles + 1) * mapping.rows * mapping.cols)
    report = {
        "cycles": cycles,
        "folds": mapping.folds,
        "cycles_per_fold": per_fold,
        "cycles_per_fold_form": form,
        "mapping_efficiency": mapping.mapping_efficiency,
        "utilization": utilization,
        "stall_cycles": stall_cycles,
        "dataflow": mapping.dataflow,
        "array": f"{mapping.rows}x{mapping.cols}",
        "timing": timeline.timing,
        "gemm": {"M": mapping.gemm.M, "N": mapping.gemm.N, "K": mapping.gemm.K},
        "macs": schedule.macs,
        "phases": _phases(timeline, run, cycles, stall_cycles),
        "target": schedule.target.name,
        "dtype": schedule.dtype,
        "seconds": (cycles + 1) / schedule.target.clock_hz,
        "fold_grid": {
            "row_folds": mapping.row_folds, "col_folds": mapping.col_folds,
            "rows_dim": mapping.row_dim, "cols_dim": mapping.col_dim,
            "stream_dim": mapping.stream_dim, "stationary": mapping.stationary_operand,
            "preload": timeline.preload, "skew": timeline.skew, "stream": timeline.stream,
            "period": timeline.period,
        },
    }
    figures = memory_figures(schedule)
    details = figures.pop("memory_details")
    report.update(figures)
    report["memory"] = {**timeline.traffic.summary(), **details, "replayed": run is not None}
    if schedule.conv is not None:
        conv = schedule.conv
        report["conv"] = {**{f.name: getattr(conv, f.name) for f in fields(conv)},
                          "OH": conv.OH, "OW": conv.OW}
    return report


def _phases(timeline, run, cycles: int, stall_cycles: int) -> dict:
    """The timeline's phase totals; under a replayed memory, SCALE-Sim's stalls (per cycle
    row, not per fold) and what that leaves overlapped."""
    phases = timeline.phase_totals()
    if run is not None:
        phases["stall"] = stall_cycles
        phases["overlapped"] = 0
        phases["overlapped"] = sum(phases.values()) - (cycles + 1)
    return phases
