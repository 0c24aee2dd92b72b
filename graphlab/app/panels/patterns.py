"""The patterns panel: the rules the selected pass runs, judged on the graph it receives — each
match rewritten or declined, the pass's declined rewrites with their reasons, near misses
ranked (the weak ones folded under "more") — the clicked item explained (reason, expected vs
found, path, the node that blocked it) and lit in the panes, and the near misses of the whole
pipeline grouped by reason.

A click on an item changes only the explanation at the top and two items' marks: while the
page holds the list drawn for the same pass (`DRAWN`), the answer is a `dash.Patch` of those
(`tree_patch`), not the whole list again.
"""

from __future__ import annotations

from dash import Output, State, dcc, html

from compiler_core.passes.framework.base import Decline
from compiler_core.passes.framework.judged import JudgedPattern, PassVerdict
from compiler_core.patterns import STRONG_SCORE, NodeRef, PatternRecord

from .. import ids
from ..highlight import DECLINE, MATCH, MISS, PATTERNS, Highlight
from ..pattern_view import PatternFocus, pass_verdict, reasons_across_model, resolve_focus
from ..services import Services
from ..tree_patch import tree_patch
from . import onnxscript_rules
from .on_view import on_view
from .panel import TAB, Panel

NAME = ids.PATTERNS_TAB
BODY = "patterns"
DRAWN = "patterns-drawn"     # the workspace, pass, pipeline and highlight the list shows
ITEM = ids.PATTERN_ITEM      # pattern-matching type, index = a Highlight's text form
NO_PATTERNS = "No pattern matches or nearly matches here."
NO_RULES = ("This pass runs no pattern rules. The Pattern editor tab finds any pattern in the "
            "graph it receives.")


def layout(services: Services) -> html.Div:
    return html.Div([html.Div(id=BODY, className="side-body"), dcc.Store(id=DRAWN),
                     onnxscript_rules.section(services)])


def register(app, services: Services) -> None:
    @on_view(app, services, {"body": Output(BODY, "children"), "drawn": Output(DRAWN, "data")},
             state={"drawn": State(DRAWN, "data")}, idle={"body": [], "drawn": None},
             tab=NAME, message="body", failed=lambda _: {"drawn": None})
    def render(state, workspace, drawn):
        step = workspace.clamp_step(state.step)
        record = {"list": [workspace.key, step, state.pipeline],
                  "highlight": state.highlight.encode() if state.highlight else ""}
        parts = body(workspace, step, state.pipeline, state.highlight)
        if drawn and drawn["list"] == record["list"]:   # the same list: move its marks
            held = Highlight.decode(drawn["highlight"])
            change = tree_patch(body(workspace, step, state.pipeline, held), parts)
            return {} if change is None else {"body": change, "drawn": record}
        return {"body": parts, "drawn": record}


def body(workspace, step: int, pipeline: str, highlight: Highlight | None) -> list:
    """The tab's children for one pass, with ``highlight`` explained and marked."""
    snapshot = workspace.result.snapshots[step]
    verdict = pass_verdict(workspace, step, pipeline)
    focus = resolve_focus(workspace, step, highlight)
    return [html.H3(f"Patterns in pass {step + 1}: {snapshot.pass_name}"),
            html.P(f"Judged on {verdict.graph.describe()}: the left pane.",
                   className="muted judged-graph"),
            html.Div(focus_view(focus) if focus is not None else None, className="focus-slot"),
            *pass_view(verdict, highlight),
            reasons_view(reasons_across_model(workspace))]


def pass_view(verdict: PassVerdict, highlight: Highlight | None) -> list:
    """The pass's declines, then each of its patterns' matches and near misses."""
    parts: list = []
    declines = verdict.every_decline
    if declines:
        parts.append(declines_view(declines, verdict.graph.pass_name, highlight))
    shown = [report_view(i, judged, highlight) for i, judged in enumerate(verdict.patterns)
             if judged.matches or judged.near_misses]
    if not verdict.patterns:
        parts.append(html.P(NO_RULES, className="hint"))
    elif not shown and not declines:
        parts.append(html.P(NO_PATTERNS, className="hint"))
    return parts + shown


def declines_view(declines: tuple[Decline, ...], pass_name: str,
                  highlight: Highlight | None) -> html.Details:
    """Every rewrite the pass declined, as buttons that light the site and what blocked it."""
    items = [_item(ITEM, Highlight.of(PATTERNS, DECLINE, 0, i), "miss decline",
                   f"✗ {d.site}: {d.reason}" + (f"  (blocked by {d.blocking.name})"
                                                  if d.blocking else ""), highlight)
             for i, d in enumerate(declines)]
    summary = html.Summary([html.B(f"Declined by {pass_name}"),
                            html.Span(f"  {len(declines)} rewrite"
                                      f"{'s' if len(declines) != 1 else ''}",
                                      className="muted")])
    return html.Details([summary, html.Ul(items, className="pattern-items")], open=True,
                        className="pattern declines")


def report_view(report_index: int, report: PatternRecord | JudgedPattern,
                highlight: Highlight | None, item_type: str = ITEM,
                source: str = PATTERNS) -> html.Details:
    """One pattern's matches and near misses as buttons (``item_type``, index: the
    Highlight's text form) that highlight them in the panes.  Strong near misses are listed;
    the weak ones (that failed near the root) are folded under "more"."""
    judged = report if isinstance(report, JudgedPattern) else None
    matches, misses = report.matches, report.near_misses
    rewritten = judged.rewritten if judged is not None and judged.by_pass else ()
    declined = {d.node_id for d in judged.declines} if judged is not None else set()

    def mark(i: int, match) -> str:
        if i < len(rewritten):
            return "✓ rewritten: " if rewritten[i] else (
                "✗ declined: " if match.root.id in declined else "✗ not rewritten: ")
        return ""

    def miss_item(i: int, m) -> html.Li:
        suffix = "  (declined)" if m.site.id in declined else ""
        return _item(item_type, Highlight.of(source, MISS, report_index, i), "miss",
                     f"{m.site.name}: {m.reason}{suffix}", highlight)

    def match_text(i: int, m) -> str:
        more = len(m.nodes) - 1
        return mark(i, m) + m.root.name + (f"  (+{more} node{'s' if more != 1 else ''})"
                                           if more else "")

    items = [_item(item_type, Highlight.of(source, MATCH, report_index, i), "match",
                   match_text(i, m), highlight) for i, m in enumerate(matches)]
    strong = [(i, m) for i, m in enumerate(misses) if m.score >= STRONG_SCORE]
    weak = [(i, m) for i, m in enumerate(misses) if m.score < STRONG_SCORE]
    items += [miss_item(i, m) for i, m in strong]
    more = []
    if weak:
        chosen = highlight is not None and highlight.source == source and \
            highlight.kind == MISS and highlight.report == report_index and \
            any(i == highlight.item for i, _ in weak)
        more = [html.Details([html.Summary(f"more: {len(weak)} weak near miss"
                                           f"{'es' if len(weak) != 1 else ''} (failed near "
                                           "the pattern's root)", className="muted"),
                              html.Ul([miss_item(i, m) for i, m in weak],
                                      className="pattern-items")],
                             open=chosen, className="weak-misses")]
    counts = (f"  {len(matches)} match{'es' if len(matches) != 1 else ''}, "
              f"{len(misses)} near miss{'es' if len(misses) != 1 else ''}")
    if rewritten:
        counts += f"; {sum(rewritten)} rewritten"
    summary = html.Summary([html.B(report.name), html.Span(counts, className="muted")])
    return html.Details([summary, html.Div(report.description, className="muted"),
                         html.Ul(items, className="pattern-items"), *more],
                        open=bool(matches or misses), className="pattern")


def _item(item_type: str, value: Highlight, kind: str, text: str,
          highlight: Highlight | None) -> html.Li:
    classes = f"pattern-item {kind}" + (" selected" if value == highlight else "")
    return html.Li(html.Button(text, id={"type": item_type, "index": value.encode()},
                               className=classes))


def focus_view(focus: PatternFocus) -> html.Div:
    item = focus.item
    if focus.kind == DECLINE:
        rows = [("reason", item.reason), ("rule", item.rule),
                ("blocking consumer", _name(item.blocking)),
                ("would have taken", ", ".join(n.name for n in item.nodes))]
        return html.Div([html.B(f"declined at {item.site}"),
                         html.Table([html.Tr([html.Td(k, className="key"), html.Td(str(v))])
                                     for k, v in rows if v], className="kv")],
                        className="focus miss decline")
    if focus.kind == MATCH:
        return html.Div([html.B(f"{focus.pattern}: match"),
                         html.Div(f"{len(item.nodes)} nodes: "
                                  + ", ".join(n.name for n in item.nodes)), *_rewritten(item)],
                        className="focus match")
    rows = [("reason", item.reason), ("part", item.part),
            ("failed at", _name(item.failed_node)),
            ("expected", item.expected), ("found", item.found),
            ("path", item.path), ("blocking consumer", _name(item.blocking_node)),
            ("matched so far", ", ".join(n.name for n in item.matched_nodes))]
    alternatives = item.alternatives
    parts = [html.B(f"{focus.pattern}: near miss at {item.site.name}"),
             html.Table([html.Tr([html.Td(k, className="key"), html.Td(str(v))])
                         for k, v in rows if v], className="kv")]
    if alternatives:
        parts += [html.Div("alternatives tried:", className="muted"),
                  html.Ul([html.Li(str(a.get("reason", a)) if isinstance(a, dict) else str(a))
                           for a in alternatives])]
    return html.Div(parts, className="focus miss")


def _rewritten(item) -> list[html.Div]:
    """What the pass made of a match, and the nodes it took along beyond the match (so the
    fused node's count is explained here too)."""
    made = getattr(item, "made", None)
    if made is None:
        return []
    along = item.taken_along
    total = len(item.nodes) + len(along)
    text = f"rewritten into {made.name}" + (
        f" from {total} nodes: these {len(item.nodes)} and {len(along)} more it took along ("
        + ", ".join(n.name for n in along) + ")" if along else "")
    return [html.Div(text, className="muted")]


def _name(ref: NodeRef | None) -> str | None:
    return None if ref is None else ref.name


def reasons_view(reasons: list[tuple[str, int, list[str]]]) -> html.Div:
    if not reasons:
        return html.Div([html.H4("Near misses in the whole pipeline"),
                         html.P("none", className="muted")])
    return html.Div([html.H4("Near misses in the whole pipeline (each pass's patterns on the "
                             "graph it received), by reason"),
                     html.Table([html.Tr([html.Td(str(count), className="count"),
                                          html.Td(reason),
                                          html.Td(", ".join(patterns), className="muted")])
                                 for reason, count, patterns in reasons], className="kv")])


PANEL = Panel(NAME, TAB, register, layout, tab="Patterns")
