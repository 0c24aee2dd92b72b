"""A button in the stepper's head that runs something on the selected pass (check it
numerically, measure it) and shows its answer under it; the answer kept for a step is drawn
again whenever the user comes back to that step (`stepper` asks ``shown``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from dash import Input, Output, html

from ..services import Services
from .on_view import on_view


@dataclass(frozen=True)
class StepAction:
    button: str                                   # the button's component id
    result: str                                   # where its answer goes
    label: str
    title: str                                    # the button's hover text: what it runs
    run: Callable[[Any, int], Any]                # (workspace, step) -> answer
    cached: Callable[[Any, int], Any | None]      # the answer kept for a step, or None
    render: Callable[[Any], Any]                  # answer -> what the page shows
    not_yet: str                                  # shown while a step has no answer

    def layout(self) -> html.Div:
        """The button, and under it that no answer is kept yet: what a first view shows on
        nearly every pass, so the panes' callback need not set it (a change of it sets off
        what listens to the answer)."""
        return html.Div(className="numeric-check", children=[
            html.Button(self.label, id=self.button, className="button", title=self.title),
            html.Div(self._not_yet(), id=self.result, className="numeric-result"),
        ])

    def register(self, app, services: Services) -> None:
        @on_view(app, services, {"result": Output(self.result, "children",
                                                  allow_duplicate=True)},
                 inputs={"_clicks": Input(self.button, "n_clicks")}, view_triggers=False,
                 message="result", prevent_initial_call=True)
        def act(state, workspace, _clicks):
            return {"result": self.render(self.run(workspace, workspace.clamp_step(state.step)))}

    def shown(self, workspace, step: int):
        """The answer kept for ``step``, or that there is none yet."""
        done = self.cached(workspace, step)
        return self.render(done) if done else self._not_yet()

    def _not_yet(self) -> html.Span:
        return html.Span(self.not_yet, className="muted")
