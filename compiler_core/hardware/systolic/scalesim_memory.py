"""SCALE-Sim 3.0.0's memory system (USER bandwidth mode) replayed as events, figure for figure.

SCALE-Sim walks every request of every cycle through three buffers
(`scalesim/memory/read_buffer.py`, `write_buffer.py`, `double_buffered_scratchpad_mem.py`).
Its behaviour, which this module reproduces with its quirks:

Read SRAM (ifmap, filter): a window of sets on a ring over the operand's fill order, moved
one refill at a time when a request misses (`scalesim_read_sram` finds which cycle rows miss
and how many refills each waits for, without visiting the requests that hit).
Time: the first fill happens before cycle 0; refill number r arrives at cycle
L_r = -1 + r * (ceil(T/2 / bw) + 1), whenever it is asked for (refills are issued back to
back, not when needed). A request row served at cycle c starts at a = c + 1 and, for each
refill, moves to a = L + max(0, L - a) (twice the wait when the refill is late; back to L when
it was early). The row's stall is a - c - 1.
Write SRAM (ofmap). Free space starts at T; each write takes a word. When fewer than T/2 words
are free and no drain is running, a drain of ceil(T/2 / bw) lines of bw words starts at once
and frees its words at once; while a drain runs, a write that finds no free word waits for it
to end. Lines are bw writes long, and a drain closes the line being filled.
The array. Row i runs at cycle c_i = i + (stalls so far); each row adds the largest of the
three stalls. "Total Cycles" is the last row's ofmap cycle; after it the write SRAM drains
what is left, line group after line group.
DRAM reads count whole lines (bw words each), padding included; writes count words.

Only rows where something happens are visited: the rows that miss, the rows whose writes
start a drain or wait for one (found by counting writes), and the rows the report needs.
A row's refills take a closed form (after the first, the service's excess over the arrival
alternates between e and D - e), and so does the write in a row that drains or waits.
`tests/test_systolic_read_sram.py` checks all of it against a row-by-row walk.
"""

from __future__ import annotations

import math
from itertools import accumulate
from dataclasses import dataclass


from compiler_core.hardware.systolic.memory_config import MemoryConfig
from compiler_core.hardware.systolic.scalesim_read_sram import ReadSram, row_refills
from compiler_core.hardware.systolic.scalesim_streams import LayerStreams, OfmapWrites

EVENT_LIMIT = 2000   # per-row events kept for the step-through; the figures use them all


class _ReadState:
    """A read SRAM's refills: `waits`, cycle row -> (arrival of its first refill, of its
    last, how many, D) for the rows that miss; `done`, the operand's refill count. Refill r
    arrives at L_r, D = refill_lines + 1 apart, whenever it is asked for, so each row's
    arrivals are known before the replay starts."""

    __slots__ = ("sram", "waits", "done")

    def __init__(self, sram: ReadSram, rows: list, refills: list):
        self.sram, self.waits = sram, {}
        period, done = sram.refill_lines + 1, 0
        for row, count in zip(rows, refills):
            first = done * period + period - 1
            done += count
            self.waits[row] = (first, done * period - 1, count, period)
        self.done = done

    def arrivals(self) -> list[int]:
        """The arrival cycles of the refills kept for the step-through, L_1, L_2, ...: the
        rows' refills, row by row, until they reach EVENT_LIMIT."""
        kept = self.done
        if kept >= EVENT_LIMIT:
            kept = next(total for total in accumulate(count for _, _, count, _
                                                      in self.waits.values())
                        if total >= EVENT_LIMIT)
        period = self.sram.refill_lines + 1
        return list(range(period - 1, kept * period, period))


def _read_wait(refills: tuple, cycle: int) -> int:
    """How long a row at `cycle` waits for its refills (negative: it does not). Each
    refill moves the service a to L + max(0, L - a), so after the first the excess over
    the arrival alternates between e and D - e: a closed form in the refill count."""
    first, last, count, period = refills
    excess = first - cycle - 1
    if excess < 0:
        excess = 0
    if count == 1:
        return first + excess - cycle - 1
    second = period - excess if excess < period else 0
    return last + (second if count % 2 == 0 else period - second) - cycle - 1


class _WriteState:
    """The ofmap SRAM between events. Lines are counted only when a drain closes one: the
    writes since the last drain fill (consumed - aligned) // bandwidth whole lines after the
    `closed` lines counted then, and a line left part-filled is closed by the drain."""

    __slots__ = ("words", "bandwidth", "writes", "active", "drain_lines", "free", "drain_end",
                 "consumed", "aligned", "closed", "partial", "drained_lines", "written",
                 "first_drain", "last_drain", "drains")

    def __init__(self, words: int, bandwidth: int, writes: OfmapWrites):
        self.words, self.bandwidth, self.writes = words, bandwidth, writes
        self.active = math.ceil(words * 0.5)
        self.drain_lines = math.ceil((words - self.active) / bandwidth)
        self.free = words
        self.drain_end = self.consumed = self.aligned = self.closed = 0
        self.partial: dict = {}
        self.drained_lines = self.written = 0
        self.first_drain, self.last_drain = math.inf, -math.inf
        self.drains: list = []

    def take_until(self, row: int) -> None:
        """Writes of the rows before `row`, none of which starts or waits for a drain."""
        consumed = self.writes.before(row)
        self.free -= consumed - self.consumed
        self.consumed = consumed

    def pending(self) -> bool:
        """Whether words written are still to drain (a line being filled or not drained)."""
        return self.consumed > self.aligned or self.drained_lines < self.closed

    def drain(self, cycle: int) -> int:
        bandwidth = self.bandwidth
        fill = self.consumed - self.aligned
        lines = fill // bandwidth
        fill -= lines * bandwidth
        closed = self.closed + lines
        if fill:
            self.partial[closed] = fill
            closed += 1
        self.closed, self.aligned = closed, self.consumed
        end = self.drained_lines + self.drain_lines
        if end > closed:
            end = closed
        lines = end - self.drained_lines
        words = lines * bandwidth - (bandwidth - self.partial.get(end - 1, bandwidth))
        self.written += words
        self.free += words
        self.drained_lines = end
        stop = cycle + lines - 1
        if cycle < self.first_drain:
            self.first_drain = cycle
        if stop > self.last_drain:
            self.last_drain = stop
        if len(self.drains) < EVENT_LIMIT:
            self.drains.append([cycle, stop, words])
        return stop

    def next_row(self, stalls: int) -> float:
        """The first row whose writes start a drain or wait for one, were nothing to change
        the stall count before it."""
        writes, consumed = self.writes, self.consumed
        total = writes.total
        if consumed >= total:
            return math.inf
        waits = consumed + self.free - 1
        if waits < consumed:
            waits = consumed
        if waits < total:
            row = writes.row_of(waits)
            if row + stalls < self.drain_end:
                return row
        boundary = self.drain_end - stalls   # clamped by conditionals, not min/max: hot
        if boundary < 0:
            boundary = 0
        elif boundary > writes.total_rows:
            boundary = writes.total_rows
        starts = consumed + self.free - self.active
        if starts < consumed:
            starts = consumed
        before = writes.before(boundary)
        if before > starts:
            starts = before
        return writes.row_of(starts) if starts < total else math.inf

    def serve(self, row: int, cycle: int) -> int:
        """The row's writes; returns the cycle its last write is taken. Only two writes
        matter, found by counting: during a drain, the one that leaves no word free (it
        waits for the drain's end); otherwise the one that leaves less than half the SRAM
        free (it starts a drain)."""
        before, left = self.writes.before_and_at(row)
        free = self.free - (before - self.consumed)
        self.consumed = before
        current = cycle
        while left:
            draining = current < self.drain_end
            take = free if draining else free - self.active + 1
            if take < 1:
                take = 1
            if take > left:
                free -= left
                self.consumed += left
                break
            free -= take
            self.consumed += take
            left -= take
            if draining:
                current = self.drain_end
            else:
                self.free = free
                self.drain_end = self.drain(current)
                free = self.free
        self.free = free
        return current


@dataclass(slots=True)   # not frozen: made on every replay, and frozen fields cost 4x to set
class MemoryRun:
    """SCALE-Sim's report figures for one layer, and the events behind them."""

    cycles: int
    cycles_with_prefetch: int
    stall_cycles: int
    sram_reads: dict
    sram_writes: dict
    dram_reads: dict
    dram_writes: dict
    sram_cycles: dict           # operand -> [start, stop] of the array's requests
    dram_cycles: dict           # operand -> [start, stop] of the DRAM traffic
    refills: dict               # operand -> refill count
    stall_rows: list            # [row, cycle, stall, cause] of rows that waited (capped)
    drains: list                # [start, stop, words] of ofmap drains (capped)
    refill_arrivals: dict       # operand -> arrival cycles (capped)
    compute_utilization: float

    def bandwidth_report(self) -> dict:
        """SCALE-Sim's BANDWIDTH_REPORT: average words per cycle."""
        def dram(operand, count):
            start, stop = self.dram_cycles[operand]
            return count / (stop - start + 1)
        return {
            "ifmap_sram": self.sram_reads["ifmap"] / self.cycles,
            "filter_sram": self.sram_reads["filter"] / self.cycles,
            "ofmap_sram": self.sram_writes["ofmap"] / self.cycles,
            "ifmap_dram": dram("ifmap", self.dram_reads["ifmap"]),
            "filter_dram": dram("filter", self.dram_reads["filter"]),
            "ofmap_dram": dram("ofmap", self.dram_writes["ofmap"]),
        }


def replay(streams: LayerStreams, memory: MemoryConfig) -> MemoryRun:
    """Run SCALE-Sim's memory model on a layer's streams (see the module docstring)."""
    readers = {}
    for operand, read in (("ifmap", streams.ifmap), ("filter", streams.filter)):
        sram = ReadSram.build(memory.sram(operand), memory.words(operand), read)
        readers[operand] = _ReadState(sram, *row_refills(read, sram, streams.fold_rows))
    ifmap_waits, filter_waits = readers["ifmap"].waits, readers["filter"].waits
    writer = _WriteState(1024 * memory.sram("ofmap"), memory.words("ofmap"),
                         streams.ofmap_writes)
    watched = _first_last_rows(streams)
    last_row = streams.total_rows - 1
    forced = {last_row, *(r for pair in watched.values() for r in pair)}
    # the rows that miss and the rows the report needs; the writer adds its own
    events = sorted(forced.union(ifmap_waits, filter_waits))
    inf = math.inf
    events.append(inf)                  # past the last row: the loop's end

    # the writer's next drain or wait holds until it acts or the stalls change during a
    # drain; the rows before it only take their writes, counted when the writer next acts
    stalls, served_at, stall_rows = 0, {}, []
    index = 0
    write_row = writer.next_row(stalls)
    while True:
        read_row = events[index]
        if read_row < write_row:            # the commonest case first: a row that misses
            row, index = read_row, index + 1
        elif write_row == inf:              # both past the last row
            break
        else:
            row = write_row
            if read_row == row:
                index += 1
        cycle = row + stalls
        refills = ifmap_waits.get(row)
        ifmap_wait = _read_wait(refills, cycle) if refills else 0
        refills = filter_waits.get(row)
        filter_wait = _read_wait(refills, cycle) if refills else 0
        refresh = row == write_row        # the writer drains or waits in this row
        written = writer.serve(row, cycle) if refresh else cycle
        if row in forced:
            served_at[row] = (ifmap_wait + cycle + 1, filter_wait + cycle + 1, written)
        stall = written - cycle           # conditionals, not max: cheaper in a hot loop
        if ifmap_wait > stall:
            stall = ifmap_wait
        if filter_wait > stall:
            stall = filter_wait
        if stall > 0:
            if len(stall_rows) < EVENT_LIMIT:
                cause = ("ifmap" if stall == ifmap_wait else "filter" if stall == filter_wait
                         else "ofmap")
                stall_rows.append([row, cycle, stall, cause])
            stalls += stall
            # later rows run later: that matters to the writer only while a drain runs
            if not refresh and writer.drain_end > cycle:
                writer.take_until(row + 1)
                refresh = True
        if refresh:
            write_row = writer.next_row(stalls)
    last_served = served_at[last_row][2]
    writer.take_until(streams.total_rows)
    if writer.pending():
        cycle = last_served
        while writer.pending():
            writer.drain_end = writer.drain(cycle)
            cycle = writer.drain_end + 1

    dram_cycles = {}
    dram_reads = {}
    for operand, reader in readers.items():
        sram = reader.sram
        dram_reads[operand] = (sram.first_fill_lines + reader.done * sram.refill_lines) \
            * sram.bandwidth
        dram_cycles[operand] = [-sram.first_fill_lines, sram.refill_arrival(reader.done)]
    dram_cycles["ofmap"] = [int(writer.first_drain), int(writer.last_drain)]
    sram_cycles = {operand: [served_at[first][slot], served_at[last][slot]]
                   for slot, (operand, (first, last)) in enumerate(watched.items())}
    return MemoryRun(
        cycles=int(last_served),
        cycles_with_prefetch=int(writer.last_drain - min(dram_cycles["ifmap"][0],
                                                         dram_cycles["filter"][0])),
        stall_cycles=int(stalls),
        sram_reads=dict(streams.sram_reads), sram_writes=dict(streams.sram_writes),
        dram_reads=dram_reads, dram_writes={"ofmap": int(writer.written)},
        sram_cycles=sram_cycles, dram_cycles=dram_cycles,
        refills={operand: reader.done for operand, reader in readers.items()},
        stall_rows=stall_rows, drains=writer.drains,
        refill_arrivals={operand: reader.arrivals() for operand, reader in readers.items()},
        compute_utilization=streams.compute_utilization)


def _first_last_rows(streams: LayerStreams) -> dict:
    """Each operand's first and last cycle row with a request (SRAM start and stop)."""
    return {"ifmap": streams.ifmap.first_last, "filter": streams.filter.first_last,
            "ofmap": streams.ofmap_writes.first_last}
