"""The array's memory at one step of the step-through, and its DRAM traffic over the clock,
read from a schedule's records (the timing and event models are only read, never changed).

A step is (fold, local cycle) of the schedule's own timeline (`Timeline.fold_phases`).

timing="overlap": fold k's operands move in window k (`FoldTraffic.window_bytes`: A and B
its new tiles, C the previous fold's finished tile), each operand at its own bytes per cycle.
Window 0 is the first fill, before cycle 0. Window k >= 1 starts when the SRAM half it fills
is free: at fold k-1's stream start when every tile fits half its SRAM (double buffering,
so the window is hidden behind fold k-1's compute and fold k waits only for the rest), else
at fold k's own begin (nothing hidden: the array waits the whole window). Each SRAM's two
halves are then: the tile the array uses (its bytes still arriving during a stall) and the
next fold's tile arriving (for the ofmap: the previous fold's tile draining to DRAM).

timing="scalesim": SCALE-Sim's ring of SRAM sets has no halves to draw; a step reads the
replay's events: the compute row the step is (fold x fold length + cycle), the stalls of the
rows before it (so the wall clock), whether this row waits and for which operand, and the
refills arrived (their arrival cycles follow from the refill count: SCALE-Sim issues them
back to back) and drains finished by then. The report keeps the first RECORD_LIMIT stall
rows and drains; `complete` says whether that is all of them, `exact` whether the step lies
within them. Amounts are SCALE-Sim's words (an element is a word); the overlap model's bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from compiler_core.hardware.systolic.memory_config import GEMM_OPERAND, OPERANDS
from compiler_core.hardware.systolic.memory_report import fold_record

TRAFFIC_POINTS = 400      # folds sampled for the traffic chart (exact at each sampled fold)


def memory_step(schedule, fold: int, cycle: int) -> dict:
    """The memory at one step: {"model", "clock", "waiting", ...} (see the module doc)."""
    if schedule.memory_run is not None:
        return _scalesim_step(schedule, fold, cycle)
    return _overlap_step(schedule, fold, cycle)


def dram_traffic(schedule) -> dict:
    """What each operand has moved to or from DRAM by each clock cycle: {"model", "unit"
    ("bytes"; "words" under SCALE-Sim, whose word is an element), "clock": {operand:
    [cycles]}, "moved": {operand: [cumulative amounts]}, "waiting": [[start, stop]] (the
    array waiting for memory), "complete"}. The last point of each operand is its whole
    traffic."""
    if schedule.memory_run is not None:
        return _scalesim_traffic(schedule)
    return _overlap_traffic(schedule)


# ---- overlap -------------------------------------------------------------------------------

def _bytes_per_cycle(schedule, operand: str) -> float:
    return schedule.memory.words(operand) * schedule.memory.word_bytes


def _window_bytes(schedule, fold: int) -> dict[str, int]:
    """Bytes each operand moves in window `fold` (window 0: the first fill)."""
    traffic, mapping = schedule.timeline.traffic, schedule.mapping
    if fold == 0:
        return {"ifmap": traffic.operand_fetch_bytes("A", 0, 0),
                "filter": traffic.operand_fetch_bytes("B", 0, 0), "ofmap": 0}
    moved = traffic.window_bytes(*mapping.fold_position(fold))
    return {operand: moved[gemm] for operand, gemm in GEMM_OPERAND.items()}


def window_start(schedule, fold: int) -> int:
    """Clock cycle at which window `fold` starts moving."""
    timeline = schedule.timeline
    if fold == 0:
        return -timeline.traffic.initial_load_cycles
    if timeline.traffic.double_buffered:
        return timeline.stream_start(fold - 1)
    return timeline.fold_begin(fold)


def _moved(schedule, fold: int, operand: str, clock: int) -> int:
    """Bytes of window `fold` this operand has moved by `clock`."""
    total = _window_bytes(schedule, fold)[operand]
    done = max(0, clock - window_start(schedule, fold)) * _bytes_per_cycle(schedule, operand)
    return int(min(total, done))


def _overlap_step(schedule, fold: int, cycle: int) -> dict:
    timeline = schedule.timeline
    clock = timeline.fold_begin(fold) + cycle
    record = fold_record(schedule, fold)
    has_next = fold + 1 < schedule.folds
    own = _window_bytes(schedule, fold)
    following = _window_bytes(schedule, fold + 1) if has_next else dict.fromkeys(OPERANDS, 0)
    sram = {}
    for operand in OPERANDS:
        half = record["sram"][operand]
        if operand == "ofmap":   # the tile being written; the previous fold's, draining
            other = {"role": "draining", "bytes": own["ofmap"],
                     "done": _moved(schedule, fold, "ofmap", clock)}
            in_use = {"bytes": half["in_use"], "ready": half["in_use"]}
        else:   # the tile in use (part of it may still arrive); the next fold's arriving
            missing = own[operand] - _moved(schedule, fold, operand, clock)
            in_use = {"bytes": half["in_use"], "ready": half["in_use"] - missing}
            other = {"role": "arriving", "bytes": following[operand],
                     "done": _moved(schedule, fold + 1, operand, clock) if has_next else 0}
        sram[operand] = {"half_bytes": half["half_bytes"], "in_use": in_use, "other": other,
                         "bytes_per_cycle": _bytes_per_cycle(schedule, operand)}
    stall = timeline.stall(fold)
    return {"model": "overlap", "clock": clock, "fold": fold, "cycle": cycle,
            "waiting": cycle < stall, "stall": stall, "stall_left": max(0, stall - cycle),
            "stalled_before": timeline.stalls_before(fold) + min(cycle, stall),
            "stall_cycles": timeline.stall_cycles, "exact": True,
            "double_buffered": timeline.traffic.double_buffered,
            "fits": timeline.traffic.fits, "sram": sram,
            "dram": {o: overlap_moved_by(schedule, o, clock) for o in OPERANDS},
            "unit": "bytes"}


def _done_before(schedule, operand: str, fold: int) -> int:
    """Bytes this operand moved in windows 0 .. fold - 1 (one term per block of folds)."""
    blocks = schedule.mapping.fold_blocks
    total = _window_bytes(schedule, 0)[operand] if fold > 0 else 0
    for block in blocks:
        if block.first_fold == 0:
            continue   # window 0 is the first fill, counted above
        total += _window_bytes(schedule, block.first_fold)[operand] * block.count_before(fold)
    return total


def _latest_window(schedule, clock: int) -> int:
    """The last window begun by `clock` (windows start in fold order)."""
    low, high = 0, schedule.folds - 1
    while low < high:
        middle = (low + high + 1) // 2
        if window_start(schedule, middle) <= clock:
            low = middle
        else:
            high = middle - 1
    return low


def overlap_moved_by(schedule, operand: str, clock: int) -> int:
    """Bytes this operand moved to or from DRAM by `clock` (every earlier window is over
    when the next begins)."""
    window = _latest_window(schedule, clock)
    return _done_before(schedule, operand, window) + _moved(schedule, window, operand, clock)


def sampled(count: int, limit: int = TRAFFIC_POINTS) -> list[int]:
    """0 .. count - 1 when at most `limit`, else `limit` of them spread evenly (first and
    last included): the folds or refills a traffic line is drawn through."""
    if count <= limit:
        return list(range(count))
    return sorted({round(i * (count - 1) / (limit - 1)) for i in range(limit)})


def _overlap_traffic(schedule) -> dict:
    timeline = schedule.timeline
    folds = sampled(schedule.folds)
    clock = {o: [] for o in OPERANDS}
    moved = {o: [] for o in OPERANDS}
    for fold in folds:
        start = window_start(schedule, fold)
        sizes = _window_bytes(schedule, fold)
        for operand in OPERANDS:
            before = _done_before(schedule, operand, fold)
            rate = _bytes_per_cycle(schedule, operand)
            clock[operand] += [start, start + math.ceil(sizes[operand] / rate)]
            moved[operand] += [before, before + sizes[operand]]
    last = schedule.folds - 1
    store = timeline.traffic.final_store_cycles
    final = _done_before(schedule, "ofmap", schedule.folds)
    final_store = timeline.traffic.store_bytes(*schedule.mapping.fold_position(last))
    clock["ofmap"] += [schedule.cycles, schedule.cycles + store]
    moved["ofmap"] += [final, final + final_store]
    waiting = [[timeline.fold_begin(f), timeline.fold_begin(f) + timeline.stall(f)]
               for f in folds if timeline.stall(f)]
    return {"model": "overlap", "unit": "bytes", "clock": clock, "moved": moved,
            "waiting": waiting, "complete": len(folds) == schedule.folds}


# ---- SCALE-Sim -----------------------------------------------------------------------------

def _events_complete(memory: dict) -> bool:
    """Whether the report kept every stall row and drain (it keeps RECORD_LIMIT of each)."""
    from compiler_core.hardware.systolic.memory_report import RECORD_LIMIT

    return all(len(memory[key]) < RECORD_LIMIT for key in ("stall_rows", "drains"))


@dataclass(frozen=True)
class _Refills:
    """One read SRAM's DRAM traffic in SCALE-Sim: a first fill of `first` words over the
    `first_lines` cycles before cycle 0, then `count` refills of `size` words, refill r
    arriving at -1 + r * (lines + 1) (issued back to back), each over the `lines` cycles
    before it."""

    first_lines: int
    first: int
    count: int
    size: int
    lines: int

    def arrival(self, refill: int) -> int:
        return -1 + refill * (self.lines + 1)

    def arrived_by(self, clock: int) -> int:
        return max(0, min(self.count, (clock + 1) // (self.lines + 1)))


def _refills(schedule, report: dict, operand: str) -> _Refills:
    bandwidth = schedule.memory.words(operand)
    first_lines = -report["dram_cycles"][operand][0]
    count = report["memory"]["refills"][operand]
    first = first_lines * bandwidth
    size = (report["dram_reads"][operand] - first) // count if count else 0
    return _Refills(first_lines, first, count, size, size // bandwidth)


def _scalesim_step(schedule, fold: int, cycle: int) -> dict:
    report = schedule.report()
    memory = report["memory"]
    rows = memory["stall_rows"]
    row = schedule.timeline.fold_begin(fold) + cycle
    before = sum(stall for r, _, stall, _ in rows if r < row)
    here = next(((stall, cause) for r, _, stall, cause in rows if r == row), (0, None))
    clock = row + before
    refills = {}
    for operand in ("ifmap", "filter"):
        read = _refills(schedule, report, operand)
        refills[operand] = {"arrived": read.arrived_by(clock), "total": read.count}
    drains = memory["drains"]
    traffic = _scalesim_traffic(schedule, report)
    complete = _events_complete(memory)
    return {"model": "scalesim", "clock": clock, "fold": fold, "cycle": cycle, "row": row,
            "waiting": here[0] > 0, "stall": here[0], "cause": here[1],
            "stalled_before": before, "stall_cycles": schedule.stall_cycles,
            # past the last kept stall row, more rows may have waited than are known
            "exact": complete or bool(rows) and row <= rows[-1][0],
            "refills": refills,
            "drains": {"done": sum(1 for _, stop, _ in drains if stop <= clock),
                       "total": len(drains)},
            "dram": {o: _value_at(traffic["clock"][o], traffic["moved"][o], clock)
                     for o in OPERANDS}, "unit": traffic["unit"], "complete": complete}


def _value_at(clocks: list[int], values: list[int], clock: int) -> int:
    """The cumulative series' value at `clock` (linear between its points)."""
    if not clocks or clock < clocks[0]:
        return 0
    for (c0, v0), (c1, v1) in zip(zip(clocks, values), zip(clocks[1:], values[1:])):
        if c0 <= clock <= c1:
            return v0 if c1 == c0 else int(v0 + (v1 - v0) * (clock - c0) / (c1 - c0))
    return values[-1]


def _scalesim_traffic(schedule, report: dict | None = None) -> dict:
    """Words moved, as SCALE-Sim counts them (an element is a word): the read refills from
    their closed form (every one, sampled to TRAFFIC_POINTS), the ofmap drains from the kept
    events (when the report kept only the first ones, a last segment joins them to the
    total at the last drain's end)."""
    report = report or schedule.report()
    memory = report["memory"]
    clock, moved = {}, {}
    for operand in ("ifmap", "filter"):
        read = _refills(schedule, report, operand)
        clock[operand], moved[operand] = [-read.first_lines, 0], [0, read.first]
        for refill in sampled(read.count + 1)[1:]:
            arrival = read.arrival(refill)
            clock[operand] += [arrival - read.lines, arrival]
            moved[operand] += [read.first + (refill - 1) * read.size,
                               read.first + refill * read.size]
    clock["ofmap"], moved["ofmap"], total = [], [], 0
    for start, stop, words in memory["drains"]:
        clock["ofmap"] += [start, stop]
        moved["ofmap"] += [total, total + words]
        total += words
    written = report["dram_writes"]["ofmap"]
    if total < written:
        clock["ofmap"].append(report["dram_cycles"]["ofmap"][1])
        moved["ofmap"].append(written)
    waiting = [[cycle, cycle + stall] for _, cycle, stall, _ in memory["stall_rows"]]
    return {"model": "scalesim", "unit": "words", "clock": clock, "moved": moved,
            "waiting": waiting, "complete": _events_complete(memory)}
