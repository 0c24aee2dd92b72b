"""Both panes of the selected pass: the graph before it (left) and after it (right).

This is the hot path of the app ("select a pass" -> payload), measured by benchmarks/app.py.
Scope groups and histories are precomputed per workspace, and the nested layout caches each
group's layer order; here we place the visible items, mark the diff, and turn selection /
pattern focus / search into style rules.  Groups holding the selected or highlighted nodes open
by themselves so they can be seen, once: a group the user then closes stays closed (the
selection is shown on the group) until the focus moves elsewhere.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from compiler_core.ir import Graph

from .elements import element_id, pane_elements
from .graph_analyses import band_classes
from .intensity_bands import paint
from .onnxscript_view import rule_focus
from .pattern_editor_view import editor_focus
from .pattern_view import PatternFocus, resolve_focus
from .styles import Highlights, stylesheet
from .view_state import ViewState
from .workbench import Workspace

MAX_AUTO_OPEN_SEARCH_HITS = 40


@dataclass
class UiState:
    """Per-browser drawing choices kept in the page (not in the URL): open groups and bodies,
    and the groups already opened for the current focus (the user may have closed some)."""

    expanded: frozenset[str] | None = None   # None: the workspace's default
    opened: frozenset[int] = frozenset()
    revealed: frozenset[str] = frozenset()

    @classmethod
    def from_store(cls, data: dict | None, workspace_key: str) -> "UiState":
        if not data or data.get("key") != workspace_key:
            return cls()
        expanded = data.get("expanded")
        return cls(None if expanded is None else frozenset(expanded),
                   frozenset(int(i) for i in data.get("opened", [])),
                   frozenset(data.get("revealed", [])))

    def to_store(self, workspace_key: str) -> dict:
        return {"key": workspace_key,
                "expanded": None if self.expanded is None else sorted(self.expanded),
                "opened": sorted(self.opened), "revealed": sorted(self.revealed)}


@dataclass
class PanesPayload:
    key: str                  # identity of the element lists (unchanged -> not re-sent)
    before: list[dict]
    after: list[dict]
    before_style: list[dict]
    after_style: list[dict]
    focus: PatternFocus | None
    search_hits: int


def build_panes(ws: Workspace, state: ViewState, ui: UiState) -> PanesPayload:
    step = ws.clamp_step(state.step)
    before, after = ws.graphs_of_step(step)
    snapshot = ws.result.snapshots[step]
    focus = view_focus(ws, state)
    hits = search_hits(after, state.search) | search_hits(before, state.search)
    selected = [state.node] if state.node is not None else []
    expanded = _drawn_groups(ws, ui, _focus_groups(ws, step, selected, focus, hits))
    placement = ws.layout.placement(frozenset(expanded), ui.opened)
    diff = snapshot.diff
    left = pane_elements(before, placement, ws.scopes, expanded,
                         {**{i: "modified" for i in diff.modified},
                          **{i: "removed" for i in diff.removed}}, set(ui.opened))
    right = pane_elements(after, placement, ws.scopes, expanded,
                          {**{i: "modified" for i in diff.modified},
                           **{i: "added" for i in diff.added}}, set(ui.opened))
    if state.overlay:   # classes, so the overlay is drawn with the elements (panels/overlay)
        paint(left, band_classes(ws, before, state.target))
        paint(right, band_classes(ws, after, state.target))
    key = hashlib.sha1(repr((ws.key, step, sorted(expanded), sorted(ui.opened),
                             state.overlay and state.target)).encode()
                       ).hexdigest()[:16]
    return PanesPayload(key, left, right,
                        _pane_style(ws, before, expanded, selected, focus, hits),
                        _pane_style(ws, after, expanded, selected, focus, hits),
                        focus, len(hits))


def drawn_groups(ws: Workspace, state: ViewState, ui: UiState) -> set[str]:
    """The groups drawn open: the user's (or the default) plus those revealing the focus."""
    return _drawn_groups(ws, ui, focus_groups(ws, state))


def regrouped(ws: Workspace, state: ViewState, expanded: set[str], opened: set[int]) -> UiState:
    """The UI state after the user opened or closed groups or bodies: what they now see is
    kept as it is, and the groups opened for the current focus are not reopened."""
    return UiState(frozenset(expanded), frozenset(opened), focus_groups(ws, state))


def focus_groups(ws: Workspace, state: ViewState) -> frozenset[str]:
    """Groups holding what the view points at: the selected node (and its counterparts), the
    pattern focus, the search hits (when few)."""
    step = ws.clamp_step(state.step)
    before, after = ws.graphs_of_step(step)
    hits = search_hits(after, state.search) | search_hits(before, state.search)
    selected = [state.node] if state.node is not None else []
    return _focus_groups(ws, step, selected, view_focus(ws, state), hits)


def view_focus(ws: Workspace, state: ViewState) -> PatternFocus | None:
    """What the panes highlight: the pattern editor's focus, the patterns panel's clicked
    item, or an onnxscript rule's site."""
    return (editor_focus(ws, state)
            or resolve_focus(ws, ws.clamp_step(state.step), state.highlight)
            or rule_focus(state.highlight))


def _focus_groups(ws: Workspace, step: int, selected: list[int], focus: PatternFocus | None,
                  hits: set[int]) -> frozenset[str]:
    before, after = ws.graphs_of_step(step)
    focus_ids = set(selected) | set(hits if len(hits) <= MAX_AUTO_OPEN_SEARCH_HITS else ())
    if focus is not None and focus.reveal:
        focus_ids |= set(focus.matched) | {i for i in (focus.failed, focus.blocking) if i is not None}
    focus_ids |= {c for i in selected for c in counterparts(ws, i, before) + counterparts(ws, i, after)}
    return frozenset(ws.scopes.groups_containing(focus_ids))


def _drawn_groups(ws: Workspace, ui: UiState, revealing: frozenset[str]) -> set[str]:
    expanded = set(ws.default_expanded if ui.expanded is None else ui.expanded)
    if revealing != ui.revealed:
        expanded |= revealing
    return expanded


def search_hits(graph: Graph, query: str) -> set[int]:
    """Nodes whose name contains the query, or whose op type is it (case-insensitive)."""
    query = (query or "").strip().lower()
    if not query:
        return set()
    return {n.id for n in graph.nodes if query in n.name.lower() or query == n.op_type.lower()}


def counterparts(ws: Workspace, node_id: int, graph: Graph) -> list[int]:
    """The node(s) of ``graph`` that stand for ``node_id``: itself, what replaced it, or
    what it was made from."""
    if graph.node_by_id(node_id) is not None:
        return [node_id]
    history = ws.history
    replacement = history.replaced_by.get(node_id)
    seen: set[int] = set()
    while replacement is not None and replacement not in seen:
        if graph.node_by_id(replacement) is not None:
            return [replacement]
        seen.add(replacement)
        replacement = history.replaced_by.get(replacement)
    node = _find_anywhere(ws, node_id)  # a new node: the sources it was made from
    if node is None or node.provenance is None:
        return []
    return [s for s in node.provenance.sources if graph.node_by_id(s) is not None]


def _find_anywhere(ws: Workspace, node_id: int):
    for snapshot in ws.result.snapshots:
        node = snapshot.graph.node_by_id(node_id)
        if node is not None:
            return node
    return None


def _pane_style(ws: Workspace, graph: Graph, expanded: set[str], selected: list[int],
                focus: PatternFocus | None, hits: set[int]) -> list[dict]:
    def ids(node_ids) -> list[str]:
        out: list[str] = []
        for node_id in node_ids:
            if graph.node_by_id(node_id) is None:
                continue
            group, _ = ws.scopes.representative(node_id, expanded)
            out.append(group or element_id(node_id))
        return list(dict.fromkeys(out))

    chosen = [c for i in selected for c in counterparts(ws, i, graph)]
    highlights = Highlights(selected=ids(chosen), search=ids(hits))
    if focus is not None:
        highlights.matched = ids(focus.matched)
        highlights.failed = ids([focus.failed] if focus.failed is not None else [])
        highlights.blocking = ids([focus.blocking] if focus.blocking is not None else [])
    return stylesheet(highlights)
