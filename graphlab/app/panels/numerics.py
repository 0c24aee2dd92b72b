""""Check this pass": run the graph after the selected pass and the input model in
onnxruntime on the same inputs and say whether the outputs still agree — and whether the
model loads and runs at onnxruntime's default level, as users load it."""

from __future__ import annotations

from dash import Input, Output, html

from ..fault_jobs import KIND_OF_STAGE
from ..numeric_check import StepCheck, cached_check, check_step
from ..services import Services
from . import reduce_view, wrong_value
from .on_view import on_view
from .panel import INSIDE, Panel

CHECK = "numeric-check"
RESULT = "numeric-result"
RUNTIME = "numeric-runtime"


def layout() -> html.Div:
    """Drawn in the stepper's head, under the pass buttons."""
    return html.Div(className="numeric-check", children=[
        html.Button("Check this pass numerically", id=CHECK, className="button",
                    title="run the graph after this pass and the input model in onnxruntime "
                          "on the same inputs and compare their outputs; also load and run "
                          "it at onnxruntime's default level (ORT_ENABLE_ALL)"),
        html.Div(id=RESULT, className="numeric-result"),
    ])


def register(app, services: Services) -> None:
    @on_view(app, services, {"result": Output(RESULT, "children", allow_duplicate=True)},
             inputs={"_clicks": Input(CHECK, "n_clicks")}, view_triggers=False,
             message="result", prevent_initial_call=True)
    def check(state, workspace, _clicks):
        return {"result": render(check_step(workspace, workspace.clamp_step(state.step)))}


def shown(workspace, step: int):
    """The result kept for ``step``, or that it is not checked yet: drawn with the pass list
    (`stepper`), in the answer a step needs anyway."""
    done = cached_check(workspace, step)
    return render(done) if done else html.Span("not checked yet", className="muted")


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


PANEL = Panel("numerics", INSIDE, register)   # its layout: in the stepper's head
