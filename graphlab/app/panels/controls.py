"""The load bar: model (sample or upload), pipeline preset or pass list, target, bindings.

A file that is not ONNX at all is refused here at once.  Importing an accepted upload and
running the pipeline happen in a builder process with progress (see `builds`); anything the
importer refuses then shows as the navigation's message and the view stays as it was.
"""

from __future__ import annotations

import base64
import binascii

from dash import Input, Output, State, dcc, html, no_update

from compiler_core.errors import GraphLabError
from compiler_core.hardware.targets import list_targets
from compiler_core.ir.importer import parse_model_bytes
from compiler_core.passes.registry import all_passes

from .. import ids
from ..messages import user_message
from ..services import Services, preset_names
from ..workbench import UPLOAD_MODEL


def layout(services: Services) -> html.Div:
    presets = [{"label": name, "value": name} for name in preset_names()]
    model_options = services.workbench.model_options()
    model_options.append({"label": "uploaded model", "value": UPLOAD_MODEL, "disabled": True})
    return html.Div(className="load-bar", children=[
        _field("Model", dcc.Dropdown(id=ids.MODEL, options=model_options, clearable=False,
                                     className="dropdown-model")),
        dcc.Upload(id=ids.UPLOAD, className="upload", multiple=False,
                   children=html.Span(["Upload .onnx"], className="button")),
        _field("Pipeline", dcc.Dropdown(id=ids.PRESET, options=presets, clearable=True,
                                        placeholder="custom", className="dropdown-preset")),
        _field("Passes", dcc.Input(id=ids.PASSES, type="text", debounce=True,
                                   className="passes-input"),
               title="comma-separated pass names; available: " + ", ".join(sorted(all_passes()))),
        html.Button("Run", id=ids.RUN, className="button primary"),
        _field("Target", dcc.Dropdown(id=ids.TARGET, clearable=False, className="dropdown-target",
                                      options=[{"label": t, "value": t} for t in list_targets()])),
        _field("Bindings", dcc.Input(id=ids.BINDINGS, type="text", debounce=True,
                                     placeholder="batch=1,seq=8", className="bindings-input")),
    ])


def _field(label: str, control, title: str | None = None) -> html.Label:
    return html.Label([html.Span(label, className="field-label"), control], className="field",
                      title=title)


def register(app, services: Services) -> None:
    limit = services.config.upload_limit

    @app.callback(Output(ids.UPLOAD_TOKEN, "data"), Output(ids.UPLOAD_MESSAGE, "children"),
                  Input(ids.UPLOAD, "contents"), State(ids.UPLOAD, "filename"),
                  prevent_initial_call=True)
    def accept_upload(contents, filename):
        if not contents:
            return no_update, no_update
        try:
            data = decode_upload(contents, filename or "upload", limit)
            parse_model_bytes(data, filename or "the upload")
            upload = services.workbench.sessions.save_upload(filename or "upload.onnx", data)
        except Exception as err:  # noqa: BLE001 - every failure becomes a message in the page
            return no_update, html.Div(f"Upload refused: {user_message(err)}",
                                       className="message error")
        return {"token": upload.token, "filename": upload.filename}, ""


def decode_upload(contents: str, filename: str, limit: int) -> bytes:
    """The bytes of a dcc.Upload data URL, with the size limit enforced."""
    _, _, payload = contents.partition(",")
    if len(payload) * 3 // 4 > limit + 3:
        raise GraphLabError(f"{filename} is larger than the {limit >> 20} MB upload limit",
                            hint="start `graphlab serve --model FILE` to open a bigger model")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as err:
        raise GraphLabError(f"{filename} did not arrive intact", hint="upload it again") from err
    if not data:
        raise GraphLabError(f"{filename} is empty")
    return data
