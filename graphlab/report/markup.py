"""A tiny HTML/SVG builder: text is escaped unless it is already `Markup`, so a node or tensor
name from an uploaded model can never inject markup into the report."""

from __future__ import annotations

from html import escape

VOID = frozenset({"br", "hr", "img", "meta", "link", "col", "wbr"})


class Markup(str):
    """A fragment that is already safe HTML."""


def tag(element: str, /, *children, **attrs) -> Markup:
    """<element attrs>children</element>; ``class_`` writes ``class``, ``aria_label`` writes
    ``aria-label``; an attribute that is None or False is left out, True writes it bare."""
    head = element + "".join(_attribute(key, value) for key, value in attrs.items())
    if element in VOID:
        return Markup(f"<{head}>")
    return Markup(f"<{head}>{join(children)}</{element}>")


def join(children) -> Markup:
    """Children in order: strings escaped, Markup kept, None skipped, iterables flattened."""
    parts = []
    for child in children:
        if child is None:
            continue
        if isinstance(child, Markup):
            parts.append(child)
        elif isinstance(child, (str, int, float)):
            parts.append(escape(str(child), quote=False))
        else:
            parts.append(join(child))
    return Markup("".join(parts))


def _attribute(key: str, value) -> str:
    if value is None or value is False:
        return ""
    name = key.rstrip("_").replace("_", "-")
    if value is True:
        return f" {name}"
    return f' {name}="{escape(str(value), quote=True)}"'
