"""Hardware models: targets as cited data files, roofline arithmetic, a systolic-array simulator.

    from compiler_core.hardware import get_target, classify, schedule_gemm
"""

from compiler_core.hardware.roofline import attainable_ops_per_s, classify, estimate_seconds, \
    ridge_point
from compiler_core.hardware.systolic import schedule_conv, schedule_gemm
from compiler_core.hardware.targets import DEFAULT_TARGET, Target, TargetError, get_target, \
    list_targets

__all__ = [
    "DEFAULT_TARGET", "Target", "TargetError", "attainable_ops_per_s", "classify",
    "estimate_seconds", "get_target", "list_targets", "ridge_point", "schedule_conv",
    "schedule_gemm",
]
