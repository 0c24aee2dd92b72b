"""What the FLOP-counting rules (`op_flops`, `contrib_flops`, `ml_flops`) share: a rule
takes the node's attributes and its inputs' and outputs' shapes (ints, sized), and returns
its FLOPs or None when it cannot tell."""

from __future__ import annotations

from math import prod
from typing import Callable

Rule = Callable[[dict, list, list], "int | None"]


def numel(shape) -> int | None:
    return None if shape is None else int(prod(shape))


def item_at(items: list, index: int):
    """The index-th input's (or output's) shape; None past the end (an optional one left
    out)."""
    return items[index] if index < len(items) else None


def moves_data(attrs: dict, ins: list, outs: list) -> int:
    """A layout change, a copy, a lookup or text split into tokens: bytes, no arithmetic."""
    return 0
