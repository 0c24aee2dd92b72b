"""onnxscript's verdicts on the graph after a pass, read for the patterns panel and the panes.

The verdicts come from a child process (``explain_rules_isolated``): a user's rules module is
imported afresh on every run, and a rule that hangs or crashes costs a message.  Each answer is
kept with the workspace per (pass, rules) with the time it was computed; the Run button asks
for an answer newer than its click (the user may have edited the rules), whoever clicked.

A clicked site is highlighted through the view's ``highlight``, which for onnxscript carries
the ids of the nodes it lights (``highlight.Highlight``), so the panes need no verdicts of
their own: whichever server process draws them, the URL says what to light.
"""

from __future__ import annotations

import threading
import time

from compiler_core.errors import GraphLabError
from compiler_core.onnxscript_rules import RuleSite, RulesReport
from compiler_core.onnxscript_rules.isolated import explain_rules_isolated

from .highlight import RULES, Highlight
from .pattern_view import PatternFocus
from .workbench import Workspace

_locks: dict[tuple, threading.Lock] = {}
_locks_guard = threading.Lock()


def refusal(spec: str) -> GraphLabError:
    """What a server without ``--allow-code`` says to a module name."""
    return GraphLabError(
        f"this server does not load Python modules: naming {spec!r} would run its code here",
        hint="on your own machine, start `graphlab serve --allow-code` to judge onnxscript "
             "rules in this tab, or run `graphlab explain MODEL --onnxscript-rules "
             f"{spec}`; the library's patterns above stay available")


def verdicts(ws: Workspace, step: int, spec: str, asked_at: float = 0.0) -> RulesReport:
    """onnxscript's verdicts on the graph after pass ``step``: the kept answer unless it is
    older than ``asked_at`` (a Run click's time).  Callers check the server allows code."""
    key = ("onnxscript-rules", step, spec)
    with _lock(ws.key, key):
        kept = ws.derived.get(key)
        if kept is None or kept[0] < asked_at:
            started = time.time()
            kept = (started, explain_rules_isolated(ws.result.snapshots[step].graph, spec))
            ws.derived[key] = kept
    return kept[1]


def _lock(workspace_key: str, key: tuple) -> threading.Lock:
    """One run at a time per answer: the panel drawn twice at once waits for the first run."""
    with _locks_guard:
        return _locks.setdefault((workspace_key, *key), threading.Lock())


def highlight_of(kind: str, rule: int, item: int, site: RuleSite) -> Highlight:
    """The view's highlight for one site: its place in the report and the ids it lights."""
    failed = site.failed_at[0].id if site.failed_at else site.root.id
    return Highlight(RULES, kind, rule, item, tuple(n.id for n in site.nodes),
                     None if site.matched else failed, tuple(n.id for n in site.blocking))


def rule_focus(highlight: Highlight | None) -> PatternFocus | None:
    """What the panes light for an onnxscript site (the panes need only the ids)."""
    if highlight is None or highlight.source != RULES:
        return None
    return PatternFocus(highlight.kind, "onnxscript rule", None, list(highlight.matched),
                        highlight.failed, highlight.blocking[0] if highlight.blocking else None)
