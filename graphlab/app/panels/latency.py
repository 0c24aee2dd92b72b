""""Measure this pass": the graph before and after the selected pass run in onnxruntime's
profiler, their measured latency beside the predicted one on this machine (`step_latency`)."""

from __future__ import annotations

from dash import html

from ..step_latency import StepLatency, cached_latency, measure_step
from .panel import INSIDE, Panel
from .step_action import StepAction

MEASURE = "latency-measure"
RESULT = "latency-result"


def render(latency: StepLatency) -> html.Div:
    return html.Div([html.Div(latency.headline(), className="latency-headline"),
                     html.Div(latency.detail(), className="muted check-detail")])


ACTION = StepAction(
    MEASURE, RESULT, "Measure this pass",
    "run the graph before and after this pass in onnxruntime's profiler and set their latency "
    "beside the predicted one on this machine (measured first if it never was)",
    measure_step, cached_latency, render, "not measured yet")
layout, shown = ACTION.layout, ACTION.shown   # drawn in the stepper's head, under the check
PANEL = Panel("latency", INSIDE, ACTION.register)
