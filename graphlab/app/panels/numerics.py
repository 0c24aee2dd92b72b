""""Check this pass": run the graph after the selected pass and the input model in
onnxruntime on the same inputs and say whether the outputs still agree — and whether the
model loads and runs at onnxruntime's default level, as users load it."""

from __future__ import annotations

from dash import html

from ..fault_jobs import KIND_OF_STAGE
from ..numeric_check import StepCheck, cached_check, check_step
from . import reduce_view, wrong_value
from .panel import INSIDE, Panel
from .step_action import StepAction

CHECK = "numeric-check"
RESULT = "numeric-result"
RUNTIME = "numeric-runtime"


def render(check: StepCheck) -> html.Div:
    """The check's lines; a wrong output offers to find the first wrong value, onnxruntime
    failing on the pass's model offers to reduce it to the few nodes it fails on."""
    wrong = [] if check.report.ok else [" ", wrong_value.find_button(check.step)]
    outcome = check.runtime.outcome
    failing = [] if outcome.ok or outcome.stage not in KIND_OF_STAGE else [
        " ", reduce_view.reduce_button(f"{reduce_view.AFTER_PASS}{check.step}:{outcome.stage}")]
    return html.Div([
        html.Div([check.headline(), *wrong],
                 className="check-ok" if check.report.ok else "check-bad"),
        html.Div([check.runtime_line(), *failing], id=RUNTIME,
                 className="check-ok" if check.runtime.ok else "check-bad"),
        html.Div(check.detail(), className="muted check-detail"),
    ])


ACTION = StepAction(
    CHECK, RESULT, "Check this pass numerically",
    "run the graph after this pass and the input model in onnxruntime on the same inputs and "
    "compare their outputs; also load and run it at onnxruntime's default level "
    "(ORT_ENABLE_ALL)",
    check_step, cached_check, render, "not checked yet")
layout, shown = ACTION.layout, ACTION.shown   # drawn in the stepper's head, under the buttons
PANEL = Panel("numerics", INSIDE, ACTION.register)
