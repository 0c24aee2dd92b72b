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
an address can sit in several sets (im2col inputs of overlapping windows) the addresses
the window holds are marked once per window and a fold's requests are tested against
them at once, up to the first that misses. A fold whose whole tile (or run) lies in the
window is skipped in one test. P <= A, so every position is in some window and a
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


@dataclass(slots=True)   # not frozen: made on every replay, and frozen fields cost 4x to set
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
        if stream.may_share:      # overlapping windows: some address sits in several sets
            _walk_shared(stream, sram, fold_rows, window)
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
    # each tile's first and last positions, once per tile: folds re-read the same tiles
    ends = [(tiles.first_position(t), tiles.last_position(t)) for t in range(tiles.count)]
    for fold, t in enumerate(tiles.fold_tile):
        (position, last), floor = ends[t], window.floor
        low = position // per_set
        if low - ((low - floor) // n) * n + last // per_set - low < floor + A:
            continue      # the whole tile is in the window: every request hits
        base, row = fold * fold_rows, tiles.base
        while True:
            own = position // per_set
            reach = own - ((own - floor) // n) * n
            if reach >= floor + A:
                window.move_to(reach, base + row)
                floor = window.floor
            end = (own + floor + A - reach) * per_set        # the window's end, this lap
            if end > last:
                break     # the rest of the tile is in the window
            position, row = tiles.next_request(t, end)


def _walk_preloaded(tiles: PreloadedTiles, per_set: int, fold_rows: int,
                    window: _Window) -> None:
    """Preloaded tiles, one place per address, from their layout alone: a row's positions
    are consecutive, so the next request that can miss is found by arithmetic, in the row
    (the first position past the window's end) or below it (the rows beneath a row that
    hits to its end hold lower positions and hit down to the window's start)."""
    n, A = window.sets, window.active
    K, R, C, blocks = tiles.K, tiles.R, tiles.C, tiles.blocks
    for fold in range(blocks * tiles.slices):
        s = fold // blocks
        width = C if s < tiles.slices - 1 else tiles.last_width
        start, bottom = s * K * C, (fold - s * blocks) * R
        k = (K if K < bottom + R else bottom + R) - 1       # the row read first
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
            below = -(-(low * per_set - start) // width)     # rows from here on hit
            k = k - 1 if k < below else below - 1
            if k < bottom:
                break
            position = start + k * width


def _walk_shared(stream: OperandStreams, sram: ReadSram, fold_rows: int,
                 window: _Window) -> None:
    """Any stream, an address possibly held by several sets (im2col inputs): a request
    hits when its address is among those the window's sets hold. Those addresses are
    marked once per window (a flag per address: cheaper than counting its places), and
    each fold's requests are tested against them at once, from the first (or from the one
    after a miss) to the first that misses; a missing address's first position at or
    after the window's start, in ring order, gives the set that moves the window. A fold
    whose requests' own sets all lie in the window hits throughout: it is skipped untested."""
    n, A, E = sram.sets, sram.active_sets, sram.per_set
    addresses, tile_start, local_rows = stream.addresses, stream.tile_start, stream.rows
    asked = addresses[stream.positions]             # each request's address
    size = int(addresses.max()) + 1
    lows, highs = _tile_sets(stream, E)
    held = None
    for fold, t in enumerate(stream.fold_tile):
        begin, end = tile_start[t], tile_start[t + 1]
        low, floor = lows[t], window.floor
        if low - ((low - floor) // n) * n + highs[t] - low < floor + A:
            continue      # every request's own set is in the window: all hit
        base = fold * fold_rows
        while begin < end:
            floor = window.floor
            start = floor % n
            if held is None:                        # whether the window holds each
                held = np.zeros(size, dtype=bool)
                held[addresses[start * E:(start + A) * E]] = True
                if start + A > n:                   # the window wraps round the ring
                    held[addresses[:(start + A - n) * E]] = True
            hits = held[asked[begin:end]]
            first = int(hits.argmin())
            if hits[first]:
                break
            begin += first
            missing = asked[begin]
            after = addresses[start * E:] == missing
            position = int(after.argmax()) if after.size else 0
            if after.size and after[position]:
                ahead = position // E
            else:                                   # only before the start: round the ring
                ahead = int((addresses == missing).argmax()) // E + n - start
            window.move_to(floor + ahead, base + int(local_rows[begin]))
            held = None
            begin += 1


def _tile_sets(stream: OperandStreams, per_set: int) -> tuple[list, list]:
    """The lowest and the highest set of each tile's own positions (an empty tile's are
    any: it asks for nothing)."""
    positions = stream.positions
    starts = np.minimum(stream.tile_start[:-1], positions.size - 1)
    return ((np.minimum.reduceat(positions, starts) // per_set).tolist(),
            (np.maximum.reduceat(positions, starts) // per_set).tolist())
