"""SCALE-Sim 3.0.0's read SRAM (ifmap, filter): which cycle rows miss, and how many refills.

SCALE-Sim's read buffer (`scalesim/memory/read_buffer.py`) holds `T = 1024 * kB` words, half
active, half prefetch. The operand's prefetch order is cut into sets of E = ceil(T / 100)
valid addresses, n sets on a ring. The active window is A = min(ceil(T/2 / E), n)
consecutive sets from `w` (initially 0). A request hits when its address is in a set of the
window; on a miss the window moves on by P = min(ceil(T/2 / E), n - A) sets, as often as
needed, one refill each.

Unrolled, the model is a walk on a line: after u refills the window holds the positions
[uP, uP + A), and set s sits at every position s + kn. A request for an address held in the
sets S moves u to max(u, h(X)), where X is the first position at or after uP holding one of
S and h(x) = ceil((x - A + 1) / P) the first window that reaches x. So the walk only needs
the requests where it moves, and those are found without visiting the others. A request
whose own set the window holds hits, and so does every later one whose set lies between
it and the window's end. Four walks use this. Where addresses sit in one place each,
tiles are known by their layout and no stream is built: a streamed tile (read along
anti-diagonals, in fill order) has rising positions, so the next request that can miss is
its first at or past the window's end, found on that position's anti-diagonal
(`StreamedTiles`); a preloaded tile (`PreloadedTiles`: rows of consecutive positions, read
bottom row first) finds it by arithmetic, in the row or below a row that hits to its end.
A stream whose matrix has holes (strided windows past the input) is searched along its
runs of rising positions by binary search (a preloaded tile's rows are such runs); where
an address can sit in several sets (im2col inputs of overlapping windows) runs of rising
sets are searched the same way and a request whose own set is out of the window is
stepped exactly over all of its address's sets. A fold whose whole tile (or run) lies
in the window is skipped in one test. P <= A, so every position is in some window and a
miss always ends; P = 0 only when the window spans the whole ring, where nothing misses.
`tests/test_systolic_read_sram.py` checks each walk against the request-by-request walk.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

from compiler_core.hardware.systolic.scalesim_streams import (OperandStreams, PreloadedTiles,
                                                              ReadOperand, StreamedTiles,
                                                              fetch_rows)


@dataclass(frozen=True)
class ReadSram:
    """The fixed parameters of one read SRAM (see the module docstring)."""

    words: int
    bandwidth: int
    per_set: int
    sets: int
    active_sets: int
    step_sets: int
    first_fill_lines: int
    refill_lines: int

    @classmethod
    def build(cls, kilobytes: int, bandwidth: int, operand: ReadOperand) -> "ReadSram":
        words = 1024 * kilobytes
        active = math.ceil(words * 0.5)
        per_set = math.ceil(words / 100)
        sets = operand.valid // per_set + 1
        active_sets = min(math.ceil(active / per_set), sets)
        step = min(math.ceil((words - active) / per_set), sets - active_sets)
        return cls(words, bandwidth, per_set, sets, active_sets, step,
                   min(math.ceil(active / bandwidth),
                       fetch_rows(operand.fill_length, bandwidth)),
                   math.ceil((words - active) / bandwidth))

    def refill_arrival(self, refill: int) -> int:
        """Cycle at which refill number `refill` (1, 2, ...) has arrived."""
        return -1 + refill * (self.refill_lines + 1)


class _Sets:
    """Every request's own set (where its element sits in the fill order), and for an
    address filled more than once (an im2col input) every set holding it."""

    def __init__(self, stream: OperandStreams, per_set: int, rise: int):
        sets = stream.positions // per_set
        steps = np.diff(sets)
        cut = (steps < 0) | (steps > rise)
        starts = np.asarray(stream.tile_start)
        inner = starts[1:-1]
        cut[inner[(inner > 0) & (inner < sets.size)] - 1] = True    # a tile starts a run
        self.bounds = [0, *(np.flatnonzero(cut) + 1).tolist(), int(sets.size)]
        self.own = sets.tolist()
        asking = np.flatnonzero(starts[1:] > starts[:-1])
        self.low = dict.fromkeys(range(starts.size - 1), 0)
        self.high = dict.fromkeys(range(starts.size - 1), 0)
        if asking.size:
            self.low.update(zip(asking.tolist(),
                                np.minimum.reduceat(sets, starts[asking]).tolist()))
            self.high.update(zip(asking.tolist(),
                                 np.maximum.reduceat(sets, starts[asking]).tolist()))
        self.shared = False
        if stream.may_share:
            addresses = stream.addresses
            counts = np.bincount(addresses)
            self.shared = counts.size > 0 and int(counts.max()) > 1
        if self.shared:
            size = addresses.size
            pairs = np.sort(addresses * (size + 1) + np.arange(size) // per_set)
            pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]
            holder, held = np.divmod(pairs, size + 1)
            self.start = np.searchsorted(holder, np.arange(counts.size + 1)).tolist()
            self.held = held.tolist()
            self.address = addresses[stream.positions].tolist()

    def candidates(self, request: int) -> list[int]:
        """Every set holding the request's address, ascending (when addresses are shared)."""
        address = self.address[request]
        return self.held[self.start[address]:self.start[address + 1]]


class _Window:
    """The walk's state: `moves` refills so far, the window from position `floor` =
    moves * P, and the rows that missed with their refills."""

    __slots__ = ("sets", "active", "step", "moves", "floor", "rows", "refills")

    def __init__(self, sram: ReadSram):
        self.sets, self.active, self.step = sram.sets, sram.active_sets, sram.step_sets
        self.moves = self.floor = 0
        self.rows: list[int] = []
        self.refills: list[int] = []

    def move_to(self, reach: int, row: int) -> None:
        """A request at cycle row `row` that misses, its address coming first at unrolled
        position `reach` (at or past the window's end): the window moves on, a refill at a
        time, until it holds that position, h(reach) = ceil((reach - A + 1) / P)."""
        moved = -((self.active - 1 - reach) // self.step)
        if self.rows and self.rows[-1] == row:
            self.refills[-1] += moved - self.moves
        else:
            self.rows.append(row)
            self.refills.append(moved - self.moves)
        self.moves, self.floor = moved, moved * self.step


def row_refills(operand: ReadOperand, sram: ReadSram, fold_rows: int
                ) -> tuple[list[int], list[int]]:
    """(cycle row, refills) of every row that misses, in row order; their refills sum to
    the operand's refill count."""
    if sram.step_sets == 0:   # the window is the whole ring: every request hits
        return [], []
    window = _Window(sram)
    if operand.preloaded is not None:
        _walk_preloaded(operand.preloaded, sram.per_set, fold_rows, window)
    elif operand.streamed is not None:
        _walk_streamed(operand.streamed, sram.per_set, fold_rows, window)
    else:
        stream = operand.streams
        located = stream.may_share and _Sets(stream, sram.per_set, sram.sets - sram.active_sets)
        if located and located.shared:
            _walk_shared(stream, located, sram, fold_rows, window)
        else:
            _walk_rising(stream, sram.per_set, fold_rows, window)
    return window.rows, window.refills


def _walk_rising(stream: OperandStreams, per_set: int, fold_rows: int,
                 window: _Window) -> None:
    """Any stream with one place per address, cut into runs of rising positions (a
    streamed tile is one run, a preloaded tile one per row, read bottom row first): from a
    request the window holds, the next of its run that can miss is the first at or past
    the window's end (a binary search on positions); any it skips over hit."""
    n, A = window.sets, window.active
    positions = stream.positions.tolist()
    local_rows = stream.rows
    tile_start = stream.tile_start
    falls = (np.flatnonzero(np.diff(stream.positions) < 0) + 1).tolist()
    for fold, t in enumerate(stream.fold_tile):
        begin, end = tile_start[t], tile_start[t + 1]
        cut = bisect_left(falls, begin + 1)
        base = fold * fold_rows
        while begin < end:
            stop = falls[cut] if cut < len(falls) and falls[cut] < end else end
            j, begin, cut = begin, stop, cut + 1
            low, floor = positions[j] // per_set, window.floor
            if low - ((low - floor) // n) * n + positions[stop - 1] // per_set - low \
                    < floor + A:
                continue      # the whole run is in the window: every request hits
            while j < stop:
                own = positions[j] // per_set
                reach = own - ((own - floor) // n) * n
                if reach >= floor + A:
                    window.move_to(reach, base + int(local_rows[j]))
                    floor = window.floor
                j = bisect_left(positions, (own + floor + A - reach) * per_set, j + 1, stop)


def _walk_streamed(tiles: StreamedTiles, per_set: int, fold_rows: int,
                   window: _Window) -> None:
    """Streamed tiles, one place per address, from their layout alone: as `_walk_rising`,
    the next request that can miss is the tile's first at or past the window's end, found
    on that position's anti-diagonal (`StreamedTiles.next_request`) with no stream built."""
    n, A = window.sets, window.active
    tiles.prepare()
    for fold, t in enumerate(tiles.fold_tile):
        position, floor = tiles.first_position(t), window.floor
        low = position // per_set
        if low - ((low - floor) // n) * n + tiles.last_position(t) // per_set - low \
                < floor + A:
            continue      # the whole tile is in the window: every request hits
        base, row = fold * fold_rows, tiles.base
        while True:
            own = position // per_set
            reach = own - ((own - floor) // n) * n
            if reach >= floor + A:
                window.move_to(reach, base + row)
                floor = window.floor
            found = tiles.next_request(t, (own + floor + A - reach) * per_set)
            if found is None:
                break
            position, row = found


def _walk_preloaded(tiles: PreloadedTiles, per_set: int, fold_rows: int,
                    window: _Window) -> None:
    """Preloaded tiles, one place per address, from their layout alone: a row's positions
    are consecutive, so the next request that can miss is found by arithmetic, in the row
    (the first position past the window's end) or below it (the rows beneath a row that
    hits to its end hold lower positions and hit down to the window's start)."""
    n, A = window.sets, window.active
    K, R, C, blocks = tiles.K, tiles.R, tiles.C, tiles.blocks
    for fold in range(blocks * tiles.slices):
        s, b = divmod(fold, blocks)
        width = C if s < tiles.slices - 1 else tiles.last_width
        start, bottom = s * K * C, b * R
        k = min(K, bottom + R) - 1              # the row read first
        low, high = (start + bottom * width) // per_set, (start + (k + 1) * width - 1) // per_set
        floor = window.floor
        if low - ((low - floor) // n) * n + high - low < floor + A:
            continue      # the whole tile is in the window: every request hits
        top_row = fold * fold_rows + bottom + R - 1        # row k is read at top_row - k
        position = start + k * width
        while True:
            own = position // per_set
            reach = own - ((own - floor) // n) * n
            if reach >= floor + A:
                window.move_to(reach, top_row - k)
                floor = window.floor
            position = (own + floor + A - reach) * per_set  # first past the window's end
            if position < start + (k + 1) * width:
                continue
            low = own - reach + floor       # the window's start, as a set of this lap
            k = min(k - 1, -(-(low * per_set - start) // width) - 1)
            if k < bottom:
                break
            position = start + k * width


def _walk_shared(stream: OperandStreams, located: _Sets, sram: ReadSram, fold_rows: int,
                 window: _Window) -> None:
    """Any stream, an address possibly held by several sets (im2col inputs): runs of
    requests whose own sets rise by at most n - A are searched as in `_walk_rising`; a
    request held by another of its sets than its own is stepped exactly, alone."""
    n, A, P = sram.sets, sram.active_sets, sram.step_sets
    sets, bounds, local_rows = located.own, located.bounds, stream.rows
    tile_start = stream.tile_start
    rows, refills = window.rows, window.refills
    u = floor = 0
    for fold, t in enumerate(stream.fold_tile):
        low = located.low[t]
        if low - ((low - floor) // n) * n + located.high[t] - low < floor + A:
            continue      # the whole tile is in the window: every request hits
        base = fold * fold_rows
        begin, stop_tile = tile_start[t], tile_start[t + 1]
        cut = bisect_left(bounds, begin)
        while begin < stop_tile:
            stop = bounds[cut + 1]
            j = begin
            while j < stop:
                # the window after request j: from the first position at or after u * P
                # that holds its address, h(x) = ceil((x - A + 1) / P)
                own = sets[j]
                held, start = located.candidates(j), floor % n
                first = bisect_left(held, start)
                reach = floor + (held[first] - start if first < len(held)
                                 else held[0] + n - start)
                moved = -((A - 1 - reach) // P)
                if moved > u:
                    row = base + int(local_rows[j])
                    if rows and rows[-1] == row:
                        refills[-1] += moved - u
                    else:
                        rows.append(row)
                        refills.append(moved - u)
                    u, floor = moved, moved * P
                position = own - ((own - floor) // n) * n
                if position >= floor + A:
                    j += 1        # held by another of its sets: restart the run after it
                    continue
                # along the run the window moves when a request passes its end
                j = bisect_left(sets, own + floor + A - position, j + 1, stop)
            begin, cut = stop, cut + 1
