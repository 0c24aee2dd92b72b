"""The load bar: model (sample, upload, or a reduced model), pipeline preset or pass list, target, bindings.

The Bindings box always shows the sizes the view is computed at: the user's, and for every
symbolic dim they left out the representative size the workspace chose (the navigation writes
them); the word beside its label says whose they are, and its hover text why.

A file that is not ONNX at all is refused here at once (see `uploads`).  Importing an accepted upload and
running the pipeline happen in a builder process with progress (see `builds`); anything the
importer refuses then shows as the navigation's message and the view stays as it was.
"""

from __future__ import annotations

from dash import Input, Output, State, dcc, html, no_update

from compiler_core.compilation import Decisions
from compiler_core.errors import GraphLabError
from compiler_core.hardware.targets import list_targets
from compiler_core.passes.framework.pass_registry import all_passes

from .. import ids
from ..messages import user_message
from ..services import Services, preset_names
from ..uploads import read_upload
from ..workbench import REDUCED_MODEL, UPLOAD_MODEL
from .on_view import on_view
from .panel import TOP, Panel

MODEL = "model-select"
UPLOAD = "model-upload"
PRESET = "pipeline-preset"
PASSES = "pipeline-passes"
RUN = "pipeline-run"
TARGET = "target-select"
BINDINGS = "bindings-input"
BINDINGS_FIELD = "bindings-field"
SIZES_SOURCE = "bindings-source"   # "(representative)" or "(yours)" beside the box's label


def layout(services: Services) -> html.Div:
    presets = [{"label": name, "value": name} for name in preset_names()]
    return html.Div(className="load-bar", children=[
        _field("Model", dcc.Dropdown(id=MODEL, options=model_options(services, None),
                                     clearable=False,
                                     className="dropdown-model")),
        dcc.Upload(id=UPLOAD, className="upload", multiple=True,
                   children=html.Span(["Upload .onnx"], className="button",
                                      title="an .onnx file; a model with external data: "
                                            "select the .onnx file and its data file together")),
        _field("Pipeline", dcc.Dropdown(id=PRESET, options=presets, clearable=True,
                                        placeholder="custom", className="dropdown-preset")),
        _field("Passes", dcc.Input(id=PASSES, type="text", debounce=True,
                                   className="passes-input", placeholder="or list: a,b,…"),
               class_name="passes-field",
               title="comma-separated pass names; available: " + ", ".join(sorted(all_passes()))),
        html.Button("Run", id=RUN, className="button primary"),
        _field("Target", dcc.Dropdown(id=TARGET, clearable=False, className="dropdown-target",
                                      options=[{"label": t, "value": t} for t in list_targets()])),
        html.Label([html.Span(["Bindings ", html.Span(id=SIZES_SOURCE)]),
                    dcc.Input(id=BINDINGS, type="text", debounce=True,
                              className="bindings-input")],
                   id=BINDINGS_FIELD, className="field"),
    ])


def model_options(services: Services, upload: dict | None,
                  reduced: list[dict] | None = None) -> list[dict]:
    """The samples, the model this browser uploaded (once it has): choosing it again after a
    sample opens the upload again; and the models its reductions made."""
    options = services.workbench.model_options()
    options.append({"label": "uploaded model", "value": UPLOAD_MODEL, "disabled": not upload,
                    "title": (upload or {}).get("filename") or "upload a model first"})
    return options + [{"label": m["label"], "value": m["value"]} for m in reduced or []]


def _field(label: str, control, title: str | None = None, class_name: str = "") -> html.Label:
    return html.Label([label, control],
                      className=f"field {class_name}".strip(), title=title)


def sizes_source(decisions: Decisions) -> tuple[str, str]:
    """(the word beside the box, its hover text): whose sizes the costs are computed at, and
    which of them the pipeline bound (the compile entry's decisions)."""
    sizes = decisions.sizes
    if not sizes.chosen:
        return "", "this model's input shapes are all fixed: nothing to bind"
    word = "(yours)" if sizes.all_given else "(representative)"
    if decisions.fixed_size_readers:
        bound = (f"The pipeline ran with them all bound (specialize_dims): "
                 f"{', '.join(decisions.fixed_size_readers)} plans for fixed sizes")
    elif decisions.bound:
        bound = "The pipeline ran with the sizes you typed bound (specialize_dims)"
    else:
        bound = ("The pipeline bound none of them, so the graph keeps accepting any size; "
                 "type name=size,... to bind them and fold their shape arithmetic away")
    planned = (f" --target {decisions.target}` ({', '.join(decisions.target_readers)} "
               f"planned for it)" if decisions.target else "`")
    return word, (f"the sizes of the model's symbolic dims: {sizes.describe()}. Every cost "
                  f"is computed at them. {bound}. On the command line, `graphlab compile "
                  f"MODEL{' --bind ' + decisions.given_text() if decisions.given else ''}"
                  f"{planned} makes the same graph")


def _box_width(text: str) -> str:
    """The bindings field's width for ``text`` (up to 48 characters): its characters in the
    box's 14 px font, measured in the field's 12 px ``ch``, with the box's padding."""
    return f"calc({min(len(text), 48) + 4}ch * 1.2)"


def register(app, services: Services) -> None:
    limit = services.config.upload_limit

    @on_view(app, services, {"word": Output(SIZES_SOURCE, "children"),
                             "why": Output(BINDINGS_FIELD, "title"),
                             "empty": Output(BINDINGS, "placeholder"),
                             "width": Output(BINDINGS_FIELD, "style")},
             state={"shown": State(BINDINGS_FIELD, "title")}, settings_only=True,
             prevent_initial_call=True)
    def show_sizes_source(_state, workspace, shown):
        word, why = sizes_source(workspace.compilation.decisions)
        if why == shown:
            return {}   # a step within the same workspace: the box already says it
        empty = "name=size,..." if workspace.sizes.chosen else "no symbolic dims"
        return {"word": word, "why": why, "empty": empty,   # the box fits its hint too
                "width": {"minWidth": _box_width(workspace.sizes.text() or empty)}}

    @app.callback(Output(MODEL, "options"), Output(MODEL, "value", allow_duplicate=True),
                  Input(ids.UPLOAD_TOKEN, "data"), Input(ids.REDUCED_MODELS, "data"),
                  Input(ids.VIEW_SETTINGS, "data"), State(MODEL, "options"), State(MODEL, "value"),
                  prevent_initial_call=True)   # the layout lists them; the first view sets off this
    def offer_upload(upload, reduced, view, options, value):
        """The list (sent when it changed), and a reduced model chosen in it again: a list
        that changes drops a chosen value it does not hold (a reduced model named before the
        list has it)."""
        shown = (view or {}).get("model", "")
        listed = list(reduced or [])
        if shown.startswith(REDUCED_MODEL) and all(m["value"] != shown for m in listed):
            try:   # a reduced model opened from its URL: listed under its own name
                listed.append({"label": services.workbench.source(shown).label, "value": shown})
            except GraphLabError:
                pass   # no longer kept: the navigation says so
        wanted = model_options(services, upload, listed)
        chosen = shown if shown.startswith(REDUCED_MODEL) and shown != value else no_update
        return (no_update if wanted == options else wanted), chosen

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
