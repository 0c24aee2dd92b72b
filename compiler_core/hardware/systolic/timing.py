"""The two timing models: when each fold starts, how long it waits, and the total cycles.

Notation for one fold on an R x C array: T = the streamed length (K for os, M for ws, N for
is); P = R preload cycles for ws/is (the stationary tile enters one row per cycle), 0 for os;
S = R + C - 2, the skew: PE (i, j) works i + j cycles after PE (0, 0). A fold's stream starts
at cycle s; then PE (i, j) of the fold's used region is busy exactly in [s + i + j,
s + i + j + T). Its phases, as labels: preload P, fill R - 1, stream T, drain C - 1, summing to
one fold alone, P + S + T cycles. Cycles are numbered from 0 and `cycles` is the number of the
last busy cycle: one less than the count of cycles, which is SCALE-Sim's convention.

timing="scalesim" (SCALE-Sim 3.0.0's compute model: folds back to back, nothing overlapped,
no stalls). With F folds:
    os:  cycles = F * (R + C + K - 2) - 1          F = ceil(M/R) * ceil(N/C)
    ws:  cycles = F * (2R + C + M - 2) - 1         F = ceil(K/R) * ceil(N/C)
    is:  cycles = F * (2R + C + N - 2) - 1         F = ceil(K/R) * ceil(M/C)

timing="overlap" (Gemmini-style double buffering). Each PE has a shadow register, so the next
fold's stationary tile (ws/is: preloaded weights or inputs; os: the finished outputs being
shifted out) moves in the background. The next fold's wavefront can follow the previous one
as soon as (a) the previous stream has gone in (T cycles) and (b) the stationary swap of R
cycles is done, so consecutive folds start gap = max(T, R) cycles apart, and a fold's fill
overlaps the previous fold's drain:
    s_0 = P,   s_k = s_(k-1) + gap + stall_k,   cycles = s_(F-1) + S + T - 1.
Without stalls this is P + (F - 1) * max(T, R) + S + T - 1, never more than the scalesim
count: each extra fold costs max(T, R) <= P + S + T instead of P + S + T.

Stalls (overlap only; see `traffic` for the bytes). stall_0 = 0. For k >= 1, the memory must
move window_cycles(k) = ceil((fold k's fetches + fold k-1's store) / bytes_per_cycle):
    SRAM double-buffered:  stall_k = max(0, window_cycles(k) - gap)   (hidden behind compute)
    otherwise:             stall_k = window_cycles(k)                 (nothing hidden)
With stalls, `cycles - stall_cycles` is still never above the scalesim count.

Per-fold cycles (`fold_cycles`): fold k adds stall_k + gap, the last fold stall + P + S + T, so
they sum to cycles + 1 (in the scalesim model every fold is P + S + T). All of it is computed
per block of identical folds (`Mapping.fold_blocks`), so any fold's start is O(1) to find.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler_core.cached import cached
from compiler_core.hardware.systolic.mapping import FoldBlock, Mapping, ScheduleError
from compiler_core.hardware.systolic.traffic import FoldTraffic

TIMING_MEANINGS = {"scalesim": "SCALE-Sim 3.0.0's cycle count",
                   "overlap": "double-buffered, the default"}
TIMINGS = tuple(TIMING_MEANINGS)


@dataclass(frozen=True)
class Timeline:
    """Fold start times, stalls and totals of one mapping under one timing model.

    A fold's shape is worked out once, on construction (every report reads it): `preload`
    (P), `skew` (S), `stream` (T), `fold_alone` (P + S + T: one fold from its first preload
    cycle to its last result) and `period` (the cycles between consecutive stream starts
    when nothing stalls).
    """

    mapping: Mapping
    timing: str
    traffic: FoldTraffic

    def __post_init__(self):
        self.__dict__.update(self._shape())

    def _shape(self) -> dict:
        """The fold's shape, set in one step (plain attributes: they follow from the
        fields, and a property would cost a call on every read)."""
        mapping = self.mapping
        preload = 0 if mapping.dataflow == "os" else mapping.rows
        skew = mapping.rows + mapping.cols - 2
        stream = mapping.stream_length
        fold_alone = preload + skew + stream
        period = fold_alone if self.timing == "scalesim" else max(stream, mapping.rows)
        return {"preload": preload, "skew": skew, "stream": stream, "fold_alone": fold_alone,
                "period": period}

    def _stall_at(self, row_fold: int, col_fold: int) -> int:
        if self.timing == "scalesim" or (row_fold == 0 and col_fold == 0):
            return 0
        window = self.traffic.window_cycles(row_fold, col_fold)
        if self.traffic.double_buffered:
            return max(0, window - self.period)
        return window

    def _block_stall(self, block: FoldBlock) -> int:
        return self._stall_at(block.row_lo, block.group_lo)

    def stall(self, fold: int) -> int:
        """Cycles fold `fold` waits for memory before it can start."""
        return self._stall_at(*self.mapping.fold_position(fold))

    def stalls_before(self, fold: int) -> int:
        """Sum of the stalls of folds 0 .. fold - 1."""
        return sum(self._block_stall(b) * b.count_before(fold) for b in self.mapping.fold_blocks)

    @cached
    def stall_cycles(self) -> int:
        if self.timing == "scalesim":
            return 0
        return sum(self._block_stall(b) * b.size for b in self.mapping.fold_blocks)

    def stream_start(self, fold: int) -> int:
        """Global cycle at which `fold`'s first streamed element enters the array."""
        fold = self.mapping.check_fold(fold)
        return self.preload + fold * self.period + self.stalls_before(fold + 1)

    def fold_begin(self, fold: int) -> int:
        """Global cycle at which `fold` starts waiting (stall) or preloading."""
        return self.stream_start(fold) - self.preload - self.stall(fold)

    def fold_length(self, fold: int) -> int:
        """Cycles of the fold's own timeline: its stall, preload, fill, stream and drain."""
        return self.stall(fold) + self.fold_alone

    def fold_phases(self, fold: int) -> list[tuple[str, int, int]]:
        """The fold's own timeline as (phase, first local cycle, stop) spans, in order:
        stall, preload, fill (R - 1), stream (T), drain (C - 1); empty phases left out."""
        lengths = (("stall", self.stall(fold)), ("preload", self.preload),
                   ("fill", self.mapping.rows - 1), ("stream", self.stream),
                   ("drain", self.mapping.cols - 1))
        spans, start = [], 0
        for phase, length in lengths:
            if length > 0:
                spans.append((phase, start, start + length))
            start += length
        return spans

    @cached
    def cycles(self) -> int:
        if self.timing == "scalesim":      # folds back to back, each P + S + T cycles
            return self.mapping.folds * self.fold_alone - 1
        last = self.mapping.folds - 1
        return self.stream_start(last) + self.skew + self.stream - 1

    def fold_cycles(self, fold: int) -> int:
        """Cycles fold `fold` adds to the total; over all folds they sum to cycles + 1."""
        last = self.mapping.check_fold(fold) == self.mapping.folds - 1
        return self.stall(fold) + (self.fold_alone if last else self.period)

    def fold_at(self, cycle: int) -> tuple[int, int]:
        """(fold, local cycle) of the latest fold that has begun by global `cycle`."""
        if not 0 <= cycle <= self.cycles:
            raise ScheduleError(f"cycle {cycle} is outside the schedule", where="cycle",
                                hint=f"cycles run from 0 to {self.cycles}")
        low, high = 0, self.mapping.folds - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self.fold_begin(middle) <= cycle:
                low = middle
            else:
                high = middle - 1
        return low, cycle - self.fold_begin(low)

    def cycles_per_fold(self, limit: int = 256) -> tuple[str, list[list[int]]]:
        """("runs", [[cycles, count], ...] in fold order) if at most `limit` runs, else
        ("histogram", [[cycles, count], ...] sorted by cycles)."""
        if self.timing == "scalesim":      # folds back to back, each P + S + T cycles
            return "runs", [[self.fold_alone, self.mapping.folds]]
        runs = self._runs(limit)
        if runs is not None:
            return "runs", runs
        counts: dict[int, int] = {}
        for block in self.mapping.fold_blocks:
            value = self.fold_cycles(block.first_fold)
            counts[value] = counts.get(value, 0) + block.size
        return "histogram", [[value, counts[value]] for value in sorted(counts)]

    def _runs(self, limit: int) -> list[list[int]] | None:
        runs: list[list[int]] = []

        def add(value: int, count: int) -> None:
            if runs and runs[-1][0] == value:
                runs[-1][1] += count
            else:
                runs.append([value, count])

        blocks_by_group: dict[tuple[int, int], list[FoldBlock]] = {}
        for block in self.mapping.fold_blocks:
            blocks_by_group.setdefault((block.group_lo, block.group_hi), []).append(block)
        for (group_lo, group_hi), blocks in blocks_by_group.items():
            pattern = [(self.fold_cycles(b.first_fold), b.row_hi - b.row_lo + 1)
                       for b in blocks]
            groups = group_hi - group_lo + 1
            if len({value for value, _ in pattern}) == 1:
                add(pattern[0][0], self.mapping.row_folds * groups)
                continue
            if len(runs) + groups * len(pattern) > limit:
                return None
            for _ in range(groups):
                for value, count in pattern:
                    add(value, count)
        return runs

    def phase_totals(self) -> dict[str, int]:
        """Cycles per phase summed over folds; `overlapped` is what the overlap hid, so
        preload + fill + stream + drain + stall - overlapped = cycles + 1."""
        folds = self.mapping.folds
        totals = {
            "preload": folds * self.preload,
            "fill": folds * (self.mapping.rows - 1),
            "stream": folds * self.stream,
            "drain": folds * (self.mapping.cols - 1),
            "stall": self.stall_cycles,
        }
        totals["overlapped"] = sum(totals.values()) - (self.cycles + 1)
        return totals
