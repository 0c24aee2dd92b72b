"""The one adapter between the inspector and the per-op cost model: a node's cost record
(the same one the roofline draws) as the figures the inspector lists.

A node the cost model cannot price reads "n/a" with the reason; a node priced with a dim
nobody could size says which; a fused node adds what its body would move op by op and the
share of that traffic fusion keeps on chip.
"""

from __future__ import annotations

from compiler_core.hardware.cost import OpCost

NOT_AVAILABLE = "n/a"
FIELDS = ("FLOPs", "bytes moved", "intensity (FLOP/byte)", "bound", "time at roofline")
UNFUSED = "bytes moved unfused (body op by op)"
SAVED = "traffic fusion keeps on chip"
ASSUMED = "dims counted as 1 (unknown size)"


def node_metrics(cost: OpCost | None) -> tuple[dict[str, str], str]:
    """(figure name -> text, a note to show under them)."""
    if cost is None:
        return {name: NOT_AVAILABLE for name in FIELDS}, "no cost for this node"
    if not cost.modelled:
        return {name: NOT_AVAILABLE for name in FIELDS}, cost.note
    figures = {
        "FLOPs": f"{cost.flops:,}",
        "bytes moved": f"{cost.bytes:,}",
        "intensity (FLOP/byte)": f"{cost.intensity:.2f}",
        "bound": cost.bound,
        "time at roofline": f"{cost.est_seconds * 1e6:.3g} µs",
    }
    if cost.unfused_bytes:
        figures[UNFUSED] = f"{cost.unfused_bytes:,}"
        figures[SAVED] = f"{cost.fusion_saving:.0%} ({cost.unfused_bytes - cost.bytes:,} bytes)"
    if cost.assumed_dims:
        figures[ASSUMED] = ", ".join(cost.assumed_dims)
    return figures, cost.note
