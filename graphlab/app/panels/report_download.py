""""Download report": the self-contained HTML report (`graphlab report`) of the model and
pipeline on screen, made from the workspace the page already shows."""

from __future__ import annotations

import os

from dash import Input, Output, dcc, html

from compiler_core.hardware.targets import get_target

from ...report import render, tell
from ..services import Services
from .on_view import on_view
from .panel import TOP, Panel

BUTTON = "report-button"
DOWNLOAD = "report-download"
MESSAGE = "report-message"
NOT_VERIFIED = ("not run in the app (`graphlab report MODEL` runs every pass against the "
                "original with onnxruntime)")


def layout(_: Services) -> html.Div:
    return html.Div(className="report-download", children=[
        html.Button("⤓ Report", id=BUTTON, className="button",
                    title="Download report: one HTML page with every pass, its diff and "
                          "patterns, the roofline and the memory plan; it opens without a server"),
        dcc.Download(id=DOWNLOAD),
        html.Span(id=MESSAGE),
    ])


def register(app, services: Services) -> None:
    @on_view(app, services,
             {"file": Output(DOWNLOAD, "data"), "message": Output(MESSAGE, "children")},
             inputs={"clicks": Input(BUTTON, "n_clicks")}, view_triggers=False,
             message="message", prevent_initial_call=True)
    def download(state, workspace, clicks):
        if not clicks:
            return {}
        document = workspace.derived.get(("report", state.target))
        if document is None:
            document = render(tell(workspace.compilation, workspace.label,
                                   get_target(state.target), NOT_VERIFIED))
            workspace.derived[("report", state.target)] = document
        stem = os.path.splitext(workspace.label)[0] or "model"
        return {"file": dcc.send_string(document, f"{stem}_report.html"), "message": ""}


PANEL = Panel("report", TOP, register, layout)
