"""The selected pass's kept answers, its numerical check and its measured latency, shown as a
view lands on the pass ("not checked yet": nothing, on most passes).

The panes' callback takes them on, as it takes on the overlay's toggle and legend: a step
already asks the server for the panes, and a request of their own cost the page a round of
the renderer's bookkeeping on every step, nearly always to answer that nothing was kept.
"""

from __future__ import annotations

import json

from dash import Output, State
from plotly.utils import PlotlyJSONEncoder

from . import latency, numerics

# The outputs and states the panes' callback takes on for the kept answers (see `shown`).
OUTPUTS = {"pass_check": Output(numerics.RESULT, "children"),
           "pass_latency": Output(latency.RESULT, "children")}
STATES = {"check_shown": State(numerics.RESULT, "children"),
          "latency_shown": State(latency.RESULT, "children")}


def off() -> dict:
    """No answer shown (what an error leaves)."""
    return {"pass_check": "", "pass_latency": ""}


def shown(state, workspace, check_shown, latency_shown) -> dict:
    """The answers kept for the view's pass, only those the page does not show already."""
    step = workspace.clamp_step(state.step)
    new = {"pass_check": numerics.shown(workspace, step),
           "pass_latency": latency.shown(workspace, step)}
    held = {"pass_check": check_shown, "pass_latency": latency_shown}
    return {name: value for name, value in new.items() if as_page_json(value) != held[name]}


def as_page_json(component):
    """A component as the page holds it (what a `State` of its parent's children reads)."""
    return json.loads(json.dumps(component, cls=PlotlyJSONEncoder))
