""""Download report": the self-contained HTML report (`graphlab report`) of the model and
pipeline on screen, made from the workspace the page already shows."""

from __future__ import annotations

import os

from dash import Input, Output, State, dcc, html, no_update

from compiler_core.hardware.targets import get_target

from ...user_input import parse_bindings
from ...report import render, tell
from .. import ids
from ..messages import user_message
from ..services import Services
from ..view_state import ViewState

NOT_VERIFIED = ("not run in the app (`graphlab report MODEL` runs every pass against the "
                "original with onnxruntime)")


def layout() -> html.Div:
    return html.Div(className="report-download", children=[
        html.Button("⤓ Report", id=ids.REPORT, className="button",
                    title="Download report: one HTML page with every pass, its diff and "
                          "patterns, the roofline and the memory plan; it opens without a server"),
        dcc.Download(id=ids.REPORT_DOWNLOAD),
        html.Span(id=ids.REPORT_MESSAGE),
    ])


def register(app, services: Services) -> None:
    @app.callback(Output(ids.REPORT_DOWNLOAD, "data"), Output(ids.REPORT_MESSAGE, "children"),
                  Input(ids.REPORT, "n_clicks"), State(ids.VIEW, "data"),
                  State(ids.UPLOAD_TOKEN, "data"), prevent_initial_call=True)
    def download(clicks, view, upload):
        if not clicks or not view:
            return no_update, no_update
        state = ViewState.from_dict(view)
        try:
            workspace = services.workspace(state, upload)
            document = workspace.derived.get(("report", state.target))
            if document is None:
                document = render(tell(workspace.result, workspace.label, state.pipeline,
                                       get_target(state.target), parse_bindings(state.bindings),
                                       NOT_VERIFIED))
                workspace.derived[("report", state.target)] = document
        except Exception as err:  # noqa: BLE001 - the page shows it
            return no_update, html.Span(user_message(err), className="message error")
        stem = os.path.splitext(workspace.label)[0] or "model"
        return dcc.send_string(document, f"{stem}_report.html"), ""
