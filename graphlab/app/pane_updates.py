"""The smallest answer that brings a pane from what the browser holds to what it should show.

The page keeps a record of what each pane's elements were drawn from (`pane_payload.Drawn`);
the server rebuilds that list (usually from its cache) and compares it with the new one, element
by element (by id).  Nothing changed: nothing is sent — stepping onto a pass that changed
nothing re-sends no graph.  A few elements changed: only those are sent, with the ids to drop,
and the page merges them into the list it holds (`graphlab.applyPanes` in
assets/graphlab.js); cytoscape then touches only those elements.  Most changed: the whole list.
"""

from __future__ import annotations

import hashlib
import json

from .page_ids import namespace, update_to_page
from .pane_payload import Drawn, PanesPayload, pane_elements_of
from .workbench import Workspace

WHOLE_LIST_SHARE = 0.6   # a change touching more of the list than this sends it whole


def element_update(old: list[dict] | None, new: list[dict]) -> dict | None:
    """None when ``old`` is ``new``; else {"remove": [ids], "upsert": [elements]} (the new or
    changed elements, in the new list's order) or, when that is not much smaller, {"full": new}.
    """
    if old is None:
        return {"full": new}
    if old is new:   # the same list (kept by content): a pass that changed nothing
        return None
    held = {e["data"]["id"]: e for e in old}
    wanted = {e["data"]["id"] for e in new}
    upsert = [e for e in new if held.get(e["data"]["id"]) != e]
    remove = [i for i in held if i not in wanted]
    if not upsert and not remove:
        return None
    if len(upsert) + len(remove) / 4 > WHOLE_LIST_SHARE * len(new):
        return {"full": new}
    return {"remove": remove, "upsert": upsert}


def applied(old: list[dict], update: dict) -> list[dict]:
    """What the page makes of ``old`` and an update (the same merge as its script does)."""
    if "full" in update:
        return update["full"]
    gone = set(update.get("remove", ()))
    changed = {e["data"]["id"]: e for e in update.get("upsert", ())}
    merged = [changed.pop(e["data"]["id"], e) for e in old if e["data"]["id"] not in gone]
    return merged + list(changed.values())


def fingerprint(value) -> str:
    """A short digest of a JSON value (the record of what the panes show)."""
    return hashlib.sha1(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def pane_changes(workspace: Workspace, payload: PanesPayload, drawn: dict | None,
                 **kept) -> dict:
    """The panes' outputs that differ from what the page holds (``drawn``: the record of the
    last answer): "before" / "after" updates and "drawn_key", the new record, when it
    changed; a highlight is a class on the elements it names, so it travels with them.  Each pane's update is sent every time: it
    names the view drawn (model and pass) and how many elements the pane then holds, so the
    page fits a new view once both panes hold it; its elements, in the page's ids, only when
    they changed.  ``kept``: more of what the page shows, recorded with the rest."""
    held = Drawn.from_store(drawn, workspace)
    old = pane_elements_of(workspace, held) if held is not None else (None, None)
    record = {**payload.drawn.to_store(workspace), **kept}
    found: dict = {} if record == drawn else {"drawn_key": record}
    space = namespace(workspace.key)
    view = f"{space}:{payload.drawn.step}"
    for index, (side, new) in enumerate((("before", payload.before), ("after", payload.after))):
        update = element_update(old[index], new)
        found[side] = {**(update_to_page(update, space) if update is not None else {}),
                       "view": view, "count": len(new), "for": fingerprint(record)}
    return found
