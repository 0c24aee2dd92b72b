"""The few changes that turn one drawn component tree into another, as a `dash.Patch`.

A panel that redraws a long list when only a mark in it moved (the selected item of the
Patterns tab) makes the browser rebuild every component of the list; the renderer's cost is in
the components, not in the bytes.  Given the tree the page holds and the new one, `tree_patch`
sets only the props that differ (a class, `open`) and replaces only the subtrees whose shape
changed, so the page re-renders those and leaves the rest alone.
"""

from __future__ import annotations

from dash import Patch
from dash.development.base_component import Component

MAX_OPERATIONS = 40   # more than this and the whole tree is cheaper to send than to patch


def tree_patch(old: list, new: list) -> Patch | list | None:
    """None when ``old`` and ``new`` draw the same; a Patch of the differences; or ``new``
    itself when they differ in more than a few places."""
    patch, count = Patch(), [0]
    if not _children(old, new, patch, count):
        return new
    if count[0] > MAX_OPERATIONS:
        return new
    return patch if count[0] else None


def _children(old, new, at, count) -> bool:
    """Patch ``old`` children into ``new`` under ``at``; False when their lengths differ (the
    caller replaces the parent)."""
    if isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
        if len(old) != len(new):
            return False
        for index, (a, b) in enumerate(zip(old, new)):
            _node(a, b, at, index, count)
        return True
    return _same_kind(old, new) and (_props(old, new, at, count) if isinstance(new, Component)
                                     else old == new)


def _node(old, new, parent, index, count) -> None:
    """One child: its props patched in place when it is the same kind of component with the
    same id, else replaced whole."""
    if isinstance(new, Component) and _same_kind(old, new) and _props(old, new, parent[index],
                                                                      count):
        return
    if old != new or type(old) is not type(new):
        parent[index] = new
        count[0] += 1


def _props(old: Component, new: Component, at, count) -> bool:
    """Set the props of ``new`` that differ from ``old`` under ``at``; False when its children
    cannot be patched (the caller replaces it)."""
    names = set(old._prop_names) | set(new._prop_names)
    for name in sorted(names):
        a, b = getattr(old, name, None), getattr(new, name, None)
        if name == "children":
            if isinstance(a, (list, tuple, Component)) or isinstance(b, (list, tuple, Component)):
                if not _children(a, b, at["props"]["children"], count):
                    return False
                continue
        if a != b:
            at["props"][name] = b
            count[0] += 1
    return True


def _same_kind(old, new) -> bool:
    if isinstance(new, Component):
        return (isinstance(old, Component) and type(old) is type(new)
                and getattr(old, "id", None) == getattr(new, "id", None))
    return not isinstance(old, Component)
