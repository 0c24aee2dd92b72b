"""Cytoscape stylesheets: the fixed look, plus per-view rules for selection and highlights.

Selection, pattern highlights and search hits are classes on the few elements they name
(`Highlights.classes`), so clicking around restyles only those, never the whole graph.
The colours here and in the page legend (assets/graphlab.css) are one palette.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .error_heat import error_stylesheet
from .group_elements import BADGE_FONT, LABEL_FONT, MAX_FRAME_DEPTH
from .intensity_bands import band_stylesheet

# The drawing order (the graph component's z-index): frames (0 to MAX_FRAME_DEPTH, deeper over
# shallower), then edges, then ops, inputs, outputs and collapsed groups, then badges.
EDGE_Z = MAX_FRAME_DEPTH + 1
NODE_Z = EDGE_Z + 10
BADGE_Z = NODE_Z + 10

COLORS = {
    "node": "#eef2f7", "node_border": "#7b8794", "text": "#1f2933",
    "removed": "#d64545", "removed_fill": "#fde8e8",
    "added": "#2f9e44", "added_fill": "#e6f6ea",
    # modified is teal, far from the near miss's orange; the near miss is also another shape
    "modified": "#0c8599", "modified_fill": "#e3fafc",
    "fused": "#7048e8", "fused_fill": "#f0ebff",
    "group": "#f7f9fb", "group_border": "#b8c2cc",
    "selected": "#1c7ed6", "match": "#1c7ed6", "failed": "#e8590c", "blocking": "#c2255c",
    "search": "#fab005",
}

FAILED_SHAPE = "cut-rectangle"   # a near miss's failing node: chamfered corners, not only a hue

BASE_STYLESHEET = [
    {"selector": "node", "style": {
        "shape": "round-rectangle", "width": 170, "height": 48,
        "background-color": COLORS["node"], "border-width": 1,
        "border-color": COLORS["node_border"], "label": "data(label)", "color": COLORS["text"],
        "font-size": 16, "text-wrap": "wrap", "text-max-width": 162,
        "text-valign": "center", "text-halign": "center", "min-zoomed-font-size": 6,
        "z-index-compare": "manual", "z-index": NODE_Z}},
    {"selector": "edge", "style": {
        "width": 1.3, "line-color": "#9aa5b1", "curve-style": "straight",
        "target-arrow-shape": "triangle", "target-arrow-color": "#9aa5b1", "arrow-scale": 0.8,
        "z-index-compare": "manual", "z-index": EDGE_Z}},
    {"selector": ".io", "style": {
        "shape": "round-tag", "height": 30, "background-color": "#ffffff",
        "border-style": "dashed", "font-size": 14}},
    {"selector": ".group", "style": {
        "shape": "round-rectangle", "background-color": COLORS["group"], "background-opacity": 0.6,
        "border-color": COLORS["group_border"], "border-width": 1, "label": "data(label)",
        "text-valign": "top", "text-halign": "center", "font-size": 16, "color": "#52606d"}},
    {"selector": ".group, .opened", "style": {   # frames: sized by the layout, under the rest
        "width": "data(w)", "height": "data(h)", "z-index": "data(z)"}},
    {"selector": ".collapsed", "style": {
        "width": "data(w)", "height": "data(h)", "background-color": "#e4e7eb",
        "border-width": 2, "border-color": COLORS["group_border"], "font-size": LABEL_FONT,
        "line-height": 1.3, "text-max-width": "data(text_w)", "text-margin-x": "data(text_dx)",
        "text-justification": "left", "color": "#1f2933"}},
    {"selector": ".badge", "style": {
        "width": "data(w)", "height": "data(h)", "font-size": BADGE_FONT, "font-weight": "bold",
        "color": "#ffffff", "border-width": 0, "z-index": BADGE_Z, "events": "no"}},
    {"selector": ".badge-removed", "style": {"background-color": COLORS["removed"]}},
    {"selector": ".badge-added", "style": {"background-color": COLORS["added"]}},
    {"selector": ".badge-modified", "style": {"background-color": COLORS["modified"]}},
    {"selector": "edge[count]", "style": {
        "label": "data(count)", "font-size": 14, "color": "#52606d",
        "text-background-color": "#ffffff", "text-background-opacity": 1,
        "text-background-padding": 2, "width": "mapData(count, 2, 40, 2, 6)"}},
    {"selector": ".fused", "style": {
        "background-color": COLORS["fused_fill"], "border-color": COLORS["fused"],
        "border-width": 3, "border-style": "double", "font-weight": "bold"}},
    {"selector": ".fused.opened", "style": {
        "text-valign": "top", "background-opacity": 0.12, "border-style": "dashed"}},
    {"selector": ".body", "style": {"border-style": "dotted"}},
    {"selector": ".removed, .has-removed", "style": {
        "border-color": COLORS["removed"], "border-width": 3, "border-style": "dashed"}},
    {"selector": ".removed", "style": {"background-color": COLORS["removed_fill"]}},
    {"selector": ".added, .has-added", "style": {
        "border-color": COLORS["added"], "border-width": 3}},
    {"selector": ".added", "style": {"background-color": COLORS["added_fill"]}},
    {"selector": ".modified, .has-modified", "style": {
        "border-color": COLORS["modified"], "border-width": 3}},
    {"selector": ".modified", "style": {"background-color": COLORS["modified_fill"]}},
]

BASE_STYLESHEET += band_stylesheet()   # the intensity overlay: fills on top, borders kept
BASE_STYLESHEET += error_stylesheet()  # the error overlay (first wrong value), the same way


# The border of a clicked item's failed node and blocking consumer.
FOCUS_BORDER = 6

# What a pane highlights, each a class the payload puts on the elements it names
# (`Highlights.classes`), so a click restyles the few elements it changes, not the whole
# graph; in the order their rules apply (a later one wins where two set a property).
HIGHLIGHT_STYLES = (
    ("search", {"background-color": COLORS["search"]}),
    ("matched", {"border-color": COLORS["match"], "border-width": 5, "border-style": "solid"}),
    ("blocking", {"border-color": COLORS["blocking"], "border-width": FOCUS_BORDER,
                  "border-style": "dashed"}),
    ("failed", {"border-color": COLORS["failed"], "border-width": FOCUS_BORDER,
                "border-style": "solid", "shape": FAILED_SHAPE}),
    ("selected", {"overlay-color": COLORS["selected"], "overlay-opacity": 0.18,
                  "overlay-padding": 8, "border-color": COLORS["selected"], "border-width": 4}),
)

# The panes' one stylesheet: it never changes while the page lives.
PANE_STYLESHEET = [*BASE_STYLESHEET,
                   *({"selector": f".hl-{kind}", "style": style} for kind, style in HIGHLIGHT_STYLES),
                   {"selector": ".group, .opened", "style": {"overlay-opacity": 0}}]   # frames


@dataclass
class Highlights:
    """Element ids to emphasise in one pane."""

    selected: list[str] = field(default_factory=list)
    matched: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    blocking: list[str] = field(default_factory=list)
    search: list[str] = field(default_factory=list)

    def classes(self) -> dict[str, str]:
        """Element id -> the highlight classes it takes ("hl-matched hl-selected")."""
        found: dict[str, list[str]] = {}
        for kind, _ in HIGHLIGHT_STYLES:
            for element in getattr(self, kind):
                found.setdefault(element, []).append(f"hl-{kind}")
        return {element: " ".join(kinds) for element, kinds in found.items()}
