"""The Compare tab: the diff of the two models side by side — counts, the table by op type,
the selected node's partner and what differs, every changed pair (a click selects it), the
models' inputs and outputs.  Without a comparison it says how to start one."""

from __future__ import annotations

from dash import ALL, Input, Output, ctx, html, no_update

from compiler_core.model_diff import Change, ModelDiff, NodePair

from .. import ids
from ..comparison import Comparison
from ..services import Services
from . import wrong_value
from .on_view import on_view
from .panel import TAB, Panel

NAME = "compare"
BODY = "compare-body"
PICK = "compare-pick"        # pattern-matching type, index = the node's id in the panes
SHOWN = 200                  # changed pairs listed
HINT = ("Pick a model in “Compare with…” (top) to put it beside this one, matched node by "
        "node: another export of the network, your own upload, or what onnxruntime's "
        "optimizer makes of this model. Tick “both after the pipeline” to compare "
        "GraphLab's output instead.")


def layout(_: Services) -> html.Div:
    return html.Div(id=BODY, className="side-body")


def register(app, services: Services) -> None:
    @on_view(app, services, {"body": Output(BODY, "children")}, tab=NAME, message="body")
    def render(state, workspace):
        comparison = workspace.comparison
        if comparison is None:
            return {"body": html.P(HINT, className="hint")}
        return {"body": comparison_view(comparison, state.node)}

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Input({"type": PICK, "index": ALL}, "n_clicks"), prevent_initial_call=True)
    def pick(_clicks):
        if not ctx.triggered[0]["value"]:
            return no_update   # a freshly drawn button, not a click
        return {"node": ctx.triggered_id["index"]}


def comparison_view(comparison: Comparison, node: int | None) -> list:
    diff = comparison.diff
    summary = diff.summary()
    parts = [html.H3("Compare"),
             html.Table([html.Tr([html.Td("A", className="key"), html.Td(diff.a_label),
                                  html.Td(f"{summary['nodes_a']} nodes", className="muted")]),
                         html.Tr([html.Td("B", className="key"), html.Td(diff.b_label),
                                  html.Td(f"{summary['nodes_b']} nodes", className="muted")])],
                        className="kv"),
             html.P(_counts(diff), className="compare-counts"),
             html.P(["Do the two compute the same thing? ", wrong_value.find_button(0)],
                    className="compare-find")]
    if node is not None:
        parts.append(_selected(comparison, node))
    parts += _by_op(diff) + _interface(diff.interface) + _changed(diff.changed_pairs)
    return parts


def _counts(diff: ModelDiff) -> str:
    s = diff.summary()
    if diff.identical:
        return f"No difference: all {s['matched']} nodes matched, none changed."
    kinds = ", ".join(f"{kind} {n}" for kind, n in s["change_kinds"].items())
    return (f"{s['matched']} matched ({s['identical']} identical, {s['changed']} changed"
            + (f": {kinds}" if kinds else "") + f"), {s['only_a']} only in A (left, red), "
            f"{s['only_b']} only in B (right, green).")


def _selected(comparison: Comparison, node: int) -> html.Div:
    """The selected node: its partner and what differs, or the side it is alone on."""
    diff = comparison.diff
    pair = next((p for p in diff.pairs if p.a.id == node), None)
    if pair is not None:
        return html.Div([html.H4("Selected"), html.Div(f"A: {pair.a}"),
                         html.Div(f"B: {pair.b}"),
                         html.Div(f"matched by {pair.how}", className="muted"),
                         _changes(pair.changes) if pair.changes
                         else html.Div("identical", className="status")],
                        className="compare-selected")
    alone_a = next((n for n in diff.only_a if n.id == node), None)
    b_ids = {view: own for own, view in comparison.view_id.items()}
    alone_b = next((n for n in diff.only_b if n.id == b_ids.get(node)), None)
    text = (f"only in A: {alone_a}" if alone_a else f"only in B: {alone_b}" if alone_b
            else f"node #{node} is in neither model")
    return html.Div([html.H4("Selected"), html.Div(text, className="status")],
                    className="compare-selected")


def _changes(changes: tuple[Change, ...]) -> html.Table:
    return html.Table([html.Tr([html.Td(c.kind, className="key"), html.Td(c.where),
                                html.Td([c.a, html.Br(), "→ ", c.b])]) for c in changes],
                      className="kv")


def _by_op(diff: ModelDiff) -> list:
    rows = [r for r in diff.by_op() if r.changed or r.only_a or r.only_b]
    if not rows:
        return []
    head = html.Tr([html.Th(h) for h in ("op", "A", "B", "matched", "changed", "only A",
                                         "only B")])
    return [html.H4("By op type"), html.Table([head] + [
        html.Tr([html.Td(r.op, className="key")] + [
            html.Td(str(v), className="count") for v in (r.a, r.b, r.matched, r.changed,
                                                          r.only_a, r.only_b)])
        for r in rows], className="kv summary-table")]


def _interface(changes: list[Change]) -> list:
    if not changes:
        return []
    return [html.H4("Inputs and outputs"), _changes(tuple(changes))]


def _changed(pairs: list[NodePair]) -> list:
    if not pairs:
        return []
    items = [html.Li(html.Button(
        [html.B(pair.a.op), f" {pair.a.name}", html.Br(),
         html.Span("; ".join(c.text() for c in pair.changes), className="muted")],
        id={"type": PICK, "index": pair.a.id}, className="pattern-item compare-item"))
        for pair in pairs[:SHOWN]]
    more = [html.P(f"… and {len(pairs) - SHOWN} more (`graphlab diff --all` lists them)",
                   className="muted")] if len(pairs) > SHOWN else []
    return [html.H4(f"Changed ({len(pairs)})"), html.Ul(items, className="pattern-items")] + more


PANEL = Panel(NAME, TAB, register, layout, tab="Compare", follows_selection=True)
