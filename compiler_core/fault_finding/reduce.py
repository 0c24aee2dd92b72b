"""Shrink a failing model to a few nodes that still fail the same way (delta debugging).

Zeller's ddmin over a graph, in the order that removes the most per check:

1. **Prefix**: bisect the topological order for the shortest prefix that still fails, every
   value it hands to the rest of the model an output; its last node is where it fails.
2. **Cone**: keep only what that node's outputs need (or, if the failure needs more, as few of
   the prefix's outputs as do).
3. **Cut from above**: bisect for the most of the cone's upper part that can become new graph
   inputs, fed the data those values held when the whole model ran.
4. **Node by node**: ddmin over the nodes left — a node whose outputs can become inputs, or
   whose output can be replaced by one of its inputs of the same type (a branch dropped), goes.
5. **Constants and sizes**: inputs become the constants they held where the failure stays; the
   tensors fed in are cut to the smallest size that still fails where shapes allow (every axis
   of one size at once).

A candidate is kept only if ``Failure.check`` says it still fails the same way.  Every check
runs onnxruntime in a child, so a crash is an answer; ``seconds`` bounds the whole search and
the smallest candidate found so far is the result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import onnx

from ..errors import GraphLabError
from ..records import record_field
from ..runtime_check import run_isolated
from .failures import Failure
from .subgraph import Built, Cut, Source

DEFAULT_SECONDS = 300.0


@dataclass
class Step:
    """One accepted reduction: which phase, the node count after it, the time spent so far."""

    phase: str
    nodes: int
    checks: int
    seconds: float = record_field(digits=3)


@dataclass
class Reduction:
    """The result: the smallest failing model found, its inputs, how it was reached."""

    failure: Failure = record_field(omit=True)
    original_nodes: int = record_field(key="nodes_before")
    built: Built = record_field(omit=True)
    seen: str = record_field(key="last_seen")
    steps: list[Step] = field(default_factory=list)
    checks: int = 0
    seconds: float = record_field(digits=3, default=0.0)
    timed_out: bool = False

    json_derived = (("kind", "failure.kind"), ("level", "failure.level"),
                    ("failure", "failure.describe"), ("nodes_after", "nodes"), "ops", "inputs")
    json_order = ("kind", "level", "failure", "last_seen", "nodes_before", "nodes_after", "ops",
                  "inputs")

    @property
    def nodes(self) -> int:
        return len(self.built.model.graph.node)

    @property
    def ops(self) -> list[str]:
        return [n.op_type for n in self.built.model.graph.node]

    @property
    def inputs(self) -> dict[str, dict]:
        """The reduced model's inputs: dtype and shape of each array fed."""
        return {k: {"dtype": str(v.dtype), "shape": list(v.shape)}
                for k, v in self.built.feed.items()}


def reference_values(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every value the model computes on ``feed`` with onnxruntime's optimizer off, in a
    child ({} when it does not run there: cut values are then fed zeros)."""
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    known = {o.name for o in exposed.graph.output}
    for node in exposed.graph.node:
        for name in node.output:
            if name and name not in known:
                exposed.graph.output.append(onnx.ValueInfoProto(name=name))
                known.add(name)
    outcome = run_isolated(exposed.SerializeToString(), [feed], level="disabled")
    return outcome.outputs[0] if outcome.ok else {}


class Reducer:
    """One reduction of ``source`` around ``failure`` (see the module docstring)."""

    def __init__(self, source: Source, failure: Failure, *, seconds: float = DEFAULT_SECONDS,
                 on_progress: Callable[[Step], None] | None = None):
        self.source, self.failure = source, failure
        self.deadline = time.monotonic() + seconds
        self.start = time.monotonic()
        self.on_progress = on_progress
        self.checks = 0
        self.steps: list[Step] = []
        self.timed_out = False
        self.best = Cut(tuple(o.name for o in source.graph.output))
        self.best_built = source.build(self.best)
        self.seen = ""

    # -- checking -------------------------------------------------------------------------------
    def fails(self, cut: Cut) -> bool:
        """Whether ``cut`` still fails (False once time is up: the search then winds down)."""
        if time.monotonic() > self.deadline:
            self.timed_out = True
            return False
        try:
            built = self.source.build(cut)
        except (KeyError, ValueError, onnx.checker.ValidationError):
            return False
        if not built.model.graph.node:
            return False
        self.checks += 1
        verdict = self.failure.check([built])[0]
        if verdict.fails:
            self.seen = verdict.seen
        return verdict.fails

    def accept(self, cut: Cut, phase: str) -> None:
        self.best, self.best_built = cut, self.source.build(cut)
        step = Step(phase, len(self.best_built.model.graph.node), self.checks,
                    time.monotonic() - self.start)
        self.steps.append(step)
        if self.on_progress:
            self.on_progress(step)

    def try_cut(self, cut: Cut, phase: str) -> bool:
        if self.fails(cut):
            self.accept(cut, phase)
            return True
        return False

    # -- the phases -----------------------------------------------------------------------------
    def run(self) -> Reduction:
        self.prefix()
        self.cone()
        self.cut_from_above()
        self.node_by_node()
        self.to_constants()
        self.shrink()
        self.node_by_node()
        return Reduction(self.failure, len(self.source.nodes), self.best_built, self.seen,
                         self.steps, self.checks, time.monotonic() - self.start,
                         self.timed_out)

    def _kept(self) -> list[int]:
        return self.source.needed(self.best)

    def _prefix_cut(self, kept: list[int], upto: int) -> Cut:
        """The candidate made of ``kept[:upto + 1]``: every value it computes that a later
        node or the graph reads is an output."""
        inside = set(kept[:upto + 1])
        later_reads = {r for i in kept[upto + 1:] for r in self.source.reads[i]}
        wanted = set(self.best.outputs) | later_reads
        outputs = tuple(out for i in kept[:upto + 1] for out in self.source.nodes[i].output
                        if out and out in wanted and self.source.producer.get(out) in inside)
        return self.best.but(outputs=outputs)

    def nearest_failing(self, passing: int, failing: int,
                        candidate: Callable[[int], Cut]) -> int:
        """Bisect between a value whose candidate passes and one whose candidate fails (in
        either order, the failure monotone between them): the failing value nearest the
        passing one."""
        while abs(failing - passing) > 1 and not self.timed_out:
            middle = (passing + failing) // 2
            if self.fails(candidate(middle)):
                failing = middle
            else:
                passing = middle
        return failing

    def prefix(self) -> None:
        kept = self._kept()
        bad = self.nearest_failing(-1, len(kept) - 1, lambda upto: self._prefix_cut(kept, upto))
        if bad < len(kept) - 1:
            self.accept(self._prefix_cut(kept, bad), "prefix")

    def cone(self) -> None:
        last = self.source.nodes[self._kept()[-1]]
        own = tuple(o for o in last.output if o)
        if set(own) != set(self.best.outputs) and self.try_cut(self.best.but(outputs=own),
                                                               "cone"):
            return
        self.ddmin([o for o in self.best.outputs if o not in own], lambda gone: self.best.but(
            outputs=tuple(o for o in self.best.outputs if o not in gone)), "outputs")

    def _cut_above(self, kept: list[int], upto: int) -> Cut:
        """``kept[:upto]`` gone: what the rest reads from them becomes graph inputs."""
        gone = {out for i in kept[:upto] for out in self.source.nodes[i].output if out}
        reads = {r for i in kept[upto:] for r in self.source.reads[i]}
        return self.best.but(inputs=self.best.inputs | frozenset(gone & reads))

    def cut_from_above(self) -> None:
        kept = self._kept()
        # cutting 0 fails (it is the candidate); cutting all leaves no nodes
        good = self.nearest_failing(len(kept), 0, lambda upto: self._cut_above(kept, upto))
        if good:
            self.accept(self._cut_above(kept, good), "cut above")

    def node_by_node(self) -> None:
        """ddmin over the nodes (their outputs made inputs), then try bypassing each."""
        def without(group: list[int]) -> Cut:
            outs = {o for i in group for o in self.source.nodes[i].output if o}
            return self.best.but(inputs=self.best.inputs | (outs - set(self.best.outputs)))
        self.ddmin(self._kept(), without, "remove nodes",
                   lambda group: group & set(self._kept()))
        self.bypass_nodes()

    def ddmin(self, items: list, without: Callable[[list], Cut], phase: str,
              alive: Callable[[set], set] = lambda group: group) -> None:
        """Remove chunks of ``items`` (``without(chunk)`` is the candidate without them) while
        the failure stays, halving the chunk size down to single items, until no single item
        can go.  ``alive`` keeps those of a chunk the current candidate still has (a node an
        earlier removal left unused is gone already)."""
        items = list(items)
        chunk = max(1, len(items) // 2)
        while items and not self.timed_out:
            removed = False
            snapshot = list(items)
            for begin in range(0, len(snapshot), chunk):
                group = alive({x for x in snapshot[begin:begin + chunk] if x in items})
                items = [x for x in items if x in group or x not in snapshot[begin:begin + chunk]]
                if group and self.try_cut(without(sorted(group)), phase):
                    items = [x for x in items if x not in group]
                    removed = True
            if chunk == 1 and not removed:
                break
            chunk = max(1, chunk // 2)

    def bypass_nodes(self) -> None:
        """Replace a node's only output by one of its inputs of the same type (a Cast, an
        Identity, a branch that only passes its input on), where the failure stays."""
        for index in reversed(self._kept()):
            node = self.source.nodes[index]
            outs = [o for o in node.output if o]
            if index not in self._kept() or len(outs) != 1 or len(self._kept()) <= 1:
                continue
            for name in dict.fromkeys(n for n in node.input if n):
                if not self._same_type(outs[0], name):
                    continue
                if outs[0] in self.best.outputs:
                    cut = self.best.but(outputs=tuple(name if o == outs[0] else o
                                                      for o in self.best.outputs))
                else:
                    cut = self.best.but(bypass=self.best.bypass + ((outs[0], name),))
                if self.try_cut(cut, "bypass"):
                    break

    def _same_type(self, a: str, b: str) -> bool:
        va, vb = self.source.values.get(a), self.source.values.get(b)
        if va is not None and vb is not None:
            return va.dtype == vb.dtype and va.shape == vb.shape
        types = self.source.types
        return a in types and types.get(a) == types.get(b)

    def to_constants(self) -> None:
        """Inputs, and Constant nodes' outputs, become initializers holding their data: all at
        once, else one by one."""
        constant_nodes = [out for i in self._kept() if self.source.nodes[i].op_type == "Constant"
                          for out in self.source.nodes[i].output if out in self.source.values]
        names = [name for name in list(self.best_built.feed) + constant_nodes
                 if name not in self.best.outputs]

        def as_constants(chosen) -> Cut:
            return self.best.but(constants=self.best.constants | set(chosen),
                                 inputs=self.best.inputs - set(chosen))
        if len(names) > 1 and self.try_cut(as_constants(names), "to constants"):
            return
        for name in names:
            self.try_cut(as_constants([name]), "to constant")

    def shrink(self) -> None:
        """Cut every axis of one size in the tensors fed in to the smallest size that still
        fails: 1 first, else a bisection between 1 and the size."""
        for size in self.source.dims(self.best.but(shrink=())):
            def cut_to(new: int) -> Cut:
                return self.best.but(shrink=tuple(sorted({**dict(self.best.shrink),
                                                          size: new}.items())))
            if self.try_cut(cut_to(1), "shrink"):
                continue
            bad = self.nearest_failing(1, size, cut_to)   # 1 does not fail; the size does
            if bad < size:
                self.accept(cut_to(bad), "shrink")


def generated_feed(graph, bindings: dict[str, int] | None = None) -> dict[str, np.ndarray]:
    """Inputs to reduce ``graph`` (a `Graph`) on: sizes onnxruntime accepts unoptimized, or,
    for a model it cannot run so, the sizes planned from its structure."""
    from ..verify import fit_inputs, make_inputs, with_inference_semantics

    try:
        return fit_inputs(with_inference_semantics(graph), bindings).inputs
    except GraphLabError:   # a model onnxruntime cannot run unoptimized: inputs as planned
        return make_inputs(graph, bindings)


def reduce_model(model: onnx.ModelProto, feed: dict[str, np.ndarray], failure: Failure, *,
                 seconds: float = DEFAULT_SECONDS,
                 on_progress: Callable[[Step], None] | None = None) -> Reduction:
    """The smallest sub-model of ``model`` found within ``seconds`` that still shows
    ``failure``; a GraphLabError when the model itself does not."""
    source = Source(model, feed, reference_values(model, feed))
    reducer = Reducer(source, failure, seconds=seconds, on_progress=on_progress)
    start = reducer.failure.check([reducer.best_built])[0]
    reducer.checks += 1
    if not start.fails:
        raise GraphLabError(f"the model does not show the failure to reduce: {start.seen}",
                            hint="pick the failure the model has with --until (crash, "
                                 "load-error, mismatch, pass-error) and its --level")
    reducer.seen = start.seen
    return reducer.run()
