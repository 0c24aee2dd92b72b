"""What the GraphLab page's clientside callbacks do, in Python, for `dash_client.Tab`: a tab
hears the view only while it is open (`panels/tab_gate`), some panels only when more than the
place in the view changed, the others outside the tabs only when more than the open tab
changed (`panels/settings_gate`), and a pane merges the server's element update into the
elements it holds (`pane_updates`).  Keep in step with the page."""

from __future__ import annotations

import json
from typing import Callable

from benchmarks.dash_client import NO_UPDATE, Tab
from graphlab.app import ids
from graphlab.app.pane_updates import applied
from graphlab.app.panels.panel import TAB
from graphlab.app.panels.panes import UPDATES
from graphlab.app.panels.registry import placed
from graphlab.app.panels.settings_gate import OPEN_TAB, WHERE


def open_page(base_url: str, search: str = "", **kwargs) -> Tab:
    """A GraphLab page as a browser runs it: its clientside callbacks by their stand-ins."""
    return Tab.open(base_url, search, clientside=clientside(), **kwargs)


def clientside() -> dict[str, Callable]:
    """Stand-ins by output, for `Tab.open(..., clientside=clientside())`."""
    found: dict[str, Callable] = {}
    for panel in placed(TAB):
        found[f"{ids.tab_view(panel.name)}.data"] = _forward(panel.name)
    for pane in UPDATES:
        found[f"{pane}.elements"] = _apply_elements
    found[f"..{ids.VIEW_SETTINGS}.data...{ids.SETTINGS_KEY}.data.."] = _gate(WHERE)
    found[f"..{ids.VIEW_SHOWN}.data...{ids.SHOWN_KEY}.data.."] = _gate(OPEN_TAB)
    return found


def _gate(ignored: tuple[str, ...]) -> Callable:
    """The view forwarded when it changed in more than the ``ignored`` keys."""
    def forward(view, upload, upload_b, last):
        if not view:
            return NO_UPDATE, NO_UPDATE
        kept = {k: v for k, v in sorted(view.items()) if k not in ignored}
        key = json.dumps([kept, (upload or {}).get("token"), (upload_b or {}).get("token")])
        return (NO_UPDATE, NO_UPDATE) if key == last else (view, key)
    return forward


def _forward(tab: str) -> Callable:
    return lambda view: view if view and view.get("panel") == tab else NO_UPDATE


def _apply_elements(update, elements, _pane_id):
    if not update or not {"full", "upsert", "remove"} & set(update):
        return NO_UPDATE   # the update only names the view the pane shows
    return applied(elements or [], update)
