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
the requests where it moves, and those are found without visiting the others: along a run
of requests whose own prefetch sets rise by at most n - A from one to the next (a fold's
skewed tile is read along anti-diagonals, in fill order), the window reaches each request's
own position first, so the next move is the first request of the run past the window's end,
a binary search. A run starts afresh (an exact step over all of the address's sets) where
its sets fall back or jump, and a fold whose whole tile lies in the window is skipped in one
test. P <= A, so every position is in some window and a miss always ends; P = 0 only when
the window spans the whole ring, where nothing misses. The Python work is per distinct tile
(folds re-reading a tile share its arrays), per run and per move, and per request only
while an address filled more than once is held by another of its sets than its own;
`tests/test_systolic_read_sram.py` checks it against the request-by-request walk.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

from compiler_core.hardware.systolic.scalesim_streams import (OperandStreams, ReadOperand,
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


def row_refills(operand: ReadOperand, sram: ReadSram, fold_rows: int
                ) -> tuple[list[int], list[int]]:
    """(cycle row, refills) of every row that misses, in row order; their refills sum to
    the operand's refill count."""
    n, A, P = sram.sets, sram.active_sets, sram.step_sets
    if P == 0:            # the window is the whole ring: every request hits
        return [], []
    stream = operand.streams
    located = _Sets(stream, sram.per_set, n - A)
    sets, bounds, local_rows, shared = located.own, located.bounds, stream.rows, located.shared
    tile_start = stream.tile_start
    rows: list[int] = []
    refills: list[int] = []
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
                if shared:      # the first of its sets at or after the window start
                    held, start = located.candidates(j), floor % n
                    first = bisect_left(held, start)
                    reach = floor + (held[first] - start if first < len(held)
                                     else held[0] + n - start)
                else:
                    reach = own - ((own - floor) // n) * n
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
    return rows, refills
