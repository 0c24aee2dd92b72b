"""Numbers a student can read at a glance: bytes, seconds and rates with their units."""

from __future__ import annotations

_SI = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]
_BINARY = [(1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
_SMALL_TIMES = [(1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"), (1e-12, "ps")]


def format_bytes(count: float | None) -> str:
    """'1.5 MiB', '512 B'; '?' when unknown."""
    if count is None:
        return "?"
    for scale, unit in _BINARY:
        if abs(count) >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count:.0f} B"


def format_si(value: float, unit: str) -> str:
    """'32 TOPS' style: value with an SI prefix, then the unit."""
    for scale, prefix in _SI:
        if abs(value) >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def format_seconds(seconds: float) -> str:
    """'2.13 µs'; '0 s' for nothing."""
    if seconds == 0:
        return "0 s"
    for scale, unit in _SMALL_TIMES:
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.3g} s"
