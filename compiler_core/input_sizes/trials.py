"""Trying sizes: run the model on inputs made at each candidate until one runs.

Standard ONNX kernels check their inputs' sizes and raise, which is cheap to catch in this
process.  Kernels outside the standard domains (onnxruntime's contrib ops, custom ops) may
not, and a try at a wrong size could then crash the whole process — so such models are tried
in a child (``runtime_check.run_isolated_many``), a few candidates per child.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from ..errors import GraphLabError
from ..ir import FUSED_DOMAIN, Graph, model_for_runtime
from ..ort_child import run_one
from ..runtime_check import run_isolated_many
from .solver import SizePlan

SAFE_DOMAINS = {"", "ai.onnx", "ai.onnx.ml", FUSED_DOMAIN}  # fused nodes run as ONNX functions
CANDIDATES_PER_CHILD = 6


@dataclass
class Attempt:
    """Sizes tried that did not run, and what onnxruntime said."""

    sizes: dict[str, int]
    origin: str
    error: str

    def describe(self) -> str:
        sizes = ", ".join(f"{s}={v}" for s, v in self.sizes.items())
        return f"{sizes or 'no free dims'} ({self.origin}): {self.error}"


def needs_isolation(graph: Graph) -> bool:
    """Whether a wrong size could crash onnxruntime rather than raise."""
    return any(node.domain not in SAFE_DOMAINS for node in graph.nodes)


def first_that_runs(graph: Graph, plans: Iterable[SizePlan],
                    make: Callable[[SizePlan], dict]) -> tuple[SizePlan | None, list[Attempt]]:
    """The first plan whose inputs (``make(plan)``) the graph runs on, and the failures
    before it (all of them when none runs).  A plan ``make`` refuses (inputs too large) is a
    failure like the others."""
    with model_for_runtime(graph) as model:   # a model past 2 GiB: a file with external data
        return _first(graph, model, plans, make)


def _first(graph: Graph, model: bytes | Path, plans: Iterable[SizePlan],
           make: Callable[[SizePlan], dict]) -> tuple[SizePlan | None, list[Attempt]]:
    attempts: list[Attempt] = []
    isolated = needs_isolation(graph)
    ready: list[tuple[SizePlan, dict]] = []
    for plan in plans:
        try:
            ready.append((plan, make(plan)))
        except GraphLabError as err:
            attempts.append(Attempt(dict(plan.sizes), plan.origin, err.message))
    step = CANDIDATES_PER_CHILD if isolated else 1
    for start in range(0, len(ready), step):
        chunk = ready[start:start + step]
        outcomes = _run_isolated(model, [inputs for _, inputs in chunk]) if isolated else \
            [_run_here(model, chunk[0][1])]
        for (plan, _), (stage, error) in zip(chunk, outcomes):
            if stage == "ran":
                return plan, attempts
            attempts.append(Attempt(dict(plan.sizes), plan.origin, error))
            if stage == "load":
                return None, attempts   # no size will help a model that does not load
    return None, attempts


def _run_here(model: bytes | Path, inputs: dict) -> tuple[str, str]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    stage, error, _ = run_one(ort, model if isinstance(model, bytes) else str(model), options,
                              [inputs])
    return stage, error


def _run_isolated(model: bytes | Path, feeds: list[dict]) -> list[tuple[str, str]]:
    outcomes = run_isolated_many([(model, [inputs]) for inputs in feeds], level="disabled")
    return [(o.stage if o.stage in ("ran", "load") else "run", o.error or o.stage)
            for o in outcomes]
