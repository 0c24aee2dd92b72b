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
from graphlab.app.panels.settings_gate import GATES


def open_page(base_url: str, search: str = "", **kwargs) -> Tab:
    """A GraphLab page as a browser runs it: its clientside callbacks by their stand-ins."""
    return Tab.open(base_url, search, clientside=clientside(), **kwargs)


def clientside() -> dict[str, Callable]:
    """Stand-ins by output, for `Tab.open(..., clientside=clientside())`."""
    tabs = [panel.name for panel in placed(TAB)]
    gates = [f"{store}.data...{key}.data" for _, store, key in GATES]
    about_a_node = [panel.about_a_node for panel in placed(TAB)]
    return {_key([f"{ids.tab_view(tab)}.data" for tab in tabs]): _forward(tabs, about_a_node),
            _key([f"{pane}.elements" for pane in UPDATES]): _apply_panes,
            _key(gates): _gates}


def _key(outputs: list[str]) -> str:
    """A callback's output as Dash names it: several outputs as ``..a...b..``."""
    return outputs[0] if len(outputs) == 1 else f"..{'...'.join(outputs)}.."


def _gates(view, upload, upload_b, *lasts):
    """Each gate's store gets the view when it changed in more than the gate ignores."""
    out: list = []
    for (ignored, _, _), last in zip(GATES, lasts):
        if not view:
            out += [NO_UPDATE, NO_UPDATE]
            continue
        kept = {k: v for k, v in sorted(view.items()) if k not in ignored}
        key = json.dumps([kept, (upload or {}).get("token"), (upload_b or {}).get("token")])
        out += [NO_UPDATE, NO_UPDATE] if key == last else [view, key]
    return tuple(out)


def _forward(tabs: list[str], about_a_node: list[bool]) -> Callable:
    def only_stepped(view, last) -> bool:
        return (bool(last) and view.get("node") is None and last.get("node") is None
                and {k: v for k, v in view.items() if k != "step"}
                == {k: v for k, v in last.items() if k != "step"})

    def forward(view, *lasts):
        return tuple(NO_UPDATE if not view or view.get("panel") != tab
                     or (node_only and only_stepped(view, last)) else view
                     for tab, node_only, last in zip(tabs, about_a_node, lasts))
    return forward


def _apply_panes(*values):
    updates, held = values[:len(UPDATES)], values[len(UPDATES):]
    return tuple(_apply_elements(update, elements) for update, elements in zip(updates, held))


def _apply_elements(update, elements):
    if not update or not {"full", "upsert", "remove"} & set(update):
        return NO_UPDATE   # the update only names the view the pane shows
    return applied(elements or [], update)
