"""The banner: what keeps the app from working for everyone (a cluster's Redis unreachable, no
build worker running), checked every few seconds and gone by itself once fixed.  On one
machine there is nothing to watch, and the poll never ticks."""

from __future__ import annotations

from dash import Input, Output, dcc, html

from ..messages import user_message
from ..services import Services
from .panel import STATUS, Panel

BANNER = "service-banner"
POLL = "service-banner-poll"
POLL_MS = 3000


def layout(services: Services) -> html.Div:
    return html.Div(children=[
        dcc.Interval(id=POLL, interval=POLL_MS, disabled=services.config.redis_url is None),
        html.Div(id=BANNER, role="alert"),
    ])


def register(app, services: Services) -> None:
    @app.callback(Output(BANNER, "children"), Input(POLL, "n_intervals"),
                  prevent_initial_call=services.config.redis_url is None)   # nothing to watch
    def show(_tick):
        try:
            problem = services.trouble()
        except Exception as err:  # noqa: BLE001 - the banner itself must never fail
            problem = user_message(err)
        return None if problem is None else html.Div(problem, className="message error banner")


PANEL = Panel("banner", STATUS, register, layout)
