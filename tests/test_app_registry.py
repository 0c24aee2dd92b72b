"""The page is made from the panel registry, and every panel's callback of the view shares one
way of failing: a message in the panel.  Checked through the app's real layout and its real
callback endpoint (no browser)."""

from __future__ import annotations

import pytest
from dash import Output, dcc, html

from compiler_core.errors import GraphLabError
from compiler_core.records import to_json
from graphlab.app import AppConfig, create_app, ids
from graphlab.app.panels import registry
from graphlab.app.panels.on_view import on_view
from graphlab.app.panels.panel import TAB, Panel
from graphlab.app.view_state import ViewState, from_query

from callback_requests import post_callback

FAKE_BODY = "fake-body"
FAKE_TEXT = "the fake panel's own layout"
FAKE_FAILURE = "the fake chart cannot be drawn"


def fake_layout(_services) -> html.Div:
    return html.Div(FAKE_TEXT, id=FAKE_BODY)


def fake_register(app, services) -> None:
    @on_view(app, services, {"body": Output(FAKE_BODY, "children")},
             idle={"body": "no model yet"}, message="body")
    def draw(state, workspace):
        raise GraphLabError(FAKE_FAILURE)


FAKE = Panel("fake", TAB, fake_register, fake_layout, tab="Fake tab")


@pytest.fixture
def app(tmp_path, monkeypatch):
    """The app with one more line in the registry: the fake panel."""
    monkeypatch.setattr(registry, "PANELS", (*registry.PANELS, FAKE))
    return create_app(AppConfig(cache_dir=str(tmp_path)))


def components(node):
    yield node
    children = getattr(node, "children", None)
    for child in children if isinstance(children, (list, tuple)) else [children]:
        if child is not None and hasattr(child, "to_plotly_json"):
            yield from components(child)


def tabs_of(app) -> dcc.Tabs:
    return next(c for c in components(app.layout) if getattr(c, "id", None) == ids.TABS)


def texts(value) -> list[str]:
    """Every string in a callback's JSON answer (component trees included)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in texts(v)]
    return []


def call(app, output: str, view: dict | None) -> dict:
    """Post the view to the callback of ``output`` as the browser does; its answer's JSON."""
    values = {("view-state", "data"): view,   # and the stores the page fills from it: a
              (ids.VIEW_SETTINGS, "data"): view,   # tab's, open on the view's panel
              (ids.VIEW_SHOWN, "data"): view}
    values.update({(ids.tab_view(tab), "data"): view for tab in registry.tab_names()
                   if view and view.get("panel") == tab})
    return post_callback(app, output, values, "view-state.data")


def test_every_tab_of_the_page_is_a_registered_panel_with_its_layout(app):
    tabs = tabs_of(app)
    assert [(t.label, t.value) for t in tabs.children] == [
        ("Inspector", "inspector"), ("Patterns", "patterns"), ("Pattern editor", "editor"),
        ("Roofline", "roofline"), ("Systolic", "systolic"), ("Memory", "memory"),
        ("Compare", "compare"),
        ("Fake tab", "fake")]
    fake_tab = tabs.children[-1]
    assert fake_tab.children.id == FAKE_BODY
    assert fake_tab.children.children == FAKE_TEXT
    assert tabs.value == "inspector"   # the first registered tab opens


def test_a_registered_tab_is_a_view_the_url_can_name(app):
    default = ViewState(model="cnn_bn")
    assert from_query("?panel=fake", default, registry.tab_names()).panel == "fake"
    assert from_query("?panel=unregistered", default, registry.tab_names()).panel == "inspector"


def test_the_panels_are_laid_out_where_they_declare():
    header = {p.name for p in registry.placed("top")}
    assert header == {"controls", "report"}
    main = [p.name for p in registry.placed("main")]
    assert main == ["stepper", "panes"]
    assert registry.follows_selection() == {"roofline", "systolic", "memory", "compare"}
    assert "compare-bar" in {p.name for p in registry.placed("inside")}


def test_a_panels_error_reaches_the_page_as_a_message(app):
    answer = call(app, f"..{FAKE_BODY}.children..", to_json(ViewState(model="cnn_bn")))
    message = answer[FAKE_BODY]["children"]
    assert message["props"]["className"] == "message error"
    assert message["props"]["children"] == FAKE_FAILURE


def test_without_a_view_a_panel_shows_its_idle_content(app):
    answer = call(app, f"..{FAKE_BODY}.children..", None)
    assert answer[FAKE_BODY]["children"] == "no model yet"


@pytest.mark.parametrize("output, panel", [
    ("..patterns.children...patterns-drawn.data..", "patterns"),
    ("..inspector.children..", "inspector"),
    ("..pass-list.children..", "inspector")])
def test_a_real_panel_says_why_its_workspace_cannot_be_had(app, output, panel):
    view = to_json(ViewState(model="no_such_model", node=1, panel=panel))
    shown = " ".join(texts(call(app, output, view)))
    assert "there is no model named 'no_such_model' here" in shown


def test_bindings_are_read_once_into_the_view():
    assert ViewState(model="m", bindings="batch=2,seq=8").bound.sizes == {"batch": 2, "seq": 8}
    bad = ViewState(model="m", bindings="batch=two").bound
    assert bad.sizes == {} and "cannot read binding 'batch=two'" in str(bad.error)
    with pytest.raises(GraphLabError, match="cannot read binding"):
        bad.checked()
