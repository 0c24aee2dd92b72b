"""What every panel's callback of the view shares, written once: no view yet (or the panel's tab
not open) leaves the outputs alone; the view is read into a `ViewState` and its workspace;
an error becomes a message in the panel, and the server carries on.

The panel's function only says what it draws: ``draw(state, workspace, **values)`` returns the
outputs it sets, by name; outputs it leaves out stay as they are.
"""

from __future__ import annotations

from typing import Callable

from dash import Input, Output, State, html, no_update

from .. import ids
from ..messages import user_message
from ..services import Services
from ..view_state import ViewState


def error_message(err: Exception) -> html.Div:
    return html.Div(user_message(err), className="message error")


def on_view(app, services: Services, output: dict[str, Output], *,
            inputs: dict | None = None, state: dict | None = None, view_triggers: bool = True,
            tab: str = "", settings_only: bool = False,
            idle: dict | None = None,
            message: str = "",
            failed: Callable[[ViewState], dict] | None = None, **options) -> Callable:
    """Registers the decorated ``draw`` as a callback of the view and the ``inputs``.

    view_triggers: a new view redraws (else only ``inputs`` do, e.g. a button's clicks).
    tab: draw only while this tab is open — a closed tab's callback does not even fire
    (`tab_gate`).  settings_only: draw only when more than the place in the view changed
    (`settings_gate`): what a step cannot change.  Otherwise: when more than the open tab
    changed (`settings_gate`, `ids.VIEW_SHOWN`).
    A callback of the view does not fire as the page loads (its store is empty until the
    first view fills it) unless ``prevent_initial_call`` says otherwise.
    idle: the outputs without a view.
    message: the output that shows an error; without one, errors change nothing (another
    part of the page says what is wrong).  failed(state): further outputs set on an error.
    """
    heard = ids.tab_view(tab) if tab else ids.VIEW_SETTINGS if settings_only else ids.VIEW_SHOWN
    if view_triggers:
        options.setdefault("prevent_initial_call", True)
    view = Input(heard, "data") if view_triggers else State(ids.VIEW, "data")
    dependencies = {"inputs": {**(inputs or {}), **({"view": view} if view_triggers else {})},
                    "state": {**(state or {}), "upload": State(ids.UPLOAD_TOKEN, "data"),
                              "upload_b": State(ids.COMPARE_UPLOAD, "data"),
                              **({} if view_triggers else {"view": view})}}

    def decorate(draw: Callable) -> Callable:
        def callback(view, upload, upload_b, **values):
            if not view or (tab and view.get("panel") != tab):
                return _every(output, idle or {})
            shown = ViewState.from_dict(view)
            try:
                workspace = services.workspace(shown, upload, upload_b)
                return _every(output, draw(shown, workspace, **values))
            except Exception as err:  # noqa: BLE001 - the page shows it; the server keeps going
                said = error_message(err)
                extra = failed(shown) if failed else {}
                return _every(output, {**extra, **({message: said} if message else {})})

        app.callback(output=output, **dependencies, **options)(callback)
        return callback
    return decorate


def _every(output: dict, values: dict) -> dict:
    unknown = set(values) - set(output)
    if unknown:
        raise KeyError(f"no such output: {', '.join(sorted(unknown))}")
    return {name: values.get(name, no_update) for name in output}
