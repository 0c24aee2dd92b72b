"""The pattern editor: write a pattern (or start from an example), find it in the graph the
selected pass was given, and see its matches and near misses highlighted in the panes.

The text lives in the URL (``pat=``), so a link shares it; clicking "Find" or an example sends
it as a view patch.  The text box is written from the view only when the view's text changes
(a shared link, back/forward), so typing is never overwritten by a redraw.
"""

from __future__ import annotations

from dash import ALL, Input, Output, State, ctx, dcc, html, no_update

from compiler_core.errors import GraphLabError
from compiler_core.patterns.text import EXAMPLES, PatternTextError, example_text

from .. import ids
from ..messages import user_message
from ..highlight import EDITOR as EDITOR_ITEMS
from ..pattern_editor_view import (EDITOR, clicked_in_editor, editor_focus, editor_outcome,
                                   too_long)
from ..services import Services
from .on_view import on_view
from .panel import TAB, Panel
from .patterns import focus_view, report_view

TEXT = "editor-text"
FIND = "editor-find"
EXAMPLE = "editor-example"    # pattern-matching type, index = the example's name
ITEM = "editor-item"          # pattern-matching type, index = a Highlight's text form
ERROR = "editor-error"
RESULTS = "editor-results"
SHOWN = "editor-shown"        # the view text last written into the box
PLACEHOLDER = ("def gelu(x):\n"
               "    \"\"\"GELU, erf form.\"\"\"\n"
               "    return x * 0.5 * (1 + Erf(x / sqrt(2)))")
EMPTY = "Write a pattern above, or start from an example, then Find."


def layout(_: Services) -> html.Div:
    return html.Div(className="wide-panel pattern-editor", children=[
        dcc.Store(id=SHOWN, storage_type="memory"),
        html.Div(className="editor-examples", children=[
            html.Span("Start from:", className="muted"),
            *[html.Button(name, id={"type": EXAMPLE, "index": name}, className="button")
              for name in EXAMPLES]]),
        dcc.Textarea(id=TEXT, className="pattern-text", spellCheck=False, wrap="off",
                     placeholder=PLACEHOLDER, value=""),
        html.Div(className="editor-actions", children=[
            html.Button("Find", id=FIND, className="button primary"),
            html.Span(["Python expression syntax over the pattern language: ops are called "
                       "by their type, ", html.Code("| & ~"), " are or, and, not. See "
                       "docs/patterns.md."], className="muted")]),
        html.Div(id=ERROR, className="editor-error"),
        html.Div(id=RESULTS),
    ])


def register(app, services: Services) -> None:
    @app.callback(Output(TEXT, "value"), Output(SHOWN, "data"),
                  Input(ids.tab_view(EDITOR), "data"), State(SHOWN, "data"),
                  prevent_initial_call=True)
    def show_text(view, shown):
        if not view or view.get("panel") != EDITOR or view.get("pattern", "") == shown:
            return no_update, no_update
        return view.get("pattern", ""), view.get("pattern", "")

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Output(ERROR, "children", allow_duplicate=True),
                  Input(FIND, "n_clicks"), Input({"type": EXAMPLE, "index": ALL}, "n_clicks"),
                  State(TEXT, "value"), prevent_initial_call=True)
    def find(_find, _examples, typed):
        if not ctx.triggered[0]["value"]:
            return no_update, no_update   # a freshly drawn button, not a click
        trigger = ctx.triggered_id
        text = example_text(trigger["index"]) if isinstance(trigger, dict) else typed or ""
        refused = too_long(text)
        if refused is not None:
            return no_update, _error_view(refused)
        return {"pattern": text, "highlight": ""}, ""

    @app.callback(Output(ids.VIEW_PATCH, "data", allow_duplicate=True),
                  Input({"type": ITEM, "index": ALL}, "n_clicks"), prevent_initial_call=True)
    def pick(_clicks):
        if not ctx.triggered[0]["value"]:
            return no_update
        return {"highlight": ctx.triggered_id["index"]}

    @on_view(app, services, {"results": Output(RESULTS, "children"),
                             "error": Output(ERROR, "children", allow_duplicate=True)},
             tab=EDITOR, message="error")
    def render(state, workspace):
        step = workspace.clamp_step(state.step)
        if not state.pattern.strip():
            return {"results": html.P(EMPTY, className="hint"), "error": ""}
        outcome = editor_outcome(workspace, step, state.pattern)
        if outcome.error is not None:
            return {"results": [], "error": _error_view(outcome.error)}
        snapshot = workspace.result.snapshots[step]
        parts = [html.P(f"Found in the graph before pass {step + 1} ({snapshot.pass_name}): "
                        "the left pane.", className="muted")]
        focus = editor_focus(workspace, state) if clicked_in_editor(state.highlight) else None
        if focus is not None:
            parts.append(focus_view(focus))
        parts += [report_view(i, r, state.highlight, ITEM, EDITOR_ITEMS)
                  for i, r in enumerate(outcome.reports)]
        if not any(r.matches or r.near_misses for r in outcome.reports):
            parts.append(html.P("No match and no near miss here: no site got past its root "
                                "op.", className="hint"))
        return {"results": parts, "error": ""}


def _error_view(err: GraphLabError) -> html.Div:
    """The error under the box: what and where, what was expected, the line with a caret."""
    parts = [html.Div(user_message(err))]
    if isinstance(err, PatternTextError) and err.excerpt():
        parts.append(html.Pre(err.excerpt(), className="editor-excerpt"))
    return html.Div(parts, className="message error")


PANEL = Panel(EDITOR, TAB, register, layout, tab="Pattern editor")
