"""One pass's measured latency in the app: the graph before and after it, run in
onnxruntime's profiler, beside their predicted times on this machine's measured target.

`graphlab profile --per-pass` measures every pass; in the app a pass is measured when asked
(a few seconds per graph), the graphs before and after it together in one child process, run
in turns so a busy machine slows both alike; every answer is kept with the workspace.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler_core.profiling.compare import Comparison, compare
from compiler_core.profiling.machine import busy_note, machine_target
from compiler_core.profiling.runner import ProfileSettings, profile_graphs
from compiler_core.verify import make_inputs

from .workbench import Workspace

SETTINGS = ProfileSettings(levels=("all",), warmup=1, repeats=5)


@dataclass
class StepLatency:
    """The graph before and after one pass, measured (median ms per run) and predicted."""

    step: int
    pass_name: str
    measured_ms: tuple[float, float]   # the best run of each (a busy machine delays others)
    predicted_ms: tuple[float, float]
    target: str
    runs: int
    busy: str | None
    after: Comparison            # the graph after the pass, op by op (the roofline tab's table)

    def headline(self) -> str:
        (before, after), (p_before, p_after) = self.measured_ms, self.predicted_ms
        return (f"{self.pass_name}: {before:.3f} → {after:.3f} ms measured, "
                f"{p_before:.3f} → {p_after:.3f} ms predicted")

    def detail(self) -> str:
        return (f"best of {self.runs} runs each in onnxruntime's profiler at ORT_ENABLE_ALL; "
                f"predicted on {self.target}" + (f"; {self.busy}" if self.busy else ""))


def cached_latency(workspace: Workspace, step: int) -> StepLatency | None:
    """The latency of pass ``step`` if somebody already asked for it."""
    return workspace.derived.get(_key(step))


def measure_step(workspace: Workspace, step: int) -> StepLatency:
    """Measure the graphs before and after pass ``step`` (cached per workspace)."""
    key = _key(step)
    if key not in workspace.derived:
        target = machine_target()
        bindings = workspace.sizes.bindings
        graphs = workspace.graphs_of_step(step)
        inputs = make_inputs(workspace.result.initial, bindings)
        profiles = [levels["all"] for levels in profile_graphs(list(graphs), inputs, SETTINGS)]
        compared = [compare(graph, profile, target, bindings)
                    for graph, profile in zip(graphs, profiles)]
        workspace.derived[key] = StepLatency(
            step, workspace.result.snapshots[step].pass_name,
            tuple(min(p.wall_ms) for p in profiles),
            tuple(c.predicted_total_ms for c in compared), target.name, SETTINGS.repeats,
            busy_note(), compared[1])
    return workspace.derived[key]


def _key(step: int) -> tuple:
    return ("step-latency", step)
