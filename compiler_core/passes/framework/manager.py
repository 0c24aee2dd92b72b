"""The PassManager runs a pipeline of passes; instruments around each pass do the rest.

A pipeline mixes pass and preset names, Pass instances and pass sources (``as_pass()``, e.g. a
rule set); see ``registry.resolve_passes``.  Each pass works on the previous pass's graph
under a write guard (``ir.write_guard``): its first change copies the graph as it was for the
snapshots that share it, so every snapshot stays intact and a pass that changes nothing copies
nothing (snapshots of passes that changed nothing share one graph; before the first change,
the input graph itself, which the pipeline's working copy still equals); a pass's diff
compares only the nodes its guard lists as changed.  Snapshots, timing, progress, the
numerical check and the graph checks are instruments (``instruments.py``) built from the
constructor's flags; callers add their own with ``instruments=[...]``.  While no pass
changes the graph, the passes share their pattern reports (``pattern_pass.ReportCache``).  A
pass that raises is reported as a PassFailedError naming the pass and the node it was working
on (``PassContext.current_node``).
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

from ...errors import GraphLabError, PassFailedError
from ...ir import Graph
from ...ir.collection import collection_paused
from ...ir.write_guard import WriteGuard
from .base import Pass, PassContext, PassResult
from .diff import diff_graphs
from .instruments import (GraphChecker, Instrument, NumericVerifier, PassStep, ProgressReporter,
                          PropertyChecker, SnapshotRecorder, Timer)
from .pass_registry import PipelineEntry, resolve_passes
from .pattern_pass import ReportCache
from .snapshots import PipelineResult, Snapshot

__all__ = ["MAX_FIXED_POINT_ITERATIONS", "PassManager", "PipelineResult", "Snapshot"]

MAX_FIXED_POINT_ITERATIONS = 8


class PassManager:
    """Runs passes, snapshotting after each one."""

    def __init__(self, pipeline: str | Sequence[PipelineEntry] | None = None, *,
                 bindings: dict[str, int] | None = None, verify: bool = False,
                 verify_inputs: dict | None = None, check: bool = False,
                 target=None, calibration_inputs: list[dict] | None = None,
                 instruments: Sequence[Instrument] = (), all_near_misses: bool = True,
                 explain: bool = True):
        self.passes = resolve_passes(pipeline)
        self.bindings = dict(bindings or {})
        self.verify = verify
        self.verify_inputs = verify_inputs
        # run Graph.check() and the passes' requires/ensures checks around every pass (tests)
        self.check = check
        self.target = target  # PassContext.target: a target name, file or Target
        self.calibration_inputs = calibration_inputs
        self.instruments = list(instruments)
        self.all_near_misses = all_near_misses   # False: only those rules turn into declines
        self.explain = explain   # False: no near misses judged at all, hence none declined

    @collection_paused
    def run(self, graph: Graph,
            on_progress: Callable[[int, int, str], None] | None = None) -> PipelineResult:
        """Run the pipeline on a copy of ``graph`` (the input is never changed)."""
        start = time.perf_counter()
        recorder = SnapshotRecorder()
        verifier = NumericVerifier(self.verify_inputs, self.bindings) if self.verify else None
        instruments = self._instruments(recorder, verifier, on_progress)
        for instrument in instruments:
            instrument.before_pipeline(graph, self.passes)
        current = graph.copy() if self.passes else graph   # the caller's graph never changes
        unchanged: Graph | None = graph   # what ``current`` equals until a pass first writes
        reports = ReportCache()
        for index, the_pass in enumerate(self.passes):
            ctx = PassContext(bindings=self.bindings, pass_name=the_pass.name,
                              target=self.target, calibration_inputs=self.calibration_inputs,
                              reports=reports, all_near_misses=self.all_near_misses,
                              explain=self.explain)
            step = PassStep(index, len(self.passes), the_pass, current, current, ctx)
            for instrument in instruments:
                instrument.before_pass(step)
            before = current.structure_key() if self.check else None
            with WriteGuard(current, lambda: _keep_before(step, recorder.snapshots,
                                                          unchanged)) as guard:
                reports.watch(current, lambda: not guard.fired)
                step.result = _run_pass(the_pass, step.graph, ctx)
            step.wrote = guard.fired
            step.changed_nodes = guard.changed_nodes
            if step.wrote:
                reports.forget()
                unchanged = None
            if before is not None and step.before.structure_key() != before:
                raise _unguarded_write(the_pass)
            if self.check and step.wrote and step.diff != diff_graphs(step.before, step.graph):
                raise _unlisted_change(the_pass)
            for instrument in reversed(instruments):
                instrument.after_pass(step)
            current = step.graph
        return PipelineResult(graph, recorder.snapshots, time.perf_counter() - start,
                              verifier.verifier if verifier else None)

    def _instruments(self, recorder: SnapshotRecorder, verifier: NumericVerifier | None,
                     on_progress) -> list[Instrument]:
        """Progress first; the caller's; the checks; the verifier before the recorder whose
        snapshot it fills in; the timer last, so it times the pass alone."""
        return [*([ProgressReporter(on_progress)] if on_progress else []),
                *self.instruments,
                *([GraphChecker(), PropertyChecker()] if self.check else []),
                *([verifier] if verifier else []),
                recorder, Timer()]


def _keep_before(step: PassStep, snapshots: list[Snapshot], same: Graph | None) -> None:
    """The pass is about to change its graph: the step and the snapshots that share that
    graph keep a copy of it as it is, or ``same``, a graph it still equals (the input, while
    no pass has changed anything: a second copy of it would only cost)."""
    kept = same if same is not None else step.graph.copy()
    for snapshot in reversed(snapshots):
        if snapshot.graph is not step.graph:
            break
        snapshot.graph = kept
    step.before = kept


def _unguarded_write(the_pass: Pass) -> GraphLabError:
    return _behind_the_guard(
        the_pass, "the graph", "a container such as node.attrs changed in place before any "
        "change through the Graph's methods", "the previous snapshot keeps its graph")


def _unlisted_change(the_pass: Pass) -> GraphLabError:
    return _behind_the_guard(
        the_pass, "a node", "a field set directly after the pass's first change",
        "the diff lists every node the pass changed", consequence="so its diff misses the node")


def _behind_the_guard(the_pass: Pass, what: str, how: str, so: str,
                      consequence: str = "") -> GraphLabError:
    """A pass changed ``what`` in a way the write guard does not see (check mode finds it)."""
    return GraphLabError(
        f"pass {the_pass.name} changed {what} behind the write guard's back ({how})"
        + (f", {consequence}" if consequence else ""),
        where=the_pass.name,
        hint="change nodes through Graph methods (set_node_attr, remove_node_attr, add_node, "
             f"replace_all_uses, ...), so {so}")


def _run_pass(the_pass: Pass, graph: Graph, ctx: PassContext) -> PassResult:
    """Run the pass (to a fixed point if it asks); an exception becomes a PassFailedError."""
    result = PassResult()
    iterations = MAX_FIXED_POINT_ITERATIONS if the_pass.fixed_point else 1
    try:
        for _ in range(iterations):
            step = the_pass.run(graph, ctx)
            result.merge(step)
            if step.rewrites == 0:
                break
    except (GraphLabError, MemoryError):
        raise   # a message for the user already (an unknown target, a bad calibration file),
        #         or the machine's limit, not the pass's bug: the caller knows what it allowed
    except Exception as err:  # noqa: BLE001 - any bug in a pass is reported with its name
        raise _failure(the_pass, ctx, err) from err
    return result


def _failure(the_pass: Pass, ctx: PassContext, err: Exception) -> PassFailedError:
    node = ctx.current_node
    where = f"at node {node.name!r} ({node.op_type})" if node is not None else \
        "at a node it did not name"
    return PassFailedError(
        f"pass {the_pass.name} failed {where}: {type(err).__name__}: {err}",
        where=node.name if node is not None else the_pass.name,
        hint=f"a bug in the pass: please report it with the model, or leave "
             f"{the_pass.name} out of the pipeline")
