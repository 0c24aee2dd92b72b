"""Roofline arithmetic (Williams, Waterman, Patterson, CACM 2009) for one target and dtype.

    attainable(I) = min(peak, bandwidth * I)     I = arithmetic intensity, ops per byte
    ridge         = peak / bandwidth             where the two limits meet
    time          = max(ops / peak, bytes / bandwidth)

An op at or right of the ridge (I >= ridge) is "compute"-bound, left of it "memory"-bound.
Counting an op's ops and bytes is the caller's job; this module only does the arithmetic.
`target` is a `Target`, a built-in target name or the path of a target file; `dtype` picks
the peak (see `compiler_core.hardware.targets` for the fallback when it is not listed).
"""

from __future__ import annotations

import math
import os

from compiler_core.hardware.targets import Target, get_target

TargetLike = Target | str | os.PathLike | None


def _non_negative(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) \
            or value < 0:
        raise ValueError(f"{name} must be a non-negative number, got {value!r}")
    return float(value)


def ridge_point(target: TargetLike = None, dtype: str | None = None) -> float:
    """Ops per byte at which the target turns from memory-bound to compute-bound."""
    return get_target(target).ridge_point(dtype)


def attainable_ops_per_s(intensity: float, target: TargetLike = None,
                         dtype: str | None = None) -> float:
    """min(peak, bandwidth x intensity): the best rate an op of this intensity can reach."""
    intensity = _non_negative("intensity", intensity)
    chosen = get_target(target)
    return min(chosen.peak(dtype), chosen.bandwidth_bytes_per_s * intensity)


def classify(intensity: float, target: TargetLike = None, dtype: str | None = None) -> str:
    """"compute" when intensity >= ridge (the ridge itself counts as compute), else "memory"."""
    intensity = _non_negative("intensity", intensity)
    return "compute" if intensity >= ridge_point(target, dtype) else "memory"


def estimate_seconds(flops: float, bytes_moved: float, target: TargetLike = None,
                     dtype: str | None = None) -> float:
    """max(flops / peak, bytes / bandwidth): the roofline's lower bound on run time."""
    flops = _non_negative("flops", flops)
    bytes_moved = _non_negative("bytes_moved", bytes_moved)
    chosen = get_target(target)
    return max(flops / chosen.peak(dtype), bytes_moved / chosen.bandwidth_bytes_per_s)
