"""The edit list, beside the pass list: every edit made to the model in this view, each
undoable, and the edits and the edited model to download.

The list is the view's (`ViewState.edits`, in the URL), so a shared link reproduces the edited
model; removing an edit sends the shorter list as a patch, the reducer checks it and the
pipeline runs again on the model it makes (a build), staying on the same pass.
"""

from __future__ import annotations

import json

from dash import ALL, Input, Output, State, ctx, dcc, html, no_update

from compiler_core.editing import edits_to_json

from .. import ids
from ..messages import user_message
from ..model_edits import edited_source, read_view_edits, without_edit
from ..services import Services
from ..view_state import ViewState
from .on_view import on_view
from .panel import INSIDE, Panel

NAME = "edits"
LIST = "edit-list"
MESSAGE = "edit-list-message"
REMOVE = "edit-remove"           # pattern-matching type; index: the edit's place (from 0)
UNDO = "edit-undo"
GET_JSON = "edit-get-json"
GET_ONNX = "edit-get-onnx"
DOWNLOAD = "edit-download"
TOOLS = "edit-list-tools"
EMPTY = "No edits yet: select a node and edit it in the inspector."


def layout() -> html.Div:
    """Drawn in the stepper under the pass list, held at the column's foot (editing.css)."""
    return html.Div(className="edit-list-panel", children=[
        html.H3("Edits"),
        html.Ol(id=LIST, className="edit-list"),
        html.Div(id=TOOLS, className="edit-list-tools", hidden=True, children=[
            html.Button("Undo", id=UNDO, className="button small",
                        title="remove the last edit (the pipeline runs again)"),
            html.Button("JSON", id=GET_JSON, className="button small",
                        title="download the edits (graphlab edit MODEL EDITS.json reads them)"),
            html.Button(".onnx", id=GET_ONNX, className="button small",
                        title="download the edited model"),
        ]),
        html.Div(id=MESSAGE, className="messages"),
        dcc.Download(id=DOWNLOAD),
    ])


def register(app, services: Services) -> None:
    @on_view(app, services, {"list": Output(LIST, "children"), "hide": Output(TOOLS, "hidden")},
             settings_only=True, message="list",
             idle={"list": html.Li(EMPTY, className="muted"), "hide": True})
    def draw(state, _workspace):
        edits = read_view_edits(state.edits)
        if not edits:
            return {"list": [html.Li(EMPTY, className="muted edit-empty")], "hide": True}
        return {"list": [html.Li(className="edit-row", children=[
            html.Span(edit.describe(), className="edit-text", title=json.dumps(
                edits_to_json([edit])[0])),
            html.Button("×", id={"type": REMOVE, "index": index}, className="edit-remove",
                        title="undo this edit (those after it stay)")])
            for index, edit in enumerate(edits)], "hide": False}

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Output(MESSAGE, "children"),
                  Input({"type": REMOVE, "index": ALL}, "n_clicks"), Input(UNDO, "n_clicks"),
                  State(ids.VIEW, "data"), prevent_initial_call=True)
    def undo(_removes, _undo, view):
        if not view or ctx.triggered_id is None or not ctx.triggered[0]["value"]:
            return no_update, no_update
        text = ViewState.from_dict(view).edits
        try:
            count = len(read_view_edits(text))
            index = count - 1 if ctx.triggered_id == UNDO else int(ctx.triggered_id["index"])
            if not 0 <= index < count:
                return no_update, ""
            return {"edits": without_edit(text, index), "node": None}, ""
        except Exception as err:  # noqa: BLE001 - said in the panel; the view stays
            return no_update, html.Div(user_message(err), className="message error")

    @app.callback(Output(DOWNLOAD, "data"), Output(MESSAGE, "children", allow_duplicate=True),
                  Input(GET_JSON, "n_clicks"), Input(GET_ONNX, "n_clicks"),
                  State(ids.VIEW, "data"), State(ids.UPLOAD_TOKEN, "data"),
                  prevent_initial_call=True)
    def download(_json, _onnx, view, upload):
        if not view or not ctx.triggered[0]["value"]:
            return no_update, no_update
        state = ViewState.from_dict(view)
        stem = state.model.rsplit(".onnx", 1)[0]
        try:
            edits = read_view_edits(state.edits)
            if ctx.triggered_id == GET_JSON:
                return {"content": json.dumps(edits_to_json(edits), indent=2),
                        "filename": f"{stem}_edits.json"}, ""
            source = edited_source(services.workbench.source(
                state.model, (upload or {}).get("token")), state.edits)
            return dcc.send_bytes(source.original_bytes(), f"{stem}_edited.onnx"), ""
        except Exception as err:  # noqa: BLE001
            return no_update, html.Div(user_message(err), className="message error")


PANEL = Panel(NAME, INSIDE, register)   # its layout: in the stepper, under the pass list
