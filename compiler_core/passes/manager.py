"""The PassManager runs a pipeline and records one Snapshot per pass.

A snapshot is everything the app and `graphlab compile --json` show about a pass: the graph
after it (structure copied, weights shared), the node ids it removed/added/modified, the
pattern matches and near misses it saw, the rewrites it declined and why, its wall time, and —
when asked — a numerical check against the input model with onnxruntime.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from ..ir import Graph
from ..patterns.records import PatternRecord
from ..verify import DEFAULT_RTOL, Verifier, VerifyReport
from .base import Decline, Pass, PassContext, PassResult
from .diff import GraphDiff, diff_graphs
from .registry import get_pass, resolve_pipeline

MAX_FIXED_POINT_ITERATIONS = 8


@dataclass
class Snapshot:
    index: int
    pass_name: str
    description: str
    graph: Graph
    nodes_before: int
    diff: GraphDiff
    rewrites: int
    seconds: float
    notes: list[str] = field(default_factory=list)
    declined: list[Decline] = field(default_factory=list)
    pattern_reports: list[PatternRecord] = field(default_factory=list)
    verify: VerifyReport | None = None

    @property
    def nodes_after(self) -> int:
        return len(self.graph)

    @property
    def changed(self) -> bool:
        return self.diff.changed

    def summary(self) -> dict:
        """The per-pass record of `graphlab compile --json`."""
        return {
            "name": self.pass_name,
            "nodes_before": self.nodes_before,
            "nodes_after": self.nodes_after,
            "changed": self.changed,
            "rewrites": self.rewrites,
            "seconds": round(self.seconds, 6),
            "verify": _verify_summary(self.verify),
        }

    def to_dict(self) -> dict:
        """Everything about the pass (the app's record), without the graph itself."""
        graph = self.graph
        return {
            **self.summary(),
            "index": self.index,
            "description": self.description,
            "removed": self.diff.removed,
            "added": self.diff.added,
            "modified": self.diff.modified,
            "provenance": {str(i): graph.node_by_id(i).provenance.to_dict()
                           for i in self.diff.added
                           if graph.node_by_id(i).provenance is not None},
            "notes": self.notes,
            "declined": [d.to_dict() for d in self.declined],
            "patterns": [r.to_dict() for r in self.pattern_reports],
        }


@dataclass
class PipelineResult:
    initial: Graph
    snapshots: list[Snapshot]
    seconds: float
    verifier: Verifier | None = None  # its inputs and reference outputs serve later checks

    @property
    def final(self) -> Graph:
        return self.snapshots[-1].graph if self.snapshots else self.initial

    def graph_before(self, index: int) -> Graph:
        return self.snapshots[index - 1].graph if index > 0 else self.initial

    @property
    def verify(self) -> VerifyReport | None:
        checked = [s.verify for s in self.snapshots if s.verify is not None]
        return checked[-1] if checked else None

    def tolerance_after(self, index: int) -> tuple[float, str | None]:
        """The tolerance a check of snapshot ``index`` uses, and why it is looser (or None)."""
        tolerance = _Tolerance()
        for snapshot in self.snapshots[:index + 1]:
            tolerance.update(get_pass(snapshot.pass_name), snapshot.changed)
        return tolerance.rtol, tolerance.note()


def _verify_summary(report: VerifyReport | None) -> dict | None:
    return None if report is None else {"max_abs_err": report.max_abs_err, "ok": report.ok,
                                        "rtol": report.rtol}


class _Tolerance:
    """The verifier's tolerance along a pipeline: the loosest any changing pass asked for."""

    def __init__(self) -> None:
        self.rtol = DEFAULT_RTOL
        self.set_by: Pass | None = None

    def update(self, the_pass: Pass, changed: bool) -> None:
        if changed and the_pass.tolerance is not None and the_pass.tolerance > self.rtol:
            self.rtol, self.set_by = the_pass.tolerance, the_pass

    def note(self) -> str | None:
        """What the check of a snapshot from here on compares with, and why (None while exact)."""
        if self.set_by is None:
            return None
        return (f"{self.set_by.tolerance_reason} by {self.set_by.name}: compared with "
                f"tolerance {self.rtol:g} of each output's scale (exact passes: "
                f"{DEFAULT_RTOL:g})")


class PassManager:
    """Runs passes by name, snapshotting after each one."""

    def __init__(self, pipeline: str | list[str] | None = None, *,
                 bindings: dict[str, int] | None = None, verify: bool = False,
                 verify_inputs: dict | None = None, check: bool = False,
                 target=None, calibration_inputs: list[dict] | None = None):
        self.pass_names = resolve_pipeline(pipeline)
        self.bindings = dict(bindings or {})
        self.verify = verify
        self.verify_inputs = verify_inputs
        self.check = check  # run Graph.check() after every pass (tests turn it on)
        self.target = target  # PassContext.target: a target name, file or Target
        self.calibration_inputs = calibration_inputs

    def run(self, graph: Graph,
            on_progress: Callable[[int, int, str], None] | None = None) -> PipelineResult:
        """Run the pipeline on a copy of ``graph`` (the input is never changed)."""
        start = time.perf_counter()
        verifier = None
        if self.verify:
            verifier = Verifier(graph, inputs=self.verify_inputs, bindings=self.bindings)
        snapshots: list[Snapshot] = []
        current = graph
        tolerance = _Tolerance()
        for index, name in enumerate(self.pass_names):
            if on_progress:
                on_progress(index, len(self.pass_names), name)
            the_pass = get_pass(name)
            snapshot = self._run_one(index, the_pass, current)
            tolerance.update(the_pass, snapshot.changed)
            if verifier is not None:
                snapshot.verify = verifier.check(snapshot.graph, tolerance.rtol)
                if tolerance.note():
                    snapshot.notes.append(tolerance.note())
            snapshots.append(snapshot)
            current = snapshot.graph
        return PipelineResult(graph, snapshots, time.perf_counter() - start, verifier)

    def _run_one(self, index: int, the_pass: Pass, before: Graph) -> Snapshot:
        name = the_pass.name
        ctx = PassContext(bindings=self.bindings, pass_name=name, target=self.target,
                          calibration_inputs=self.calibration_inputs)
        graph = before.copy()
        started = time.perf_counter()
        result = PassResult()
        iterations = MAX_FIXED_POINT_ITERATIONS if the_pass.fixed_point else 1
        for _ in range(iterations):
            step = the_pass.run(graph, ctx)
            result.merge(step)
            if step.rewrites == 0:
                break
        seconds = time.perf_counter() - started
        if self.check:
            graph.check()
        return Snapshot(index, name, the_pass.description(), graph, len(before),
                        diff_graphs(before, graph), result.rewrites, seconds, result.notes,
                        result.declined, result.pattern_reports)
