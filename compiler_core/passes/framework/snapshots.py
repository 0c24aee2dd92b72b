"""What a pipeline run leaves behind: one Snapshot per pass, and the PipelineResult.

A snapshot is everything the app and `graphlab compile --json` show about a pass: the graph
after it (structure copied, weights shared), the node ids it removed/added/modified, the
pattern matches and near misses it saw, the rewrites it declined and why, its wall and CPU time, and —
when asked — a numerical check against the input model with onnxruntime.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...ir import Graph, Provenance
from ...patterns.records import PatternRecord
from ...records import record_field, to_json
from ...verify import DEFAULT_RTOL, Verifier, VerifyReport
from .base import Decline
from .diff import GraphDiff


def _verify_summary(report: VerifyReport) -> dict:
    """A check as a pass's record shows it: the largest error, passed or not, the tolerance."""
    return to_json(report, only=("max_abs_err", "ok", "rtol"))


@dataclass
class Snapshot:
    index: int
    pass_name: str = record_field(key="name")
    description: str
    graph: Graph = record_field(omit=True)
    nodes_before: int
    diff: GraphDiff = record_field(omit=True)
    rewrites: int
    seconds: float = record_field(digits=6)
    notes: list[str] = field(default_factory=list)
    declined: list[Decline] = field(default_factory=list)
    pattern_reports: list[PatternRecord] = record_field(key="patterns", default_factory=list)
    verify: VerifyReport | None = record_field(default=None, convert=_verify_summary)
    # The pass's declared drift (Pass.tolerance, tolerance_reason): later checks need it
    # without the pass itself, which may not be registered (an instance, a plugin).
    tolerance: float | None = record_field(omit=True, default=None)
    tolerance_reason: str = record_field(omit=True, default="")
    # the pass's CPU time (this process's): unlike the wall time, it does not count what
    # else the machine runs meanwhile
    cpu_seconds: float = record_field(digits=6, default=0.0)

    # Everything about the pass (the app's record), without the graph itself; SUMMARY: the
    # per-pass record of `graphlab compile --json`.
    json_derived = ("nodes_after", "changed", ("removed", "diff.removed"),
                    ("added", "diff.added"), ("modified", "diff.modified"),
                    ("changes", "modified_nodes"), "provenance")
    SUMMARY = ("name", "nodes_before", "nodes_after", "changed", "rewrites", "seconds",
               "cpu_seconds", "verify")
    json_order = (*SUMMARY, "index", "description", "removed", "added", "modified", "changes",
                  "provenance")

    @property
    def nodes_after(self) -> int:
        return len(self.graph)

    @property
    def changed(self) -> bool:
        return self.diff.changed

    def __repr__(self) -> str:
        what = (f"-{len(self.diff.removed)} +{len(self.diff.added)} ~{len(self.diff.modified)}"
                f", {self.rewrites} rewrite{'s' if self.rewrites != 1 else ''}"
                if self.changed else "changed nothing")
        return (f"<Snapshot {self.index + 1} {self.pass_name}: {self.nodes_before} -> "
                f"{self.nodes_after} nodes ({what})>")

    def summary(self) -> dict:
        """The per-pass record of `graphlab compile --json`."""
        return to_json(self, only=self.SUMMARY)

    def modified_nodes(self) -> list[dict]:
        """Each node the pass kept but changed, with what changed on it (inputs, attributes,
        outputs' types: before → after)."""
        graph = self.graph
        return [{"id": i, "name": graph.node_by_id(i).name,
                 "op": graph.node_by_id(i).qualified_op,
                 "changes": to_json(self.diff.changes_of(i))}
                for i in self.diff.modified if graph.node_by_id(i) is not None]

    @property
    def provenance(self) -> dict[str, Provenance]:
        """Why each node the pass added exists, by its id as text."""
        graph = self.graph
        return {str(i): graph.node_by_id(i).provenance for i in self.diff.added
                if graph.node_by_id(i).provenance is not None}


@dataclass
class PipelineResult:
    initial: Graph
    snapshots: list[Snapshot]
    seconds: float
    verifier: Verifier | None = None  # its inputs and reference outputs serve later checks

    @property
    def final(self) -> Graph:
        return self.snapshots[-1].graph if self.snapshots else self.initial

    def __repr__(self) -> str:
        changed = sum(1 for s in self.snapshots if s.changed)
        return (f"<PipelineResult {len(self.initial)} -> {len(self.final)} nodes: "
                f"{len(self.snapshots)} passes, {changed} changed the graph>")

    def graph_before(self, index: int) -> Graph:
        return self.snapshots[index - 1].graph if index > 0 else self.initial

    @property
    def verify(self) -> VerifyReport | None:
        checked = [s.verify for s in self.snapshots if s.verify is not None]
        return checked[-1] if checked else None

    def tolerance_after(self, index: int, base: float | None = None
                        ) -> tuple[float, str | None]:
        """The tolerance a check of snapshot ``index`` uses, and why it is looser (or None)."""
        if base is None:   # the exact passes' tolerance: the verifier's, if the run had one
            base = self.verifier.rtol if self.verifier else DEFAULT_RTOL
        tolerance = Tolerance(base)
        for snapshot in self.snapshots[:index + 1]:
            tolerance.update(snapshot)
        return tolerance.rtol, tolerance.note()


class Tolerance:
    """The verifier's tolerance along a pipeline: the loosest any changing pass asked for."""

    def __init__(self, base: float = DEFAULT_RTOL) -> None:
        """``base``: the exact passes' tolerance (the verifier's: looser for float16)."""
        self.rtol = self.base = base
        self.set_by: Snapshot | None = None

    def update(self, snapshot: Snapshot) -> None:
        if snapshot.changed and snapshot.tolerance is not None and snapshot.tolerance > self.rtol:
            self.rtol, self.set_by = snapshot.tolerance, snapshot

    def note(self) -> str | None:
        """What the check of a snapshot from here on compares with, and why (None while exact)."""
        if self.set_by is None:
            return None
        return (f"{self.set_by.tolerance_reason} by {self.set_by.pass_name}: compared with "
                f"tolerance {self.rtol:g} of each output's scale (exact passes: "
                f"{self.base:g})")
