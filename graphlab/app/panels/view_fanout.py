"""Everything the page does with a new view by itself, in one clientside callback.

Each callback the page runs costs Dash's renderer a round of its bookkeeping (some 20 store
updates, each checked by every mounted component), whatever it answers, and the view changes
on every click.  So the page's own listeners of the view (the closed tabs' gate, the gates of
what a step or a tab cannot change, the selected pass's mark, a panel's own, as the onnxscript
rules' hearing of the patterns tab) are one callback, not four: a module or a `Panel` hands in
a `Forward` and the factory joins them.  A view made in the page (a step, a tab, a click in a
list or a pane: `views_in_page`) is forwarded by the very callback that makes it, so the panels
hear it one round of the renderer sooner; this callback forwards the navigation reducer's
(`ids.VIEW_REDUCED`).

It is not a panel (it draws nothing): the factory registers it with the navigation reducer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from dash import Input, Output, State

from .. import ids


@dataclass(frozen=True)
class Forward:
    """What one listener sets from the view: its outputs, the states it reads, and
    ``js``, a JavaScript ``function (view, states)`` returning one value per output (or
    `window.dash_clientside.no_update`)."""

    outputs: tuple[Output, ...]
    states: tuple[State, ...]
    js: str


# Every forward's values for ``view`` in turn, given all the forwards' states in turn.
FAN_OUT = """function (view, states) {
  var forwards = [%s], counts = %s, out = [], at = 0;
  forwards.forEach(function (forward, i) {
    out = out.concat(forward(view, states.slice(at, at + counts[i])));
    at += counts[i];
  });
  return out;
}"""

# The navigation reducer's view, forwarded.
FROM_REDUCER = """function (view) { return (%s)(view, [].slice.call(arguments, 1)); }"""

# A view made in the page (`views_in_page`): the callback's own answer (``made``, the view
# first), then every forward's values for the view it made, or for none when it made none.
WITH_FORWARDS = """function () {
  var args = [].slice.call(arguments), own = %d;
  var made = (%s).apply(null, args.slice(0, own));
  var view = made[0] === window.dash_clientside.no_update ? null : made[0];
  return made.concat((%s)(view, args.slice(own)));
}"""


def register(app, forwards: list[Forward]) -> None:
    """The reducer's views forwarded (those made in the page are forwarded by the callback
    that makes them: `made_in_page`)."""
    app.clientside_callback(FROM_REDUCER % _fan_out(forwards), *outputs(forwards),
                            Input(ids.VIEW_REDUCED, "data"), *states(forwards),
                            prevent_initial_call=True)


def made_in_page(js: str, own_arguments: int, forwards: list[Forward]) -> str:
    """``js``, a clientside callback making a view in the page from its first
    ``own_arguments`` arguments, also answering every forward's outputs (`outputs`) from the
    forwards' states (`states`) that follow them: one callback fewer on each click (the
    forward would have run after it, a round of the renderer's bookkeeping before any panel
    hears the view)."""
    return WITH_FORWARDS % (own_arguments, js, _fan_out(forwards))


def outputs(forwards: list[Forward]) -> list[Output]:
    """Every forward's outputs, each written by the reducer's forward and by the callbacks
    that make views in the page."""
    return [Output(output.component_id, output.component_property, allow_duplicate=True)
            for forward in forwards for output in forward.outputs]


def states(forwards: list[Forward]) -> list[State]:
    return [state for forward in forwards for state in forward.states]


def _fan_out(forwards: list[Forward]) -> str:
    return FAN_OUT % (",\n".join(forward.js for forward in forwards),
                      json.dumps([len(forward.states) for forward in forwards]))
