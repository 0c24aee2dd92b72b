"""Payload builders: pane elements, diff marks, groups, highlights, view state, uploads."""

from __future__ import annotations

import base64

import pytest

import bad_models

from compiler_core.errors import GraphLabError
from graphlab.app.panels.registry import tab_names
from graphlab.app.config import AppConfig
from graphlab.app.elements import element_id
from graphlab.app.inspector_data import describe_node
from graphlab.app.pane_payload import UiState, build_panes, search_hits
from graphlab.app.uploads import decode_upload, read_upload
from graphlab.app.highlight import DECLINE, PATTERNS, Highlight
from graphlab.app.pattern_view import pass_verdict, resolve_focus
from graphlab.app.scopes import ScopeTree
from graphlab.app.services import Services
from graphlab.app.sessions import read_upload_bytes
from graphlab.app.view_state import ViewState, from_query, to_query


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    return Services.from_config(AppConfig(cache_dir=str(tmp_path_factory.mktemp("sessions"))))


def workspace(services, model, pipeline="O2"):
    return services.workspace(ViewState(model=model, pipeline=pipeline), None)


def ids_of(elements, kind):
    return {e["data"]["id"] for e in elements if e["data"].get("kind") == kind}


def test_both_panes_draw_every_node_of_a_small_model(services):
    ws = workspace(services, "cnn_bn")
    payload = build_panes(ws, ViewState(model="cnn_bn", step=0), UiState())
    before, after = ws.graphs_of_step(0)
    assert ids_of(payload.before, "node") == {element_id(n.id) for n in before.nodes}
    assert ids_of(payload.after, "node") == {element_id(n.id) for n in after.nodes}
    drawn = {e["data"]["id"] for e in payload.before}
    for edge in (e for e in payload.before if "source" in e["data"]):
        assert edge["data"]["source"] in drawn and edge["data"]["target"] in drawn


def test_removed_nodes_are_marked_on_the_left_only(services):
    ws = workspace(services, "cnn_bn")
    step = next(s.index for s in ws.result.snapshots if s.diff.removed)
    payload = build_panes(ws, ViewState(model="cnn_bn", step=step), UiState())
    removed = {element_id(i) for i in ws.result.snapshots[step].diff.removed}
    marked = {e["data"]["id"] for e in payload.before if "removed" in e.get("classes", "")}
    assert marked == removed
    assert not removed & {e["data"]["id"] for e in payload.after}


def test_positions_do_not_move_between_panes(services):
    ws = workspace(services, "bert_tiny_op13")
    payload = build_panes(ws, ViewState(model="bert_tiny_op13"), UiState(expanded=frozenset(
        ws.scopes.groups)))
    left = {e["data"]["id"]: e["position"] for e in payload.before if "position" in e}
    right = {e["data"]["id"]: e["position"] for e in payload.after if "position" in e}
    assert all(left[k] == right[k] for k in left.keys() & right.keys())


def test_collapsed_groups_replace_their_members(services):
    ws = workspace(services, "bert_tiny_op13")
    payload = build_panes(ws, ViewState(model="bert_tiny_op13"), UiState(expanded=frozenset()))
    collapsed = [e for e in payload.before if "collapsed" in e.get("classes", "")]
    assert collapsed and all(e["data"]["w"] > 0 and e["data"]["h"] > 0 for e in collapsed)
    assert len(payload.before) < len(ws.result.initial) / 2


def test_scope_tree_merges_trivial_levels_and_skips_one_node_groups():
    tree = ScopeTree([(0, "/a/b/c"), (1, "/a/b/c"), (2, "/a/b/d"), (3, "/a/b/d"), (4, "/x")])
    assert set(tree.groups) == {"g:/a/b", "g:/a/b/c", "g:/a/b/d"}
    assert tree.groups["g:/a/b"].label == "a/b"
    assert 4 in tree.top_level_nodes
    assert tree.representative(0, set()) == ("g:/a/b", None)
    assert tree.representative(0, {"g:/a/b"}) == ("g:/a/b/c", "g:/a/b")


def test_selecting_a_node_styles_it_in_both_panes(services):
    ws = workspace(services, "cnn_bn")
    node = ws.result.initial.nodes[3]
    payload = build_panes(ws, ViewState(model="cnn_bn", node=node.id), UiState())
    for elements in (payload.before, payload.after):
        lit = [e["data"]["id"] for e in elements if "hl-selected" in e.get("classes", "")]
        assert lit == [element_id(node.id)]


def test_near_miss_resolves_to_failed_node_and_blocking_consumer(services):
    """fold_batchnorm's tab: its conv_bn near miss, and the same site as the rewrite it
    declined, both light the Conv and the Relu that blocks the fold."""
    ws = workspace(services, "teach_conv_bn")
    step = next(s.index for s in ws.result.snapshots if s.pass_name == "fold_batchnorm")
    verdict = pass_verdict(ws, step)
    index = next(i for i, p in enumerate(verdict.patterns) if p.name == "conv_bn")
    focus = resolve_focus(ws, step, Highlight.decode(f"miss:{index}:0"))
    graph = ws.result.graph_before(step)
    assert graph.node_by_id(focus.failed).name == "conv_shared"
    assert graph.node_by_id(focus.blocking).name == "relu_side"
    [decline] = verdict.every_decline
    focus = resolve_focus(ws, step, Highlight.of(PATTERNS, DECLINE, 0, 0))
    assert focus.kind == "decline" and graph.node_by_id(focus.failed).name == "bn_shared"
    assert graph.node_by_id(focus.blocking).name == "relu_side"
    assert resolve_focus(ws, step, Highlight.decode("miss:99:0")) is None
    assert resolve_focus(ws, step, Highlight.decode("decline:0:5")) is None
    assert Highlight.decode("nonsense") is None and resolve_focus(ws, step, None) is None


def test_search_matches_names_and_op_types(services):
    graph = workspace(services, "cnn_bn").result.initial
    assert len(search_hits(graph, "conv")) == 3
    assert search_hits(graph, "") == set()


def test_inspector_describes_op_types_history_and_cost(services):
    ws = workspace(services, "cnn_bn")
    step = next(s.index for s in ws.result.snapshots if s.diff.removed)
    removed = ws.result.snapshots[step].diff.removed[0]
    info = describe_node(ws, step, removed, "asic32")
    assert info["status"].startswith("removed by this pass")
    assert any("removed by pass" in line for line in info["history"])
    conv = next(n for n in ws.result.initial.nodes if n.op_type == "Conv")
    info = describe_node(ws, 0, conv.id, "asic32")
    assert info["inputs"][1]["link"] == "weight"
    assert set(info["metrics"]) >= {"FLOPs", "bytes moved", "intensity (FLOP/byte)"}


def test_view_state_round_trips_through_the_url():
    default = ViewState(model="cnn_bn")
    state = default.with_changes(model="teach_conv_bn", step=3, node=7, panel="patterns",
                                 highlight="miss:0:1", search="Conv", hide_unchanged=True)
    assert from_query(to_query(state, default), default) == state
    assert to_query(default, default) == ""


def test_bad_urls_fall_back_to_defaults():
    default = ViewState(model="cnn_bn")
    state = from_query("?pass=-4&node=x&panel=nope&zzz=1", default, tab_names())
    assert state == default
    assert from_query("?panel=../x", default).panel == default.panel   # not a panel's name


def test_unknown_models_and_server_paths_are_refused(services):
    with pytest.raises(GraphLabError):
        services.workbench.source("/etc/passwd")
    with pytest.raises(GraphLabError):
        services.workbench.source("upload", "not-a-token")


def test_uploads_are_private_to_their_token(services):
    store = services.workbench.sessions
    upload = store.save_upload("m.onnx", b"abc")
    assert store.load_upload(upload.token).digest == upload.digest
    assert read_upload_bytes(store.storage, upload.digest, "m.onnx") == b"abc"
    assert len(upload.token) >= 24
    with pytest.raises(GraphLabError):
        store.load_upload(upload.token[:-1])


def test_decode_upload_enforces_the_size_limit():
    content = "data:application/octet-stream;base64," + base64.b64encode(b"x" * 100).decode()
    assert decode_upload(content, "m.onnx", 1000) == b"x" * 100
    with pytest.raises(GraphLabError, match="larger than"):
        decode_upload(content, "m.onnx", 10)
    with pytest.raises(GraphLabError):
        decode_upload("data:;base64,@@@", "m.onnx", 1000)


def _data_url(data: bytes) -> str:
    return "data:application/octet-stream;base64," + base64.b64encode(data).decode()


def _model_with_external_data(folder) -> tuple[bytes, bytes]:
    """(the .onnx bytes, the .onnx.data bytes) as exporters write a big model."""
    model, data = bad_models.saved_with_external_data(folder)
    with open(model, "rb") as m, open(data, "rb") as d:
        return m.read(), d.read()


def test_a_model_uploads_with_its_external_data_file_in_any_order(tmp_path):
    from compiler_core.ir import load_model

    model, data = _model_with_external_data(tmp_path)
    for order in ([0, 1], [1, 0]):
        files = [("ext.onnx", model), ("ext.onnx.data", data)]
        files = [files[i] for i in order]
        name, combined = read_upload([_data_url(d) for _, d in files], [n for n, _ in files],
                                     1 << 20)
        assert name == "ext.onnx"
        graph = load_model(combined)   # self-contained: no file system needed
        assert float(graph.initializers["w"].const[1, 2]) == 18.0


def test_an_upload_missing_its_data_file_is_refused_naming_it(tmp_path):
    model, data = _model_with_external_data(tmp_path)
    with pytest.raises(GraphLabError, match="'ext.onnx.data'.*together"):
        read_upload(_data_url(model), "ext.onnx", 1 << 20)
    with pytest.raises(GraphLabError, match="cannot tell which"):
        read_upload([_data_url(model), _data_url(model)], ["a.onnx", "b.onnx"], 1 << 20)
    with pytest.raises(GraphLabError, match="larger than"):   # the limit counts every file
        read_upload([_data_url(model), _data_url(data)], ["ext.onnx", "ext.onnx.data"],
                    len(model) + 100)
