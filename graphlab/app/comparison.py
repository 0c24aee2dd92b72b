"""Two models side by side in the pass debugger: "Compare with…".

A comparison is a workspace whose one "pass" goes from model A (left pane) to model B (right
pane).  B is renumbered into A's ids (`compiler_core.model_diff.b_in_a_ids`), so the panes,
their stable layout, the marks (only in A as removed, only in B as added, changed as
modified) and the linked selection work exactly as they do for a pass, with no code of their
own; the Compare tab shows the diff's record.

What B is (the view's ``versus``): a model this server offers (a sample, the served file), the
browser's second upload ('upload'), or onnxruntime's optimized model of A at a level
('onnxruntime:extended').  With ``versus_after`` both sides are the pipeline's outputs; the
onnxruntime side stays onnxruntime's optimization of A as loaded, so "GraphLab's O2 beside
onnxruntime's extended level" is one choice and one checkbox.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from dataclasses import dataclass

from compiler_core.compilation import Compilation, Decisions, decide_sizes
from compiler_core.errors import GraphLabError
from compiler_core.ir import Graph
from compiler_core.model_diff import ModelDiff, b_in_a_ids, diff_models
from compiler_core.model_diff.sides import (after_pipeline, onnxruntime_label,
                                            onnxruntime_version)
from compiler_core.passes import PipelineResult, Snapshot
from compiler_core.passes.framework.diff import GraphDiff
from compiler_core.passes.framework.pass_registry import resolve_pipeline

from .builds import BuildJob
from .workbench import UPLOAD_MODEL, ModelSource, Progress, Workbench, workspace_of

ONNXRUNTIME = "onnxruntime:"          # versus = 'onnxruntime:LEVEL'
ONNXRUNTIME_LEVELS = ("basic", "extended", "all")
UPLOAD_B = UPLOAD_MODEL               # versus = 'upload': the browser's second upload


@dataclass
class Comparison:
    """What the views of a comparison need beyond the workspace's graphs."""

    diff: ModelDiff                 # the record, without its graphs (the workspace has them)
    view_id: dict[int, int]         # B's own node id -> its id in the workspace's graphs

    @property
    def a_label(self) -> str:
        return self.diff.a_label

    @property
    def b_label(self) -> str:
        return self.diff.b_label


def versus_options(workbench: Workbench) -> list[dict]:
    """What the "Compare with…" list offers: onnxruntime's levels, the models, the upload."""
    options = [{"label": f"onnxruntime {level} (its optimized model)",
                "value": ONNXRUNTIME + level} for level in ONNXRUNTIME_LEVELS]
    options += workbench.model_options()
    options.append({"label": "uploaded model B", "value": UPLOAD_B, "disabled": True})
    return options


def comparison_job(workbench: Workbench, source_a: ModelSource, versus: str,
                   upload_b_token: str | None, pipeline: str, sizes: dict[str, int],
                   after: bool) -> BuildJob:
    """The build of a comparison; names it cannot compare with are refused here."""
    level = _onnxruntime_level(versus)
    source_b = None if level else workbench.source(versus, upload_b_token)
    passes = tuple(resolve_pipeline(pipeline or None)) if after else ()
    bound = tuple(sorted(sizes.items()))
    budget = workbench.config.group_budget
    b_digest = versus if level else source_b.digest
    key = hashlib.sha256(repr(("compare", source_a.digest, b_digest, passes, bound, budget)
                              ).encode()).hexdigest()
    b_label = onnxruntime_label(level) if level else source_b.label
    return BuildJob(key, f"{source_a.label} vs {b_label}", functools.partial(
        _build_comparison, source_a, level, source_b, pipeline if after else "", passes,
        bound, budget, key[:16]))


def _onnxruntime_level(versus: str) -> str:
    if not versus.startswith(ONNXRUNTIME):
        return ""
    level = versus[len(ONNXRUNTIME):]
    if level not in ONNXRUNTIME_LEVELS:
        raise GraphLabError(f"cannot compare with onnxruntime at level {level!r}",
                            hint=f"levels: {', '.join(ONNXRUNTIME_LEVELS)}")
    return level


def _build_comparison(source_a: ModelSource, level: str, source_b: ModelSource | None,
                      pipeline: str, passes: tuple[str, ...],
                      bindings: tuple[tuple[str, int], ...], group_budget: int, key: str,
                      on_progress: Progress | None):
    after = f" after {pipeline}" if passes else ""
    loaded = source_a.load()
    # The pipelines run with the user's bindings only, as `graphlab diff -p` does: sizes the
    # user did not choose would specialize one side's shapes and hide its structure.  The
    # analyses of the two graphs (roofline, memory) take representative sizes as usual.
    sizes = decide_sizes(loaded, dict(bindings), dict(source_a.size_hints))
    a = _after(loaded, passes, dict(bindings), on_progress)
    if level:
        b = onnxruntime_version(loaded, level, source_a.original_bytes())
        b_label = onnxruntime_label(level)
    else:
        b = _after(source_b.load(), passes, dict(bindings), None)
        b_label = source_b.label + after
    a_label = source_a.label + after
    if a_label == b_label:
        a_label, b_label = f"A: {a_label}", f"B: {b_label}"
    diff = diff_models(a, b, a_label, b_label)
    side_by_side = b_in_a_ids(diff)   # A's graph as the input, B's in A's ids as the one step
    snapshot = Snapshot(index=0, pass_name=f"compare with {b_label}",
                        description=diff.headline(), graph=side_by_side.graph,
                        nodes_before=len(a), diff=side_by_side.diff, rewrites=0,
                        seconds=diff.seconds)
    comparison = Comparison(dataclasses.replace(diff, graph_a=None, graph_b=None),
                            side_by_side.view_id)
    decided = Decisions(pipeline, sizes, dict(bindings), None, passes)
    return workspace_of(key, f"{source_a.label} vs {b_label}",
                        Compilation(decided, PipelineResult(a, [snapshot], diff.seconds)),
                        group_budget, comparison)


def _after(graph: Graph, passes: tuple[str, ...], bindings: dict[str, int],
           on_progress) -> Graph:
    return after_pipeline(graph, list(passes), bindings, on_progress=on_progress) \
        if passes else graph


def status_of(comparison: Comparison, node_id: int, diff: GraphDiff) -> str:
    """How the compared models differ at a node (by its id in the workspace)."""
    if node_id in diff.removed:
        return f"only in A ({comparison.a_label})"
    if node_id in diff.added:
        return f"only in B ({comparison.b_label})"
    if node_id in diff.modified:
        return "in both models, changed (the Compare tab says how)"
    return "in both models, unchanged"
