"""The build indicator: while the view waits for a workspace (an upload being imported, a
pipeline running), a bar and "pass k of n: name"; the poll that drives it ticks only then.
A build that failed by no doing of its own (its builder lost) is said with a "Try again"
button, which names the view it failed for (the reducer hears it); one a pass raised in
offers to reduce the model to the few nodes it raises on (`reduce_view`).

The navigation reducer owns the waiting view (`PENDING`) and switches the poll on and
off; this panel only reads the build's status, which every server process can see.
"""

from __future__ import annotations

from dash import Input, Output, dcc, html

from compiler_core.errors import GraphLabError

from ..builds import BuildFailed
from ..messages import user_message
from ..services import Services
from .panel import STATUS, Panel
from .reduce_view import FAILED_VIEW, offers_reduce, reduce_button

PENDING = "build-pending"    # the view waiting for its workspace to be built
POLL = "build-poll"          # ticks while a build runs
PROGRESS = "build-progress"
RETRY = "build-retry"        # {"type": RETRY, "index": the failed view's query}
POLL_MS = 500


def layout(_: Services) -> html.Div:
    return html.Div(className="build", children=[
        dcc.Store(id=PENDING, storage_type="memory"),
        dcc.Interval(id=POLL, interval=POLL_MS, disabled=True),
        html.Div(id=PROGRESS, className="build-progress", role="status"),
    ])


def failure_message(err: Exception, view_query: str) -> html.Div:
    """Why the view could not be shown; for a build that may work when tried again, the
    button that tries."""
    text = user_message(err)
    if isinstance(err, BuildFailed) and offers_reduce(text):   # a pass raised: shrink it
        return html.Div([text, " ", reduce_button(FAILED_VIEW + view_query)],
                        className="message error")
    if not (isinstance(err, BuildFailed) and err.retry):
        return html.Div(text, className="message error")
    return html.Div([text, " ", html.Button("Try again", className="button small",
                                            id={"type": RETRY, "index": view_query})],
                    className="message error")


def register(app, services: Services) -> None:
    @app.callback(Output(PROGRESS, "children"),
                  Input(POLL, "n_intervals"), Input(PENDING, "data"), prevent_initial_call=True)
    def show(_tick, pending):
        if not pending:
            return None
        try:
            status = services.build_status(pending["key"]) if pending["key"] else None
        except GraphLabError:   # the board is unreachable: the reducer's message says why
            status = None
        if status is None:   # not on the board yet: waiting for a free builder
            return html.Span(pending.get("text", ""))
        if status.state in ("done", "failed"):
            return None      # the reducer is about to show the view or the error
        return [html.Progress(value=status.step, max=max(status.total, 1)),
                html.Span(status.text())]


PANEL = Panel("build", STATUS, register, layout)
