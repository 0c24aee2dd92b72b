"""Editing the selected node, in the inspector: its attributes, the constants it reads, bypass
or delete it, rewire an input by picking in the panes the node whose output it should read;
and, where a pattern nearly matched, the fix to try with its effect on the outputs.

Every control sends the view's edit list with one more edit (`model_edits.with_edits`) as a
patch; the reducer checks it and the pipeline runs again on the edited model as a build,
staying on the same pass — a refused edit is that build's message, and the view stays as it
was.  Suggestions run as builds too (`model_edits.suggestion_job`): each candidate is applied
and the pipeline run, so no request waits for them.
"""

from __future__ import annotations


from dash import ALL, Input, Output, State, ctx, dcc, html, no_update

from compiler_core.editing import (Bypass, Delete, Rewire, SetAttribute, SetTensor,
                                   edits_to_json)
from compiler_core.errors import EditError
from compiler_core.patterns import STRONG_SCORE

from .. import ids
from ..builds import BuildStatus
from ..messages import user_message
from ..model_edits import (EditableNode, editable_node, read_typed_value, suggestion_job,
                           with_edits)
from ..services import Services
from ..view_state import ViewState
from ..workbench import Workspace
from .on_view import on_view
from .panel import INSIDE, Panel

NAME = "edit-controls"
BODY = "edit-controls"
MISSES = "edit-misses"           # where the node nearly matched, and the button to try fixes
NODE = "edit-node"               # the inspected node: {"name", "id"} as the edits name it
ACT = "edit-act"                 # pattern-matching type; index: the action ("bypass", "attr:axes")
VALUE = "edit-value"             # pattern-matching type; index: the action it feeds
PICK = "edit-pick"               # a rewire waiting for its value: {"node", "id", "input"}
PICK_NOTE = "edit-pick-note"
MESSAGE = "edit-controls-message"
SUGGEST = "edit-suggest"
SUGGEST_PENDING = "edit-suggest-pending"
SUGGEST_POLL = "edit-suggest-poll"
SUGGESTIONS = "edit-suggestions"
SUGGESTED = "edit-suggested"     # the fixes offered: their edits, by place
APPLY = "edit-apply"             # pattern-matching type; index: the fix's place
NEW_ATTRIBUTE = "attr+"
POLL_MS = 700
# Edits after which the file's nodes keep their places, so the selected node id stays its own.
KEEPS_PLACES = (SetAttribute, SetTensor)


def layout() -> html.Div:
    """Drawn in the inspector tab, under the node's description."""
    return html.Div(className="edit-controls", children=[
        dcc.Store(id=NODE, storage_type="memory"),
        dcc.Store(id=PICK, storage_type="memory"),
        dcc.Store(id=SUGGEST_PENDING, storage_type="memory"),
        dcc.Store(id=SUGGESTED, storage_type="memory"),
        dcc.Interval(id=SUGGEST_POLL, interval=POLL_MS, disabled=True),
        html.Div(id=PICK_NOTE, className="edit-pick-note", role="status"),
        html.Div(id=MESSAGE, className="messages"),
        html.Div(id=MISSES),
        html.Div(id=SUGGESTIONS, className="edit-suggestions", role="status"),
        html.Div(id=BODY),
    ])


def register(app, services: Services) -> None:
    builds = services.workbench.builds

    @on_view(app, services, {"body": Output(BODY, "children"), "node": Output(NODE, "data"),
                             "misses": Output(MISSES, "children"),
                             "suggestions": Output(SUGGESTIONS, "children"),
                             "message": Output(MESSAGE, "children")},
             idle={"body": None, "node": None, "misses": None}, tab="inspector",
             message="body")
    def draw(state, workspace):
        cleared = {"suggestions": None, "message": None, "misses": None}
        if state.node is None or workspace.comparison is not None:
            return {"body": None, "node": None, **cleared}
        found = editable_node(workspace, state.node)
        if isinstance(found, str):
            return {"body": html.Div([html.H4("Edit"), html.P(found, className="muted")]),
                    "node": None, **cleared}
        return {"body": controls(found), "node": {"name": found.name, "id": state.node},
                **cleared, "misses": misses_view(near_misses(workspace, found.name))}

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Output(PICK, "data"), Output(MESSAGE, "children", allow_duplicate=True),
                  Input({"type": ACT, "index": ALL}, "n_clicks"),
                  State({"type": VALUE, "index": ALL}, "value"),
                  State({"type": VALUE, "index": ALL}, "id"),
                  State(NODE, "data"), State(ids.VIEW, "data"), prevent_initial_call=True)
    def act(_clicks, values, value_ids, node, view):
        if not view or not node or ctx.triggered_id is None or not ctx.triggered[0]["value"]:
            return no_update, no_update, no_update
        action = ctx.triggered_id["index"]
        typed = {i["index"]: v for i, v in zip(value_ids, values)}
        if action.startswith("pick:"):
            return no_update, {**node, "input": int(action[5:])}, ""
        if action == "cancel":
            return no_update, None, ""
        try:
            edit = _edit(action, node["name"], typed)
            state = ViewState.from_dict(view)
            return _patch(state, edit, node["id"]), None, ""
        except Exception as err:  # noqa: BLE001 - said under the controls; the view stays
            return no_update, no_update, html.Div(user_message(err), className="message error")

    @app.callback(Output(PICK_NOTE, "children"), Input(PICK, "data"),
                  prevent_initial_call=True)   # a page starts with nothing picked
    def note(pick):
        if not pick:
            return None
        return html.Div([f"Rewiring input {pick['input']} of {pick['name']}: click the node in "
                         f"either pane whose output it should read. ",
                         html.Button("Cancel", id={"type": ACT, "index": "cancel"},
                                     className="button small")], className="message")

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Output(PICK, "data", allow_duplicate=True),
                  Output(MESSAGE, "children", allow_duplicate=True),
                  Input(ids.BEFORE, "tapNodeData"), Input(ids.AFTER, "tapNodeData"),
                  State(PICK, "data"), State(ids.VIEW, "data"), State(ids.UPLOAD_TOKEN, "data"),
                  State(ids.COMPARE_UPLOAD, "data"), prevent_initial_call=True)
    def picked(before, after, pick, view, upload, upload_b):
        if not pick or not view:
            return no_update, no_update, no_update
        data = (before if ctx.triggered_id == ids.BEFORE else after) or {}
        if data.get("kind") != "node":
            return no_update, no_update, no_update
        state = ViewState.from_dict(view)
        try:
            workspace = services.workspace(state, upload, upload_b)
            producer = workspace.result.initial.node_by_id(int(data["node_id"]))
            outputs = [v for v in producer.outputs if v is not None] if producer else []
            if not outputs:
                return no_update, None, html.Div(
                    "That node is not in the model as loaded (a pass made it): pick a node of "
                    "the model, at a pass before it was rewritten.", className="message error")
            edit = Rewire(pick["name"], int(pick["input"]), outputs[0].name)
            return _patch(state, edit, None), None, ""
        except Exception as err:  # noqa: BLE001
            return no_update, None, html.Div(user_message(err), className="message error")

    @app.callback(Output(SUGGEST_PENDING, "data"), Output(SUGGEST_POLL, "disabled"),
                  Output(SUGGESTIONS, "children", allow_duplicate=True),
                  Output(SUGGESTED, "data"),
                  Input(SUGGEST, "n_clicks"), Input(SUGGEST_POLL, "n_intervals"),
                  State(SUGGEST_PENDING, "data"), State(NODE, "data"), State(ids.VIEW, "data"),
                  State(ids.UPLOAD_TOKEN, "data"), prevent_initial_call=True)
    def suggest(_click, _tick, pending, node, view, upload):
        if ctx.triggered_id == SUGGEST_POLL:
            if not pending:
                return None, True, no_update, no_update
            site, view = pending["site"], pending["view"]
        else:
            if not ctx.triggered[0]["value"] or not node or not view:
                return no_update, no_update, no_update, no_update
            site = node["name"]
        state = ViewState.from_dict(view)
        try:
            source = services.workbench.source(state.model, (upload or {}).get("token"))
            found = builds.get_or_start(suggestion_job(source, state.edits, state.pipeline,
                                                       state.bound.checked(), site))
        except Exception as err:  # noqa: BLE001
            return None, True, html.Div(user_message(err), className="message error"), None
        if isinstance(found, BuildStatus):
            return ({"site": site, "view": view}, False,
                    html.Span(f"Trying fixes for {site}: each is applied and the pipeline run "
                              f"again… ({found.state})", className="muted"), no_update)
        return None, True, suggestions_view(found, site), [edits_to_json(s.edits)
                                                           for s in found]

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Output(MESSAGE, "children", allow_duplicate=True),
                  Input({"type": APPLY, "index": ALL}, "n_clicks"),
                  State(SUGGESTED, "data"), State(ids.VIEW, "data"), prevent_initial_call=True)
    def apply(_clicks, suggested, view):
        if not view or not suggested or ctx.triggered_id is None \
                or not ctx.triggered[0]["value"]:
            return no_update, no_update
        try:
            state = ViewState.from_dict(view)
            edits = suggested[int(ctx.triggered_id["index"])]
            return {"edits": with_edits(state.edits, *edits), "node": None}, ""
        except Exception as err:  # noqa: BLE001
            return no_update, html.Div(user_message(err), className="message error")


def _edit(action: str, node: str, typed: dict):
    """The edit a control asks for, with what was typed beside it."""
    if action == "bypass":
        return Bypass(node)
    if action == "delete":
        return Delete(node)
    if action.startswith("attr:"):
        name = action[5:]
        return SetAttribute(node, name, read_typed_value(typed.get(action), name))
    if action == NEW_ATTRIBUTE:
        name = (typed.get(NEW_ATTRIBUTE + "name") or "").strip()
        if not name:
            raise EditError("type the attribute's name beside its value")
        return SetAttribute(node, name, read_typed_value(typed.get(action), name))
    if action.startswith("tensor:"):
        name = action[7:]
        return SetTensor(name, read_typed_value(typed.get(action), name))
    raise EditError(f"no edit control {action!r}")


def _patch(state: ViewState, edit, node_id: int | None) -> dict:
    """The view's edits with ``edit`` after them; the selection kept where the edit leaves
    the file's nodes in their places (else a node id could name another node)."""
    keep = isinstance(edit, KEEPS_PLACES) and node_id is not None
    return {"edits": with_edits(state.edits, edit), "node": node_id if keep else None}


def near_misses(workspace: Workspace, name: str) -> list[str]:
    """What nearly matched or was declined at the node called ``name``, pass by pass."""
    found = []
    for snapshot in workspace.result.snapshots:
        for report in snapshot.pattern_reports:
            found += [f"{report.name} ({snapshot.pass_name}): {miss.reason}"
                      for miss in report.near_misses
                      if miss.site.name == name and miss.score >= STRONG_SCORE]
        found += [f"{d.rule} ({snapshot.pass_name}): {d.reason}" for d in snapshot.declined
                  if d.site == name and d.blocking is not None]
    return list(dict.fromkeys(found))


def misses_view(misses: list[str]) -> html.Div | None:
    """Where the node nearly matched, and the button that tries the fixes."""
    if not misses:
        return None
    return html.Div([html.H4("Nearly matched here"),
                     html.Ul([html.Li(text) for text in misses], className="edit-misses"),
                     html.Button("Suggest a fix", id=SUGGEST, className="button small",
                                 title="try the edits that would make it match: each applied "
                                       "and the pipeline run again, its effect on the outputs "
                                       "measured in onnxruntime")])


def controls(node: EditableNode) -> html.Div:
    """The node's edit controls: bypass, delete, its attributes and its inputs."""
    parts = [html.H4("Edit this node"), html.Div(className="edit-buttons", children=[
        html.Button("Bypass", id={"type": ACT, "index": "bypass"}, className="button small",
                    title="remove it: what reads its first output reads its first input"),
        html.Button("Delete", id={"type": ACT, "index": "delete"}, className="button small",
                    title="remove it and what fed only it (only when nothing but the graph's "
                          "outputs reads it)")])]
    rows = [_field(name, f"attr:{name}", text) for name, text in node.attributes]
    rows.append(html.Div(className="edit-field", children=[
        dcc.Input(id={"type": VALUE, "index": NEW_ATTRIBUTE + "name"}, type="text",
                  placeholder="name", className="edit-name-box", debounce=False),
        _box(NEW_ATTRIBUTE, "", "value"), _set(NEW_ATTRIBUTE)]))
    parts += [html.H4("Attributes"), html.Div(rows, className="edit-fields")]
    inputs = []
    for item in node.inputs:
        action = f"tensor:{item.value}"
        line = [_box(action, item.shown, "" if item.shown else "one number fills it"),
                _set(action)] if item.constant else []
        line.append(html.Button("Rewire…", id={"type": ACT, "index": f"pick:{item.index}"},
                                className="button small",
                                title="then click the node whose output it should read"))
        inputs.append(html.Div(className="edit-input", children=[
            html.Div(f"{item.index}: {item.value or '(none)'}", className="edit-label"),
            html.Div(line, className="edit-field")]))
    parts += [html.H4("Inputs"), html.Div(inputs, className="edit-fields")]
    return html.Div(parts, className="edit-node")


def suggestions_view(found: list, site: str) -> html.Div:
    if not found:
        return html.Div(f"No edit of one value makes a pattern fire at {site} (each candidate "
                        f"was tried).", className="muted")
    items = []
    for index, fix in enumerate(found):
        effect = fix.effect.summary() if fix.effect else f"effect not measured: " \
                                                         f"{fix.effect_error}"
        items.append(html.Li(className="edit-suggestion", children=[
            html.Div([html.B(fix.pattern), f" at {fix.site} ({fix.pass_name})"]),
            html.Div("fix: " + "; ".join(e.describe() for e in fix.edits),
                     className="edit-fix"),
            html.Div(fix.outcome()),
            html.Div(f"effect: {effect}", className="edit-effect"),
            html.Button("Apply", id={"type": APPLY, "index": index},
                        className="button small")]))
    return html.Div([html.H4("Fixes that make it fire"), html.Ul(items)])


def _field(label: str, action: str, value: str) -> html.Div:
    return html.Div(className="edit-input", children=[
        html.Div(label, className="edit-label"),
        html.Div([_box(action, value), _set(action)], className="edit-field")])


def _box(action: str, value: str, placeholder: str = "") -> dcc.Textarea:
    """A value typed as JSON; a text area, so a long list scrolls instead of being cut."""
    return dcc.Textarea(id={"type": VALUE, "index": action}, value=value, rows=1,
                        placeholder=placeholder, className="edit-box")


def _set(action: str) -> html.Button:
    return html.Button("Set", id={"type": ACT, "index": action}, className="button small")


PANEL = Panel(NAME, INSIDE, register)   # its layout: in the inspector tab
