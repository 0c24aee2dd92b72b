"""What a compilation decides before any pass runs, in one place, and says it decided.

- **Sizes.** Every symbolic input dim gets a size (``representative_sizes.choose_sizes``: the
  user's, the model's structure, the sample's usual size, the dim's name), and every analysis
  prices the model at those sizes.
- **Bindings.** The pipeline specializes only the dims the user bound: a compiled model keeps
  accepting any size it was not told to fix, so the CLI, the app and the notebook compile the
  same graph (bind a dim to fold its shape arithmetic away).  A pipeline holding a pass that
  plans for fixed sizes (``Pass.needs_fixed_sizes``: partitioning, since an accelerator runs
  only fixed sizes) binds every dim at its decided size, and says which pass asked.
- **Target.** The chip the pipeline plans for: the user's or the default, refused when
  unknown before any pass runs.  Only a pass that plans for the chip (``Pass.reads_target``:
  partitioning) makes the result depend on it; for any other pipeline the decided target is
  None (the result is the same on every chip; the analyses price it on the chip the view
  names), so a build key that holds the decided target holds everything that changes the
  result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..hardware.representative_sizes import ChosenSizes, choose_sizes
from ..hardware.targets import DEFAULT_TARGET, get_target
from ..ir import Graph
from ..passes import Pass, resolve_passes
from ..passes.framework.pass_registry import DEFAULT_PRESET, PipelineEntry
from ..records import record_field


@dataclass(frozen=True)
class Decisions:
    """The sizes, the bindings, the target and the passes one compilation runs with (data
    only: it travels with a build to other processes)."""

    pipeline: str                  # as asked: a preset, "p1,p2,...", or the passes' names
    sizes: ChosenSizes             # every symbolic input dim's size, and why
    bound: dict[str, int]          # what the pipeline specializes: the user's bindings
    target: str | None             # the chip the passes planned for (None: none reads one)
    pass_names: tuple[str, ...] = record_field(key="passes", default=())
    # the passes whose result depends on the target
    target_readers: tuple[str, ...] = record_field(key="target_read_by", default=())
    # the passes that made every dim bound
    fixed_size_readers: tuple[str, ...] = record_field(key="all_bound_for", default=())

    json_derived = ("left_symbolic",)

    @property
    def left_symbolic(self) -> list[str]:
        return [c.dim for c in self.sizes.chosen if c.dim not in self.bound]

    @property
    def given(self) -> dict[str, int]:
        """The sizes the user gave."""
        return {c.dim: c.size for c in self.sizes.chosen if c.given}

    def given_text(self) -> str:
        """'seq=64': the user's sizes as typed ('' when none)."""
        return ",".join(f"{dim}={size}" for dim, size in self.given.items())

    def result_key(self) -> tuple:
        """Everything here that changes the pipeline's result (see ``result_key``)."""
        return (self.pass_names, tuple(sorted(self.given.items())), self.target)


def decide(graph: Graph, pipeline: str | Sequence[PipelineEntry] | None = DEFAULT_PRESET,
           bindings: dict[str, int] | None = None, target: str | None = None,
           size_hints: dict[str, int] | None = None) -> Decisions:
    """The decisions for ``graph`` (module docstring); bad pass names and unknown targets are
    refused here."""
    return decided_for(graph, resolve_passes(pipeline), pipeline_text(pipeline), bindings,
                       target, size_hints)


def decided_for(graph: Graph, passes: Sequence[Pass], pipeline: str,
                bindings: dict[str, int] | None, target: str | None,
                size_hints: dict[str, int] | None) -> Decisions:
    """``decide`` for passes already resolved (``pipeline``: as the user asked for them)."""
    readers = tuple(p.name for p in passes if p.reads_target)
    chosen_target = _checked_target(target)
    chosen_target = chosen_target if readers else None
    sizes = decide_sizes(graph, bindings, size_hints)
    fixed = tuple(p.name for p in passes if p.needs_fixed_sizes)
    return Decisions(pipeline, sizes, sizes.bindings if fixed else dict(bindings or {}),
                     chosen_target, tuple(p.name for p in passes), readers, fixed)


def decide_sizes(graph: Graph, bindings: dict[str, int] | None = None,
                 size_hints: dict[str, int] | None = None) -> ChosenSizes:
    """The sizes the analyses price ``graph`` at, with no pipeline run (module docstring)."""
    return choose_sizes(graph, dict(bindings or {}), size_hints)


def result_key(pipeline: str | Sequence[PipelineEntry] | None, bindings: dict[str, int],
               target: str | None) -> tuple:
    """Everything the decisions take from the user that changes the pipeline's result, known
    before the model is read (the app's build key): the passes, the user's bindings (the
    sizes decided for the rest follow from the model), and the target when a pass reads
    it.  Bad pass names and unknown targets are refused here."""
    passes = resolve_passes(pipeline)
    chosen = _checked_target(target)
    return (tuple(p.name for p in passes), tuple(sorted(bindings.items())),
            chosen if any(p.reads_target for p in passes) else None)


def _checked_target(target: str | None) -> str:
    chosen = target or DEFAULT_TARGET
    get_target(chosen)   # an unknown target is refused before any pass runs
    return chosen


def pipeline_text(pipeline: str | Sequence[PipelineEntry] | None) -> str:
    """The pipeline as `graphlab compile -p` takes it (pass objects by their name)."""
    if pipeline is None or isinstance(pipeline, str):
        return DEFAULT_PRESET if pipeline in (None, "", "default") else pipeline
    return ",".join(entry if isinstance(entry, str) else
                    getattr(entry, "name", type(entry).__name__) for entry in pipeline)
