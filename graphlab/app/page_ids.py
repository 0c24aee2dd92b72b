"""Element ids as the page holds them: each drawn model's under a namespace of its own.

The graph component keeps its elements by id.  Given a new list, it patches the elements whose
ids it already holds, adds the new ones and removes the rest.  The ids the server makes ('n0',
'in:x', a group's scope path) repeat from one model to the next, so after choosing another
model it patched an old 'n0' into a new one while edges of either list pointed at nothing, and
the pane stopped drawing.  The page's ids carry
the workspace's namespace ('3fa2c1|n0'): two models share no id, and a new model is drawn
whole.  Within one workspace ids stay stable, so a step still sends only what changed.

The server thinks in local ids; this module is the one place that crosses to the page's.
"""

from __future__ import annotations

import hashlib

SEPARATOR = "|"
_REFERENCES = ("id", "within", "source", "target")


def namespace(workspace_key: str) -> str:
    return hashlib.sha1(workspace_key.encode()).hexdigest()[:8]


def page_id(space: str, local: str) -> str:
    return f"{space}{SEPARATOR}{local}"


def local_id(page: str) -> str:
    """The server's id of a page id (an id without a namespace is its own)."""
    return page.partition(SEPARATOR)[2] or page


def to_page(elements: list[dict], space: str) -> list[dict]:
    """Copies of ``elements`` whose ids and references are the page's."""
    out = []
    for element in elements:
        data = dict(element["data"])
        for key in _REFERENCES:
            if key in data:
                data[key] = page_id(space, data[key])
        out.append({**element, "data": data})
    return out


def update_to_page(update: dict, space: str) -> dict:
    """An element update (see `pane_updates.element_update`) in the page's ids."""
    if "full" in update:
        return {**update, "full": to_page(update["full"], space)}
    return {**update, "remove": [page_id(space, i) for i in update["remove"]],
            "upsert": to_page(update["upsert"], space)}
