"""Turns "model + pipeline + bindings" into a Workspace: the pipeline's snapshots plus what the
views need (the nested layout, scope groups, each node's history).  Dims the user did not bind
take representative sizes (`representative_sizes`; a sample's own from its manifest), chosen
once the model is loaded; the pipeline runs with them and every panel prices at them.

Workspaces are keyed by content (a file's identity or an upload's sha256, the pass list, the
bindings): they are caches, not state.  Building one is the heavy step (import + pipeline +
layout); `builds` runs it in a builder process with progress and shares the result with every
server process (`workspace_or_build`), or runs it right here when a caller must wait
(`workspace`).
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from compiler_core.errors import GraphLabError
from compiler_core.hardware.representative_sizes import ChosenSizes, choose_sizes
from compiler_core.ir import Graph, load_model
from compiler_core.passes import PassManager, PipelineResult, resolve_pipeline

from ..samples import get_sample, list_samples
from .builds import BuildJob, Builds, BuildStatus
from .config import AppConfig
from .nested_layout import NestedLayout, pipeline_layout
from .scopes import ScopeTree
from .sessions import SessionStore

if TYPE_CHECKING:
    from .comparison import Comparison

UPLOAD_MODEL = "upload"   # the model name that means "this browser's latest upload"

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class ModelSource:
    """Where a model's bytes come from; equal sources have equal content."""

    label: str
    digest: str
    path: str | None = None
    data: bytes | None = field(default=None, compare=False, repr=False)
    size_hints: tuple[tuple[str, int], ...] = ()   # a sample's usual sizes (its manifest)

    def load(self) -> Graph:
        return load_model(self.path if self.path is not None else self.data)


@dataclass
class NodeHistory:
    """Across the whole pipeline: each node's name, the pass that made it, the pass that
    removed it and the node that replaced it."""

    names: dict[int, str] = field(default_factory=dict)
    made_in: dict[int, int] = field(default_factory=dict)
    removed_in: dict[int, int] = field(default_factory=dict)
    replaced_by: dict[int, int] = field(default_factory=dict)

    @classmethod
    def of(cls, result: PipelineResult) -> "NodeHistory":
        history = cls({n.id: n.name for n in result.initial.nodes})
        for snapshot in result.snapshots:
            graph = snapshot.graph
            for node_id in snapshot.diff.added:
                node = graph.node_by_id(node_id)
                history.names.setdefault(node_id, node.name)
                history.made_in[node_id] = snapshot.index
                for source in node.provenance.sources if node.provenance else ():
                    history.replaced_by.setdefault(source, node_id)
            for node_id in snapshot.diff.removed:
                history.removed_in.setdefault(node_id, snapshot.index)
        return history


@dataclass
class Workspace:
    key: str
    label: str
    result: PipelineResult
    layout: NestedLayout
    scopes: ScopeTree
    default_expanded: frozenset[str]
    history: NodeHistory
    sizes: ChosenSizes = ChosenSizes()   # what the pipeline and the analyses bound dims to
    derived: dict = field(default_factory=dict)   # lazily computed views (a cache)
    # Set when the workspace shows two models side by side instead of a pipeline's passes:
    # its one "pass" is the step from model A to model B (see `comparison`).
    comparison: "Comparison | None" = None

    def graphs_of_step(self, step: int) -> tuple[Graph, Graph]:
        """(graph before pass ``step``, graph after it)."""
        return self.result.graph_before(step), self.result.snapshots[step].graph

    def clamp_step(self, step: int | None) -> int:
        """A pass that exists; no pass named (None): the first that changed the graph, so a
        new view never opens on two identical graphs (the first pass when none changed)."""
        if step is None:
            return next((s.index for s in self.result.snapshots if s.changed), 0)
        return max(0, min(step, len(self.result.snapshots) - 1))


class Workbench:
    """Resolves model names (samples, `serve --model` file, uploads) and builds workspaces."""

    def __init__(self, config: AppConfig, sessions: SessionStore):
        self.config = config
        self.sessions = sessions
        self.builds = Builds(config.cache_dir, config.upload_ttl_seconds)

    def model_options(self) -> list[dict]:
        options = [{"label": s.name, "value": s.name} for s in list_samples()]
        if self.config.extra_model_path:
            name = os.path.basename(self.config.extra_model_path)
            options.insert(0, {"label": name, "value": name})
        return options

    def source(self, model: str, upload_token: str | None = None) -> ModelSource:
        """Only names this server offers are accepted: a URL can never name a server path."""
        if model == UPLOAD_MODEL:
            upload = self.sessions.load_upload(upload_token or "")
            return ModelSource(upload.filename, "sha256:" + upload.digest, data=upload.data)
        extra = self.config.extra_model_path
        if extra and model == os.path.basename(extra):
            return _file_source(model, extra)
        sample = get_sample(model)
        if sample is None:
            raise GraphLabError(f"there is no model named {model!r} here",
                                hint="pick a sample from the list or upload an .onnx file")
        return _file_source(sample.name, sample.path, sample.sizes)

    def workspace(self, source: ModelSource, pipeline: str, sizes: dict[str, int],
                  on_progress: Progress | None = None) -> Workspace:
        """The workspace, built here and now if nobody has built it yet."""
        return self.built(self.job(source, pipeline, sizes), on_progress)

    def workspace_or_build(self, source: ModelSource, pipeline: str, sizes: dict[str, int]
                           ) -> Workspace | BuildStatus:
        """The workspace if it is built, else the status of the build now under way."""
        return self.built_or_building(self.job(source, pipeline, sizes))

    def built(self, job: BuildJob, on_progress: Progress | None = None) -> Workspace:
        """A job's workspace, built here and now if nobody has built it yet."""
        return self.builds.get(job, on_progress)

    def built_or_building(self, job: BuildJob) -> Workspace | BuildStatus:
        """A job's workspace if it is built, else the status of its build."""
        return self.builds.get_or_start(job)

    def job(self, source: ModelSource, pipeline: str, sizes: dict[str, int]) -> BuildJob:
        """Bad pass names are refused here, before any build starts."""
        passes = tuple(resolve_pipeline(pipeline or None))
        bound = tuple(sorted(sizes.items()))
        budget = self.config.group_budget
        key = hashlib.sha256(repr((source.digest, passes, bound, budget)).encode()).hexdigest()
        return BuildJob(key, source.label,
                        functools.partial(_build_workspace, source, passes, bound, budget))


def _file_source(label: str, path: str, size_hints: tuple = ()) -> ModelSource:
    try:
        stat = os.stat(path)
    except OSError as err:
        raise GraphLabError(f"cannot read {label}: {err.strerror}") from err
    return ModelSource(label, f"file:{os.path.abspath(path)}:{stat.st_size}:{stat.st_mtime_ns}",
                       path=path, size_hints=size_hints)


def _build_workspace(source: ModelSource, passes: tuple[str, ...],
                     bindings: tuple[tuple[str, int], ...], group_budget: int,
                     on_progress: Progress | None) -> Workspace:
    graph = source.load()
    sizes = choose_sizes(graph, dict(bindings), dict(source.size_hints))
    result = PassManager(list(passes), bindings=sizes.bindings).run(graph,
                                                                    on_progress=on_progress)
    key = hashlib.sha256(repr((source.digest, passes, bindings)).encode()).hexdigest()[:16]
    return workspace_of(key, source.label, result, group_budget, sizes)


def workspace_of(key: str, label: str, result: PipelineResult, group_budget: int,
                 sizes: ChosenSizes, comparison: "Comparison | None" = None) -> Workspace:
    """The views' precomputed parts of a run: its layout, groups and node histories."""
    layout = pipeline_layout(result)
    return Workspace(key, label, result, layout, layout.scopes,
                     frozenset(layout.default_expanded(group_budget)), NodeHistory.of(result),
                     sizes, comparison=comparison)
