"""The Patterns tab of a pass: only the rules it runs, judged on the graph it receives; its
declined rewrites with their reasons, each lighting the node that refused it; near misses
ranked with the weak ones folded; and the one typed highlight value behind every click."""

from __future__ import annotations

import pytest

from decline_models import BLOCKING, DECLINED_ROOT, write_declined_attention
from graphlab.app.config import AppConfig
from graphlab.app.highlight import DECLINE, EDITOR, MATCH, MISS, PATTERNS, RULES, Highlight
from graphlab.app.pane_payload import UiState, build_panes
from graphlab.app.panels.patterns import NO_RULES, pass_view
from graphlab.app.pattern_view import pass_verdict
from graphlab.app.services import Services
from graphlab.app.view_state import ViewState, from_query, to_query
from passes_helpers import o2_position
from compiler_core.records import to_json


@pytest.fixture(scope="module")
def declined_path(tmp_path_factory):
    return write_declined_attention(tmp_path_factory.mktemp("declines"))


@pytest.fixture(scope="module")
def services(tmp_path_factory, declined_path):
    return Services.from_config(AppConfig(cache_dir=str(tmp_path_factory.mktemp("sessions")),
                                          extra_model_path=declined_path))


def step_of(ws, name: str) -> int:
    return next(s.index for s in ws.result.snapshots if s.pass_name == name)


def text_of(component) -> str:
    """Every string a Dash component tree shows."""
    if isinstance(component, str):
        return component
    if isinstance(component, (list, tuple)):
        return " ".join(text_of(c) for c in component)
    children = getattr(component, "children", None)
    return "" if children is None else text_of(children)


def test_the_declined_block_lists_its_reason_and_lights_its_blocking_consumer(services):
    view = ViewState(model="declined_attention.onnx", pipeline="O2")
    ws = services.workspace(view, None)
    step = step_of(ws, "fuse_attention")
    verdict = pass_verdict(ws, step, "O2")
    [decline] = verdict.every_decline
    assert decline.site == DECLINED_ROOT and decline.blocking.name == BLOCKING
    shown = text_of(pass_view(verdict, None))
    assert "Declined by fuse_attention" in shown
    assert f"✗ {DECLINED_ROOT}: Mul output has another consumer (ReduceMax '{BLOCKING}')" \
        in shown and f"(blocked by {BLOCKING})" in shown
    assert "✓ rewritten: a_merge  (+12 nodes)" in shown

    clicked = view.with_changes(step=step, panel="patterns",
                                highlight=Highlight.of(PATTERNS, DECLINE, 0, 0).encode())
    assert clicked.highlight == Highlight(PATTERNS, DECLINE, 0, 0)
    payload = build_panes(ws, clicked, UiState())
    graph = ws.result.graph_before(step)
    blocking = graph.node_by_name(BLOCKING)
    lit = {e["data"]["id"]: e.get("classes", "").split() for e in payload.before}
    assert "hl-blocking" in lit[f"n{blocking.id}"]


def test_a_pass_shows_only_its_own_rules(services):
    ws = services.workspace(ViewState(model="bert_tiny_op13"), None)
    dropout = pass_verdict(ws, step_of(ws, "eliminate_dropout"), "O2")
    assert dropout.patterns == () and NO_RULES in text_of(pass_view(dropout, None))
    verdict = pass_verdict(ws, step_of(ws, "fold_norm_affine"), "O2")
    assert [p.name for p in verdict.patterns] == ["layernorm"]
    assert verdict.graph.describe().startswith(
        f"the graph pass {o2_position('fold_norm_affine')} of O2 (fold_norm_affine) receives, "
        f"after fold_batchnorm")
    shown = pass_view(verdict, None)
    text = text_of(shown)
    assert "Declined by fold_norm_affine" in text and "is also read by Add" in text
    # the weak near misses sit under "more", folded
    [report] = [c for c in shown if getattr(c, "className", "") == "pattern"]
    [more] = [c for c in report.children if getattr(c, "className", "") == "weak-misses"]
    weak = verdict.patterns[0].weak_misses
    assert weak and not more.open
    assert f"more: {len(weak)} weak near miss" in text_of(more.children[0])


def test_one_typed_value_for_every_clicked_item():
    for value in (Highlight.of(PATTERNS, MATCH, 2, 0), Highlight.of(PATTERNS, DECLINE, 0, 4),
                  Highlight.of(EDITOR, MISS, 1, 3),
                  Highlight(RULES, MISS, 2, 0, (4, 5), 6, (7,)),
                  Highlight(RULES, MATCH, 0, 1, (4,), None, ())):
        assert Highlight.decode(value.encode()) == value
    # the text forms shared links already carry
    assert Highlight.decode("miss:0:2") == Highlight(PATTERNS, MISS, 0, 2)
    assert Highlight.decode("edit-match:1:0") == Highlight(EDITOR, MATCH, 1, 0)
    assert Highlight.decode("rule-miss:2:0:4.5/6/7") == Highlight(RULES, MISS, 2, 0, (4, 5), 6,
                                                                  (7,))
    for bad in ("", "nonsense", "miss:x:1", "edit-decline:0:0", "rule-miss:0:0:a/b/c",
                "decline:0"):
        assert Highlight.decode(bad) is None
    default = ViewState(model="cnn_bn")
    state = default.with_changes(highlight="decline:0:3")
    assert state.highlight == Highlight(PATTERNS, DECLINE, 0, 3)
    assert "hl=decline%3A0%3A3" in to_query(state, default)
    assert from_query(to_query(state, default), default) == state
    assert ViewState.from_dict(to_json(state)) == state


def test_the_inspector_says_why_a_declined_site_is_unchanged(services):
    from graphlab.app.inspector_data import describe_node

    ws = services.workspace(ViewState(model="declined_attention.onnx"), None)
    step = step_of(ws, "fuse_attention")
    graph = ws.result.graph_before(step)
    site = describe_node(ws, step, graph.node_by_name(DECLINED_ROOT).id, "asic32")
    assert site["status"] == (f"unchanged by this pass (fuse_attention): it declined to "
                              f"rewrite at {DECLINED_ROOT}: Mul output has another consumer "
                              f"(ReduceMax '{BLOCKING}')")
    blocker = describe_node(ws, step, graph.node_by_name(BLOCKING).id, "asic32")
    assert blocker["status"].startswith("unchanged by this pass (fuse_attention); this node "
                                        f"blocked its rewrite at {DECLINED_ROOT}")
