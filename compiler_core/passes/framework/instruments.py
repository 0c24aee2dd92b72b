"""Instruments: code the PassManager calls around every pass (MLIR's PassInstrumentation).

The manager only runs passes.  Everything else a run does — reporting progress, timing,
recording snapshots, checking numerics against onnxruntime, checking graph invariants and the
properties passes promise, printing the IR — is an instrument with ``before_pass`` and
``after_pass`` hooks, so a caller can add its own (a profiler, a logger) without touching the
manager.  ``before_pass`` hooks run in the order the instruments are listed and ``after_pass``
hooks in reverse, so instruments nest like brackets: the timer, listed last, measures the pass
alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, TextIO

from ...errors import GraphLabError, PropertyViolationError
from ...ir import Graph, format_graph
from ...verify import Verifier
from .base import Pass, PassContext, PassResult
from .diff import GraphDiff, diff_graphs
from .properties import violations
from .snapshots import Snapshot, Tolerance

MAX_VIOLATIONS_NAMED = 5


@dataclass
class PassStep:
    """One pass of a run, as the instruments see it."""

    index: int
    total: int
    the_pass: Pass
    before: Graph         # the previous pass's output (never changed)
    graph: Graph          # the graph the pass works on; after the pass, its output.  The same
    #                       object as ``before`` until the pass first changes it (``wrote``)
    ctx: PassContext
    result: PassResult = field(default_factory=PassResult)   # filled in by the run
    seconds: float = 0.0                                     # set by the Timer (wall)
    cpu_seconds: float = 0.0                                 # set by the Timer (CPU)
    snapshot: Snapshot | None = None                         # set by the SnapshotRecorder
    wrote: bool = False                                      # the pass changed its graph
    changed_nodes: set[int] = field(default_factory=set)     # ids of every node it may have
    #                                                          changed (its write guard's list)

    @property
    def name(self) -> str:
        return self.the_pass.name

    @cached_property
    def diff(self) -> GraphDiff:
        """What the pass changed (computed once, after the pass, for whoever asks), comparing
        only the nodes it may have changed."""
        return diff_graphs(self.before, self.graph, self.changed_nodes) if self.wrote \
            else GraphDiff()


class Instrument:
    """Base class: override the hooks you need (they do nothing by default)."""

    def before_pipeline(self, graph: Graph, passes: list[Pass]) -> None:
        """Called once before the first pass with the input graph and the passes to run."""

    def before_pass(self, step: PassStep) -> None:
        """Called before ``step.the_pass`` runs on ``step.graph``."""

    def after_pass(self, step: PassStep) -> None:
        """Called after the pass ran (``step.result`` and ``step.graph`` are its output)."""


class ProgressReporter(Instrument):
    """Calls ``on_progress(index, total, pass name)`` as each pass starts (the app's builders)."""

    def __init__(self, on_progress: Callable[[int, int, str], None]):
        self.on_progress = on_progress

    def before_pass(self, step: PassStep) -> None:
        self.on_progress(step.index, step.total, step.name)


class Timer(Instrument):
    """Wall and CPU time of each pass, into ``step.seconds`` and ``step.cpu_seconds``."""

    def before_pass(self, step: PassStep) -> None:
        self._started = time.perf_counter()
        self._cpu = time.process_time()

    def after_pass(self, step: PassStep) -> None:
        step.seconds = time.perf_counter() - self._started
        step.cpu_seconds = time.process_time() - self._cpu


class SnapshotRecorder(Instrument):
    """Keeps one Snapshot per pass: the graph after it, its diff and what it reported."""

    def before_pipeline(self, graph: Graph, passes: list[Pass]) -> None:
        self.snapshots: list[Snapshot] = []

    def after_pass(self, step: PassStep) -> None:
        the_pass, result = step.the_pass, step.result
        step.snapshot = Snapshot(step.index, the_pass.name, the_pass.description(), step.graph,
                                 len(step.before), step.diff, result.rewrites, step.seconds,
                                 result.notes, result.declined, result.pattern_reports,
                                 tolerance=the_pass.tolerance,
                                 tolerance_reason=the_pass.tolerance_reason,
                                 cpu_seconds=step.cpu_seconds)
        self.snapshots.append(step.snapshot)


class NumericVerifier(Instrument):
    """Checks each snapshot against the input model with onnxruntime, at the loosest
    tolerance a changing pass so far asked for (listed before the SnapshotRecorder, so its
    ``after_pass`` sees the snapshot)."""

    def __init__(self, inputs: dict | None, bindings: dict[str, int]):
        self.inputs = inputs
        self.bindings = bindings
        self.verifier: Verifier | None = None

    def before_pipeline(self, graph: Graph, passes: list[Pass]) -> None:
        self.verifier = Verifier(graph, inputs=self.inputs, bindings=self.bindings)
        self.tolerance = Tolerance(self.verifier.rtol)

    def after_pass(self, step: PassStep) -> None:
        snapshot = step.snapshot
        if snapshot is None:
            raise GraphLabError("the numeric verifier needs the snapshot recorder after it")
        self.tolerance.update(snapshot)
        snapshot.verify = self.verifier.check(snapshot.graph, self.tolerance.rtol)
        if self.tolerance.note():
            snapshot.notes.append(self.tolerance.note())


class GraphChecker(Instrument):
    """Runs ``Graph.check()`` after every pass: a pass that breaks an IR invariant is caught
    at the pass, not three passes later (tests turn it on)."""

    def after_pass(self, step: PassStep) -> None:
        step.graph.check()


class PropertyChecker(Instrument):
    """Asserts what passes declare: ``requires`` before the pass, ``ensures`` after it."""

    def before_pass(self, step: PassStep) -> None:
        self._check(step, step.graph, step.the_pass.requires, "requires", "before")

    def after_pass(self, step: PassStep) -> None:
        self._check(step, step.graph, step.the_pass.ensures, "ensures", "after")

    @staticmethod
    def _check(step: PassStep, graph: Graph, names: tuple[str, ...], verb: str,
               when: str) -> None:
        for name in names:
            broken = violations(name, graph, step.ctx)
            if broken:
                shown = ", ".join(broken[:MAX_VIOLATIONS_NAMED])
                more = f" and {len(broken) - MAX_VIOLATIONS_NAMED} more" \
                    if len(broken) > MAX_VIOLATIONS_NAMED else ""
                raise PropertyViolationError(
                    f"pass {step.name} {verb} {name!r}, which does not hold {when} it: "
                    f"{shown}{more}", where=broken[0],
                    hint=f"`{verb}` is declared on the pass class; "
                         + ("run a pass that establishes it first" if verb == "requires"
                            else "the pass or its declaration is wrong"))


PRINT_CHANGED = "changed"   # print after every pass that changed the graph
PRINT_ALL = "all"           # print after every pass


class IRPrinter(Instrument):
    """Prints the IR (``format_graph``, as `graphlab show` does) after the passes ``after``
    selects: a pass name (every time it runs), ``changed`` or ``all``."""

    def __init__(self, after: str, stream: TextIO):
        self.after = after
        self.stream = stream

    def before_pipeline(self, graph: Graph, passes: list[Pass]) -> None:
        names = [p.name for p in passes]
        if self.after not in (PRINT_CHANGED, PRINT_ALL) and self.after not in names:
            raise GraphLabError(f"pass {self.after!r} is not in the pipeline",
                                where=self.after,
                                hint=f"give one of {', '.join(dict.fromkeys(names))}, "
                                     f"'{PRINT_CHANGED}' or '{PRINT_ALL}'")

    def after_pass(self, step: PassStep) -> None:
        if self.after == PRINT_ALL or self.after == step.name \
                or self.after == PRINT_CHANGED and step.diff.changed:
            state = "changed" if step.diff.changed else "unchanged"
            print(f"// ----- IR after pass {step.index + 1} of {step.total}: {step.name} "
                  f"({state}) -----", file=self.stream)
            print(format_graph(step.graph), file=self.stream)
