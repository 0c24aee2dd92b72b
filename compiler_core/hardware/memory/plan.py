"""The memory plan of a graph: every intermediate tensor's offset in one arena.

How it is built (each step its own module):
1. `lifetimes`: the tensors the arena holds and the steps each is live;
2. `inplace`: outputs that take over a dying input's buffer, chaining tensors into one buffer;
3. `arena`: offsets for the buffers, greedy by size with best-fit gaps.
Sizes are rounded up to `alignment` bytes (64 by default, as TFLite and onnxruntime align
their arenas); `size` in a record is that reserved size, `bytes` the tensor's own.

Judge a plan by three numbers: `peak_bytes` (the arena this plan needs), `naive_bytes` (every
tensor in its own buffer) and `lower_bound_bytes` (the most bytes live at any one step, with a
tensor updated in place counted once): no plan can beat the bound.

A fused node's intermediates never reach the arena — they stay in registers or on-chip
buffers — which is what fusion saves in memory; `fused_intermediates` lists them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import GraphLabError
from ...ir import Graph, Node
from ...records import record_field
from ..tensor_sizes import SizeResolver
from .arena import REPAIR_ROUNDS, Interval, assign_offsets, live_bytes
from .inplace import inplace_sources
from .lifetimes import Lifetimes, tensor_lifetimes

DEFAULT_ALIGNMENT = 64


@dataclass(frozen=True)
class BufferRecord:
    """One tensor in the arena: bytes [offset, offset + size) over steps [first, last]."""

    tensor: str
    offset: int
    size: int
    first: int
    last: int
    bytes: int
    reuses: str | None = None   # the tensor whose buffer this one took over in place


@dataclass
class MemoryPlan:
    steps: list[str]
    buffers: list[BufferRecord]
    peak_bytes: int
    naive_bytes: int
    lower_bound_bytes: int
    live_bytes: list[int]
    alignment: int
    inputs: list[tuple[str, int | None]] = record_field(omit=True)
    outputs: list[tuple[str, int | None]] = record_field(omit=True)
    constants: list[tuple[str, int | None]] = record_field(omit=True)
    fused_intermediates: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        return (f"<MemoryPlan: arena peak {self.peak_bytes:,} bytes (lower bound "
                f"{self.lower_bound_bytes:,}, naive {self.naive_bytes:,}); {len(self.buffers)} "
                f"tensors over {len(self.steps)} steps>")

    json_derived = ("outside_arena",)
    json_order = ("peak_bytes", "naive_bytes", "lower_bound_bytes", "alignment", "buffers",
                  "steps", "live_bytes", "outside_arena")

    @property
    def outside_arena(self) -> dict:
        """What the arena does not hold: the graph's inputs and outputs, and its constants
        (counted and summed, not listed)."""
        return {"inputs": _sized(self.inputs), "outputs": _sized(self.outputs),
                "constants": {"count": len(self.constants),
                              "bytes": sum(size or 0 for _, size in self.constants)}}


def _sized(pairs: list[tuple[str, int | None]]) -> list[dict]:
    return [{"tensor": name, "size": size} for name, size in pairs]


def _aligned(nbytes: int, alignment: int) -> int:
    return -(-nbytes // alignment) * alignment


def plan_memory(graph: Graph, bindings: dict[str, int] | None = None,
                alignment: int = DEFAULT_ALIGNMENT,
                repair_rounds: int = REPAIR_ROUNDS) -> MemoryPlan:
    """Plan the arena of ``graph``, a sized graph (see the module docstring;
    ``repair_rounds``: `arena`)."""
    if alignment < 1:
        raise GraphLabError(f"alignment must be at least 1, got {alignment}",
                            where="alignment", hint="use 1 for none, or e.g. 64")
    sizes = SizeResolver(bindings)
    lifetimes = tensor_lifetimes(graph, sizes)
    sources = inplace_sources(lifetimes)
    buffer_of: dict[str, str] = {}
    for tensor in lifetimes.tensors:  # production order: a source is seen before its reuser
        buffer_of[tensor.name] = buffer_of.get(sources.get(tensor.name), tensor.name)
    intervals = _buffer_intervals(lifetimes, buffer_of, alignment)
    offsets = assign_offsets(list(intervals.values()), repair_rounds)
    records = [BufferRecord(t.name, offsets[buffer_of[t.name]],
                            _aligned(t.nbytes, alignment), t.first, t.last, t.nbytes,
                            sources.get(t.name))
               for t in lifetimes.tensors]
    live = live_bytes(list(intervals.values()), len(lifetimes.steps))
    return MemoryPlan(
        steps=[node.name for node in lifetimes.steps],
        buffers=records,
        peak_bytes=max((r.offset + r.size for r in records), default=0),
        naive_bytes=sum(r.size for r in records),
        lower_bound_bytes=max(live, default=0),
        live_bytes=live,
        alignment=alignment,
        inputs=lifetimes.inputs,
        outputs=lifetimes.outputs,
        constants=lifetimes.constants,
        fused_intermediates=_fused_intermediates(lifetimes.steps, sizes),
        notes=_notes(lifetimes, sources, sizes, alignment),
    )


def _buffer_intervals(lifetimes: Lifetimes, buffer_of: dict[str, str],
                      alignment: int) -> dict[str, Interval]:
    """One interval per buffer: the union of the lifetimes of the tensors that share it."""
    intervals: dict[str, Interval] = {}
    for tensor in lifetimes.tensors:
        key = buffer_of[tensor.name]
        size, first, last = _aligned(tensor.nbytes, alignment), tensor.first, tensor.last
        known = intervals.get(key)
        if known is not None:
            size, first, last = max(size, known.size), known.first, max(last, known.last)
        intervals[key] = Interval(key, size, first, last)
    return intervals


def _fused_intermediates(steps: list[Node], sizes: SizeResolver) -> list[dict]:
    """Per fused node, the tensors its body makes and consumes without them leaving it."""
    found = []
    for step, node in enumerate(steps):
        if node.body is None:
            continue
        tensors = [{"tensor": value.name, "size": sizes.nbytes(value)}
                   for value in _inner_values(node)]
        found.append({"node": node.name, "step": step, "tensors": tensors,
                      "bytes": sum(t["size"] or 0 for t in tensors)})
    return found


def _inner_values(node: Node):
    """Values produced inside a fused body (nested bodies included) that it does not return."""
    returned = {value.name for value in node.body.outputs}
    for inner in node.body.nodes:
        for value in inner.outputs:
            if value is not None and value.name not in returned:
                yield value
        if inner.body is not None:
            yield from _inner_values(inner)


def _notes(lifetimes: Lifetimes, sources: dict[str, str], sizes: SizeResolver,
           alignment: int) -> list[str]:
    notes = ["graph inputs, graph outputs and constants are not in the arena: the caller and "
             "the weights own that memory (see outside_arena)"]
    if alignment > 1:
        notes.append(f"every buffer is rounded up to a multiple of {alignment} bytes")
    if sources:
        notes.append(f"{len(sources)} tensor(s) take over a dying input's buffer in place "
                     f"(element-wise ops and views)")
    if lifetimes.unsized:
        notes.append(f"{len(lifetimes.unsized)} tensor(s) of unknown shape are left out: "
                     + ", ".join(lifetimes.unsized[:5]))
    if sizes.assumed:
        notes.append(sizes.assumed_note())
    return notes
