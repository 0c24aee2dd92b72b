"""tree_patch: the Patch that turns a drawn tree into a new one, applied as the page applies it,
gives the new tree; a moved mark costs two operations, not the list."""

import json

from dash import html
from plotly.utils import PlotlyJSONEncoder

from graphlab.app.tree_patch import MAX_OPERATIONS, tree_patch


def as_json(value):
    return json.loads(json.dumps(value, cls=PlotlyJSONEncoder))


def applied(old: list, patch) -> list:
    """What the renderer makes of ``old`` and the patch's Assign operations."""
    tree = as_json(old)
    for op in as_json(patch)["operations"]:
        assert op["operation"] == "Assign", op
        *path, last = op["location"]
        at = tree
        for step in path:
            at = at[step]
        at[last] = op["params"]["value"]
    return tree


def items(selected: int, focus: str | None, count: int = 30) -> list:
    return [html.H3("Patterns"),
            html.Div(html.B(focus) if focus else None, className="focus-slot"),
            html.Details([html.Summary("gelu"), html.Ul([
                html.Li(html.Button(f"miss {i}", id={"type": "item", "index": str(i)},
                                    className="item" + (" selected" if i == selected else "")))
                for i in range(count)])], open=True)]


def test_a_moved_mark_and_a_new_explanation_are_patched_in_place():
    old, new = items(3, "miss 3: why"), items(7, "miss 7: why")
    patch = tree_patch(old, new)
    operations = as_json(patch)["operations"]
    assert len(operations) == 3   # two classes and the explanation's text
    assert applied(old, patch) == as_json(new)


def test_an_explanation_appearing_replaces_only_its_slot():
    old, new = items(-1, None), items(2, "miss 2: why")
    patch = tree_patch(old, new)
    assert applied(old, patch) == as_json(new)
    assert {tuple(op["location"][:1]) for op in as_json(patch)["operations"]} == {(1,), (2,)}


def test_the_same_tree_needs_nothing_and_another_shape_is_sent_whole():
    assert tree_patch(items(3, "x"), items(3, "x")) is None
    longer = items(3, "x", count=31)   # an inner list of another length: replaced, once
    patch = tree_patch(items(3, "x"), longer)
    assert len(as_json(patch)["operations"]) == 1
    assert applied(items(3, "x"), patch) == as_json(longer)
    more = items(3, "x") + [html.P("reasons")]
    assert tree_patch(items(3, "x"), more) is more   # the top list of another length
    everything = [html.Span(str(i), className="b") for i in range(MAX_OPERATIONS + 1)]
    before = [html.Span(str(i), className="a") for i in range(MAX_OPERATIONS + 1)]
    assert tree_patch(before, everything) is everything   # cheaper whole than patched
