""""Check this pass": run the graph after the selected pass and the input model in
onnxruntime on the same inputs and say whether the outputs still agree — and whether the
model loads and runs at onnxruntime's default level, as users load it."""

from __future__ import annotations

from dash import Input, Output, State, ctx, html

from .. import ids
from ..messages import user_message
from ..numeric_check import StepCheck, cached_check, check_step
from ..services import Services
from ..view_state import ViewState


def layout() -> html.Div:
    return html.Div(className="numeric-check", children=[
        html.Button("Check this pass numerically", id=ids.NUMERIC_CHECK, className="button",
                    title="run the graph after this pass and the input model in onnxruntime "
                          "on the same inputs and compare their outputs; also load and run "
                          "it at onnxruntime's default level (ORT_ENABLE_ALL)"),
        html.Div(id=ids.NUMERIC_RESULT, className="numeric-result"),
    ])


def register(app, services: Services) -> None:
    @app.callback(Output(ids.NUMERIC_RESULT, "children"), Input(ids.NUMERIC_CHECK, "n_clicks"),
                  Input(ids.VIEW, "data"), State(ids.UPLOAD_TOKEN, "data"))
    def show(_clicks, view, upload):
        if not view:
            return ""
        state = ViewState.from_dict(view)
        try:
            workspace = services.workspace(state, upload)
            step = workspace.clamp_step(state.step)
            if ctx.triggered_id == ids.NUMERIC_CHECK:
                return render(check_step(workspace, step, state.bindings))
            done = cached_check(workspace, step, state.bindings)
        except Exception as err:  # noqa: BLE001 - shown on the page; the server carries on
            return html.Div(user_message(err), className="message error")
        return render(done) if done else html.Span("not checked yet", className="muted")


def render(check: StepCheck) -> html.Div:
    return html.Div([
        html.Div(check.headline(), className="check-ok" if check.report.ok else "check-bad"),
        html.Div(check.runtime_line(), id=ids.NUMERIC_RUNTIME,
                 className="check-ok" if check.runtime.ok else "check-bad"),
        html.Div(check.detail(), className="muted check-detail"),
    ])
