"""Cytoscape elements for scope groups: the frame of an open group, and a collapsed group as
one compact node that says what it holds and what the pass changed in it.

A collapsed group reads "layer.3 / 12 nodes · Attention · Add 5" (the ops the pass changed come
first) in a font big enough to read with many layers on screen, and "3 removed" / "1 added" /
"2 modified" badges in the diff colours sit in a column at its right end, so the eye still
finds the changes when zoomed out.  Its size depends only on the group (never on the pass), so
nothing moves between passes.
"""

from __future__ import annotations

import math
from collections import Counter

from compiler_core.ir import Node

from .graph_layout import Box, Size
from .scopes import Group

MARK_ORDER = ("removed", "added", "modified")
SUMMARY_OPS = 2
SEPARATOR = " · "
LABEL_FONT = 32            # px: readable with ten layers on a screen
BADGE_FONT = 26
CHAR_WIDTH = 0.56 * LABEL_FONT          # an average character
BADGE_CHAR_WIDTH = 0.58 * BADGE_FONT    # bold
TEXT_CHARS = 28            # the text area holds at least this many characters a line
PADDING = 16.0
BADGE_COLUMN = 190.0       # room for two badges, one above the other
BADGE_HEIGHT = 38.0
BADGE_GAP = 6.0
MAX_FRAME_DEPTH = 89       # frames are drawn under the edges, whose z-index is above this
FRAME_BEHAVIOUR = {"pannable": True}   # a drag that starts on a frame pans the view


def collapsed_size(group: Group) -> Size:
    """Wide enough for the group's name, a little bigger for bigger groups."""
    grow = math.log2(max(group.size, 2))
    text = max(len(group.label), TEXT_CHARS) * CHAR_WIDTH + 10.0 * grow
    return text + BADGE_COLUMN + 3 * PADDING, 104.0 + 4.0 * grow


def open_group_element(group: Group, frame: Box, depth: int) -> dict:
    """An open group's frame, drawn under its members (``depth`` open groups hold it)."""
    data = {"id": group.id, "label": group.label, "kind": "group"}
    if group.parent is not None:
        data["within"] = group.parent
    return as_frame({"data": data, "classes": "group"}, frame, depth)


def as_frame(element: dict, frame: Box, depth: int) -> dict:
    """``element`` (an open group, an opened fused op) drawn as a frame: placed and sized by
    the layout, in the drawing order (deeper frames over shallower ones, all under edges and
    ops).  Frames are plain nodes, not the graph component's compound nodes: the component
    restyles a compound's whole family for each property of each element it styles, which
    was half of a pane's first drawing."""
    element["data"].update(w=frame.w, h=frame.h, z=min(depth, MAX_FRAME_DEPTH))
    element["position"] = {"x": frame.x, "y": frame.y}
    element.update(FRAME_BEHAVIOUR)
    return element


def collapsed_group_elements(group: Group, box: Box, members: list[Node],
                             marks: dict[int, str]) -> list[dict]:
    """The group's node, then its change badges."""
    changes = Counter(marks[n.id] for n in members if n.id in marks)
    text_width = box.w - BADGE_COLUMN - 3 * PADDING
    chars = int(text_width / CHAR_WIDTH)
    lines = _label_lines(group.label, members, marks, chars)
    data = {"id": group.id, "label": "\n".join(_fit(line, chars) for line in lines),
            "kind": "group", "w": box.w, "h": box.h, "text_w": text_width,
            "text_dx": -(BADGE_COLUMN + PADDING) / 2}
    if group.parent is not None:
        data["within"] = group.parent
    classes = ["collapsed"] + [f"has-{mark}" for mark in MARK_ORDER if changes[mark]]
    node = {"data": data, "position": {"x": box.x, "y": box.y}, "classes": " ".join(classes)}
    return [node] + _badges(group, box, changes)


def _label_lines(label: str, members: list[Node], marks: dict[int, str],
                 chars: int) -> list[str]:
    """["layer.3", "12 nodes · Attention · Add 5"]; the count goes up beside the name
    ("LayerNorm · 1 node") when it fits there and the ops do not fit beside it, so a long op
    name ("SkipLayerNormalization") is read whole."""
    count = f"{len(members)} node{'s' if len(members) != 1 else ''}"
    counted = f"{count}{SEPARATOR}{op_summary(members, marks, chars - len(count) - len(SEPARATOR))}"
    if len(counted) <= chars or len(label) + len(SEPARATOR) + len(count) > chars:
        return [label, counted]
    return [f"{label}{SEPARATOR}{count}", op_summary(members, marks, chars)]


def op_summary(members: list[Node], marks: dict[int, str], chars: int | None = None) -> str:
    """'Attention · Add 5': the ops the pass changed first (what it made, on the right), then
    the most common ones.  An op that does not fit in ``chars`` is left out whole rather than
    cut to 'Sigmoi…': a cut name reads as another op."""
    counts = Counter(n.op_type for n in members)
    changed = Counter(n.op_type for n in members if n.id in marks)
    ranked = sorted(counts, key=lambda op: (-changed[op], -counts[op]))
    parts = [op if counts[op] == 1 else f"{op} {counts[op]}" for op in ranked[:SUMMARY_OPS]]
    while len(parts) > 1 and chars is not None and len(SEPARATOR.join(parts)) > chars:
        parts.pop()
    return SEPARATOR.join(parts)


def _badges(group: Group, box: Box, changes: Counter) -> list[dict]:
    """One pill per kind of change, stacked in the column at the right end of the box."""
    labels = [(mark, f"{changes[mark]} {mark}") for mark in MARK_ORDER if changes[mark]]
    x = box.x + box.w / 2 - PADDING - BADGE_COLUMN / 2
    y = box.y - (len(labels) * (BADGE_HEIGHT + BADGE_GAP) - BADGE_GAP) / 2 + BADGE_HEIGHT / 2
    badges = []
    for mark, label in labels:
        data = {"id": f"{group.id}#{mark}", "label": label, "kind": "badge",
                "w": min(len(label) * BADGE_CHAR_WIDTH + 20, BADGE_COLUMN), "h": BADGE_HEIGHT}
        if group.parent is not None:
            data["within"] = group.parent
        badges.append({"data": data, "position": {"x": x, "y": y},
                       "classes": f"badge badge-{mark}"})
        y += BADGE_HEIGHT + BADGE_GAP
    return badges


def _fit(line: str, chars: int) -> str:
    return line if len(line) <= chars else line[:max(chars - 1, 1)] + "…"
