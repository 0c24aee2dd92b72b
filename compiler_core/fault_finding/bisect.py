"""Where two models that compute the same thing start to differ: the first wrong value.

Both models run once on the same inputs with every value that has a counterpart exposed
(``exposed``).  Each pair's error is its largest difference relative to A's scale of that value
(its largest finite magnitude), listed in A's topological order.  The first value above the
tolerance is where the error *appears*: every value before it in that order — its inputs among
them — agrees, so the node that made it is where to look.  Its inputs are reported with their
own errors (a constant input compared by content) so a reader sees the jump.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import RunFailedError
from ..ir import Graph, Node, Value
from ..records import record_field, to_json
from ..verify import DEFAULT_ATOL, DEFAULT_RTOL, fit_inputs, with_inference_semantics
from .counterparts import NAME, Counterpart, computed_values
from .exposed import run_exposed


@dataclass
class PairError:
    """One pair of values compared: both names and nodes, how they were paired, the error
    relative to A's scale of the value, the largest absolute difference and that scale.
    ``error`` is inf when the two cannot be compared element for element (``note`` says
    why) or an exact (integer, boolean) value differs anywhere."""

    a: str
    b: str
    a_node: str
    b_node: str
    how: str
    error: float
    max_abs: float
    scale: float
    diverged: bool
    note: str = ""


@dataclass
class InputError:
    """An input of the first wrong node: its counterpart's error, or why there is none."""

    slot: int
    a: str
    b: str | None
    error: float | None
    diverged: bool
    note: str = ""


@dataclass
class Divergence:
    """The first wrong value, the nodes that made it on both sides, its inputs' errors."""

    value: PairError = record_field(omit=True)
    a_op: str = record_field(omit=True)
    b_op: str = record_field(omit=True)
    inputs: list[InputError]
    made_by: str = ""    # the pass that made B's node, when it has provenance

    json_derived = ("a", "b", ("error", "value.error"), ("max_abs", "value.max_abs"),
                    ("scale", "value.scale"), ("note", "value.note"))
    json_order = ("a", "b", "error", "max_abs", "scale", "note", "made_by", "inputs")

    @property
    def a(self) -> dict:
        """A's side: the node, the value it made, its op."""
        return {"node": self.value.a_node, "value": self.value.a, "op": self.a_op}

    @property
    def b(self) -> dict:
        return {"node": self.value.b_node, "value": self.value.b, "op": self.b_op}


@dataclass
class BisectReport:
    """Every compared pair in A's order, the first divergence (None when all agree), and the
    values of each side left without a counterpart."""

    a_label: str = record_field(key="a")
    b_label: str = record_field(key="b")
    values: list[PairError]
    first: Divergence | None = record_field(key="first_divergence")
    unmatched_a: list[str] = record_field(omit=True)
    unmatched_b: list[str] = record_field(omit=True)
    rtol: float
    inputs: dict = field(default_factory=dict)
    seconds: float = record_field(digits=3, default=0.0)

    json_derived = ("unmatched",)
    json_order = ("a", "b", "rtol", "first_divergence", "values", "unmatched")

    @property
    def unmatched(self) -> dict[str, list[str]]:
        return {"a": self.unmatched_a, "b": self.unmatched_b}


def bisect_models(a: Graph, b: Graph, pairs: list[Counterpart], inputs: dict[str, np.ndarray],
                  *, rtol: float = DEFAULT_RTOL, a_label: str = "A", b_label: str = "B",
                  inputs_record: dict | None = None) -> BisectReport:
    """Run both models on ``inputs`` with the paired values exposed and find the first pair
    whose error exceeds ``rtol`` (see the module docstring)."""
    start = time.perf_counter()
    computed = [p for p in pairs if p.a.producer is not None]
    out_a, out_b = run_exposed([(a, [p.a for p in computed]), (b, [p.b for p in computed])],
                               inputs)
    order = {v.name: i for i, v in enumerate(computed_values(a))}
    computed.sort(key=lambda p: order.get(p.a.name, len(order)))
    # a pairing by name alone is refuted when the two values have other shapes
    computed = [p for p in computed if p.how != NAME or _same_shape(out_a.get(p.a.name),
                                                                     out_b.get(p.b.name))]
    errors = [_compare(p, out_a.get(p.a.name), out_b.get(p.b.name), rtol) for p in computed]
    by_a = {e.a: e for e in errors}
    first = next((e for e, p in zip(errors, computed) if e.diverged), None)
    divergence = None
    if first is not None:
        pair = next(p for p in computed if p.a.name == first.a)
        divergence = _divergence(first, pair, by_a, {p.a.name: p for p in pairs}, rtol)
    paired_a = {p.a.name for p in computed} | {v.name for v in a.inputs}
    paired_b = {p.b.name for p in computed} | {v.name for v in b.inputs}
    return BisectReport(a_label, b_label, errors, divergence,
                        [v.name for v in computed_values(a) if v.name not in paired_a],
                        [v.name for v in computed_values(b) if v.name not in paired_b],
                        rtol, inputs_record or {}, time.perf_counter() - start)


def bisect_sides(sides, inputs: dict[str, np.ndarray], record: dict, *, graph: Graph,
                 bindings: dict[str, int] | None = None, rtol: float = DEFAULT_RTOL
                 ) -> BisectReport:
    """Bisect ``sides`` (`sides.Sides`) on ``inputs``; generated inputs (``record`` says so)
    that onnxruntime refuses are made again at other sizes ``graph``, the model they were
    made for, suggests (as `compile` does), given inputs are the user's to fix."""
    def bisected(feed: dict, said: dict) -> BisectReport:
        said["shapes"] = {name: list(array.shape) for name, array in feed.items()}
        return bisect_models(sides.a, sides.b, sides.pairs, feed, rtol=rtol,
                             a_label=sides.a_label, b_label=sides.b_label, inputs_record=said)
    try:
        return bisected(inputs, record)
    except RunFailedError:
        if not record.get("generated"):
            raise
        generated = fit_inputs(with_inference_semantics(graph), bindings)
        return bisected(generated.inputs, {"generated": True, **to_json(generated)})


def value_error(ref, got) -> tuple[float, float, float, str]:
    """(error relative to ``ref``'s scale, max abs difference, scale, note) of two arrays."""
    if ref is None or got is None:
        return math.inf, math.inf, 0.0, "not computed on " + ("A" if ref is None else "B")
    ref, got = np.asarray(ref), np.asarray(got)
    if ref.shape != got.shape:
        return math.inf, math.inf, 0.0, f"shape {list(got.shape)} in B, {list(ref.shape)} in A"
    if ref.size == 0:
        return 0.0, 0.0, 0.0, ""
    if ref.dtype.kind not in "fc" or got.dtype.kind not in "fc":
        if ref.dtype.kind in "OUS":
            same = bool(np.all(ref == got))
        else:
            same = bool(np.array_equal(ref, got))
        bad = 0 if same else int(np.count_nonzero(ref != got))
        return (0.0, 0.0, 0.0, "") if same else (math.inf, math.inf, 0.0,
                                                 f"{bad} of {ref.size} elements differ")
    r, g = ref.astype(np.float64), got.astype(np.float64)
    agree = (np.isnan(r) & np.isnan(g)) | (np.isinf(r) & (r == g))
    diff = np.where(agree, 0.0, np.abs(r - g))
    diff = np.where(np.isnan(diff), np.inf, diff)
    finite = np.abs(r[np.isfinite(r)])
    scale = float(finite.max()) if finite.size else 0.0
    max_abs = float(diff.max())
    note = "" if math.isfinite(max_abs) else "non-finite where A is finite (or the reverse)"
    return (max_abs / scale if scale > 0 else max_abs), max_abs, scale, note


def _compare(pair: Counterpart, ref, got, rtol: float) -> PairError:
    error, max_abs, scale, note = value_error(ref, got)
    diverged = error > rtol and max_abs > DEFAULT_ATOL
    return PairError(pair.a.name, pair.b.name, _node_name(pair.a.producer),
                       _node_name(pair.b.producer), pair.how, error, max_abs, scale,
                       diverged, note)


def _divergence(first: PairError, pair: Counterpart, by_a: dict[str, PairError],
                pairs: dict[str, Counterpart], rtol: float) -> Divergence:
    na, nb = pair.a.producer, pair.b.producer
    inputs = []
    for slot, value in enumerate(na.inputs):
        if value is not None:
            inputs.append(_input_error(slot, value, nb, by_a, pairs, rtol))
    made_by = nb.provenance.pass_name if nb is not None and nb.provenance else ""
    return Divergence(first, na.qualified_op, nb.qualified_op if nb else "", inputs, made_by)


def _input_error(slot: int, value: Value, nb: Node | None, by_a: dict[str, PairError],
                 pairs: dict[str, Counterpart], rtol: float) -> InputError:
    if value.name in by_a:
        e = by_a[value.name]
        return InputError(slot, value.name, e.b, e.error, e.diverged, e.note)
    if value.name in pairs:     # a graph input: fed the same data on both sides
        return InputError(slot, value.name, pairs[value.name].b.name, 0.0, False, "graph input")
    if value.is_constant:
        other = nb.input(slot) if nb is not None else None
        if other is None or not other.is_constant:
            return InputError(slot, value.name, None, None, False,
                              "a constant in A; B's node reads no constant at this slot")
        error, _, _, note = value_error(value.constant_value(), other.constant_value())
        diverged = error > rtol
        return InputError(slot, value.name, other.name, error, diverged,
                          ("constant, changed" if diverged else "constant, the same")
                          + (f": {note}" if note else ""))
    producer = value.producer
    return InputError(slot, value.name, None, None, False,
                      f"no counterpart in B (made by {producer.qualified_op} "
                      f"{producer.name!r})" if producer is not None else "no counterpart in B")


def _same_shape(a, b) -> bool:
    return a is not None and b is not None and np.shape(a) == np.shape(b)


def _node_name(node: Node | None) -> str:
    return "" if node is None else (node.name or f"#{node.id}")
