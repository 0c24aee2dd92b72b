"""Everything the page does with a new view by itself, in one clientside callback.

Each callback the page runs costs Dash's renderer a round of its bookkeeping (some 20 store
updates, each checked by every mounted component), whatever it answers, and the view changes
on every click.  So the page's own listeners of the view (the closed tabs' gate, the gates of
what a step or a tab cannot change, the selected pass's mark, a panel's own, as the onnxscript
rules' hearing of the patterns tab) are one callback, not four: a module or a `Panel` hands in
a `Forward` and the factory joins them.

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


JOINED = """function (view) {
  var forwards = [%s], counts = %s, states = [].slice.call(arguments, 1), out = [], at = 0;
  forwards.forEach(function (forward, i) {
    out = out.concat(forward(view, states.slice(at, at + counts[i])));
    at += counts[i];
  });
  return out;
}"""


def register(app, forwards: list[Forward]) -> None:
    app.clientside_callback(
        JOINED % (",\n".join(forward.js for forward in forwards),
                  json.dumps([len(forward.states) for forward in forwards])),
        [output for forward in forwards for output in forward.outputs],
        Input(ids.VIEW, "data"),
        *[state for forward in forwards for state in forward.states])
