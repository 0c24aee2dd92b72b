"""“Find the first wrong value”: a failed numerical check, or a comparison, bisected.

The button (in a failed check's message and the Compare tab) starts the bisection of the
view's pass (its input against its output) or comparison (model A against model B) as a
build (`fault_jobs`); a poll follows it.  When it is done the view turns the error overlay on
(every compared value's node coloured by its error on both panes, `error_heat`) and selects
the node that made the first wrong value, which the page brings into view; the inspector shows
its inputs' errors, so the error is seen appearing rather than passed along.
"""

from __future__ import annotations

import math

from dash import ALL, Input, Output, State, ctx, dcc, html, no_update

from compiler_core.records import to_json

from .. import ids
from ..builds import BuildStatus
from ..error_heat import legend_entries
from ..fault_jobs import (WrongValues, keep_wrong_values, kept_wrong_values, wrong_values_job,
                          wrong_values_key)
from ..messages import user_message
from ..services import Services
from ..view_state import ViewState
from ..workbench import Workspace
from .panel import INSIDE, Panel

FIND = "find-wrong-value"     # pattern-matching type, index = the pass (0 in a comparison)
PENDING = "wrong-value-pending"
POLL = "wrong-value-poll"
STATUS = "wrong-value-status"
HIDE = "wrong-value-hide"      # pattern-matching type (one button, drawn with the answer)
ERROR = "error"               # the view's overlay while errors colour the panes
POLL_MS = 500


def find_button(step: int) -> html.Button:
    return html.Button("Find the first wrong value", id={"type": FIND, "index": step},
                       className="button small find-wrong-value",
                       title="run both sides with every matched intermediate value exposed, "
                             "colour each node by its error and select the first value that "
                             "is wrong")


def layout() -> html.Div:
    """Drawn in the stepper's head, under the numerical check."""
    return html.Div(className="wrong-value", children=[
        dcc.Store(id=PENDING, storage_type="memory"),
        dcc.Interval(id=POLL, interval=POLL_MS, disabled=True),
        html.Div(id=STATUS, className="wrong-value-status", role="status"),
    ])


def fetch(services: Services, workspace: Workspace, step: int) -> WrongValues | None:
    """The step's bisection if it is done (kept with the workspace once read)."""
    found = kept_wrong_values(workspace, step)
    if found is None:
        found = services.workbench.builds.ready(wrong_values_key(workspace, step))
        if isinstance(found, WrongValues):
            keep_wrong_values(workspace, step, found)
        else:
            found = None
    return found


def register(app, services: Services) -> None:
    builds = services.workbench.builds

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Output(PENDING, "data"), Output(POLL, "disabled"), Output(STATUS, "children"),
                  Input({"type": FIND, "index": ALL}, "n_clicks"), Input(POLL, "n_intervals"),
                  Input({"type": HIDE, "index": ALL}, "n_clicks"),
                  State(ids.VIEW, "data"), State(PENDING, "data"), State(ids.UPLOAD_TOKEN, "data"),
                  State(ids.COMPARE_UPLOAD, "data"), prevent_initial_call=True)
    def find(_clicks, _tick, _hide, view, pending, upload, upload_b):
        trigger = ctx.triggered_id
        kind = trigger.get("type") if isinstance(trigger, dict) else trigger
        if kind is None or kind in (FIND, HIDE) and not ctx.triggered[0]["value"]:
            return no_update, no_update, no_update, no_update   # buttons drawn, not clicked
        if kind == HIDE:
            return {"overlay": ""}, None, True, ""
        if kind == POLL:
            if not pending:
                return no_update, None, True, no_update
            state, step = ViewState.from_dict(pending["view"]), pending["step"]
        else:
            if not view:
                return no_update, no_update, no_update, no_update
            state, step = ViewState.from_dict(view), int(trigger["index"])
        try:
            workspace_job = services.workspace_job(state, upload, upload_b)
            workspace = services.workbench.built(workspace_job)   # the view shows it: built
            found = builds.get_or_start(wrong_values_job(builds, workspace_job, workspace, step))
        except Exception as err:  # noqa: BLE001 - the page says what went wrong
            return no_update, None, True, html.Div(
                f"Finding the first wrong value failed: {user_message(err)}",
                className="message error")
        if isinstance(found, BuildStatus):
            return (no_update, {"view": to_json(state), "step": step}, False,
                    html.Span(f"Finding the first wrong value: running both sides with every "
                              f"matched value exposed… ({found.state})", className="muted"))
        keep_wrong_values(workspace, step, found)
        patch = {"overlay": ERROR, "step": step}
        if found.first_node is not None:
            patch.update(node=found.first_node, panel="inspector")
        return patch, None, True, summary(found)


def summary(found: WrongValues) -> html.Div:
    """One line under the check: where the first wrong value is, or that none is."""
    report = found.report
    compared = f"{len(report.values)} values compared in {report.seconds:.1f} s"
    first = report.first
    if first is None:
        return html.Div([f"✓ Every compared value agrees within {report.rtol:g} of its "
                         f"scale ({compared}).", _hide_button()], className="check-ok")
    v = first.value
    return html.Div([html.Span(f"✗ First wrong value: {first.a_op} {v.a_node!r}, error "
                               f"{error_text(v.error)} of its scale ({compared}). It is "
                               f"selected; the inspector shows its inputs' errors. "),
                     _hide_button()], className="check-bad first-wrong")


def _hide_button() -> html.Button:
    return html.Button("Stop colouring by error", id={"type": HIDE, "index": 0},
                       className="button small")


def legend(workspace: Workspace, step: int) -> list:
    """The error overlay's legend under the panes (the overlay panel draws it)."""
    found = kept_wrong_values(workspace, step)
    if found is None:
        return [html.Span("error of each value: not found yet for this pass — press “Find "
                          "the first wrong value” in a failed check or the Compare tab",
                          className="legend-head")]
    rtol = found.report.rtol
    head = html.Span(f"error of each value against the other side, as a share of the value's "
                     f"largest magnitude (tolerance {rtol:g}):", className="legend-head")
    return [head] + [
        html.Span([html.Span(className="swatch", style={"background": band.fill}), text],
                  className="legend-item") for band, text in legend_entries(rtol)]


def inspector_part(found: WrongValues, workspace: Workspace, step: int, node_id: int) -> list:
    """The selected node's values against the other side, and its inputs' (the inspector)."""
    first = found.report.first
    if first is not None and node_id == found.first_node:
        rows = [_row(f"input {i.slot}", i.a, i.error, i.diverged, i.note) for i in first.inputs]
        v = first.value
        return [html.H4("First wrong value", className="first-wrong-head"),
                html.Div(f"where the error appears: every value before it agrees; B's node "
                         f"{v.b_node!r}" + (f", made by pass {first.made_by}" if first.made_by
                                            else ""), className="muted first-wrong-where"),
                html.Table([_row("output", v.a, v.error, v.diverged, v.note)] + rows,
                           className="kv input-errors")]
    before, after = workspace.graphs_of_step(step)
    in_a = before.node_by_id(node_id) is not None
    node = before.node_by_id(node_id) or after.node_by_id(node_id)
    if node is None:
        return []
    pairs = {(p.a if in_a else p.b): p for p in found.report.values}
    rows = [_row(f"{where} {slot}", value.name, *_pair_error(pairs.get(value.name)))
            for where, values in (("input", node.inputs), ("output", node.outputs))
            for slot, value in enumerate(values) if value is not None]
    return [html.H4("Error against the other side"),
            html.Table(rows, className="kv input-errors")]


def _pair_error(pair) -> tuple:
    if pair is None:
        return None, False, "not compared (a constant, an input, or no counterpart)"
    return pair.error, pair.diverged, pair.note


def _row(where: str, name: str, error: float | None, diverged: bool, note: str) -> html.Tr:
    mark = "✗ " if diverged else ""
    return html.Tr([html.Td(where, className="key"), html.Td(name),
                    html.Td(mark + error_text(error), className="bad" if diverged else None),
                    html.Td(note, className="muted")])


def error_text(error: float | None) -> str:
    if error is None:
        return "–"
    return "cannot compare" if not math.isfinite(error) else f"{error:.3g}"


PANEL = Panel("wrong-value", INSIDE, register)   # its layout: in the stepper's head
