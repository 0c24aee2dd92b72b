"""The one adapter between the inspector and the per-op cost model.

Only this module knows the cost model's API (``compiler_core.hardware.cost.node_cost``); if it
cannot cost a node, the figures read "n/a" and the note says why.
"""

from __future__ import annotations

from compiler_core.hardware.cost import node_cost
from compiler_core.ir import Node

NOT_AVAILABLE = "n/a"
FIELDS = ("FLOPs", "bytes moved", "intensity (FLOP/byte)", "bound", "time at roofline")


def node_metrics(node: Node, target: str, bindings: dict[str, int]) -> tuple[dict[str, str], str]:
    """(figure name -> text, a note to show under them)."""
    try:
        cost = node_cost(node, target, bindings)
    except Exception as err:  # noqa: BLE001 - a figure we cannot compute is not an app error
        return {name: NOT_AVAILABLE for name in FIELDS}, f"no cost for this node: {err}"
    if not cost.modelled:
        return {name: NOT_AVAILABLE for name in FIELDS}, cost.note
    figures = {
        "FLOPs": f"{cost.flops:,}",
        "bytes moved": f"{cost.bytes:,}",
        "intensity (FLOP/byte)": f"{cost.intensity:.2f}",
        "bound": cost.bound,
        "time at roofline": f"{cost.est_seconds * 1e6:.3g} µs",
    }
    return figures, cost.note
