"""Which dataflow, how much SRAM, how much bandwidth: a layer's schedule compared across the
three dataflows and swept over SRAM sizes and DRAM bandwidths, and a whole model's GEMMs and
convolutions summed (`schedule_model`); summed pass by pass, and the report's figures, in
`compilation.pass_schedules` (they size a pipeline's graphs, which runs passes).

A layer is *memory-bound on the array* when it waits for memory for at least half its cycles
(`stall_cycles >= (cycles + 1) / 2`). The sweep keeps the figures a chart needs (cycles and
stalls), read from the schedule's properties, so 48 schedules cost milliseconds under the
overlap model; under SCALE-Sim's each is a replay of its memory.
"""

from __future__ import annotations

from collections.abc import Callable

from ..records import to_json
from .systolic import DATAFLOWS
from .systolic.memory_config import OPERANDS, MemoryConfig

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
            "by_bandwidth": by_bandwidth, "memory": to_json(memory)}


def _point(schedule) -> list[int]:
    return [schedule.cycles, schedule.stall_cycles]


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
