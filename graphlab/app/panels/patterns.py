"""The patterns panel: for the selected pass, each pattern's matches and near misses, the
clicked near miss explained (reason, expected vs found, path, blocking consumer), and the near
misses of the whole pipeline grouped by reason."""

from __future__ import annotations

from dash import Output, html

from compiler_core.patterns import NodeRef, PatternRecord

from .. import ids
from ..pattern_view import PatternFocus, reasons_across_model, resolve_focus, step_reports
from ..services import Services
from . import onnxscript_rules
from .on_view import on_view
from .panel import TAB, Panel

NAME = ids.PATTERNS_TAB
BODY = "patterns"
ITEM = ids.PATTERN_ITEM      # pattern-matching type, index = 'match:R:I' / 'miss:R:I'
NO_PATTERNS = "No pattern matches or nearly matches here."


def layout(services: Services) -> html.Div:
    return html.Div([html.Div(id=BODY, className="side-body"),
                     onnxscript_rules.section(services)])


def register(app, services: Services) -> None:
    @on_view(app, services, {"body": Output(BODY, "children")}, idle={"body": []},
             tab=NAME, message="body")
    def render(state, workspace):
        step = workspace.clamp_step(state.step)
        snapshot = workspace.result.snapshots[step]
        found = step_reports(workspace, step)
        focus = resolve_focus(workspace, step, state.highlight)
        parts = [html.H3(f"Patterns in pass {step + 1}: {snapshot.pass_name}"),
                 html.P("Reported by this pass." if found.from_pass else
                        "This pass reports no patterns; shown: what every pattern finds in "
                        "the graph before it.", className="muted")]
        if focus is not None:
            parts.append(focus_view(focus))
        parts += [report_view(i, r, state.highlight) for i, r in enumerate(found.reports)
                  if r.matches or r.near_misses] or \
            [html.P(NO_PATTERNS, className="hint")]
        parts.append(reasons_view(reasons_across_model(workspace)))
        return {"body": parts}


def report_view(report_index: int, report: PatternRecord, highlight: str,
                item_type: str = ITEM, prefix: str = "") -> html.Details:
    """One pattern's matches and near misses as buttons (``item_type``, index
    '{prefix}match:R:I' / '{prefix}miss:R:I') that highlight them in the panes."""
    matches, misses = report.matches, report.near_misses
    items = [_item(item_type, f"{prefix}match:{report_index}:{i}", "match",
                   " + ".join(n.name for n in m.nodes), highlight) for i, m in enumerate(matches)]
    items += [_item(item_type, f"{prefix}miss:{report_index}:{i}", "miss",
                    f"{m.site.name}: {m.reason}", highlight) for i, m in enumerate(misses)]
    summary = html.Summary([html.B(report.name),
                            html.Span(f"  {len(matches)} match{'es' if len(matches) != 1 else ''}"
                                      f", {len(misses)} near miss{'es' if len(misses) != 1 else ''}",
                                      className="muted")])
    return html.Details([summary, html.Div(report.description, className="muted"),
                         html.Ul(items, className="pattern-items")],
                        open=bool(matches or misses), className="pattern")


def _item(item_type: str, index: str, kind: str, text: str, highlight: str) -> html.Li:
    classes = f"pattern-item {kind}" + (" selected" if index == highlight else "")
    return html.Li(html.Button(text, id={"type": item_type, "index": index},
                               className=classes))


def focus_view(focus: PatternFocus) -> html.Div:
    item = focus.item
    if focus.kind == "match":
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
        return html.Div([html.H4("Near misses in the whole model"),
                         html.P("none", className="muted")])
    return html.Div([html.H4("Near misses in the whole model, by reason"),
                     html.Table([html.Tr([html.Td(str(count), className="count"),
                                          html.Td(reason),
                                          html.Td(", ".join(patterns), className="muted")])
                                 for reason, count, patterns in reasons], className="kv")])


PANEL = Panel(NAME, TAB, register, layout, tab="Patterns")
