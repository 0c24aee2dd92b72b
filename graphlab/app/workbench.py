"""Turns "model + pipeline + bindings + target" into a Workspace: the compilation (the compile
entry's record: what it decided, the pipeline's snapshots) plus what the views need (the
nested layout, scope groups, each node's history).  The compile entry decides the sizes (dims
the user did not bind take representative sizes; a sample's own from its manifest), which
every panel prices at, and what the pipeline binds — as `graphlab compile` does.

Workspaces are keyed by content (a file's identity or an upload's sha256) and by everything
the compile entry says changes the result (``compilation.result_key``: the passes, the
bindings, the target when a pass plans for it): they are caches, not state.  Building one is the heavy step (import + pipeline +
layout); `builds` runs it in a builder process with progress and shares the result with every
server process (`workspace_or_build`), or runs it right here when a caller must wait
(`workspace`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import socket
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

from compiler_core.compilation import Compilation, compile_model, result_key
from compiler_core.errors import GraphLabError
from compiler_core.hardware.representative_sizes import ChosenSizes
from compiler_core.ir import Graph, load_model
from compiler_core.model_diff.sides import file_bytes
from compiler_core.passes import PipelineResult

from ..samples import get_sample, list_samples
from .build_launchers import launcher_for
from .builds import BuildJob, Builds, BuildStatus
from .config import AppConfig
from .graph_analyses import traffic_of
from .layout_store import LayoutStore
from .nested_layout import LAYOUT_VERSION, NestedLayout, pipeline_layout
from .scopes import ScopeTree
from .sessions import SessionStore, read_upload_bytes
from .shared_storage import SharedStorage

if TYPE_CHECKING:
    from .comparison import Comparison

UPLOAD_MODEL = "upload"   # the model name that means "this browser's latest upload"
REDUCED_MODEL = "reduced-"   # + a reduce build's key: the model it reduced to (`fault_jobs`)

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class ModelSource:
    """Where a model's bytes come from; equal sources have equal content.  An upload is read
    from the shared storage by its digest where the build runs, so a build job stays small."""

    label: str
    digest: str
    path: str | None = None
    data: bytes | None = field(default=None, compare=False, repr=False)
    size_hints: tuple[tuple[str, int], ...] = ()   # a sample's usual sizes (its manifest)
    stored_in: SharedStorage | None = None         # an upload: where its bytes are
    sample: str | None = None   # a bundled sample: found by name where the build runs
    opens_on: str | None = None   # a teaching sample's pass (manifest: teaches_pass)

    def load(self) -> Graph:
        return load_model(self._located())

    def original_bytes(self) -> bytes | None:
        """The model file's bytes as given (None: too big to hand over whole)."""
        found = self._located()
        return found if isinstance(found, bytes) else file_bytes(found)

    def _located(self) -> str | bytes:
        """The model's path or bytes where this runs (a server, a builder, a worker)."""
        if self.sample is not None:
            return get_sample(self.sample).path
        if self.path is not None:
            if not os.path.exists(self.path):   # a worker on another machine
                raise GraphLabError(
                    f"{self.label}: {self.path} is not on the machine {socket.gethostname()}",
                    hint="with --redis, a --model file must be at the same path on every "
                         "worker (a shared folder); or upload it in the page")
            return self.path
        if self.data is None and self.stored_in is not None:
            return read_upload_bytes(self.stored_in, self.digest.removeprefix("sha256:"),
                                     self.label)
        return self.data

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
                made = node.provenance
                for source in (*made.replaced_ids, *made.sources) if made else ():
                    history.replaced_by.setdefault(source, node_id)
            for node_id in snapshot.diff.removed:
                history.removed_in.setdefault(node_id, snapshot.index)
        return history


@dataclass
class Workspace:
    key: str
    label: str
    compilation: Compilation   # what was decided, and the pipeline's snapshots
    layout: NestedLayout
    scopes: ScopeTree
    default_expanded: frozenset[str]
    history: NodeHistory
    derived: dict = field(default_factory=dict)   # lazily computed views (a cache)
    # Set when the workspace shows two models side by side instead of a pipeline's passes:
    # its one "pass" is the step from model A to model B (see `comparison`).
    comparison: "Comparison | None" = None
    # the pass a teaching sample is about (its manifest's teaches_pass): a new view opens on it
    opens_on: str | None = None

    @property
    def result(self) -> PipelineResult:
        return self.compilation.result

    @property
    def sizes(self) -> ChosenSizes:
        """The sizes every panel prices at (the compile entry's decision)."""
        return self.compilation.decisions.sizes

    def graphs_of_step(self, step: int) -> tuple[Graph, Graph]:
        """(graph before pass ``step``, graph after it)."""
        return self.result.graph_before(step), self.result.snapshots[step].graph

    def clamp_step(self, step: int | None) -> int:
        """A pass that exists; no pass named (None): for a teaching sample the pass it teaches
        (where that pass changed the graph), else the first that changed the graph, so a new
        view never opens on two identical graphs (the first pass when none changed)."""
        if step is None:
            changed = [s for s in self.result.snapshots if s.changed]
            taught = next((s.index for s in changed if s.pass_name == self.opens_on), None)
            return taught if taught is not None else (changed[0].index if changed else 0)
        return max(0, min(step, len(self.result.snapshots) - 1))


class Workbench:
    """Resolves model names (samples, `serve --model` file, uploads) and builds workspaces."""

    def __init__(self, config: AppConfig, sessions: SessionStore):
        self.config = config
        self.sessions = sessions
        self.builds = Builds(sessions.storage, config.upload_ttl_seconds, config.build_seconds,
                             config.build_memory_mb, launcher=launcher_for(sessions.storage))

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
            return ModelSource(upload.filename, "sha256:" + upload.digest,
                               stored_in=self.sessions.storage)
        if model.startswith(REDUCED_MODEL):
            reduced = self.builds.ready(model[len(REDUCED_MODEL):])
            if not callable(getattr(reduced, "source", None)):   # gone, or not a reduction
                raise GraphLabError("this reduced model is no longer kept here",
                                    hint="reduce the failing model again")
            return reduced.source()
        extra = self.config.extra_model_path
        if extra and model == os.path.basename(extra):
            return _file_source(model, extra)
        sample = get_sample(model)
        if sample is None:
            raise GraphLabError(f"there is no model named {model!r} here",
                                hint="pick a sample from the list or upload an .onnx file")
        return replace(_file_source(sample.name, sample.path, sample.sizes),
                       path=None, sample=sample.name, opens_on=sample.teaches_pass)

    def workspace(self, source: ModelSource, pipeline: str, sizes: dict[str, int],
                  target: str | None = None, on_progress: Progress | None = None) -> Workspace:
        """The workspace, built here and now if nobody has built it yet."""
        return self.built(self.job(source, pipeline, sizes, target), on_progress)

    def workspace_or_build(self, source: ModelSource, pipeline: str, sizes: dict[str, int],
                           target: str | None = None) -> Workspace | BuildStatus:
        """The workspace if it is built, else the status of the build now under way."""
        return self.built_or_building(self.job(source, pipeline, sizes, target))

    def built(self, job: BuildJob, on_progress: Progress | None = None) -> Workspace:
        """A job's workspace, built here and now if nobody has built it yet."""
        return self.builds.get(job, on_progress)

    def built_or_building(self, job: BuildJob) -> Workspace | BuildStatus:
        """A job's workspace if it is built, else the status of its build."""
        return self.builds.get_or_start(job)

    def job(self, source: ModelSource, pipeline: str, sizes: dict[str, int],
            target: str | None = None) -> BuildJob:
        """Bad pass names and unknown targets are refused here, before any build starts."""
        result = result_key(pipeline or None, sizes, target)
        budget = self.config.group_budget
        key = hashlib.sha256(repr((source.digest, result, budget, LAYOUT_VERSION,
                                   source.opens_on)).encode()).hexdigest()
        return BuildJob(key, source.label,
                        functools.partial(_build_workspace, source, pipeline or None,
                                          dict(sizes), target, budget, self.config.cache_dir))


def _file_source(label: str, path: str, size_hints: tuple = ()) -> ModelSource:
    """Keyed by content, so servers on machines with other paths or dates share its builds."""
    try:
        stat = os.stat(path)
        digest = _file_digest(os.path.abspath(path), stat.st_size, stat.st_mtime_ns)
    except OSError as err:
        raise GraphLabError(f"cannot read {label}: {err.strerror}") from err
    return ModelSource(label, "sha256:" + digest, path=path, size_hints=size_hints)


@functools.lru_cache(maxsize=64)
def _file_digest(path: str, _size: int, _mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _build_workspace(source: ModelSource, pipeline: str | None, bindings: dict[str, int],
                     target: str | None, group_budget: int, cache_dir: str,
                     on_progress: Progress | None) -> Workspace:
    compiled = compile_model(source.load(), pipeline, bindings, target,
                             size_hints=dict(source.size_hints), on_progress=on_progress)
    key = hashlib.sha256(repr((source.digest, compiled.decisions.result_key())
                              ).encode()).hexdigest()[:16]
    workspace = workspace_of(key, source.label, compiled, group_budget,
                             layouts=LayoutStore(cache_dir))
    workspace.opens_on = source.opens_on
    traffic_of(workspace, compiled.decisions.target)   # kept in its cache, pickled with it
    return workspace


def workspace_of(key: str, label: str, compilation: Compilation, group_budget: int,
                 comparison: "Comparison | None" = None,
                 layouts: LayoutStore | None = None) -> Workspace:
    """The views' precomputed parts of a run: its layout (every group's layer order taken
    from, or left in, ``layouts``), groups and node histories."""
    result = compilation.result
    layout = pipeline_layout(result)
    if layouts is not None:
        layouts.complete(layout)
    return Workspace(key, label, compilation, layout, layout.scopes,
                     frozenset(layout.default_expanded(group_budget)), NodeHistory.of(result),
                     comparison=comparison)
