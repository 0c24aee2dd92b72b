"""What the array does at one cycle of one fold, computed on demand.

A big layer has millions of cycles, so nothing is stored per cycle: `step(fold, cycle)` works
out the state of every PE from the closed-form timing in O(R * C), and `FoldSteps` is a lazy
sequence of one fold's steps (len, indexing and iteration, nothing precomputed).

The fold's own timeline (local cycle u = 0 .. fold_length - 1): `stall` cycles waiting for
memory, then P preload cycles, then the compute window v = 0 .. S + T - 1, in which PE (i, j)
of the used region works on streamed element v - i - j while 0 <= v - i - j < T.
PE states, for the PEs of the fold's used region: LOADING (it will work later in this fold
and its data is on its way: the fold's operands arriving from memory during a stall, its
stationary value not yet down to its row during the preload, the wavefront not yet at it
during the fill), PRELOAD (ws/is: its stationary value has arrived — rows 0 .. p during
preload cycle p — and it waits for the stream), ACTIVE (a multiply-accumulate), IDLE (its
work in this fold is done: the drain); and PADDING (outside the problem in an edge fold: no
work in the whole fold).  So the first cycle of a fold shows the whole tile loading, and
each PE goes loading -> (preload) -> active -> idle, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from compiler_core.hardware.systolic.mapping import ScheduleError
from compiler_core.hardware.systolic.timing import Timeline
from compiler_core.records import record_field

IDLE, ACTIVE, PADDING, PRELOAD, LOADING = 0, 1, 2, 3, 4
STATE_NAMES = {IDLE: "idle", ACTIVE: "active", PADDING: "padding", PRELOAD: "preload",
               LOADING: "loading"}


@lru_cache(maxsize=16)
def _skew_grid(rows: int, cols: int) -> np.ndarray:
    """i + j for every PE: how many cycles after PE (0, 0) it sees the same element."""
    grid = np.add.outer(np.arange(rows), np.arange(cols))
    grid.setflags(write=False)
    return grid


@dataclass(frozen=True)
class Step:
    """The array at one local cycle of one fold; as JSON, ``pe_state`` is rows of state
    codes (see STATE_NAMES)."""

    fold: int
    cycle: int
    global_cycle: int
    phase: str
    stall: bool
    pe_state: np.ndarray
    tiles: dict
    stream_dim: str = record_field(omit=True)            # JSON: in "streaming"
    in_flight: tuple[int, int] | None = record_field(omit=True)

    json_derived = ("counts", "streaming")
    json_order = ("fold", "cycle", "global_cycle", "phase", "stall", "counts", "tiles",
                  "streaming")

    def count(self, state: int) -> int:
        return int(np.count_nonzero(self.pe_state == state))

    @property
    def active(self) -> int:
        return self.count(ACTIVE)

    @property
    def idle(self) -> int:
        return self.count(IDLE)

    @property
    def padding(self) -> int:
        return self.count(PADDING)

    @property
    def loading(self) -> int:
        return self.count(LOADING)

    @property
    def counts(self) -> dict[str, int]:
        """PEs in each state, by the state's name."""
        return {name: self.count(code) for code, name in STATE_NAMES.items()}

    @property
    def streaming(self) -> dict:
        """The streamed dimension and the range of its elements in the array ([lo, hi))."""
        return {"dim": self.stream_dim, "in_flight": self.in_flight or None}


def step(timeline: Timeline, fold: int, cycle: int) -> Step:
    """The array at local `cycle` of `fold` (0 <= cycle < timeline.fold_length(fold))."""
    mapping = timeline.mapping
    row_fold, col_fold = mapping.fold_position(fold)
    length = timeline.fold_length(fold)
    if not 0 <= cycle < length:
        raise ScheduleError(f"cycle {cycle} is outside fold {fold}", where="cycle",
                            hint=f"fold {fold} has local cycles 0 to {length - 1}")
    rows_used, cols_used = mapping.rows_used(row_fold), mapping.cols_used(col_fold)
    state = np.full((mapping.rows, mapping.cols), PADDING, dtype=np.uint8)
    used = state[:rows_used, :cols_used]
    used[...] = LOADING

    waited = timeline.stall(fold)
    compute_cycle = cycle - waited - timeline.preload
    phase = next(name for name, _, stop in timeline.fold_phases(fold) if cycle < stop)
    in_flight = None
    if phase == "preload":
        used[: cycle - waited + 1, :] = PRELOAD
    elif phase != "stall":
        if timeline.preload:   # ws/is: the stationary values stay in the PEs the wave has not
            used[...] = PRELOAD   # reached yet
        offsets = compute_cycle - _skew_grid(rows_used, cols_used)
        used[(offsets >= 0) & (offsets < timeline.stream)] = ACTIVE
        used[offsets >= timeline.stream] = IDLE
        first = max(0, compute_cycle - (rows_used - 1) - (cols_used - 1))
        last = min(timeline.stream - 1, compute_cycle)
        if first <= last:
            in_flight = (first, last + 1)
    state.setflags(write=False)
    return Step(fold=fold, cycle=cycle, global_cycle=timeline.fold_begin(fold) + cycle,
                phase=phase, stall=phase == "stall", pe_state=state,
                tiles=mapping.operand_tiles(fold), stream_dim=mapping.stream_dim,
                in_flight=in_flight)


class FoldSteps(Sequence):
    """One fold's steps as a lazy sequence: each item is built when it is asked for."""

    def __init__(self, timeline: Timeline, fold: int):
        self.timeline = timeline
        self.fold = timeline.mapping.check_fold(fold)
        self._length = timeline.fold_length(self.fold)

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(f"fold {self.fold} has local cycles 0 to {self._length - 1}")
        return step(self.timeline, self.fold, index)
