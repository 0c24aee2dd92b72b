"""The pass stepper: every pass with its node counts, rewrites and "changed nothing" marks.

Rows are buttons (pattern-matching ids) read by the navigation reducer; ← and → step too
(assets/graphlab.js presses the Prev/Next buttons).  The rows are drawn only when more than
the place in the view changed (another model, pipeline, or "hide passes that changed
nothing"); a step moves the "selected" mark in the page (the page's forward of the view,
`SELECTED_ROW`, sets two rows' class).  Sending the list on a step, even as a patch, had the
page mount every row afresh, which cost more than the rest of the step.  A step asks the
server nothing for the list: the pass's kept numerical check and measured latency come with the
panes (`pass_figures`).
"""

from __future__ import annotations

from dash import ALL, Output, State, dcc, html

from compiler_core.wording import plural

from ..services import Services
from . import compare_bar, edit_list, latency, numerics, reduce_view, wrong_value
from .on_view import on_view
from .panel import MAIN, Panel
from .view_fanout import Forward

ROWS = "pass-list"
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
        html.Div(id=ROWS, className="pass-list", role="list"),
        edit_list.layout(),
    ])


def register(app, services: Services) -> None:
    @on_view(app, services, {"rows": Output(ROWS, "children")}, idle={"rows": []},
             message="rows", settings_only=True)
    def rows(state, workspace):
        snapshots = workspace.result.snapshots
        if workspace.comparison is not None:   # one step, from model A to model B
            summary = workspace.comparison.diff.summary()
            detail = (f"{summary['matched']} matched, {summary['changed']} changed, "
                      f"{summary['only_a']} only in A, {summary['only_b']} only in B")
            return {"rows": [pass_row(snapshots[0], True, detail)]}
        step = workspace.clamp_step(state.step)
        shown = [s for s in snapshots if s.changed or not state.hide_unchanged or s.index == step]
        return {"rows": [pass_row(s, s.index == step, *bound_detail(workspace, s))
                         for s in shown]}



# The selected pass's row marked, the one marked before unmarked: only rows whose class changes
# are set (every set prop sets off the callbacks that read it).
MOVE_SELECTED = """function (view, states) {
    var noUpdate = window.dash_clientside.no_update, classes = states[0], rows = states[1];
    if (!view) { return [rows.map(function () { return noUpdate; })]; }
    return [rows.map(function (row, i) {
        var marked = / selected\\b/.test(classes[i] || "");
        if (marked === (row.index === view.step)) { return noUpdate; }
        return marked ? classes[i].replace(/ selected\\b/, "") : classes[i] + " selected";
    })];
}"""

# The page's own forward of the view (`view_fanout`) moves the mark.
SELECTED_ROW = Forward((Output({"type": ROW, "index": ALL}, "className"),),
                       (State({"type": ROW, "index": ALL}, "className"),
                        State({"type": ROW, "index": ALL}, "id")),
                       MOVE_SELECTED)


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


def pass_row(snapshot, selected: bool, detail: str = "", title: str = "") -> html.Button:
    """A button holding the pass's name and, as plain text, its counts and detail: every
    component of a row costs the page a render on each step, so a row has two."""
    counts = f"{snapshot.nodes_before} → {snapshot.nodes_after} nodes"
    detail = detail or (plural(snapshot.rewrites, "rewrite") if snapshot.changed
                        else "changed nothing")
    return html.Button([html.Span(breakable(f"{snapshot.index + 1}. {snapshot.pass_name}"),
                                  className="pass-name"), f"\n{counts}\n{detail}"],
                       id={"type": ROW, "index": snapshot.index}, role="listitem",
                       className=row_class(snapshot, selected),
                       title=title or snapshot.description)


def breakable(name: str) -> list:
    """``name`` with a line-break opportunity after each underscore (``<wbr>``: nothing is
    added to the text people copy), so a narrow pass list wraps fuse_sibling_matmuls as
    "fuse_sibling_ / matmuls", not "fuse_sibling_matmul / s"."""
    parts = name.split("_")
    pieces: list = []
    for part in parts[:-1]:
        pieces += [part + "_", html.Wbr()]
    return pieces + [parts[-1]]


PANEL = Panel("stepper", MAIN, register, layout)
