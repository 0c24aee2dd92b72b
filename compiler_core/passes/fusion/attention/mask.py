"""What an attention mask does — causal, sliding window, padding — read from how it is made.

Exporters build masks in many ways: a constant (sizes bound: the comparison folded), Trilu of
ones (SDPA's is_causal), a comparison of two position ranges (key ≤ query), the same with an
offset (a sliding window: key > query − window), the attention_mask input gathered per key
(padding).  The facts feed the fused node's attributes (for display) and the onnxruntime
lowering (which only needs to know the mask, not rebuild it: it passes it on as a bias).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....ir import Value

COMPARISONS = frozenset({"Less", "LessOrEqual", "Greater", "GreaterOrEqual"})
_MASKED_BELOW = -5000.0   # an additive mask value this low hides its key (-1e4, -1e9, min, -inf)
_WALK_LIMIT = 400         # nodes looked at when reading how a mask is made


@dataclass(frozen=True)
class MaskFacts:
    causal: bool = False
    window: int = 0        # keys a query sees in a sliding window (0: no window)
    padding: bool = False  # reads a [batch, seq] model input (which keys are padding)


def mask_facts(mask: Value | None, kind: str) -> MaskFacts:
    """What ``mask`` (bound by the attention pattern, of ``kind`` "additive", "select" or
    "select_masked") does."""
    if mask is None or kind == "none":
        return MaskFacts()
    data = mask.constant_value()
    if data is not None:
        return _constant_facts(_allowed(data, kind))
    return _computed_facts(mask)


def _allowed(data: np.ndarray, kind: str) -> np.ndarray:
    if kind == "select_masked":
        return ~data.astype(bool)
    if data.dtype == np.bool_:
        return data
    return data > _MASKED_BELOW


def _constant_facts(allowed: np.ndarray) -> MaskFacts:
    """A constant [..., S, T] mask: causal when it allows exactly the keys at or before each
    query (the queries being the last S of T positions), a window when it also hides the keys
    more than w − 1 before."""
    if allowed.ndim < 2 or min(allowed.shape[-2:]) < 2:
        return MaskFacts()  # one query row cannot tell causal from unmasked
    rows, keys = allowed.shape[-2:]
    query = np.arange(rows)[:, None] + (keys - rows)
    key = np.arange(keys)[None, :]
    planes = allowed.reshape(-1, rows, keys)
    if not all(np.array_equal(p, planes[0]) for p in planes):
        return MaskFacts()
    plane = planes[0]
    if np.array_equal(plane, key <= query):
        return MaskFacts(causal=True)
    for window in range(1, keys):
        if np.array_equal(plane, (key <= query) & (key > query - window)):
            return MaskFacts(causal=True, window=window)
    return MaskFacts()


def _computed_facts(mask: Value) -> MaskFacts:
    """Facts of a mask computed at run time, from the ops that make it: Trilu or a comparison
    of two run-time positions (causal), a comparison with a position shifted by a constant
    (window), a [batch, seq] model input read for its values (padding).  Shape nodes read
    only sizes, so the walk does not go through them."""
    causal = padding = False
    window = 0
    seen: set[int] = set()
    stack = [mask]
    while stack and len(seen) < _WALK_LIMIT:
        value = stack.pop()
        if value.is_graph_input and not value.is_initializer and (value.rank or 0) >= 2:
            padding = True
        data = value.constant_value()
        if data is not None and data.dtype.kind not in "bf":
            continue  # indices, shapes
        if data is not None:  # a causal part folded for bound sizes, and-ed with padding
            folded = _constant_facts(_allowed(data, "additive"))
            causal, window = causal or folded.causal, max(window, folded.window)
            continue
        node = value.producer
        if node is None or node.id in seen or node.op_type == "Shape":
            continue
        seen.add(node.id)
        if node.op_type == "Trilu" and not node.attrs.get("upper", 1):
            causal = True
        if node.op_type in COMPARISONS and all(not v.is_constant for v in node.inputs):
            causal = True
            window = max(window, *(_offset(v) for v in node.inputs))
        stack += [v for v in node.inputs if v is not None]
    return MaskFacts(causal=causal, window=window if causal else 0, padding=padding)


def _offset(value: Value, hops: int = 4) -> int:
    """The constant a position is shifted by before a comparison (query − window), through
    Unsqueeze/Cast/Reshape; 0 when it is not shifted."""
    for _ in range(hops):
        node = value.producer
        if node is None:
            return 0
        if node.op_type in ("Sub", "Add") and len(node.inputs) == 2:
            constant = node.inputs[1].constant_value()
            if constant is not None and constant.size == 1 and constant.dtype.kind in "iu":
                return abs(int(constant.reshape(-1)[0]))
            return 0
        if node.op_type not in ("Unsqueeze", "Cast", "Reshape"):
            return 0
        value = node.inputs[0]
    return 0
