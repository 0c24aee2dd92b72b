"""Systolic-array simulator: map a GEMM or convolution onto an R x C array, time it with
SCALE-Sim's model or a double-buffered (overlap) model, and replay any cycle of any fold.

    from compiler_core.hardware.systolic import schedule_gemm
    sched = schedule_gemm(64, 64, 64, rows=32, cols=32, dataflow="ws", timing="scalesim")
    sched.report()["cycles"]; sched.step(fold=3, cycle=40).active
"""

from compiler_core.hardware.systolic.events import ACTIVE, IDLE, LOADING, PADDING, PRELOAD, \
    FoldSteps, Step
from compiler_core.hardware.systolic.mapping import DATAFLOWS, ConvShape, Gemm, Mapping, \
    ScheduleError
from compiler_core.hardware.systolic.schedule import Schedule, schedule_conv, schedule_gemm
from compiler_core.hardware.systolic.timing import TIMINGS

__all__ = [
    "ACTIVE", "IDLE", "LOADING", "PADDING", "PRELOAD", "DATAFLOWS", "TIMINGS", "ConvShape",
    "FoldSteps", "Gemm", "Mapping", "Schedule", "ScheduleError", "Step", "schedule_conv",
    "schedule_gemm",
]
