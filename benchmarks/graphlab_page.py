"""What the GraphLab page's clientside callbacks do, in Python, for `dash_client.Tab`: in the
page's forwards of the view (`panels/view_fanout`: the reducer's view by a callback of its
own, a view made in the page by the callback making it), a tab hears the view only while it is
open (`panels/tab_gate`), some panels only when more than the place in the view changed, the
others outside the tabs only when more than the open tab changed (`panels/settings_gate`), and
the selected pass's mark is left alone (no request reads it); a pane merges the server's element
update into the elements it holds (`pane_updates`), and a step, a tab, an item in a list or a
tapped node makes the view and its URL in the page (`panels/views_in_page`), which the reducer
does not hear.  Keep in step with the page."""

from __future__ import annotations

import inspect
import json
import re
from typing import Callable
from urllib.parse import parse_qsl, urlencode

from benchmarks.dash_client import NO_UPDATE, Tab, Trigger, stand_in_key
from graphlab.app import ids
from graphlab.app.factory import page_forwards
from graphlab.app.pane_updates import applied
from graphlab.app.panels.inspector import NAME as INSPECTOR
from graphlab.app.panels.panel import TAB
from graphlab.app.panels.panes import UPDATES
from graphlab.app.panels.registry import follows_selection, placed
from graphlab.app.panels.settings_gate import GATES
from graphlab.app.panels.stepper import NEXT, PREV
from graphlab.app.panels.systolic import NAME as SYSTOLIC
from graphlab.app.view_state import URL_KEY_ORDER, ViewState

SKIP = (NO_UPDATE,) * 4   # a view made in the page: view, URL, message, tab
MADE = [f"{ids.VIEW}.data", f"{ids.URL}.search", f"{ids.NAV_MESSAGE}.children",
        f"{ids.TABS}.value"]


def open_page(base_url: str, search: str = "", **kwargs) -> Tab:
    """A GraphLab page as a browser runs it: its clientside callbacks by their stand-ins."""
    return Tab.open(base_url, search, clientside=clientside(), **kwargs)


def clientside() -> dict[str, Callable]:
    """Stand-ins by `stand_in_key`, for `Tab.open(..., clientside=clientside())`."""
    tabs = [panel.name for panel in placed(TAB)]
    about_a_node = [panel.about_a_node for panel in placed(TAB)]
    fanout = [str(output) for forward in page_forwards() for output in forward.outputs]
    forward = _fanout(tabs, about_a_node)
    home = ViewState(model="").panel   # the tab the URL leaves out (a server's first
    # view may name another: then the page's own URL shows it)

    def made(stand_in: Callable) -> Callable:
        """A view made in the page, and the forwards' values for it (`view_fanout`): the
        stand-in takes what triggered it and its own values, the forwards' states follow."""
        own = len(inspect.signature(stand_in).parameters) - 1

        def with_forwards(triggered, *values):
            answer = stand_in(triggered, *values[:own])
            view = None if answer[0] is NO_UPDATE else answer[0]
            return (*answer, *forward(triggered, view, *values[own:]))
        return with_forwards

    return {
        _key(fanout, ids.VIEW_REDUCED): forward,
        _key([f"{pane}.elements" for pane in UPDATES], UPDATES[ids.BEFORE]): _apply_panes,
        _key(MADE + fanout, ids.TABS): made(_open_tab(home)),
        _key(MADE + fanout, PREV): made(_step),
        _key(MADE + fanout, _every(ids.PATTERN_ITEM)): made(_pick_item(home)),
        _key(MADE + fanout, ids.BEFORE): made(_pick_node(home)),
    }


def _key(outputs: list[str], first_input: str) -> str:
    """A callback's name as Dash writes it: several outputs as ``..a...b..``."""
    return stand_in_key(outputs[0] if len(outputs) == 1 else f"..{'...'.join(outputs)}..",
                        first_input)


def _every(type_name: str) -> str:
    """A pattern-matching input's id as Dash writes it: every component of one type."""
    return json.dumps({"index": ["ALL"], "type": type_name}, separators=(",", ":"))


def _fanout(tabs: list[str], about_a_node: list[bool]) -> Callable:
    """`page_forwards` in turn: the tabs' stores, the gates' stores, the selected mark, the
    view the onnxscript rules hear, the systolic whole model once asked for."""
    forward = _forward(tabs, about_a_node)

    def fanout(triggered, view, *states):
        tab_lasts, states = states[:len(tabs)], states[len(tabs):]
        gate_states = states[:2 + len(GATES)]   # the two uploads, each gate's last key
        *_, rules_heard, passes_clicks = states
        return (*forward(triggered, view, *tab_lasts), *_gates(triggered, view, *gate_states),
                NO_UPDATE, _rules_hear(view, rules_heard),
                _systolic_passes_asked(view, passes_clicks))
    return fanout


def _rules_hear(view, heard):
    """The patterns tab's view, while rules are named or were (`onnxscript_rules`)."""
    if not view or view.get("panel") != ids.PATTERNS_TAB \
            or not view.get("rules") and not (heard or {}).get("rules"):
        return NO_UPDATE
    return view


def _systolic_passes_asked(view, clicks):
    """The view, for the systolic tab's whole model once it was asked for (`systolic`)."""
    if not view or view.get("panel") != SYSTOLIC or not clicks:
        return NO_UPDATE
    return {"heard": view, "clicks": clicks}


def _gates(_triggered, view, upload, upload_b, *lasts):
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

    def forward(_triggered, view, *lasts):
        return tuple(NO_UPDATE if not view or view.get("panel") != tab
                     or (node_only and only_stepped(view, last)) else view
                     for tab, node_only, last in zip(tabs, about_a_node, lasts))
    return forward


def _apply_panes(_triggered, *values):
    updates, held = values[:len(UPDATES)], values[len(UPDATES):]
    return tuple(_apply_elements(update, elements) for update, elements in zip(updates, held))


def _apply_elements(update, elements):
    if not update or not {"full", "upsert", "remove"} & set(update):
        return NO_UPDATE   # the update only names the view the pane shows
    return applied(elements or [], update)


# ---- views made in the page (`views_in_page`) ------------------------------------------------

def _with_changes(view: dict, search: str, message, changes: dict) -> tuple:
    """The view with ``changes`` (field -> (URL key, value, its text, the text the address
    leaves out)), its URL, the message cleared and the tab opened if it changed."""
    pairs = [(k, v) for k, v in parse_qsl((search or "").lstrip("?"))
             if k not in {key for key, _, _, _ in changes.values()}]
    made = dict(view)
    for field, (key, value, text, fallback) in changes.items():
        made[field] = value
        if text != fallback:
            pairs.append((key, text))
    pairs.sort(key=lambda pair: URL_KEY_ORDER.index(pair[0]) if pair[0] in URL_KEY_ORDER
               else len(URL_KEY_ORDER))
    query = urlencode(pairs)
    return (made, f"?{query}" if query else "", "" if message else NO_UPDATE,
            made["panel"] if made.get("panel") != view.get("panel") else NO_UPDATE)


def _clicked(triggered: list[Trigger]) -> Trigger | None:
    """The click that set a callback off (a freshly drawn button has no clicks: none)."""
    return triggered[0] if triggered and triggered[0].value else None


def _step(triggered, _prev, _next, _rows, classes, rows, view, search, message):
    """Prev, Next (to the next pass the list shows) or a row of the pass list."""
    click = _clicked(triggered)
    if not view or view.get("step") is None or click is None:
        return SKIP
    current = view["step"]
    shown = [row["index"] for row, names in zip(rows, classes)
             if not (view.get("hide_unchanged") and re.search(r" unchanged\b", names or "")
                     and row["index"] != current)]
    if isinstance(click.id, dict):
        step = click.id["index"]
    elif click.id == NEXT:
        step = next((i for i in shown if i > current), None)
    else:
        step = next((i for i in reversed(shown) if i < current), None)
    if step is None or (step == current and not view.get("highlight")):
        return SKIP
    return _with_changes(view, search, message, {"step": ("pass", step, str(step + 1), None),
                                                 "highlight": ("hl", "", "", "")})


def _open_tab(home: str) -> Callable:
    def open_tab(_triggered, tab, view, search, message):
        if not view or not tab or view.get("panel") == tab:
            return SKIP
        return _with_changes(view, search, message, {"panel": ("panel", tab, tab, home)})
    return open_tab


def _pick_item(home: str) -> Callable:
    def pick_item(triggered, _clicks, view, search, message):
        click = _clicked(triggered)
        if not view or click is None:
            return SKIP
        text = str(click.id["index"])
        patterns = ids.PATTERNS_TAB
        if view.get("highlight") == text and view.get("panel") == patterns:
            return SKIP
        return _with_changes(view, search, message, {"highlight": ("hl", text, text, ""),
                                                     "panel": ("panel", patterns, patterns, home)})
    return pick_item


def _pick_node(home: str) -> Callable:
    follows = sorted(follows_selection())

    def pick_node(triggered, _before, _after, view, search, message):
        data = triggered[0].value if triggered else None
        if not view or not data or data.get("kind") != "node":
            return SKIP
        node = int(data["node_id"])
        panel = view["panel"] if view.get("panel") in follows else INSPECTOR
        if node == view.get("node") and panel == view.get("panel"):
            return SKIP
        return _with_changes(view, search, message, {"node": ("node", node, str(node), ""),
                                                     "panel": ("panel", panel, panel, home)})
    return pick_node
