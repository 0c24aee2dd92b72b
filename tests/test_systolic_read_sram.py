"""The fast SCALE-Sim memory replay against the straightforward one, on random small layers.

`scalesim_read_sram.row_refills` finds the read SRAM's misses by binary searches along runs
of rising prefetch sets, and `scalesim_memory.replay` visits only the rows where something
happens, with closed forms for a row's refills and the ofmap writer's drains. Here the same
model is walked the plain way: every request checked against the window, every row of the
layer, every refill and every ofmap write one at a time. Both must agree on every figure
and every event record.
"""

from __future__ import annotations

import json
import math
import random
from bisect import bisect_left
from collections import Counter
from dataclasses import asdict

import pytest

from compiler_core.hardware.systolic import schedule_conv, schedule_gemm
from compiler_core.hardware.systolic.memory_config import MemoryConfig
from compiler_core.hardware.systolic.scalesim_memory import EVENT_LIMIT, replay
from compiler_core.hardware.systolic.scalesim_read_sram import ReadSram, _tile_sets, row_refills
from compiler_core.hardware.systolic.mapping import ConvShape
from compiler_core.hardware.systolic.scalesim_streams import (NO_REQUEST, OfmapWrites,
                                                              _anti_diagonals, _ifmap_valid,
                                                              build_streams, ifmap_addresses)


def walk_read_sram(read, sram: ReadSram, fold_rows: int) -> list[tuple[int, int]]:
    """Request by request: the window of A sets on a ring of n moves P sets per refill
    until a set holding the address is in it. Returns (row, refills) of the rows that
    miss."""
    n, A, P = sram.sets, sram.active_sets, sram.step_sets
    stream = read.streams
    holders: dict[int, set] = {}
    for position, address in enumerate(stream.addresses.tolist()):
        holders.setdefault(address, set()).add(position // sram.per_set)
    window, refills = 0, Counter()
    for row, address in zip(stream.global_rows(fold_rows).tolist(),
                            stream.request_addresses().tolist()):
        moves = 0
        while not any((held - window) % n < A for held in holders[address]):
            window = (window + P) % n
            moves += 1
            assert moves <= n
        if moves:
            refills[row] += moves
    return sorted(refills.items())


class _Writer:
    """The ofmap SRAM one write at a time (see scalesim_memory's module docstring)."""

    def __init__(self, kilobytes: int, bandwidth: int):
        self.words, self.bandwidth = 1024 * kilobytes, bandwidth
        self.active = math.ceil(self.words / 2)
        self.drain_lines = math.ceil((self.words - self.active) / bandwidth)
        self.free, self.drain_end = self.words, 0
        self.closed = self.fill = self.drained = self.written = 0
        self.partial, self.drains = {}, []

    def write(self, current: int) -> int:
        self.free -= 1
        self.fill += 1
        if self.fill == self.bandwidth:
            self.closed, self.fill = self.closed + 1, 0
        if current < self.drain_end:
            return self.drain_end if self.free <= 0 else current
        if self.free < self.active:
            self.drain_end = self.drain(current)
        return current

    def drain(self, cycle: int) -> int:
        if self.fill:
            self.partial[self.closed] = self.fill
            self.closed, self.fill = self.closed + 1, 0
        end = min(self.drained + self.drain_lines, self.closed)
        lines = end - self.drained
        words = lines * self.bandwidth - (self.bandwidth
                                          - self.partial.get(end - 1, self.bandwidth))
        self.written += words
        self.free += words
        self.drained = end
        self.drains.append([cycle, cycle + lines - 1, words])
        return cycle + lines - 1


def replay_row_by_row(streams, memory: MemoryConfig) -> dict:
    """Every cycle row of the layer in turn: its refills one by one (refill r arrives at
    L_r and moves the service to L + max(0, L - a)), its ofmap writes one by one."""
    reads = {}
    for operand in ("ifmap", "filter"):
        read = getattr(streams, operand)
        sram = ReadSram.build(memory.sram(operand), memory.words(operand), read)
        reads[operand] = (sram, dict(walk_read_sram(read, sram, streams.fold_rows)))
    writer = _Writer(memory.sram("ofmap"), memory.words("ofmap"))
    done = {"ifmap": 0, "filter": 0}
    stalls, stall_rows, written = 0, [], 0
    for row in range(streams.total_rows):
        writes = streams.ofmap_writes.at(row)
        cycle = row + stalls
        waits = {}
        for operand, (sram, refills) in reads.items():
            served = cycle + 1
            for _ in range(refills.get(row, 0)):
                done[operand] += 1
                arrival = sram.refill_arrival(done[operand])
                served = arrival + max(0, arrival - served)
            waits[operand] = served - cycle - 1
        current = cycle
        for _ in range(writes):
            current = writer.write(current)
        waits["ofmap"] = current - cycle
        written = current
        stall = max(waits.values())
        if stall > 0:
            stall_rows.append([row, cycle, stall, max(waits, key=waits.get)])
            stalls += stall
    cycle = written
    while writer.fill or writer.drained < writer.closed:
        cycle = writer.drain(cycle) + 1
    return {"cycles": written, "stall_cycles": stalls, "refills": done,
            "stall_rows": stall_rows[:EVENT_LIMIT], "drains": writer.drains[:EVENT_LIMIT],
            "dram_writes": {"ofmap": writer.written},
            "dram_reads": {o: (s.first_fill_lines + done[o] * s.refill_lines) * s.bandwidth
                           for o, (s, _) in reads.items()}}


def random_layers(count: int, seed: int):
    rng = random.Random(seed)
    for _ in range(count):
        dataflow = rng.choice(["os", "ws", "is"])
        rows, cols = rng.choice([2, 3, 4, 8]), rng.choice([2, 4, 5, 8])
        memory = MemoryConfig([rng.choice([1, 1, 2]) for _ in range(3)],
                              [rng.choice([1, 2, 3, 7, 64]) for _ in range(3)])
        if rng.random() < 0.5:
            dims = (rng.randint(1, 90), rng.randint(1, 60), rng.randint(1, 60))
            yield schedule_gemm(*dims, rows, cols, dataflow, "scalesim", memory=memory)
        else:
            FH, FW = rng.randint(1, 3), rng.randint(1, 3)
            yield schedule_conv(rng.randint(FH, 12), rng.randint(FW, 12), FH, FW,
                                rng.randint(1, 6), rng.randint(1, 16), rng.randint(1, 3),
                                rows=rows, cols=cols, dataflow=dataflow, timing="scalesim",
                                memory=memory)


def _small_sram_conv(rng: random.Random, sides: tuple[int, int], F: int,
                     strides: tuple[int, int]):
    """A random convolution of an input ``sides`` wide and high on a 4- or 8-wide array with
    1 kB SRAMs and a few words a cycle (what `overlapping_convs` and `gapped_convs` vary)."""
    memory = MemoryConfig([1, 1, rng.choice([1, 2])], [rng.choice([1, 2, 5]) for _ in range(3)])
    return schedule_conv(rng.randint(*sides), rng.randint(*sides), F, F,
                         rng.randint(2, 8), rng.randint(2, 12), rng.randint(*strides),
                         rows=rng.choice([4, 8]), cols=rng.choice([4, 8]),
                         dataflow=rng.choice(["os", "ws", "is"]), timing="scalesim",
                         memory=memory)


def overlapping_convs(count: int, seed: int):
    """Convolutions whose windows overlap (an input element read by several), on inputs
    larger than a 1 kB SRAM's half, so an address held by several sets is missed."""
    rng = random.Random(seed)
    for _ in range(count):
        F = rng.randint(2, 3)
        yield _small_sram_conv(rng, (10, 18), F, (1, F - 1))


def gapped_convs(count: int, seed: int):
    """Convolutions whose stride passes the filter and whose last windows run past the
    input: no address sits in two places, but the im2col matrix has holes, so no tile is
    known by its layout alone and a preloaded tile's positions rise only row by row."""
    rng = random.Random(seed)
    for _ in range(count):
        F = rng.randint(1, 3)
        yield _small_sram_conv(rng, (20, 40), F, (F + 1, F + 3))


def walked_like_each_request(schedule):
    """Each read operand of ``schedule`` and its rows' refills, checked equal to the plain
    request-by-request walk."""
    streams = build_streams(schedule.mapping, schedule.conv)
    for operand in ("ifmap", "filter"):
        read = getattr(streams, operand)
        sram = ReadSram.build(schedule.memory.sram(operand), schedule.memory.words(operand),
                              read)
        fast = list(zip(*row_refills(read, sram, streams.fold_rows)))
        assert fast == walk_read_sram(read, sram, streams.fold_rows), (schedule, operand)
        yield read, fast


def test_read_sram_misses_equal_the_request_by_request_walk():
    moved = sum(refills for schedule in random_layers(120, seed=3)
                for _, fast in walked_like_each_request(schedule) for _, refills in fast)
    assert moved > 1000      # the layers do miss, often and by whole turns of the ring


def test_each_walk_equals_the_request_by_request_walk():
    """The read SRAM has four walks: a preloaded and a streamed tile with one place per
    address from their layouts alone (no stream), any other stream with one place per
    address by binary search along its runs of rising positions, and any stream whose
    addresses sit in several places request by request where needed. Each must agree with
    the plain walk, and each is made to miss here."""
    refills = Counter()
    for schedule in [*random_layers(240, seed=31), *overlapping_convs(40, seed=34),
                     *gapped_convs(40, seed=35)]:
        for read, fast in walked_like_each_request(schedule):
            addresses = read.streams.addresses.tolist()
            kind = ("preloaded" if read.preloaded is not None
                    else "streamed" if read.streamed is not None
                    else "shared" if len(set(addresses)) < len(addresses) else "rising")
            refills[kind] += sum(count for _, count in fast)
    assert min(refills[kind] for kind in ("preloaded", "streamed", "rising", "shared")) \
        > 200, refills


def test_each_tiles_own_sets_bound_its_requests():
    """The shared walk skips a fold whose tile's own sets all lie in the window, from each
    tile's lowest and highest set (`_tile_sets`): checked against the requests' positions
    tile by tile, preloaded tiles (read bottom row first) and empty tiles included."""
    checked = 0
    for schedule in [*overlapping_convs(30, seed=37), *gapped_convs(30, seed=38)]:
        streams = build_streams(schedule.mapping, schedule.conv)
        stream = streams.ifmap.streams
        per_set = ReadSram.build(1, 1, streams.ifmap).per_set
        lows, highs = _tile_sets(stream, per_set)
        for t in range(len(stream.tile_start) - 1):
            sets = (stream.positions[stream.tile_start[t]:stream.tile_start[t + 1]]
                    // per_set).tolist()
            if sets:
                assert (lows[t], highs[t]) == (min(sets), max(sets)), (schedule, t)
                checked += 1
    assert checked > 300


def test_a_streamed_tiles_layout_gives_its_stream():
    """`StreamedTiles` (positions from the anti-diagonal order's arithmetic) against the
    numpy stream: each tile's first and last positions, and from every position the
    tile's first request at or past it with its row."""
    checked = 0
    for schedule in random_layers(150, seed=36):
        streams = build_streams(schedule.mapping, schedule.conv)
        for read in (streams.ifmap, streams.filter):
            tiles = read.streamed
            if tiles is None:
                continue
            stream = read.streams
            tiles.prepare()
            for t in range(len(stream.tile_start) - 1):
                part = slice(stream.tile_start[t], stream.tile_start[t + 1])
                positions, rows = stream.positions[part].tolist(), stream.rows[part].tolist()
                assert (tiles.first_position(t), tiles.last_position(t)) == \
                    (positions[0], positions[-1])
                for x in range(read.valid + 2):
                    at = bisect_left(positions, x)          # the tile's positions rise
                    expected = (positions[at], rows[at]) if at < len(positions) else None
                    assert tiles.next_request(t, x) == expected, (schedule, t, x)
            checked += 1
    assert checked > 60


@pytest.mark.parametrize("seed", [11, 12])
def test_replay_equals_the_row_by_row_model(seed):
    stalled = 0
    for schedule in random_layers(40, seed=seed):
        streams = build_streams(schedule.mapping, schedule.conv)
        run = replay(streams, schedule.memory)
        plain = replay_row_by_row(streams, schedule.memory)
        assert {key: getattr(run, key) for key in plain} == plain, schedule
        assert json.loads(json.dumps(asdict(run))) == asdict(run)     # plain numbers only
        stalled += run.stall_cycles > 0
    assert stalled >= 5



def test_ofmap_writes_equal_the_element_by_element_count():
    """Per-shape prefixes against every written element placed on its row: counts per
    row, writes before a row, the row of each write, the first and last written row."""
    rng = random.Random(5)
    for _ in range(60):
        base, fold_rows = rng.randint(0, 6), rng.randint(20, 40)
        spans = []
        for _ in range(rng.randint(1, 7)):
            height, width = rng.randint(1, 8), rng.randint(1, 8)
            spans.append((rng.randint(0, fold_rows - base - height - width), height, width))
        per_row = [0] * (fold_rows * len(spans))
        for fold, (first, height, width) in enumerate(spans):
            for t in range(height):
                for c in range(width):
                    per_row[fold * fold_rows + base + first + t + c] += 1
        writes = OfmapWrites(spans, fold_rows, base)
        assert [writes.at(row) for row in range(len(per_row))] == per_row
        assert [writes.before(row) for row in range(len(per_row) + 1)] == \
            [sum(per_row[:row]) for row in range(len(per_row) + 1)]
        rows_of = [row for row, count in enumerate(per_row) for _ in range(count)]
        assert [writes.row_of(element) for element in range(writes.total)] == rows_of
        assert writes.first_last == (rows_of[0], rows_of[-1])


def test_ifmap_address_count_equals_the_im2col_matrix():
    rng = random.Random(6)
    for _ in range(200):
        FH, FW = rng.randint(1, 4), rng.randint(1, 4)
        conv = ConvShape(rng.randint(FH, 14), rng.randint(FW, 14), FH, FW, rng.randint(1, 3),
                         2, rng.randint(1, 6))
        assert _ifmap_valid(conv) == int((ifmap_addresses(conv) != NO_REQUEST).sum()), conv


def test_a_gemm_streams_as_the_conv_it_is_given_as():
    """SCALE-Sim takes a GEMM as a conv of an M x K input with N filters of 1 x K;
    `build_streams` gives the GEMM's input its addresses directly, without the conv: every
    stream must be the conv's."""
    rng = random.Random(10)
    for _ in range(30):
        M, N, K = (rng.randint(1, 30) for _ in range(3))
        rows, cols, dataflow = rng.choice([2, 4, 8]), rng.choice([2, 4, 8]), \
            rng.choice(["os", "ws", "is"])
        gemm = build_streams(schedule_gemm(M, N, K, rows, cols, dataflow, "scalesim").mapping)
        conv = schedule_conv(M, K, 1, K, 1, N, 1, rows=rows, cols=cols, dataflow=dataflow,
                             timing="scalesim")
        as_conv = build_streams(conv.mapping, conv.conv)
        for mine, theirs in ((gemm.ifmap, as_conv.ifmap), (gemm.filter, as_conv.filter)):
            assert mine.streams.addresses.tolist() == theirs.streams.addresses.tolist()
            assert mine.streams.positions.tolist() == theirs.streams.positions.tolist()


def test_only_overlapping_windows_put_an_address_in_several_places():
    """The read SRAM skips looking for shared addresses where windows cannot overlap."""
    shared = 0
    for schedule in random_layers(80, seed=8):
        streams = build_streams(schedule.mapping, schedule.conv)
        for read in (streams.ifmap, streams.filter):
            stream = read.streams
            repeated = len(set(stream.addresses.tolist())) < stream.addresses.size
            assert stream.may_share or not repeated, schedule
            shared += repeated
    assert shared > 5


@pytest.mark.parametrize("height, width", [(1, 1), (1, 6), (6, 1), (4, 4), (3, 9), (40, 8)])
def test_anti_diagonal_order_reads_bottom_first_along_each_anti_diagonal(height, width):
    cells = sorted(((r + c, -r), r * width + c) for r in range(height) for c in range(width))
    order, diagonal = _anti_diagonals(height, width)
    assert order.tolist() == [flat for _, flat in cells]
    assert diagonal.tolist() == [d for (d, _), _ in cells]


def test_each_fill_position_is_asked_by_one_tile_once():
    """Streams built from the layout alone (no address matrix): every position of the fill
    order belongs to exactly one tile, which asks for it once, row after row (in fill order
    for a streamed tile; a preloaded tile is read bottom row first)."""
    for schedule in random_layers(80, seed=9):
        streams = build_streams(schedule.mapping, schedule.conv)
        for read in (streams.ifmap, streams.filter):
            stream = read.streams
            tiles = len(stream.tile_start) - 1
            asked = []
            for t in range(tiles):
                part = slice(stream.tile_start[t], stream.tile_start[t + 1])
                positions, rows = stream.positions[part].tolist(), stream.rows[part].tolist()
                assert len(set(positions)) == len(positions) and rows == sorted(rows)
                asked += positions
            assert sorted(asked) == list(range(read.valid)) == \
                list(range(stream.addresses.size)), schedule
