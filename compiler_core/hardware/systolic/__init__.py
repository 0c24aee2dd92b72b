"""Systolic-array simulator: map a GEMM or convolution onto an R x C array, time it with
SCALE-Sim's model or a double-buffered (overlap) model, and replay any cycle of any fold.

    from compiler_core.hardware.systolic import schedule_gemm
    sched = schedule_gemm(64, 64, 64, rows=32, cols=32, dataflow="ws", timing="scalesim")
    sched.report()["cycles"]; sched.step(fold=3, cycle=40).active

Each name is imported from its module when first asked for (``lazy_exports``): a target that
reads its memory configuration does not import the simulator with it.
"""

from compiler_core.lazy_exports import lazy_exports

_MODULE_OF = {
    **dict.fromkeys(["ACTIVE", "IDLE", "LOADING", "PADDING", "PRELOAD", "FoldSteps", "Step"],
                    "events"),
    **dict.fromkeys(["DATAFLOWS", "ConvShape", "Gemm", "Mapping", "ScheduleError"], "mapping"),
    **dict.fromkeys(["Schedule", "schedule_conv", "schedule_gemm"], "schedule"),
    "TIMINGS": "timing",
}

__all__ = sorted(_MODULE_OF)
__getattr__ = lazy_exports(__name__, _MODULE_OF, globals())
