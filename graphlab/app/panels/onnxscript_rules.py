"""The onnxscript part of the patterns tab: a MODULE[:NAME] field, and each rule's own verdict
by onnxscript on the graph after the selected pass — where it matched, where it came closest,
why not, at which node — with a clicked site lit in the panes.

Naming a module runs its code, so only a server started with ``--allow-code`` (a user's own
machine) judges rules; any other refuses, whether the name comes from the field or the URL.
"""

from __future__ import annotations

import json
import time

from dash import Input, Output, State, dcc, html

from compiler_core.onnxscript_rules import RuleSite, RulesReport, RuleVerdict
from compiler_core.wording import plural

from .. import ids
from ..highlight import MATCH, MISS, Highlight
from ..onnxscript_view import highlight_of, refusal, verdicts
from ..services import Services
from .on_view import on_view
from .panel import INSIDE, Panel
from .view_fanout import Forward

NAME = "onnxscript-rules"
FIELD = "onnxscript-rules-field"
RUN = "onnxscript-rules-run"
ASKED = "onnxscript-rules-asked"   # time of the last Run click on the rules shown (page store)
BODY = "onnxscript-rules-body"
HEARD = "onnxscript-rules-view"    # the view, while rules are named or were (page store)
SITES_SHOWN = 8                    # closest sites listed per rule
EXAMPLE = "onnxscript.rewriter.ort_fusions"


def section(services: Services) -> html.Div:
    """The part of the patterns tab's layout this panel draws into."""
    allowed = services.config.allow_code
    return html.Div(className="onnxscript-rules", children=[
        dcc.Store(id=ASKED, storage_type="memory"),
        dcc.Store(id=HEARD, storage_type="memory"),
        html.H4("onnxscript rewrite rules, judged by onnxscript"),
        html.Div(className="rules-form", children=[
            dcc.Input(id=FIELD, type="text", debounce=True, className="rules-input",
                      placeholder="MODULE[:NAME] or my_rules.py"),
            html.Button("Run rules", id=RUN, className="button"),
        ]),
        html.P(f"Each rule's matcher runs in onnxscript over the graph after the selected pass "
               f"(e.g. {EXAMPLE})." if allowed else
               "This server does not load Python modules (start `graphlab serve --allow-code` "
               "on your own machine for that).", className="muted"),
        html.Div(id=BODY),
    ])


# The view reaches the rules while the patterns tab is open and rules are named (and once more
# when they are cleared): with none, each step and each click in the tab would ask the server
# to draw the same empty section again.
HEAR_WHILE_NAMED = """function (view, states) {
  var heard = states[0];
  if (!view || view.panel !== %s || !view.rules && !(heard && heard.rules)) {
    return [window.dash_clientside.no_update];
  }
  return [view];
}""" % json.dumps(ids.PATTERNS_TAB)


def register(app, services: Services) -> None:
    @on_view(app, services, {"patch": Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                             "asked": Output(ASKED, "data")},
             inputs={"_run": Input(RUN, "n_clicks"), "_enter": Input(FIELD, "n_submit")},
             state={"typed": State(FIELD, "value")}, view_triggers=False,
             prevent_initial_call=True)
    def ask(state, workspace, _run, _enter, typed):
        typed = (typed or "").strip()
        if typed != state.rules:
            return {"patch": {"rules": typed}}
        return {"asked": time.time()}   # the same rules again: judge them afresh


    @on_view(app, services, {"body": Output(BODY, "children"), "field": Output(FIELD, "value")},
             inputs={"asked": Input(ASKED, "data"), "_heard": Input(HEARD, "data")},
             view_triggers=False, tab=ids.PATTERNS_TAB, message="body",
             prevent_initial_call=True)   # the tab's store fills it once the tab is open
    def render(state, workspace, asked, _heard):
        if not state.rules:
            return {"body": [], "field": ""}
        if not services.config.allow_code:
            raise refusal(state.rules)
        step = workspace.clamp_step(state.step)
        report = verdicts(workspace, step, state.rules, asked or 0.0)
        snapshot = workspace.result.snapshots[step]
        where = f"the graph after pass {step + 1} ({snapshot.pass_name}), right pane"
        return {"body": report_view(report, where, state.highlight, ids.PATTERN_ITEM),
                "field": state.rules}


def report_view(report: RulesReport, where: str, highlight: Highlight | None,
                item_type: str) -> list:
    summary = report.summary
    parts = [html.P(f"onnxscript {report.onnxscript_version} on {where}: "
                    f"{summary['matched']} matched, {summary['near miss']} came close, "
                    f"{summary['no partial match']} found no partial match, "
                    f"{summary['raised']} raised.", className="muted")]
    parts += [html.P(note, className="hint") for note in report.notes]
    quiet = [v.name for v in report.rules if v.verdict == "no partial match"]
    parts += [rule_view(index, verdict, highlight, item_type)
              for index, verdict in enumerate(report.rules)
              if verdict.verdict != "no partial match"]
    if quiet:
        parts.append(html.P("No partial match anywhere: " + ", ".join(quiet), className="hint"))
    return parts


def rule_view(index: int, verdict: RuleVerdict, highlight: Highlight | None, item_type: str
              ) -> html.Details:
    """One rule: its matches and closest sites as buttons (``item_type``: the patterns tab's,
    so a click highlights like any pattern item), the clicked one explained under it, its
    other near misses by reason.  Open when it matched or holds the clicked site."""
    if verdict.error is not None:
        return html.Details([html.Summary([html.B(verdict.name), html.Span("  raised",
                                                                           className="muted")]),
                             html.Div(verdict.error, className="message error")],
                            open=True, className="pattern")
    chosen = []

    def item(kind: str, i: int, site: RuleSite, text: str) -> html.Li:
        value = highlight_of(kind, index, i, site)
        selected = value == highlight
        chosen.extend([True] if selected else [])
        classes = f"pattern-item {kind}" + (" selected" if selected else "")
        button = html.Button(text, id={"type": item_type, "index": value.encode()},
                             className=classes)
        return html.Li([button, focus_view(verdict.name, site)] if selected else button)

    items = [item(MATCH, i, site, f"✓ {site.root.name}  ({plural(len(site.nodes), 'node')})")
             for i, site in enumerate(verdict.matches)]
    closest = verdict.closest
    items += [item(MISS, i, site, f"✗ {site.root.name}: {site.reason or site.status}")
              for i, site in enumerate(closest[:SITES_SHOWN])]
    if len(closest) > SITES_SHOWN:
        items.append(html.Li(f"… and {len(closest) - SITES_SHOWN} more sites alike",
                             className="hint"))
    others = [(r, n) for r, n in verdict.reasons if r not in {s.reason for s in closest}]
    counts = f"  {len(verdict.matches)} match{'es' if len(verdict.matches) != 1 else ''}, " \
             f"{verdict.near_miss_count} near miss{'es' if verdict.near_miss_count != 1 else ''}"
    return html.Details([
        html.Summary([html.B(verdict.name), html.Span(counts, className="muted")]),
        html.Div(verdict.source, className="muted rule-source"),
        html.Ul(items, className="pattern-items"),
        *([html.Table([html.Tr([html.Td(str(n), className="count"), html.Td(reason)])
                       for reason, n in others], className="kv")] if others else []),
    ], open=bool(verdict.matches or chosen), className="pattern")


def focus_view(rule: str, site: RuleSite) -> html.Div:
    """The clicked site, in onnxscript's words, its nodes named as the panes name them."""
    names = lambda refs: ", ".join(r.name for r in refs)  # noqa: E731
    rows = [("status", site.status), ("reason", site.reason), ("tried at", site.root.name),
            ("where", site.where), ("failed at", names(site.failed_at)),
            ("values", ", ".join(site.failed_values)),
            ("read outside the match by", names(site.blocking)),
            ("matched" if site.matched else "matched so far", names(site.nodes))]
    return html.Div([html.B(f"{rule}: {'match' if site.matched else 'near miss'} at "
                            f"{site.root.name}"),
                     html.Table([html.Tr([html.Td(k, className="key"), html.Td(v)])
                                 for k, v in rows if v], className="kv")],
                    className=f"focus {'match' if site.matched else 'miss'}")


PANEL = Panel(NAME, INSIDE, register,
              forward=Forward((Output(HEARD, "data"),), (State(HEARD, "data"),),
                              HEAR_WHILE_NAMED))
