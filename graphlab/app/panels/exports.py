"""Downloads: either graph pane as SVG or PNG (drawn by cytoscape in the browser, the whole
graph as shown: open groups, marks, overlay), and the optimized model — the pipeline's last
snapshot — as ONNX."""

from __future__ import annotations

import re

import dash_cytoscape as cyto
from dash import Input, Output, State, ctx, dcc, html, no_update

from compiler_core.ir import to_bytes

from .. import ids
from ..services import Services
from ..view_state import ViewState
from .on_view import on_view
from .panel import INSIDE, Panel

MODEL_BUTTON = "export-model"
MODEL_DOWNLOAD = "export-model-download"
MESSAGE = "export-message"
IMAGE = "export-image"        # pattern-matching type, index = 'before:svg', 'after:png', ...
IMAGE_OPTIONS = {"svg": {"full": True, "bg": "#ffffff"},
                 "png": {"full": True, "bg": "#ffffff", "scale": 2, "maxWidth": 12000,
                         "maxHeight": 12000}}


def pane_buttons(pane_id: str) -> html.Span:
    """'SVG' and 'PNG' buttons for the head of one pane (drawn by the panes)."""
    side = "before" if pane_id == ids.BEFORE else "after"
    return html.Span(className="pane-exports", children=[
        html.Button(kind.upper(), id={"type": IMAGE, "index": f"{side}:{kind}"},
                    className="button small", title=f"download this pane as {kind.upper()}")
        for kind in IMAGE_OPTIONS])


def model_button() -> html.Span:
    """Drawn in the pane tools."""
    return html.Span([
        html.Button("⤓ optimized .onnx", id=MODEL_BUTTON, className="button",
                    title="download the model after the last pass of the pipeline"),
        dcc.Download(id=MODEL_DOWNLOAD), html.Span(id=MESSAGE)])


def register(app, services: Services) -> None:
    cyto.load_extra_layouts()   # the bundle with cytoscape's SVG exporter (before first page)

    @app.callback(Output(ids.BEFORE, "generateImage"), Output(ids.AFTER, "generateImage"),
                  Input({"type": IMAGE, "index": "before:svg"}, "n_clicks"),
                  Input({"type": IMAGE, "index": "before:png"}, "n_clicks"),
                  Input({"type": IMAGE, "index": "after:svg"}, "n_clicks"),
                  Input({"type": IMAGE, "index": "after:png"}, "n_clicks"),
                  State(ids.VIEW, "data"), prevent_initial_call=True)
    def image(_bs, _bp, _as, _ap, view):
        if not ctx.triggered[0]["value"] or not view:
            return no_update, no_update
        side, kind = ctx.triggered_id["index"].split(":")
        request = {"type": kind, "action": "download", "options": IMAGE_OPTIONS[kind],
                   "filename": image_name(ViewState.from_dict(view), side)}
        return (request, no_update) if side == "before" else (no_update, request)

    @on_view(app, services, {"file": Output(MODEL_DOWNLOAD, "data"),
                             "message": Output(MESSAGE, "children")},
             inputs={"clicks": Input(MODEL_BUTTON, "n_clicks")}, view_triggers=False,
             message="message", prevent_initial_call=True)
    def model(_state, workspace, clicks):
        if not clicks:
            return {}
        data = to_bytes(workspace.result.snapshots[-1].graph)
        return {"file": dcc.send_bytes(data, f"{_stem(workspace.label)}.optimized.onnx"),
                "message": ""}


def image_name(state: ViewState, side: str) -> str:
    """'cnn_bn-pass3-before' (no extension: cytoscape adds it)."""
    return f"{_stem(state.model)}-pass{state.step + 1}-{side}"


def _stem(name: str) -> str:
    stem = re.sub(r"\.onnx$", "", name)
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem) or "model"


PANEL = Panel("exports", INSIDE, register)   # its buttons: in the panes' layout
