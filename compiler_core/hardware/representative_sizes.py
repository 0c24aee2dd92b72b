"""Sizes for a model's symbolic input dims when the user gave none, each with its reason.

A roofline, a memory plan or a systolic schedule of a dynamic model needs numbers for `batch`
and `seq`.  Counting them as 1 makes every transformer GEMM look memory-bound, which teaches
the opposite of the truth, so the analyses price a model at representative sizes instead and
every view says which sizes it used and why:

- the user's own bindings always win (``given``);
- then what the model's own structure fixes (``input_sizes``: a Reshape target holding the
  sequence length an export was traced at, a mask that must cover past and new positions);
- then the model's usual sizes as its maker wrote them down (``hints``: a sample's manifest);
- then the dim's name and the model itself: batch-like names take 1; sequence-like names take
  `SEQUENCE_LENGTH`, or fewer when the model holds a position table with fewer rows (a longer
  sequence could not run); the spatial dims of an image input take `IMAGE_SIDE`;
- any other dim: 1 on the leading axis (where exporters put the batch), else
  `SEQUENCE_LENGTH`, said as a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..input_sizes import plan_sizes
from ..ir import Graph
from ..records import record_field

SEQUENCE_LENGTH = 128
IMAGE_SIDE = 224
GIVEN = "given"
HINT = "the sample's usual size"

_BATCH = re.compile(r"batch|^(n|b|bs|bsz|num_seqs)$", re.IGNORECASE)
_SEQUENCE = re.compile(r"seq|sequence|len|length|token|position|time|step|past|cache|"
                       r"^(s|t|l)$",
                       re.IGNORECASE)
_SPATIAL = re.compile(r"height|width|^(h|w)$", re.IGNORECASE)
_POSITION_TABLE = re.compile(r"position|pos_emb|wpe|pos_embed", re.IGNORECASE)


@dataclass(frozen=True)
class ChosenSize:
    dim: str
    size: int
    reason: str          # GIVEN, HINT, or why the name or the model suggests this size

    @property
    def given(self) -> bool:
        return self.reason == GIVEN


@dataclass(frozen=True)
class ChosenSizes:
    """Every symbolic input dim of one model with the size the analyses use for it."""

    chosen: tuple[ChosenSize, ...] = record_field(key="dims", default=())

    json_derived = ("bindings", "all_given")
    json_order = ("bindings",)

    @property
    def bindings(self) -> dict[str, int]:
        return {c.dim: c.size for c in self.chosen}

    @property
    def all_given(self) -> bool:
        return all(c.given for c in self.chosen)

    def text(self) -> str:
        """'batch=1,seq=128': the form a user types (`--bind`, the app's Bindings box)."""
        return ",".join(f"{c.dim}={c.size}" for c in self.chosen)

    def describe(self) -> str:
        """'batch=1,seq=128 (representative — batch, seq: the sample's usual size)': the sizes
        and where each came from."""
        if not self.chosen:
            return "none needed (every input shape is fixed)"
        if self.all_given:
            return f"{self.text()} (as given)"
        reasons: dict[str, list[str]] = {}
        for c in self.chosen:
            reasons.setdefault(c.reason, []).append(c.dim)
        why = "; ".join(f"{', '.join(dims)}: {reason}" for reason, dims in reasons.items())
        return f"{self.text()} (representative — {why})"

    @classmethod
    def from_dict(cls, data: dict) -> "ChosenSizes":
        return cls(tuple(ChosenSize(d["dim"], d["size"], d["reason"]) for d in data["dims"]))


def choose_sizes(graph: Graph, given: dict[str, int] | None = None,
                 hints: dict[str, int] | None = None) -> ChosenSizes:
    """A size for every symbolic dim of the graph's inputs (module docstring), and the
    user's bindings of dims the inputs do not have, kept as given."""
    given, hints = dict(given or {}), dict(hints or {})
    chosen: dict[str, ChosenSize] = {}
    positions = _largest_position_table(graph)
    for value in graph.inputs:
        shape = value.shape or ()
        for axis, dim in enumerate(shape):
            if not isinstance(dim, str) or dim in chosen:
                continue
            if dim in given:
                chosen[dim] = ChosenSize(dim, given[dim], GIVEN)
            elif dim in hints:
                chosen[dim] = ChosenSize(dim, hints[dim], HINT)
            else:
                chosen[dim] = _by_name(dim, axis, len(shape), positions)
    for dim, size in given.items():
        chosen.setdefault(dim, ChosenSize(dim, size, GIVEN))
    return ChosenSizes(tuple(_fitted(graph, chosen).values()))


def _fitted(graph: Graph, chosen: dict[str, ChosenSize]) -> dict[str, ChosenSize]:
    """The choices with what the model's structure says: a size it fixes replaces the one a
    name or a hint suggested, and a dim written as an expression ('past + 1') follows."""
    plan = plan_sizes(graph, {d: c.size for d, c in chosen.items() if c.given},
                      preferred={d: c.size for d, c in chosen.items()})
    written = {d.name: d.size.evaluate(plan.sizes) for d in plan.dims}
    fitted = {}
    for dim, choice in chosen.items():
        if choice.given or dim not in written:
            fitted[dim] = choice
        elif dim in plan.reasons:
            fitted[dim] = ChosenSize(dim, plan.sizes[dim], f"the model's structure: "
                                                           f"{plan.reasons[dim]}")
        elif dim not in plan.sizes:
            fitted[dim] = ChosenSize(dim, int(written[dim]), f"written as {dim}")
        else:
            fitted[dim] = ChosenSize(dim, plan.sizes[dim], choice.reason)
    return fitted


def _by_name(dim: str, axis: int, rank: int, positions: int | None) -> ChosenSize:
    if _BATCH.search(dim):
        return ChosenSize(dim, 1, "a batch-like name: one example")
    if _SEQUENCE.search(dim):
        return _sequence(dim, positions, "a sequence-like name")
    if rank == 4 and axis >= 2 or _SPATIAL.search(dim):
        return ChosenSize(dim, IMAGE_SIDE, f"an image side ({IMAGE_SIDE} pixels, as ImageNet)")
    if axis == 0:
        return ChosenSize(dim, 1, "the leading axis, taken as the batch")
    return _sequence(dim, positions, "no hint in its name: guessed as a sequence")


def _sequence(dim: str, positions: int | None, why: str) -> ChosenSize:
    if positions is not None and positions < SEQUENCE_LENGTH:
        return ChosenSize(dim, positions, f"{why}; the model's position table holds "
                                          f"{positions} rows")
    return ChosenSize(dim, SEQUENCE_LENGTH, f"{why}: {SEQUENCE_LENGTH} tokens")


def _largest_position_table(graph: Graph) -> int | None:
    """Rows of the largest 2-D weight named like a position embedding (None: none held)."""
    rows = [value.shape[0] for name, value in graph.values.items()
            if value.is_initializer and value.shape is not None and len(value.shape) == 2
            and isinstance(value.shape[0], int) and _POSITION_TABLE.search(name)]
    return max(rows, default=None)
