""""Compare with…": put a second model beside the loaded one — a sample, a second upload, or
onnxruntime's own optimized model of the loaded one at a level — optionally both after the
pipeline.  The choice is part of the view (``versus``, ``versus_after``: in the URL), sent as a
patch like every panel's setting; the build and the diff happen in a builder process."""

from __future__ import annotations

import json

from dash import Input, Output, State, dcc, html, no_update

from .. import ids
from ..comparison import UPLOAD_B, versus_options
from ..messages import user_message
from ..services import Services
from ..uploads import read_upload
from .panel import INSIDE, Panel
from .view_fanout import Forward

VERSUS = "compare-versus"
UPLOAD = "compare-upload"
AFTER = "compare-after"
MESSAGE = "compare-message"
AFTER_VALUE = "after"


def layout(services: Services) -> html.Div:
    return html.Div(className="compare-bar", children=[
        html.Label(["Compare with…",
                    dcc.Dropdown(id=VERSUS, options=versus_options(services.workbench),
                                 clearable=True, placeholder="nothing: the passes",
                                 className="dropdown-versus")], className="field",
                   title="a second model beside this one, matched node by node: another "
                         "export, your own upload, or what onnxruntime's optimizer makes of "
                         "this model"),
        html.Div(className="compare-options", children=[
            dcc.Upload(id=UPLOAD, className="upload", multiple=True,
                       children=html.Span("Upload B", className="button",
                                          title="an .onnx file to compare with (with its "
                                                "external data files, if any)")),
            dcc.Checklist(id=AFTER, className="compare-after",
                          options=[{"label": " both after the pipeline",
                                    "value": AFTER_VALUE}], value=[])]),
        html.Span(id=MESSAGE),
    ])


def register(app, services: Services) -> None:
    limit = services.config.upload_limit

    @app.callback(Output(VERSUS, "options"), Input(ids.COMPARE_UPLOAD, "data"),
                  prevent_initial_call=True)   # the layout lists them; a kept upload restores
    def offer_upload(upload_b):
        options = versus_options(services.workbench)
        if upload_b:
            options[-1] = {"label": f"uploaded: {upload_b['filename']}", "value": UPLOAD_B}
        return options

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Input(VERSUS, "value"), Input(AFTER, "value"), State(ids.VIEW, "data"),
                  prevent_initial_call=True)
    def request_choice(versus, after, view):
        if not view:
            return no_update
        wanted = {"versus": versus or "", "versus_after": AFTER_VALUE in (after or [])}
        changed = {k: v for k, v in wanted.items() if v != view.get(k)}
        if changed.get("versus"):
            changed["panel"] = "compare"   # a new comparison opens its tab
        return changed or no_update   # nothing changed: the controls echoing the view

    @app.callback(Output(ids.COMPARE_UPLOAD, "data"), Output(MESSAGE, "children"),
                  Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Input(UPLOAD, "contents"), State(UPLOAD, "filename"),
                  prevent_initial_call=True)
    def accept_upload(contents, filename):
        if not contents:
            return no_update, no_update, no_update
        try:
            name, data = read_upload(contents, filename, limit)
            upload = services.workbench.sessions.save_upload(name, data)
        except Exception as err:  # noqa: BLE001 - every failure becomes a message in the page
            return no_update, html.Span(f"Upload refused: {user_message(err)}",
                                        className="message error"), no_update
        return ({"token": upload.token, "filename": upload.filename}, "",
                {"versus": UPLOAD_B, "panel": "compare"})


# The controls show the view's choice, set in the page with its other listeners of the view
# (`view_fanout`): a server callback for it cost every first view and every change of model a
# request that nearly always answered nothing.  What they already show is not set again (it
# would set off request_choice).
SHOW_CHOICE = Forward(
    (Output(VERSUS, "value"), Output(AFTER, "value")),
    (State(VERSUS, "value"), State(AFTER, "value")),
    """function (view, shown) {
  var skip = window.dash_clientside.no_update;
  if (!view) { return [skip, skip]; }
  var versus = view.versus || null, after = view.versus_after ? [%s] : [];
  return [versus === (shown[0] || null) ? skip : versus,
          JSON.stringify(after) === JSON.stringify(shown[1] || []) ? skip : after];
}""" % json.dumps(AFTER_VALUE))

PANEL = Panel("compare-bar", INSIDE, register,   # drawn at the top of the passes column
              forward=SHOW_CHOICE)
