"""The pass stepper: every pass with its node counts, rewrites and "changed nothing" marks.

Rows are buttons (pattern-matching ids) read by the navigation reducer; ← and → step too
(assets/graphlab.js presses the Prev/Next buttons).  A step re-sends no row: while the list
is the one the page holds (`ROWS_DRAWN`), the answer only moves the "selected" mark.  The
same answer brings the pass's numerical check (drawn in the stepper's head), so a step costs
one request here, and a click on a node or an item none (`settings_gate`, ``pass_only``).
"""

from __future__ import annotations

from dash import Output, Patch, State, dcc, html

from compiler_core.wording import plural

from ..services import Services
from . import compare_bar, edit_list, latency, numerics, reduce_view, wrong_value
from .on_view import on_view
from .panel import MAIN, Panel

ROWS = "pass-list"
ROWS_DRAWN = "pass-list-drawn"   # the workspace, passes and selection the rows show
ROW = "pass-row"             # pattern-matching type, index = pass index
PREV = "step-prev"
NEXT = "step-next"
HIDE_UNCHANGED = "hide-unchanged"
SPECIALIZE = "specialize_dims"   # the pass that binds the view's sizes


def layout(services: Services) -> html.Div:
    return html.Div(className="stepper", children=[
        compare_bar.layout(services),
        html.Div(className="stepper-head", children=[
            html.H3("Passes"),
            html.Div(className="step-buttons", children=[
                html.Button("◀ Prev", id=PREV, className="button", title="previous pass (←)"),
                html.Button("Next ▶", id=NEXT, className="button", title="next pass (→)"),
            ]),
            dcc.Checklist(id=HIDE_UNCHANGED, className="hide-unchanged",
                          options=[{"label": " hide passes that changed nothing",
                                    "value": "hide"}], value=[]),
            numerics.layout(),
            wrong_value.layout(),
            reduce_view.layout(),
            latency.layout(),
        ]),
        html.Ol(id=ROWS, className="pass-list"),
        edit_list.layout(),
        dcc.Store(id=ROWS_DRAWN, storage_type="memory"),
    ])


def register(app, services: Services) -> None:
    @on_view(app, services, {"rows": Output(ROWS, "children"), "drawn": Output(ROWS_DRAWN, "data"),
                             "check": Output(numerics.RESULT, "children"),
                             "latency": Output(latency.RESULT, "children")},
             state={"drawn": State(ROWS_DRAWN, "data")}, idle={"rows": [], "drawn": None},
             message="rows", pass_only=True, failed=lambda _: {"check": "", "latency": ""})
    def render(state, workspace, drawn):
        snapshots = workspace.result.snapshots
        step = workspace.clamp_step(state.step)
        check = numerics.shown(workspace, step)
        measured = latency.shown(workspace, step)
        if workspace.comparison is not None:   # one step, from model A to model B
            summary = workspace.comparison.diff.summary()
            detail = (f"{summary['matched']} matched, {summary['changed']} changed, "
                      f"{summary['only_a']} only in A, {summary['only_b']} only in B")
            return {"rows": [pass_row(snapshots[0], True, detail)], "drawn": None,
                    "check": check, "latency": measured}
        shown = [s.index for s in snapshots
                 if s.changed or not state.hide_unchanged or s.index == state.step]
        record = {"workspace": workspace.key, "rows": shown, "selected": state.step}
        if not drawn or {**drawn, "selected": state.step} != record:
            return {"rows": [pass_row(snapshots[i], i == state.step,
                                      *bound_detail(workspace, snapshots[i])) for i in shown],
                    "drawn": record, "check": check, "latency": measured}
        if drawn["selected"] == state.step:
            return {}
        moved = Patch()
        for index in (drawn["selected"], state.step):
            if index in shown:
                row = moved[shown.index(index)]["props"]["children"]["props"]
                row["className"] = row_class(snapshots[index], index == state.step)
        return {"rows": moved, "drawn": record, "check": check, "latency": measured}


def row_class(snapshot, selected: bool) -> str:
    return "pass-row" + (" selected" if selected else "") + ("" if snapshot.changed
                                                              else " unchanged")


def bound_detail(workspace, snapshot) -> tuple[str, str]:
    """(the row's detail, its hover) for the pass that binds symbolic dims: the sizes the
    compile entry had it bind (the user's; all of them for a pass that plans for fixed
    sizes), as `graphlab compile` binds them."""
    decisions = workspace.compilation.decisions
    if snapshot.pass_name != SPECIALIZE or not decisions.bound:
        return "", ""
    text = ",".join(f"{dim}={size}" for dim, size in decisions.bound.items())
    whose = "yours" if decisions.bound == decisions.given else (
        f"representative, the Bindings box says why: {', '.join(decisions.fixed_size_readers)} "
        f"plans for fixed sizes")
    return (f"bound {text.replace(',', ', ')}",
            f"{snapshot.description}\n\nThis view's pipeline ran with {text} bound ({whose}), "
            f"so shape arithmetic folded away. `graphlab compile MODEL "
            f"--bind {decisions.given_text() or text}` gives the same graph.")


def pass_row(snapshot, selected: bool, detail: str = "", title: str = "") -> html.Li:
    counts = f"{snapshot.nodes_before} → {snapshot.nodes_after} nodes"
    detail = detail or (plural(snapshot.rewrites, "rewrite") if snapshot.changed
                        else "changed nothing")
    return html.Li(html.Button(
        id={"type": ROW, "index": snapshot.index}, className=row_class(snapshot, selected),
        title=title or snapshot.description, children=[
            html.Span(f"{snapshot.index + 1}. {snapshot.pass_name}", className="pass-name"),
            html.Span(counts, className="pass-counts"),
            html.Span(detail, className="pass-detail"),
        ]))


PANEL = Panel("stepper", MAIN, register, layout)
