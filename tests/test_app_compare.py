"""Compare with… without a browser: the view's fields, the comparison workspace the panes draw,
the Compare tab's content, and the names the app refuses."""

from __future__ import annotations

import pytest

from compiler_core.errors import GraphLabError
from compiler_core.ir import load_model
from compiler_core.model_diff import diff_models
from graphlab.app.config import AppConfig
from graphlab.app.elements import element_id
from graphlab.app.inspector_data import describe_node
from graphlab.app.pane_payload import UiState, build_panes
from graphlab.app.panels.compare import comparison_view
from graphlab.app.services import Services
from graphlab.app.view_state import ViewState, from_query, to_query, with_patch
from graphlab.samples import resolve_model

VIEW = ViewState(model="bert_tiny_op13", versus="bert_tiny_dynamo")


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    return Services.from_config(AppConfig(cache_dir=str(tmp_path_factory.mktemp("sessions"))))


def marked(elements, mark: str) -> set[str]:
    return {e["data"]["id"] for e in elements if mark in e.get("classes", "").split()}


def test_the_comparison_travels_in_the_url_and_in_patches():
    query = to_query(ViewState(model="cnn_bn", versus="onnxruntime:all", versus_after=True),
                     ViewState(model="cnn_bn"))
    assert query == "?vs=onnxruntime%3Aall&vsout=1"
    assert from_query(query, ViewState(model="cnn_bn")).versus == "onnxruntime:all"
    patched = with_patch(ViewState(model="cnn_bn"), {"versus": "gpt2_tiny", "versus_after": True})
    assert (patched.versus, patched.versus_after) == ("gpt2_tiny", True)


def test_the_panes_mark_what_the_diff_found_on_each_side(services):
    ws = services.workspace(VIEW, None)
    a, b = load_model(resolve_model("bert_tiny_op13")), load_model(resolve_model("bert_tiny_dynamo"))
    diff = diff_models(a, b)
    assert ws.comparison.diff.summary() == {**diff.summary(),
                                            **{"matched_by": ws.comparison.diff.how_matched()}}
    payload = build_panes(ws, VIEW, UiState(expanded=frozenset(ws.scopes.groups)))
    only_b = {ws.comparison.view_id[n.id] for n in diff.only_b}
    assert marked(payload.before, "removed") == {element_id(n.id) for n in diff.only_a}
    assert marked(payload.after, "added") == {element_id(i) for i in only_b}
    assert marked(payload.before, "modified") == {element_id(p.a.id) for p in diff.changed_pairs}
    query = a.node_by_name("/bert/encoder/layer.0/attention/self/query/MatMul")
    drawn = {e["data"]["id"]: e for e in payload.after}
    assert "node_MatMul_59" in drawn[element_id(query.id)]["data"]["label"]
    positions = [{e["data"]["id"]: e.get("position") for e in pane}
                 for pane in (payload.before, payload.after)]
    assert positions[0][element_id(query.id)] == positions[1][element_id(query.id)]
    info = describe_node(ws, 0, query.id, "asic32")
    assert info["status"] == "in both models, changed (the Compare tab says how)"


def test_the_compare_tab_names_the_pair_and_its_changes(services):
    ws = services.workspace(VIEW, None)
    query = ws.result.initial.node_by_name("/bert/encoder/layer.0/attention/self/query/MatMul")
    text = str(comparison_view(ws.comparison, query.id))
    assert "B: MatMul 'node_MatMul_59'" in text and "matched by structure" in text
    assert "LayerNormalization 'node_layer_norm', only in B" in text
    only_b = ws.comparison.diff.only_b[0]
    alone = str(comparison_view(ws.comparison, ws.comparison.view_id[only_b.id]))
    assert f"only in B: {only_b}" in alone


@pytest.mark.parametrize("versus, message", [
    ("no_such_model", "there is no model named 'no_such_model'"),
    ("onnxruntime:fastest", "cannot compare with onnxruntime at level 'fastest'"),
    ("upload", "this uploaded model is no longer available here"),
])
def test_names_the_app_cannot_compare_with_are_refused(services, versus, message):
    with pytest.raises(GraphLabError, match=message):
        services.workspace(ViewState(model="cnn_bn", versus=versus), None)
