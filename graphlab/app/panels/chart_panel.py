"""What the chart panels (roofline, systolic, memory) share: the "before / after the selected
pass" toggle, the chart settings, and turning a click on a chart into a node selection.

Panels never write the view themselves: they send a patch (`ids.VIEW_PATCH`) that the
navigation reducer checks and applies, so the URL stays the single source of truth.
"""

from __future__ import annotations

from dash import Input, Output, State, dcc, no_update

from .. import ids

COMPARE = "compare"
GRAPH_CONFIG = {"displaylogo": False, "responsive": True,
                "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d"],
                "toImageButtonOptions": {"format": "svg"}}


# What a chart holds until its first answer: no axes to draw.  dcc.Graph plots whatever it
# holds when it mounts, as each tab's charts do on every opening; an empty figure still draws
# its axes and grid, 20-100 ms a chart, before the real figure draws them again.
BLANK = {"data": [], "layout": {"xaxis": {"visible": False}, "yaxis": {"visible": False}}}


def chart(chart_id: str, config: dict, style: dict) -> dcc.Graph:
    """A chart of a tab, blank until its callback answers."""
    return dcc.Graph(id=chart_id, figure=BLANK, config=config, style=style)


def compare_toggle(toggle_id: str) -> dcc.Checklist:
    return dcc.Checklist(id=toggle_id, className="compare-toggle", value=[], options=[
        {"label": " compare: before → after the selected pass", "value": COMPARE}])


def compare_value(state, shown: list[str] | None = None):
    """The toggle's value showing the view's ``compare``; nothing when the toggle shows it
    already (``shown``): setting it would set its listener off (`register_compare_toggle`),
    a round of the page's bookkeeping on every opening of the tab, for no change."""
    value = [COMPARE] if state.compare else []
    return no_update if shown is not None and list(shown) == value else value


def register_compare_toggle(app, toggle_id: str) -> None:
    """A click on the toggle asks for the view with or without the comparison; the panel
    drawing the toggle as the view has it is an echo, dropped in the page (no round trip)."""
    app.clientside_callback(
        """function (value, view) {
            var wanted = (value || []).indexOf("%s") >= 0;
            if (!view || wanted === Boolean(view.compare)) {
                return window.dash_clientside.no_update;
            }
            return {compare: wanted};
        }""" % COMPARE,
        Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
        Input(toggle_id, "value"), State(ids.VIEW, "data"), prevent_initial_call=True)


def picked_node(click: dict | None):
    """The patch selecting the node of a clicked chart element (customdata[0] is its id)."""
    points = (click or {}).get("points") or []
    data = points[0].get("customdata") if points else None
    if not data:
        return no_update
    return {"node": data[0]}
