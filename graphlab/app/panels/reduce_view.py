"""“Reduce to a few nodes”: a crash shrunk, then opened as a model of its own.

Offered where the page reports a crash: onnxruntime failing on a pass's model (the numerical
check's second line) and a pass that raised (the failed build's message).  The reducer
(`compiler_core.fault_finding.reduce_model`, each candidate checked in a child process) runs as
a build (`fault_jobs`); a poll follows it.  When it is done the reduced model opens like an
upload — in the model list (this browser's), with its own URL — and its standalone
reproduction script (onnx and onnxruntime alone) can be downloaded from its view.
"""

from __future__ import annotations

import re

from dash import ALL, Input, Output, State, ctx, dcc, html, no_update

from compiler_core.passes import resolve_pipeline
from compiler_core.runtime_check import DEFAULT_LEVEL

from .. import ids
from ..builds import BuildStatus
from ..fault_jobs import ReducedModel, reduce_crash_job, reduce_pass_error_job
from ..messages import user_message
from ..services import Services
from ..view_state import ViewState, from_query
from ..workbench import REDUCED_MODEL
from .on_view import on_view
from .panel import INSIDE, Panel

REDUCE = "reduce-failure"    # pattern-matching type; index: what failed (AFTER_PASS, FAILED_VIEW)
AFTER_PASS = "after-pass:"   # + 'STEP:STAGE': onnxruntime failed on the model after pass STEP
FAILED_VIEW = "view:"        # + the failed view's query: a pass raised building it
PENDING = "reduce-pending"
POLL = "reduce-poll"
STATUS = "reduce-status"
REDUCED_INFO = "reduced-model-info"   # what the open reduced model is, its script's button
SCRIPT = "reduce-script"     # pattern-matching type; index: the reduced model's name
DOWNLOAD = "reduce-download"
POLL_MS = 1000
PASS_RAISED = re.compile(r"\bpass \S+ failed\b")


def reduce_button(index: str) -> html.Button:
    return html.Button("Reduce to a few nodes", id={"type": REDUCE, "index": index},
                       className="button small reduce-failure",
                       title="shrink the model to the few nodes that still fail the same way "
                             "(each candidate run in a child process); it then opens as a "
                             "model of its own, with a script that reproduces the failure")


def offers_reduce(message: str) -> bool:
    """A build's failure a reduction can shrink: a pass that raised."""
    return bool(PASS_RAISED.search(message))


def layout() -> html.Div:
    """Drawn in the stepper's head, under the numerical check."""
    return html.Div(className="reduce", children=[
        dcc.Store(id=PENDING, storage_type="memory"),
        dcc.Interval(id=POLL, interval=POLL_MS, disabled=True),
        dcc.Download(id=DOWNLOAD),
        html.Div(id=STATUS, className="reduce-status", role="status"),
        html.Div(id=REDUCED_INFO, className="reduce-status"),
    ])


def register(app, services: Services) -> None:
    builds = services.workbench.builds

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Output(ids.REDUCED_MODELS, "data"),
                  Output(PENDING, "data"), Output(POLL, "disabled"), Output(STATUS, "children"),
                  Input({"type": REDUCE, "index": ALL}, "n_clicks"), Input(POLL, "n_intervals"),
                  State(ids.VIEW, "data"), State(PENDING, "data"), State(ids.UPLOAD_TOKEN, "data"),
                  State(ids.COMPARE_UPLOAD, "data"), State(ids.REDUCED_MODELS, "data"),
                  prevent_initial_call=True)
    def reduce(_clicks, _tick, view, pending, upload, upload_b, reduced):
        nothing = (no_update,) * 5
        trigger = ctx.triggered_id
        if trigger == POLL:
            if not pending:
                return no_update, no_update, None, True, no_update
            index, view = pending["index"], pending["view"]
        else:
            if trigger is None or not ctx.triggered[0]["value"]:
                return nothing   # buttons drawn, not clicked
            index = trigger["index"]
        try:
            found = builds.get_or_start(_job(services, index, view, upload, upload_b))
        except Exception as err:  # noqa: BLE001 - the page says what went wrong
            return no_update, no_update, None, True, html.Div(
                f"Reducing failed: {user_message(err)}", className="message error")
        if isinstance(found, BuildStatus):
            return (no_update, no_update, {"index": index, "view": view}, False,
                    html.Span(f"Reducing: checking smaller and smaller models, each in a child "
                              f"process… ({found.state})", className="muted"))
        shown = [m for m in reduced or [] if m["value"] != found.name]
        listed = shown + [{"label": found.label, "value": found.name}]
        return {"model": found.name}, listed, None, True, ""   # its view says what it is

    @on_view(app, services, {"info": Output(REDUCED_INFO, "children")}, settings_only=True,
             idle={"info": ""})
    def describe(state, _workspace):
        found = builds.ready(state.model[len(REDUCED_MODEL):]) \
            if state.model.startswith(REDUCED_MODEL) else None
        return {"info": summary(found) if isinstance(found, ReducedModel) else ""}

    @app.callback(Output(DOWNLOAD, "data"), Input({"type": SCRIPT, "index": ALL}, "n_clicks"),
                  prevent_initial_call=True)
    def download(_clicks):
        if ctx.triggered_id is None or not ctx.triggered[0]["value"]:
            return no_update
        found = builds.ready(ctx.triggered_id["index"][len(REDUCED_MODEL):])
        if not isinstance(found, ReducedModel):
            return no_update
        return {"content": found.script, "filename": "reproduce.py"}


def _job(services: Services, index: str, view: dict | None, upload, upload_b):
    workbench = services.workbench
    if index.startswith(FAILED_VIEW):   # the pipeline raised on the model: reduce the model
        state = from_query(index[len(FAILED_VIEW):], services.default_state)
        return reduce_pass_error_job(workbench.source(state.model, (upload or {}).get("token")),
                                     tuple(resolve_pipeline(state.pipeline or None)),
                                     state.bound.checked())
    step, stage = index[len(AFTER_PASS):].split(":")
    state = ViewState.from_dict(view)
    workspace_job = services.workspace_job(state, upload, upload_b)
    return reduce_crash_job(workbench.builds, workspace_job, workbench.built(workspace_job),
                            int(step), stage, DEFAULT_LEVEL)


def summary(found: ReducedModel) -> html.Div:
    record = found.record
    ops = ", ".join(record["ops"])
    limit = " (time limit reached)" if record["timed_out"] else ""
    return html.Div([
        html.Span(f"A reduced model: {record['nodes_before']} → {record['nodes_after']} nodes "
                  f"({ops}) in {record['seconds']:.0f} s{limit}. It still fails: "
                  f"{record['failure']}. "),
        html.Button("Download the reproduction script", id={"type": SCRIPT, "index": found.name},
                    className="button small")], className="reduce-done")


PANEL = Panel("reduce", INSIDE, register)   # its layout: in the stepper's head
