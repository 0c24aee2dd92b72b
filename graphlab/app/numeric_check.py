"""The numerical check of one pass in the app: the graph after it against the input model.

The CLI checks every pass with `compile --verify`; in the app a check runs when asked, since
loading a big model into onnxruntime takes seconds.  The input model's outputs are computed
once per workspace (at its sizes, `Workspace.sizes`, which respect the sizes a model fixes
inside), and every answer is kept with the workspace.  The check also loads and runs the
pass's model at onnxruntime's default level (what a user's session does) in a child process,
so a model that crashes onnxruntime is an answer on the page.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler_core.runtime_check import DEFAULT_LEVEL
from compiler_core.runtime_verify import LevelCheck, check_at_level
from compiler_core.verify import Verifier, VerifyReport, describe_inputs
from compiler_core.wording import plural

from .workbench import Workspace


@dataclass
class StepCheck:
    """One pass's check: the report, its tolerance note, the inputs it ran on (with the sizes
    they were made at and why), and the same model at onnxruntime's default level."""

    step: int
    pass_name: str
    report: VerifyReport
    tolerance_note: str | None
    inputs: str
    runtime: LevelCheck

    def headline(self) -> str:
        where = f"after pass {self.step + 1} ({self.pass_name})"
        if self.report.ok:
            return (f"✓ {where} the model computes what the input model does: max abs error "
                    f"{self.report.max_abs_err:.3g}")
        failing = [o for o in self.report.outputs if not o.ok]
        differ = "differs" if len(failing) == 1 else "differ"
        return (f"✗ {where} {plural(len(failing), 'output')} {differ} from the input model's: "
                + "; ".join(f"{o.name}: {o.note or f'max abs error {o.max_abs_err:.3g}'}"
                            for o in failing))

    def detail(self) -> str:
        tolerance = self.tolerance_note or (f"tolerance {self.report.rtol:g} of each output's "
                                            f"scale")
        return f"onnxruntime on {self.inputs}; {tolerance}"

    def runtime_line(self) -> str:
        mark = "✓" if self.runtime.ok else "✗"
        return f"{mark} as users load it: the model {self.runtime.describe()}"


def cached_check(workspace: Workspace, step: int) -> StepCheck | None:
    """The check of pass ``step`` if somebody already asked for it."""
    return workspace.derived.get(_check_key(step))


def check_step(workspace: Workspace, step: int) -> StepCheck:
    """Compare the graph after pass ``step`` with the input model (cached per workspace)."""
    key = _check_key(step)
    if key not in workspace.derived:
        verifier = _verifier(workspace)
        result = workspace.result
        rtol, note = result.tolerance_after(step, verifier.rtol)
        graph = result.snapshots[step].graph
        report = verifier.check(graph, rtol)
        workspace.derived[key] = StepCheck(step, result.snapshots[step].pass_name, report,
                                           note, _inputs_text(verifier, workspace),
                                           check_at_level(verifier, graph, rtol, DEFAULT_LEVEL))
    return workspace.derived[key]


def _inputs_text(verifier: Verifier, workspace: Workspace) -> str:
    """The inputs the check ran on, at the view's sizes — with why each size was chosen (a
    size the model fixes inside says so)."""
    if verifier.generated is None or not workspace.sizes.chosen:
        return verifier.describe_inputs()
    return f"generated inputs {describe_inputs(verifier.inputs)} at {workspace.sizes.describe()}"


def _check_key(step: int) -> tuple:
    return ("numeric-check", step)


def _verifier(workspace: Workspace) -> Verifier:
    key = ("numeric-reference",)
    if key not in workspace.derived:
        workspace.derived[key] = Verifier(workspace.result.initial,
                                          bindings=workspace.sizes.bindings)
    return workspace.derived[key]
