"""The panes' overlays: the intensity toggle in the pane tools, and the legend under the panes
(intensity bands, or the error scale of "find the first wrong value", `wrong_value`).

The colouring itself is done where the panes are built (`pane_payload` asks
`intensity_bands` for each node's band); this module owns the control and the legend, which
the panes' answer carries (`shown`): one request a step instead of two.
"""

from __future__ import annotations

from dash import Input, Output, State, dcc, html, no_update

from .. import ids
from ..graph_analyses import cost_of
from ..intensity_bands import legend_entries
from ..services import Services
from . import wrong_value
from .panel import INSIDE, Panel

TOGGLE = "overlay-toggle"
LEGEND = "overlay-legend"
INTENSITY = "intensity"


def toggle() -> dcc.Checklist:
    """Drawn in the pane tools."""
    return dcc.Checklist(id=TOGGLE, className="overlay-toggle", value=[], options=[
        {"label": " colour by intensity", "value": INTENSITY,
         "title": "colour every node by its arithmetic intensity relative to the ridge point "
                  "of the chosen target"}])


def legend() -> html.Div:
    """Drawn under the panes' legend."""
    return html.Div(id=LEGEND, className="legend overlay-legend", hidden=True)


# The outputs and states the panes' callback takes on for the overlay (see `shown`).
OUTPUTS = {"overlay_toggle": Output(TOGGLE, "value"), "overlay_legend": Output(LEGEND, "children"),
           "overlay_hidden": Output(LEGEND, "hidden")}
STATES = {"overlay_shown": State(TOGGLE, "value"), "overlay_was_hidden": State(LEGEND, "hidden")}


def off(state) -> dict:
    """The toggle as the view has it and no legend (also what an error leaves)."""
    return {"overlay_toggle": [INTENSITY] if state.overlay == INTENSITY else [],
            "overlay_legend": [], "overlay_hidden": True}


def shown(state, workspace, overlay_shown, overlay_was_hidden) -> dict:
    """The toggle and legend for the view, only what differs from what the page shows."""
    if state.overlay == wrong_value.ERROR:   # the toggle is left alone: it is intensity's
        return {"overlay_legend": wrong_value.legend(workspace, workspace.clamp_step(state.step)),
                "overlay_hidden": False}
    if state.overlay != INTENSITY:   # off, and already shown off: nothing to send
        return {} if not overlay_shown and overlay_was_hidden else off(state)
    _, after = workspace.graphs_of_step(workspace.clamp_step(state.step))
    cost = cost_of(workspace, after, state.target)
    return {"overlay_toggle": [INTENSITY], "overlay_legend": legend_items(cost),
            "overlay_hidden": False}


def register(app, _services: Services) -> None:
    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Input(TOGGLE, "value"), State(ids.VIEW, "data"), prevent_initial_call=True)
    def request(value, view):
        wanted = INTENSITY if INTENSITY in (value or []) else ""
        if not view or wanted == view.get("overlay") \
                or not wanted and view.get("overlay") == wrong_value.ERROR:
            return no_update   # the toggle echoing the view, not a user's click
        return {"overlay": wanted}


def legend_items(cost) -> list:
    """The bands in FLOP/byte at the ridge of the dtype most ops compute in."""
    dtypes = [op.dtype for op in cost.ops if op.flops]
    dtype = max(set(dtypes), key=dtypes.count) if dtypes else None
    target = cost.target
    ridge = target.ridge_point(dtype)
    head = html.Span(f"intensity (FLOP/byte) on {target.name}, ridge {ridge:.3g}:",
                     className="legend-head")
    return [head] + [
        html.Span([html.Span(className="swatch", style={"background": band.fill}), text],
                  className="legend-item") for band, text in legend_entries(ridge)] + [
        html.Span(GROUP_NOTE, className="legend-item legend-note")]


GROUP_NOTE = ("A collapsed group takes the band of its members together: their FLOPs over the "
              "bytes they move.")


PANEL = Panel("overlay", INSIDE, register)   # its parts: in the panes' layout
