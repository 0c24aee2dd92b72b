"""Concrete tensor shapes and byte sizes for the hardware models, from possibly symbolic shapes.

An exported model usually has symbolic dims ('batch', 'seq', or 'unk__3' where shape inference
gave up). The cost model, the memory planner and the GEMM mapper all need numbers, so they
resolve dims through one `SizeResolver`: a bound dim takes its binding, an unbound one counts
as 1 and is remembered, so every report can say which sizes were assumed (and which ops).
"""

from __future__ import annotations

import math

from ..ir import Value
from ..ir.dtypes import element_bits
from ..ir.shape_inference import is_unnamed_dim


class SizeResolver:
    """Resolves value shapes to ints with the user's bindings, remembering what it assumed."""

    def __init__(self, bindings: dict[str, int] | None = None):
        self.bindings = dict(bindings or {})
        self.assumed: set[str] = set()

    def shape(self, value: Value | None) -> tuple[int, ...] | None:
        """The shape with every dim an int, or None for a missing value or an unknown rank."""
        if value is None or value.shape is None or not value.is_tensor:
            return None
        dims = []
        for dim in value.shape:
            if isinstance(dim, int):
                dims.append(dim)
            elif isinstance(dim, str) and dim in self.bindings:
                dims.append(self.bindings[dim])
            else:
                self.assumed.add(str(dim) if dim is not None else "?")
                dims.append(1)
        return tuple(dims)

    def nbytes(self, value: Value | None) -> int | None:
        """Bytes the value occupies (sub-byte types rounded up), or None if its shape is unknown."""
        shape = self.shape(value)
        if shape is None:
            return None
        return (math.prod(shape) * element_bits(value.elem_type) + 7) // 8

    def assumed_note(self) -> str:
        """'unbound dims counted as 1: batch, seq' or '' when nothing was assumed.

        Dims shape inference could not name ('unk__7', '?') are counted, not listed: no
        binding reaches them.  The analyses price a copy specialized at the bindings
        (`compilation.sized`), so the ones left are those no size could be learnt for
        (a TopK whose k is an input, NonZero).
        """
        if not self.assumed:
            return ""
        named = sorted(d for d in self.assumed if not _is_anonymous(d))
        anonymous = len(self.assumed) - len(named)
        parts = [", ".join(named)] if named else []
        if anonymous:
            parts.append(f"{anonymous} dim(s) shape inference could not name, even with "
                         f"the inputs' dims bound (the ops they size are marked)")
        return "unbound dims counted as 1: " + "; ".join(parts)


def _is_anonymous(dim: str) -> bool:
    return dim == "?" or is_unnamed_dim(dim)   # '?' stands for a None dim here
