"""The pattern editor's data: what it finds on the graph a pass was given, what the panes
highlight, errors and time limits as messages, and the text's round trip through the URL."""

from __future__ import annotations

import pytest

from compiler_core.patterns import MatchTimeout, explain
from compiler_core.patterns.text import PatternTextError, example_text, parse_patterns
from graphlab.app import pattern_editor_view
from graphlab.app.config import AppConfig
from graphlab.app.pane_payload import UiState, build_panes
from graphlab.app.panels.pattern_editor import _error_view
from graphlab.app.pattern_editor_view import editor_focus, editor_outcome
from graphlab.app.services import Services
from graphlab.app.view_state import ViewState, from_query, to_query, with_patch

GELU = example_text("GELU")


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    return Services.from_config(AppConfig(cache_dir=str(tmp_path_factory.mktemp("sessions"))))


@pytest.fixture(scope="module")
def gelu(services):
    return services.workspace(ViewState(model="teach_gelu"), None)


def editor_view(text: str = GELU, **changes) -> ViewState:
    return ViewState(model="teach_gelu", panel="editor", pattern=text).with_changes(**changes)


def ids_of(graph, *names: str) -> list[int]:
    return [graph.node_by_name(name).id for name in names]


def test_the_editor_explains_the_text_on_the_graph_the_pass_was_given(gelu):
    step = next(s.index for s in gelu.result.snapshots if s.pass_name == "recognize_gelu")
    before = gelu.result.graph_before(step)
    found = editor_outcome(gelu, step, GELU)
    assert found.error is None
    expected = explain(before, parse_patterns(GELU).patterns)[0].record()
    assert found.reports == (expected,)
    assert [m.root.name for m in found.reports[0].matches] == ["gelu_good_half_mul"]
    after = editor_outcome(gelu, step + 1, GELU)   # recognize_gelu fused the good one
    assert not after.reports[0].matches


def test_the_panes_show_every_match_or_the_clicked_item(gelu):
    graph = gelu.result.initial
    focus = editor_focus(gelu, editor_view())
    assert sorted(focus.matched) == sorted(ids_of(graph, "gelu_good_half_mul", "gelu_good_mul",
                                                  "gelu_good_add", "gelu_good_erf",
                                                  "gelu_good_div"))
    miss = editor_focus(gelu, editor_view(highlight="edit-miss:0:0"))
    assert miss.kind == "miss" and miss.failed == ids_of(graph, "gelu_wrongconst_div")[0]
    before = build_panes(gelu, editor_view(highlight="edit-miss:0:0"), UiState()).before
    failed = [e["data"]["id"] for e in before if "hl-failed" in e.get("classes", "")]
    assert failed == [f"n{miss.failed}"]
    # the patterns panel's own items are left to it; another tab shows no overview
    assert editor_focus(gelu, editor_view(highlight="miss:0:0")) is None
    assert editor_focus(gelu, editor_view(panel="inspector")) is None


def test_with_no_match_the_closest_near_miss_is_shown(services):
    conv = services.workspace(ViewState(model="teach_conv_bn"), None)
    # The first block's Conv has a bias (a near miss early on), the second's output is also
    # read outside (a near miss at the very end): the second is the closer one.
    text = ("def conv_bn_relu(x):\n    conv = Conv(x, const())\n"
            "    return Relu(BatchNormalization(conv, const(), const(), const(), const()))\n")
    focus = editor_focus(conv, ViewState(model="teach_conv_bn", panel="editor", pattern=text))
    graph = conv.result.initial
    assert focus.kind == "miss" and focus.item.site.name == "relu_out"
    assert focus.blocking == ids_of(graph, "relu_side")[0]
    scores = [m.score for m in editor_outcome(conv, 0, text).reports[0].near_misses]
    assert len(scores) == 2 and focus.item.score == max(scores)


def test_a_broken_text_is_an_error_with_line_and_column_never_an_exception(gelu):
    found = editor_outcome(gelu, 0, "def f(x):\n    return Relu(x) +\n")
    assert isinstance(found.error, PatternTextError) and found.reports == ()
    assert (found.error.line, found.error.column) == (2, 21)
    shown = _error_view(found.error)
    assert "pattern, line 2, column 21: syntax error" in str(shown.children[0].children)
    assert shown.children[1].children.endswith("^")
    assert editor_focus(gelu, editor_view("def f(x):\n    return Relu(x) +\n")) is None
    too_long = editor_outcome(gelu, 0, "#" * (pattern_editor_view.MAX_PATTERN_CHARS + 1))
    assert "at most 3,000" in str(too_long.error)


def test_a_pattern_past_the_time_limit_is_a_message(gelu, monkeypatch):
    monkeypatch.setattr(pattern_editor_view, "TIME_LIMIT_SECONDS", 0.0)
    found = editor_outcome(gelu, 0, GELU + "\n")   # another text: not cached
    assert isinstance(found.error, MatchTimeout)
    assert "matching stopped after 0 s: pattern 'gelu'" in str(found.error)


def test_results_are_cached_per_pass_and_text_a_few_at_a_time(gelu):
    first = editor_outcome(gelu, 0, GELU)
    assert editor_outcome(gelu, 0, GELU) is first
    for extra in range(pattern_editor_view.CACHED_TEXTS):
        editor_outcome(gelu, 0, GELU + "#" * (extra + 1))
    assert len(gelu.derived[pattern_editor_view.EDITOR]) == pattern_editor_view.CACHED_TEXTS
    assert editor_outcome(gelu, 0, GELU) is not first


def test_the_text_round_trips_through_the_url_and_patches():
    default = ViewState(model="cnn_bn")
    text = 'def f(x):\n    """é & ü: 50% + #"""\n    return Relu(x) | Sigmoid(x)\n'
    state = default.with_changes(pattern=text, panel="editor", highlight="edit-match:0:1")
    query = to_query(state, default)
    assert "pat=" in query and "\n" not in query
    assert from_query(query, default) == state
    patched = with_patch(default, {"pattern": text, "highlight": "edit-miss:1:0"})
    assert (patched.pattern, patched.highlight.encode()) == (text, "edit-miss:1:0")
