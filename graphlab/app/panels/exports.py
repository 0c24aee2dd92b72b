"""Downloads: either graph pane as SVG or PNG (drawn in the browser, the whole graph as shown:
open groups, marks, overlay; the SVG by `assets/graph_svg.js`, the PNG by cytoscape), and the
optimized model — the pipeline's last snapshot — as portable ONNX (fused nodes as model-local
functions) or as ONNX for onnxruntime (fused nodes as its own operators, see
``compiler_core.lowering``).

A model too large for one ONNX file (protobuf's 2 GiB) is written to the cache dir as the
model and its external data file, and the page offers both as links to a route of this
panel that streams them from disk; the pair is written once per model and runtime.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile

from dash import Input, Output, State, ctx, dcc, html, no_update
from flask import abort, send_from_directory

from compiler_core.ir import Graph, save_model, to_bytes
from compiler_core.ir.model_limits import ModelTooLargeError, format_size
from compiler_core.lowering import lower_for_onnxruntime

from .. import ids
from ..cache_files import DOWNLOADS, cache_folder, prune
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
        html.Button("⤓ .onnx", id=MODEL_BUTTON, className="button",
                    title="download the model after the last pass of the pipeline, fused "
                          "nodes as model-local functions (runs in any ONNX runtime)"),
        html.Button("⤓ for onnxruntime", id=ORT_MODEL_BUTTON, className="button",
                    title="the same model with fused nodes as onnxruntime's own operators "
                          "(Attention, SkipLayerNormalization, ...), which it runs fastest"),
        dcc.Download(id=MODEL_DOWNLOAD), html.Span(id=MESSAGE)])


FILE_ROUTE = "/_graphlab/model-files"


def model_file(graph: Graph, label: str, runtime: str) -> tuple[bytes, str]:
    """The model's bytes and file name for the ``onnx`` or the ``onnxruntime`` download
    (a ModelTooLargeError past protobuf's 2 GiB: see ``model_files``)."""
    graph, name = _for_runtime(graph, label, runtime)
    return to_bytes(graph), name


def model_files(graph: Graph, label: str, runtime: str, folder: str) -> list[str]:
    """The model written in ``folder`` as its .onnx file and its external data file; their
    names."""
    graph, name = _for_runtime(graph, label, runtime)
    save_model(graph, os.path.join(folder, name), external_data=True)
    return sorted(os.listdir(folder))


def _for_runtime(graph: Graph, label: str, runtime: str) -> tuple[Graph, str]:
    if runtime == "onnxruntime":
        return lower_for_onnxruntime(graph).graph, f"{_stem(label)}.onnxruntime.onnx"
    return graph, f"{_stem(label)}.optimized.onnx"


def _large_download(services: Services, workspace, graph: Graph, runtime: str) -> html.Span:
    """Links to the model's two files, written to the cache dir if they are not there yet."""
    downloads = cache_folder(services.config.cache_dir, DOWNLOADS)
    prune(downloads, services.config.upload_ttl_seconds)
    token = hashlib.sha256(f"{workspace.key}:{runtime}".encode()).hexdigest()[:32]
    folder = os.path.join(downloads, token)
    if not os.path.isdir(folder):   # written once; a second request (any worker) reuses it
        writing = tempfile.mkdtemp(prefix=".writing-", dir=downloads)
        model_files(graph, workspace.label, runtime, writing)
        try:
            os.rename(writing, folder)
        except OSError:   # another request finished first
            shutil.rmtree(writing, ignore_errors=True)
    names = sorted(os.listdir(folder))
    sizes = {n: os.path.getsize(os.path.join(folder, n)) for n in names}
    return html.Span(className="export-files", children=[
        f"The model is {format_size(sum(sizes.values()))}, more than one ONNX file can hold "
        f"(2 GiB): it comes as two files; keep them in one folder: "
    ] + [html.A(f"{name} ({format_size(sizes[name])})", href=f"{FILE_ROUTE}/{token}/{name}",
                download=name, className="button small") for name in names])


def _serve_file(services: Services):
    downloads = os.path.join(services.config.cache_dir, DOWNLOADS)

    def serve(token: str, name: str):
        if not re.fullmatch(r"[0-9a-f]{32}", token) or "/" in name or name.startswith("."):
            abort(404)
        return send_from_directory(os.path.join(downloads, token), name, as_attachment=True)
    return serve


def register(app, services: Services) -> None:
    app.server.add_url_rule(f"{FILE_ROUTE}/<token>/<name>", "graphlab_model_file",
                            _serve_file(services))

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
        graph = workspace.result.snapshots[-1].graph
        try:
            data, name = model_file(graph, workspace.label, runtime)
        except ModelTooLargeError:
            return {"message": _large_download(services, workspace, graph, runtime)}
        return {"file": dcc.send_bytes(data, name), "message": ""}


def image_name(state: ViewState, side: str) -> str:
    """'cnn_bn-pass3-before' (no extension: cytoscape adds it)."""
    return f"{_stem(state.model)}-pass{state.step + 1}-{side}"


def _stem(name: str) -> str:
    stem = re.sub(r"\.onnx$", "", name)
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem) or "model"


PANEL = Panel("exports", INSIDE, register)   # its buttons: in the panes' layout
