"""Entry points: schedule a GEMM or a convolution on a systolic array and get a `Schedule`.

    schedule_gemm(M, N, K, rows=None, cols=None, dataflow="os", timing="overlap",
                  target=None, dtype=None)
    schedule_conv(H, W, FH, FW, C, N, S=1, ...same keywords...)

`target` (a name, a target-file path or a `Target`; None = the default `asic32`) supplies
the array shape, memory (per-operand SRAM and DRAM bandwidth) and clock; `rows`/`cols`
override its array shape and `memory` (a `MemoryConfig`) its memory.
With timing="scalesim" the memory is SCALE-Sim's, replayed exactly (`scalesim_memory`) when
the layer's streams have at most REPLAY_LIMIT requests; past that the report keeps the
compute-only count and says why (`memory.replayed`).
`dtype` (default: the target's first listed dtype) sets the bytes per element for the
memory model. Shapes and options are checked up front with a `ScheduleError` (a ValueError)
that names the bad argument.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from compiler_core.cached import cached
from compiler_core.hardware.dtypes import canonical_dtype, element_bytes
from compiler_core.hardware.systolic.events import FoldSteps, Step, step
from compiler_core.hardware.systolic.mapping import ConvShape, Gemm, Mapping, ScheduleError, \
    checked_choice
from compiler_core.hardware.systolic.memory_config import MemoryConfig, memory_of_target
from compiler_core.hardware.systolic.timing import TIMING_MEANINGS, Timeline
from compiler_core.hardware.systolic.traffic import FoldTraffic
from compiler_core.hardware.targets import Target, get_target

REPLAY_LIMIT = 300_000   # requests (cycles x array edge): SCALE-Sim needs ~10 s for as many


@dataclass(frozen=True)
class Schedule:
    """A GEMM mapped onto one array under one timing model; everything else derives."""

    mapping: Mapping
    timeline: Timeline
    target: Target
    dtype: str
    memory: MemoryConfig
    conv: ConvShape | None = None

    @property
    def replayable(self) -> bool:
        """Whether SCALE-Sim's memory can be replayed for this layer (size and timing)."""
        if self.timeline.timing != "scalesim":
            return False
        m = self.mapping
        requests = self.folds * self.timeline.fold_alone * (m.rows + m.cols)
        return requests <= REPLAY_LIMIT

    @cached
    def memory_run(self):
        """SCALE-Sim's memory figures (`MemoryRun`), or None when not replayed."""
        if not self.replayable:
            return None
        from compiler_core.hardware.systolic.scalesim_memory import replay
        from compiler_core.hardware.systolic.scalesim_streams import build_streams

        return replay(build_streams(self.mapping, self.conv), self.memory)

    @property
    def cycles(self) -> int:
        run = self.memory_run
        return self.timeline.cycles if run is None else run.cycles

    @property
    def folds(self) -> int:
        return self.mapping.folds

    @property
    def stall_cycles(self) -> int:
        run = self.memory_run
        return self.timeline.stall_cycles if run is None else run.stall_cycles

    @property
    def macs(self) -> int:
        return self.mapping.gemm.macs

    @property
    def mapping_efficiency(self) -> float:
        return self.mapping.mapping_efficiency

    @property
    def utilization(self) -> float:
        """MACs / (busy cycles x R x C), busy cycles = cycles + 1 (so it never exceeds 1)."""
        return self.macs / ((self.cycles + 1) * self.mapping.rows * self.mapping.cols)

    @property
    def seconds(self) -> float:
        return (self.cycles + 1) / self.target.clock_hz

    def step(self, fold: int, cycle: int) -> Step:
        """The array at local `cycle` of `fold` (see `events`)."""
        return step(self.timeline, fold, cycle)

    def fold_steps(self, fold: int) -> FoldSteps:
        """A lazy sequence of one fold's steps."""
        return FoldSteps(self.timeline, fold)

    def fold_at(self, global_cycle: int) -> tuple[int, int]:
        """(fold, local cycle) of the latest fold begun by `global_cycle`."""
        return self.timeline.fold_at(global_cycle)

    def report(self) -> dict:
        from compiler_core.hardware.systolic.report import build_report

        return build_report(self)


def schedule_gemm(M: int, N: int, K: int, rows: int | None = None, cols: int | None = None,
                  dataflow: str = "os", timing: str = "overlap",
                  target: Target | str | os.PathLike | None = None,
                  dtype: str | None = None, memory: MemoryConfig | None = None) -> Schedule:
    """Schedule (M x K) . (K x N) on a rows x cols array."""
    return _schedule(Gemm(M, N, K), rows, cols, dataflow, timing, target, dtype, None, memory)


def schedule_conv(H: int, W: int, FH: int, FW: int, C: int, N: int, S: int = 1,
                  rows: int | None = None, cols: int | None = None, dataflow: str = "os",
                  timing: str = "overlap", target: Target | str | os.PathLike | None = None,
                  dtype: str | None = None, memory: MemoryConfig | None = None) -> Schedule:
    """Schedule an unpadded H x W x C convolution with N filters of FH x FW, stride S, as
    its im2col GEMM (M = OH*OW, K = FH*FW*C, N = N)."""
    conv = ConvShape(H, W, FH, FW, C, N, S)
    return _schedule(conv.gemm(), rows, cols, dataflow, timing, target, dtype, conv, memory)


def _schedule(gemm, rows, cols, dataflow, timing, target, dtype, conv, memory) -> Schedule:
    timing = checked_choice("timing", timing, TIMING_MEANINGS, what="timing model")
    chosen = get_target(target)
    try:
        dtype = chosen.default_dtype if dtype is None else canonical_dtype(dtype)
    except ValueError as err:
        raise ScheduleError(str(err), where="dtype", hint="pass e.g. 'int8' or 'float32'") \
            from None
    mapping = Mapping(gemm, chosen.array_rows if rows is None else rows,
                      chosen.array_cols if cols is None else cols, dataflow)
    memory = memory_of_target(chosen) if memory is None else memory
    traffic = FoldTraffic(mapping, element_bytes(dtype), memory)
    return Schedule(mapping, Timeline(mapping, timing, traffic), chosen, dtype, memory, conv)
