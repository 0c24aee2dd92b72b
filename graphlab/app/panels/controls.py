"""The load bar: model (sample or upload), pipeline preset or pass list, target, bindings.

A file that is not ONNX at all is refused here at once (see `uploads`).  Importing an accepted upload and
running the pipeline happen in a builder process with progress (see `builds`); anything the
importer refuses then shows as the navigation's message and the view stays as it was.
"""

from __future__ import annotations

from dash import Input, Output, State, dcc, html, no_update

from compiler_core.hardware.targets import list_targets
from compiler_core.ir import Graph
from compiler_core.passes.registry import all_passes
from compiler_core.verify import bind_dims

from .. import ids
from ..messages import user_message
from ..services import Services, preset_names
from ..uploads import read_upload
from ..workbench import UPLOAD_MODEL
from .on_view import on_view
from .panel import TOP, Panel

MODEL = "model-select"
UPLOAD = "model-upload"
PRESET = "pipeline-preset"
PASSES = "pipeline-passes"
RUN = "pipeline-run"
TARGET = "target-select"
BINDINGS = "bindings-input"


def layout(services: Services) -> html.Div:
    presets = [{"label": name, "value": name} for name in preset_names()]
    model_options = services.workbench.model_options()
    model_options.append({"label": "uploaded model", "value": UPLOAD_MODEL, "disabled": True})
    return html.Div(className="load-bar", children=[
        _field("Model", dcc.Dropdown(id=MODEL, options=model_options, clearable=False,
                                     className="dropdown-model")),
        dcc.Upload(id=UPLOAD, className="upload", multiple=True,
                   children=html.Span(["Upload .onnx"], className="button",
                                      title="an .onnx file; a model with external data: "
                                            "select the .onnx file and its data file together")),
        _field("Pipeline", dcc.Dropdown(id=PRESET, options=presets, clearable=True,
                                        placeholder="custom", className="dropdown-preset")),
        _field("Passes", dcc.Input(id=PASSES, type="text", debounce=True,
                                   className="passes-input"),
               title="comma-separated pass names; available: " + ", ".join(sorted(all_passes()))),
        html.Button("Run", id=RUN, className="button primary"),
        _field("Target", dcc.Dropdown(id=TARGET, clearable=False, className="dropdown-target",
                                      options=[{"label": t, "value": t} for t in list_targets()])),
        _field("Bindings", dcc.Input(id=BINDINGS, type="text", debounce=True,
                                     placeholder="batch=1,seq=8", className="bindings-input"),
               title="sizes for the model's symbolic input dims; the example shows this "
                     "model's dims"),
    ])


def _field(label: str, control, title: str | None = None) -> html.Label:
    return html.Label([html.Span(label, className="field-label"), control], className="field",
                      title=title)


def bindings_placeholder(graph: Graph) -> str:
    """The model's own symbolic input dims as an example binding (sizes a check would use)."""
    sizes = bind_dims(graph)
    return ",".join(f"{dim}={size}" for dim, size in sizes.items()) or "no symbolic dims"


def register(app, services: Services) -> None:
    limit = services.config.upload_limit

    @on_view(app, services, {"dims": Output(BINDINGS, "placeholder")},
             prevent_initial_call=True)
    def show_model_dims(_state, workspace):
        return {"dims": bindings_placeholder(workspace.result.initial)}

    @app.callback(Output(ids.UPLOAD_TOKEN, "data"), Output(ids.UPLOAD_MESSAGE, "children"),
                  Input(UPLOAD, "contents"), State(UPLOAD, "filename"),
                  prevent_initial_call=True)
    def accept_upload(contents, filename):
        if not contents:
            return no_update, no_update
        try:
            name, data = read_upload(contents, filename, limit)
            upload = services.workbench.sessions.save_upload(name, data)
        except Exception as err:  # noqa: BLE001 - every failure becomes a message in the page
            return no_update, html.Div(f"Upload refused: {user_message(err)}",
                                       className="message error")
        return {"token": upload.token, "filename": upload.filename}, ""


PANEL = Panel("controls", TOP, register, layout)
