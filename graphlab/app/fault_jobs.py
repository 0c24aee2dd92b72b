"""The app's fault-finding builds: the first wrong value of the view's pass or comparison, and
a failing model shrunk to a few nodes.  Both run both models in onnxruntime (seconds to
minutes), so they are builds like a workspace's (`builds`): a builder runs them, the store
keeps the answer, and no request waits.  The compiler work is `compiler_core.fault_finding`;
here it is only pointed at the workspace's graphs and its answer mapped onto the panes' node
ids.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

from compiler_core.errors import GraphLabError
from compiler_core.fault_finding import (BisectReport, PairError, by_alignment, by_provenance,
                                         failure_of, reduce_model, reproduction_script)
from compiler_core.fault_finding.bisect import bisect_sides
from compiler_core.fault_finding.reduce import generated_feed
from compiler_core.fault_finding.sides import Sides
from compiler_core.ir import Graph, to_bytes
from compiler_core.records import to_json
from compiler_core.verify import make_inputs, with_inference_semantics

from .build_launchers import launcher_for
from .builds import BuildJob, Builds
from .workbench import REDUCED_MODEL, ModelSource, Workspace

REDUCE_SECONDS = 120.0    # the reducer's own limit, well inside a build's (`BUILD_SECONDS`)
# What failed, in the words of `compiler_core.fault_finding.failures.KINDS`, by how the
# numerical check's onnxruntime run ended (`RuntimeOutcome.stage`).
KIND_OF_STAGE = {"crash": "crash", "load": "load-error", "run": "load-error"}


@dataclass
class WrongValues:
    """A bisection of one step of a workspace, with its values placed on the panes' nodes:
    ``a_nodes`` maps A's value names to node ids of the left pane's graph, ``b_nodes`` B's to
    the right pane's."""

    report: BisectReport
    a_nodes: dict[str, int]
    b_nodes: dict[str, int]

    @property
    def first_node(self) -> int | None:
        """The left pane's node that made the first wrong value (None: all agree)."""
        first = self.report.first
        return None if first is None else self.a_nodes.get(first.value.a)

    def node_errors(self, side: str) -> dict[int, float]:
        """Node id -> the largest error of its compared values, on side 'a' or 'b'."""
        nodes = self.a_nodes if side == "a" else self.b_nodes
        errors: dict[int, float] = {}
        for pair in self.report.values:
            node = nodes.get(pair.a if side == "a" else pair.b)
            if node is not None:
                errors[node] = max(errors.get(node, 0.0), pair.error)
        return errors

    def errors_of(self, value_names: list[str]) -> list[PairError | None]:
        """The compared pair of each of A's values (None: not compared)."""
        by_a = {pair.a: pair for pair in self.report.values}
        return [by_a.get(name) for name in value_names]


@dataclass
class ReducedModel:
    """A failing model shrunk: opened in the app by ``name`` like a model of its own."""

    name: str
    label: str
    data: bytes
    script: str
    record: dict

    def source(self) -> ModelSource:
        return ModelSource(self.label, "sha256:" + hashlib.sha256(self.data).hexdigest(),
                           data=self.data)


def keep_wrong_values(workspace: Workspace, step: int, found: WrongValues) -> None:
    """Keep a finished bisection with its workspace, where the panes and inspector read it."""
    workspace.derived[("wrong values", step)] = found


def kept_wrong_values(workspace: Workspace, step: int) -> WrongValues | None:
    return workspace.derived.get(("wrong values", step))


def wrong_values_key(workspace: Workspace, step: int) -> str:
    return hashlib.sha256(repr(("first wrong value", workspace.key, step)).encode()).hexdigest()


def wrong_values_job(builds: Builds, workspace_job: BuildJob, workspace: Workspace,
                     step: int) -> BuildJob:
    """The bisection of ``step`` of the workspace ``workspace_job`` builds (in a comparison,
    model A against model B)."""
    return BuildJob(wrong_values_key(workspace, step),
                    f"first wrong value of {workspace.label}",
                    functools.partial(_wrong_values, builds.storage, builds.ttl, workspace_job,
                                      step))


def reduce_crash_job(builds: Builds, workspace_job: BuildJob, workspace: Workspace, step: int,
                     stage: str, level: str) -> BuildJob:
    """Shrink the graph after pass ``step``, which onnxruntime fails on (``stage``) at
    ``level``, to the few nodes that still fail so."""
    kind = KIND_OF_STAGE.get(stage)
    if kind is None:
        raise GraphLabError(f"onnxruntime's outcome {stage!r} is not a failure to reduce",
                            hint="reduce is offered for a crash or a refusal to load or run")
    snapshot = workspace.result.snapshots[step]
    label = f"{workspace.label} after {snapshot.pass_name}"
    key = hashlib.sha256(repr(("reduce", workspace.key, step, kind, level)).encode()).hexdigest()
    return BuildJob(key, f"reduce {label}", functools.partial(
        _reduce_crash, builds.storage, builds.ttl, workspace_job, step, kind, level, label, key))


def reduce_pass_error_job(source: ModelSource, passes: tuple[str, ...],
                          bindings: dict[str, int]) -> BuildJob:
    """Shrink ``source`` to the few nodes on which a pass of ``passes`` still raises."""
    key = hashlib.sha256(repr(("reduce pass error", source.digest, passes,
                               sorted(bindings.items()))).encode()).hexdigest()
    label = source.label
    return BuildJob(key, f"reduce {label}", functools.partial(
        _reduce_pass_error, source, passes, tuple(sorted(bindings.items())), label, key))


# ---- what a builder does --------------------------------------------------------------------

def _wrong_values(storage, ttl: int, workspace_job: BuildJob, step: int,
                  _on_progress=None) -> WrongValues:
    workspace = Builds(storage, ttl, launcher=launcher_for(storage)).get(workspace_job)
    before, after = workspace.graphs_of_step(step)
    comparison = workspace.comparison
    if comparison is not None:
        sides = Sides(before, after, by_alignment(before, after), comparison.a_label,
                      comparison.b_label)
    else:
        name = workspace.result.snapshots[step].pass_name
        sides = Sides(before, after, by_provenance(before, after, "replaced"),
                      f"before pass {step + 1} ({name})", f"after pass {step + 1} ({name})")
    bindings = workspace.sizes.bindings
    record = {"generated": True, "sizes": workspace.sizes.describe() or "fixed by the model"}
    report = bisect_sides(sides, make_inputs(before, bindings), record, graph=before,
                          bindings=bindings)
    return WrongValues(report, _producers(before), _producers(after))


def _producers(graph: Graph) -> dict[str, int]:
    return {value.name: node.id for node in graph.nodes for value in node.outputs
            if value is not None}


def _reduce_crash(storage, ttl: int, workspace_job: BuildJob, step: int, kind: str, level: str,
                  label: str, key: str, _on_progress=None) -> ReducedModel:
    workspace = Builds(storage, ttl, launcher=launcher_for(storage)).get(workspace_job)
    graph = with_inference_semantics(workspace.result.snapshots[step].graph)
    data = to_bytes(graph)
    feed = generated_feed(graph, workspace.sizes.bindings)
    return _reduced(data, feed, failure_of(kind, data, feed, level=level), label, key)


def _reduce_pass_error(source: ModelSource, passes: tuple[str, ...],
                       bindings: tuple[tuple[str, int], ...], label: str, key: str,
                       _on_progress=None) -> ReducedModel:
    graph = source.load()
    data = to_bytes(graph)
    feed = generated_feed(graph, dict(bindings))
    failure = failure_of("pass-error", data, feed, pipeline=",".join(passes))
    return _reduced(data, feed, failure, label, key)


def _reduced(data: bytes, feed: dict, failure, label: str, key: str) -> ReducedModel:
    import onnx

    reduction = reduce_model(onnx.load_from_string(data), feed, failure, seconds=REDUCE_SECONDS)
    model = reduction.built.model
    record = to_json(reduction)
    return ReducedModel(REDUCED_MODEL + key, f"{label} → {record['nodes_after']} nodes",
                        model.SerializeToString(),
                        reproduction_script(model, reduction.built.feed, failure), record)
