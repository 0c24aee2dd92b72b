"""The pattern editor's results, read for its panel and for highlighting the panes.

The text comes from the URL (anyone can send any text), so it is read by the text-pattern
reader — which never executes it — and matched under a time limit; a text that cannot be read
or takes too long becomes an error to show, never a server error.  Patterns are matched on the
graph the selected pass was given (the left pane): select the pass that should have fused, and
the editor shows what your pattern finds in that pass's input.  Results are cached per
workspace, pass and text, a few texts at a time.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from compiler_core.errors import GraphLabError
from compiler_core.patterns import MatchBudget, PatternRecord, explain
from compiler_core.patterns.text import parse_patterns

from .highlight import EDITOR as EDITOR_ITEMS, MATCH, MISS, Highlight
from .pattern_view import PatternFocus, focus_of
from .view_state import ViewState
from .workbench import Workspace

EDITOR = "editor"             # the panel's name: its tab and the URL's panel= value
TIME_LIMIT_SECONDS = 2.0      # matching a typed pattern on the server
MAX_PATTERN_CHARS = 3_000     # the text travels in the URL: 60 lines fit a request line
# (gunicorn's limit, raised to its maximum in multiprocess.py) even when every character is
# escaped twice over
SOURCE_NAME = "pattern"       # how messages name the text
CACHED_TEXTS = 8              # per workspace


@dataclass(frozen=True)
class EditorOutcome:
    """The editor's reports on one graph, or the error that stopped them."""

    reports: tuple[PatternRecord, ...] = ()
    error: GraphLabError | None = None


def editor_outcome(ws: Workspace, step: int, text: str) -> EditorOutcome:
    """The text's patterns explained on the graph before pass ``step`` (cached)."""
    cache: OrderedDict = ws.derived.setdefault(EDITOR, OrderedDict())
    key = (step, text)
    if key in cache:
        cache.move_to_end(key)
        return cache[key]
    outcome = _explain_text(ws, step, text)
    cache[key] = outcome
    while len(cache) > CACHED_TEXTS:
        cache.popitem(last=False)
    return outcome


def too_long(text: str) -> GraphLabError | None:
    """Why the editor cannot take ``text`` (None: it can)."""
    if len(text) <= MAX_PATTERN_CHARS:
        return None
    return GraphLabError(
        f"the pattern has {len(text):,} characters; the editor takes at most "
        f"{MAX_PATTERN_CHARS:,} (the text travels in the page's address)",
        hint="shorten it, or run it from a file: graphlab explain MODEL --patterns FILE")


def _explain_text(ws: Workspace, step: int, text: str) -> EditorOutcome:
    refused = too_long(text)
    if refused is not None:
        return EditorOutcome(error=refused)
    try:
        patterns = parse_patterns(text, SOURCE_NAME).patterns
        reports = explain(ws.result.graph_before(step), patterns,
                          budget=MatchBudget(TIME_LIMIT_SECONDS))
    except GraphLabError as err:   # an unreadable text, or matching past its time limit
        return EditorOutcome(error=err)
    return EditorOutcome(tuple(r.record() for r in reports))


def clicked_in_editor(highlight: Highlight | None) -> bool:
    return highlight is not None and highlight.source == EDITOR_ITEMS


def editor_focus(ws: Workspace, state: ViewState) -> PatternFocus | None:
    """What the panes highlight for the editor: the item clicked in it; else, while its tab is
    open, every match of its patterns (or, with none, the closest near miss).  Every match is
    marked on the groups that hold it rather than opened: on a big model that would open most
    groups at once."""
    highlight = state.highlight
    clicked = clicked_in_editor(highlight)
    if not state.pattern.strip() or not (clicked or (state.panel == EDITOR and not highlight)):
        return None
    outcome = editor_outcome(ws, ws.clamp_step(state.step), state.pattern)
    reports = outcome.reports
    if clicked:
        return focus_of(reports, highlight.kind, highlight.report, highlight.item)
    matches = [(r, m) for r in reports for m in r.matches]
    if matches:
        report, first = matches[0]
        return PatternFocus(MATCH, report.name, first,
                            [n.id for _, m in matches for n in m.nodes], reveal=False)
    misses = [(r, i, m) for r, report in enumerate(reports)
              for i, m in enumerate(report.near_misses)]
    if not misses:
        return None
    report_index, index, _ = max(misses, key=lambda found: found[2].score)
    return focus_of(reports, MISS, report_index, index)

