"""The inspector: the selected node's op, attributes, typed inputs/outputs, cost on the chosen
target, and its history through the pipeline; with the error overlay on, its values' and its
inputs' errors against the other side (`wrong_value`)."""

from __future__ import annotations

from dash import Output, html

from ..inspector_data import describe_node
from ..node_metrics import ASSUMED
from ..services import Services
from . import edit_controls, wrong_value
from .on_view import on_view
from .panel import TAB, Panel

NAME = "inspector"
BODY = "inspector"
OPEN_BODY = "open-body"      # pattern-matching type, index = fused node id (the panes open it)
HINT = "Click a node in either pane to inspect it; its counterpart is selected in the other."


def layout(_: Services) -> html.Div:
    """The hint, until a node is selected (`tab_gate` asks nothing before)."""
    return html.Div(className="side-body", children=[html.Div(_hint(), id=BODY),
                                                      edit_controls.layout()])


def _hint() -> html.P:
    return html.P(HINT, className="hint")


def register(app, services: Services) -> None:
    hint = _hint()

    @on_view(app, services, {"body": Output(BODY, "children")}, idle={"body": hint},
             tab=NAME, message="body")
    def render(state, workspace):
        if state.node is None:
            return {"body": hint}
        info = describe_node(workspace, state.step, state.node, state.target)
        if info is None:
            return {"body": html.P(f"Node #{state.node} is not in this pass's graphs. " + HINT,
                                   className="hint")}
        body = node_view(info, state.target)
        if state.overlay == wrong_value.ERROR:
            step = workspace.clamp_step(state.step)
            found = wrong_value.fetch(services, workspace, step)
            if found is not None:   # the node's errors, under its title
                body.children[3:3] = wrong_value.inspector_part(found, workspace, step,
                                                                state.node)
        return {"body": body}


def node_view(info: dict, target: str) -> html.Div:
    parts = [
        html.H3([info["title"], html.Span(f" #{info['id']}", className="muted")]),
        html.Div(info["name"], className="node-name"),
        html.Div(info["status"], className="status"),
    ]
    if info.get("changes"):
        parts += [html.H4("What this pass changed"), html.Table([
            html.Tr([html.Td(c["where"], className="key"),
                     html.Td([c["before"], html.Span(" → ", className="muted"), c["after"]])])
            for c in info["changes"]], className="kv node-changes")]
    if info["scope"]:
        parts.append(html.Div(f"scope {info['scope']}", className="muted"))
    if info["history"]:
        parts += [html.H4("History"), html.Ul([html.Li(line) for line in info["history"]],
                                              className="history")]
    if info["fused"]:
        parts += [html.H4(f"Fused body ({len(info['body'])} nodes)"),
                  html.Button("Open / close the body in the graph",
                              id={"type": OPEN_BODY, "index": info["id"]},
                              className="button"),
                  html.Ul([html.Li(line) for line in info["body"]], className="body-list")]
    parts += [html.H4("Inputs"), _value_table(info["inputs"]),
              html.H4("Outputs"), _value_table(info["outputs"])]
    if info.get("quantization"):
        parts += [html.H4("Quantization"), html.Table(
            [html.Tr([html.Th("tensor"), html.Th("scale"), html.Th("zero point")])]
            + [html.Tr([html.Td(q["tensor"], className="key"), html.Td(q["scale"]),
                        html.Td(q["zero_point"])]) for q in info["quantization"]],
            className="kv quantization-table")]
    if info["attributes"]:
        parts += [html.H4("Attributes"), html.Table([
            html.Tr([html.Td(name, className="key"), html.Td(value)])
            for name, value in info["attributes"]], className="kv")]
    parts += [html.H4(f"Cost on {target}"), html.Table([
        html.Tr([html.Td(name, className="key"), html.Td(value)],
                className="assumed" if name == ASSUMED else None)
        for name, value in info["metrics"].items()], className="kv cost-table")]
    if info["metrics_note"]:
        parts.append(html.Div(info["metrics_note"], className="muted"))
    return html.Div(parts, className="inspector-body")


def _value_table(rows: list[dict]) -> html.Table:
    return html.Table([html.Tr([html.Td(r["name"], className="key"), html.Td(r["type"]),
                                html.Td(r["link"], className="muted")]) for r in rows],
                      className="kv")


PANEL = Panel(NAME, TAB, register, layout, tab="Inspector", about_a_node=True)
