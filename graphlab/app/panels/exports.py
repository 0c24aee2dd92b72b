"""Downloads: either graph pane as SVG or PNG (drawn by cytoscape in the browser, the whole
graph as shown: open groups, marks, overlay), and the optimized model — the pipeline's last
snapshot — as portable ONNX (fused nodes as model-local functions) or as ONNX for onnxruntime
(fused nodes as its own operators, see ``compiler_core.lowering``)."""

from __future__ import annotations

import re

import dash_cytoscape as cyto
from dash import Input, Output, State, ctx, dcc, html, no_update

from compiler_core.ir import Graph, to_bytes
from compiler_core.lowering import lower_for_onnxruntime

from .. import ids
from ..services import Services
from ..view_state import ViewState
from .on_view import on_view
from .panel import INSIDE, Panel

MODEL_BUTTON = "export-model"
ORT_MODEL_BUTTON = "export-model-onnxruntime"
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
                    title="download the model after the last pass of the pipeline, fused "
                          "nodes as model-local functions (runs in any ONNX runtime)"),
        html.Button("⤓ ONNX for onnxruntime", id=ORT_MODEL_BUTTON, className="button",
                    title="the same model with fused nodes as onnxruntime's own operators "
                          "(Attention, SkipLayerNormalization, ...), which it runs fastest"),
        dcc.Download(id=MODEL_DOWNLOAD), html.Span(id=MESSAGE)])


def model_file(graph: Graph, label: str, runtime: str) -> tuple[bytes, str]:
    """The model's bytes and file name for the ``onnx`` or the ``onnxruntime`` download."""
    if runtime == "onnxruntime":
        return to_bytes(lower_for_onnxruntime(graph).graph), f"{_stem(label)}.onnxruntime.onnx"
    return to_bytes(graph), f"{_stem(label)}.optimized.onnx"


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
             inputs={"portable": Input(MODEL_BUTTON, "n_clicks"),
                     "for_onnxruntime": Input(ORT_MODEL_BUTTON, "n_clicks")},
             view_triggers=False, message="message", prevent_initial_call=True)
    def model(_state, workspace, portable, for_onnxruntime):
        if not (portable or for_onnxruntime):
            return {}
        runtime = "onnxruntime" if ctx.triggered_id == ORT_MODEL_BUTTON else "onnx"
        data, name = model_file(workspace.result.snapshots[-1].graph, workspace.label, runtime)
        return {"file": dcc.send_bytes(data, name), "message": ""}


def image_name(state: ViewState, side: str) -> str:
    """'cnn_bn-pass3-before' (no extension: cytoscape adds it)."""
    return f"{_stem(state.model)}-pass{state.step + 1}-{side}"


def _stem(name: str) -> str:
    stem = re.sub(r"\.onnx$", "", name)
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem) or "model"


PANEL = Panel("exports", INSIDE, register)   # its buttons: in the panes' layout
