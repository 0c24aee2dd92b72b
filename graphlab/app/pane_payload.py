"""Both panes of the selected pass: the graph before it (left) and after it (right).

This is the hot path of the app ("select a pass" -> payload), measured by benchmarks/app.py.
Scope groups and histories are precomputed per workspace, and the nested layout caches each
group's layer order; here we place the visible items, mark the diff, and turn selection /
pattern focus / search into highlight classes on the elements they name.  Groups holding the selected or highlighted nodes open
by themselves so they can be seen, once: a group the user then closes stays closed (the
selection is shown on the group) until the focus moves elsewhere.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from compiler_core.ir import Graph

from .elements import element_id, pane_elements
from .error_heat import paint_errors
from .fault_jobs import kept_wrong_values
from .graph_analyses import band_classes, group_band_classes
from .intensity_bands import paint
from .onnxscript_view import rule_focus
from .pattern_editor_view import editor_focus
from .pattern_view import PatternFocus, resolve_focus
from .styles import Highlights
from .view_state import ViewState
from .workbench import Workspace

MAX_AUTO_OPEN_SEARCH_HITS = 40
ELEMENTS_KEPT = 12         # element lists kept per workspace (per process)
BEFORE, AFTER = "before", "after"
ERRORS = "errors of step "   # Drawn.overlay's prefix for the error overlay
_KEPT_LOCK = threading.Lock()


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


@dataclass(frozen=True)
class Drawn:
    """What the panes' element lists are drawn from: the pass, the open groups and bodies, the
    overlay.  The page keeps it, so the next answer can send only what changed."""

    workspace: str
    step: int
    expanded: frozenset[str]
    opened: frozenset[int]
    overlay: str = ""         # the target whose intensity bands colour the nodes, ERRORS
                              # + the step whose errors do (`error_heat`), or ''
    # each pane's highlight classes by element id (`Highlights.classes`), as sorted pairs
    highlights: tuple[tuple[tuple[str, str], ...], ...] = ((), ())

    def to_store(self, ws: Workspace) -> dict:
        index = ws.derived.setdefault("group index", {g: i for i, g in enumerate(ws.scopes.groups)})
        return {"workspace": self.workspace, "step": self.step, "overlay": self.overlay,
                "expanded": sorted(index[g] for g in self.expanded if g in index),
                "opened": sorted(self.opened),
                "highlights": [[list(pair) for pair in side] for side in self.highlights]}

    @classmethod
    def from_store(cls, data: dict | None, ws: Workspace) -> "Drawn | None":
        """The record the page holds, if it is of this workspace."""
        if not data or data.get("workspace") != ws.key:
            return None
        groups = list(ws.scopes.groups)
        return cls(ws.key, int(data["step"]),
                   frozenset(groups[i] for i in data.get("expanded", []) if i < len(groups)),
                   frozenset(int(i) for i in data.get("opened", [])), data.get("overlay", ""),
                   tuple(tuple((str(e), str(c)) for e, c in side)
                         for side in data.get("highlights", [[], []])))


@dataclass
class PanesPayload:
    drawn: Drawn              # what the element lists show
    before: list[dict]
    after: list[dict]
    focus: PatternFocus | None
    search_hits: int


def build_panes(ws: Workspace, state: ViewState, ui: UiState) -> PanesPayload:
    step = ws.clamp_step(state.step)
    before, after = ws.graphs_of_step(step)
    focus = view_focus(ws, state)
    hits = search_hits(after, state.search) | search_hits(before, state.search)
    selected = [state.node] if state.node is not None else []
    expanded = _drawn_groups(ws, ui, _focus_groups(ws, step, selected, focus, hits))
    highlights = tuple(tuple(sorted(_highlights(ws, graph, expanded, selected, focus, hits)
                                    .classes().items())) for graph in (before, after))
    drawn = Drawn(ws.key, step, frozenset(expanded), ui.opened, drawn_overlay(ws, state, step),
                  highlights)
    left, right = pane_elements_of(ws, drawn)
    return PanesPayload(drawn, left, right, focus, len(hits))


def drawn_overlay(ws: Workspace, state: ViewState, step: int) -> str:
    """What colours the nodes: the target's intensity bands, the step's errors once its
    bisection is kept with the workspace, or nothing."""
    if state.overlay == "intensity":
        return state.target
    if state.overlay == "error" and kept_wrong_values(ws, step) is not None:
        return f"{ERRORS}{step}"
    return ""


def pane_elements_of(ws: Workspace, drawn: Drawn) -> tuple[list[dict], list[dict]]:
    """Both panes' elements for ``drawn``, highlights included."""
    return (_highlighted(_pane_elements(ws, drawn, BEFORE), dict(drawn.highlights[0])),
            _highlighted(_pane_elements(ws, drawn, AFTER), dict(drawn.highlights[1])))


def _highlighted(elements: list[dict], classes: dict[str, str]) -> list[dict]:
    """``elements`` with the highlighted ones copied with their classes added (the list kept
    for the view is shared, and the others stay the same objects)."""
    if not classes:
        return elements
    return [{**e, "classes": f"{e.get('classes', '')} {classes[e['data']['id']]}".strip()}
            if e["data"]["id"] in classes else e for e in elements]


def _pane_elements(ws: Workspace, drawn: Drawn, side: str) -> list[dict]:
    """One pane's elements, kept by what they show: the graph (the last pass that changed it),
    the marks of the pass (when it changed anything), the open groups and bodies, the overlay.
    Passes that changed nothing draw the same graph unmarked: one list serves them all, and
    the previous answer (what the browser holds) is at hand to compare the next one with."""
    snapshot = ws.result.snapshots[drawn.step]
    shown = drawn.step if side == AFTER else drawn.step - 1
    key = (side, _last_change(ws, shown), drawn.step if snapshot.changed else None,
           drawn.expanded, drawn.opened, drawn.overlay)
    kept = ws.derived.setdefault("pane elements", OrderedDict())
    with _KEPT_LOCK:
        found = kept.get(key)
        if found is not None:
            kept.move_to_end(key)
            return found
    graph = ws.graphs_of_step(drawn.step)[0 if side == BEFORE else 1]
    diff = snapshot.diff
    marks = {i: "modified" for i in diff.modified}
    marks.update({i: "removed" for i in diff.removed} if side == BEFORE
                 else {i: "added" for i in diff.added})
    placement = ws.layout.placement(drawn.expanded, drawn.opened)
    elements = pane_elements(graph, placement, ws.scopes, drawn.expanded, marks,
                             set(drawn.opened))
    if drawn.overlay.startswith(ERRORS):
        _paint_errors(ws, graph, elements, drawn.step, side)
    elif drawn.overlay:   # classes, so the overlay is drawn with the elements (panels/overlay)
        paint(elements, band_classes(ws, graph, drawn.overlay),
              group_band_classes(ws, graph, drawn.overlay))
    with _KEPT_LOCK:
        kept[key] = elements
        while len(kept) > ELEMENTS_KEPT:
            kept.popitem(last=False)
    return elements


def _paint_errors(ws: Workspace, graph: Graph, elements: list[dict], step: int,
                  side: str) -> None:
    found = kept_wrong_values(ws, step)
    if found is None:   # the page's record of an overlay this process has not kept
        return
    scopes = ws.scopes
    paint_errors(elements, graph.node_ids(), found.node_errors("a" if side == BEFORE else "b"),
                 found.report.rtol, lambda i: scopes.ancestors(scopes.group_of.get(i)))


def _last_change(ws: Workspace, step: int) -> int:
    """The last pass up to ``step`` that changed the graph (-1: the input graph)."""
    changes = ws.derived.get("last change")
    if changes is None:
        last, changes = -1, []
        for snapshot in ws.result.snapshots:
            last = snapshot.index if snapshot.changed else last
            changes.append(last)
        ws.derived["last change"] = changes
    return changes[step] if step >= 0 else -1


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
    return [s for s in node.provenance.replaced_ids if graph.node_by_id(s) is not None]


def _find_anywhere(ws: Workspace, node_id: int):
    for snapshot in ws.result.snapshots:
        node = snapshot.graph.node_by_id(node_id)
        if node is not None:
            return node
    return None


def _highlights(ws: Workspace, graph: Graph, expanded: set[str], selected: list[int],
                focus: PatternFocus | None, hits: set[int]) -> Highlights:
    """What one pane emphasises, by the ids of the elements that show it (a node, or the
    closed group holding it)."""
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
    return highlights
