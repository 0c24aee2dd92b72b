""""Measure this pass": the graph before and after the selected pass run in onnxruntime's
profiler, their measured latency beside the predicted one on this machine (`step_latency`)."""

from __future__ import annotations

from dash import Input, Output, html

from ..services import Services
from ..step_latency import StepLatency, cached_latency, measure_step
from .on_view import on_view
from .panel import INSIDE, Panel

MEASURE = "latency-measure"
RESULT = "latency-result"


def layout() -> html.Div:
    """Drawn in the stepper's head, under the numerical check."""
    return html.Div(className="numeric-check", children=[
        html.Button("Measure this pass", id=MEASURE, className="button",
                    title="run the graph before and after this pass in onnxruntime's "
                          "profiler and set their latency beside the predicted one on this "
                          "machine (measured first if it never was)"),
        html.Div(id=RESULT, className="numeric-result"),
    ])


def register(app, services: Services) -> None:
    @on_view(app, services, {"result": Output(RESULT, "children", allow_duplicate=True)},
             inputs={"_clicks": Input(MEASURE, "n_clicks")}, view_triggers=False,
             message="result", prevent_initial_call=True)
    def measure(state, workspace, _clicks):
        return {"result": render(measure_step(workspace, workspace.clamp_step(state.step)))}


def shown(workspace, step: int):
    """The latency kept for ``step``, or that it is not measured yet (drawn with the pass
    list, `stepper`)."""
    done = cached_latency(workspace, step)
    return render(done) if done else html.Span("not measured yet", className="muted")


def render(latency: StepLatency) -> html.Div:
    return html.Div([html.Div(latency.headline(), className="latency-headline"),
                     html.Div(latency.detail(), className="muted check-detail")])


PANEL = Panel("latency", INSIDE, register)   # its layout: in the stepper's head
