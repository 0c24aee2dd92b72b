"""Groups from structure: a graph whose exporter left no name scopes opens as a hierarchy of
its repeated blocks (a transformer's layers) and labelled stretches, never one huge level."""

from __future__ import annotations

import io

import onnx
import pytest
from onnx import TensorProto, helper

from benchmarks.app import generated_model
from compiler_core.ir import load_model
from graphlab.app.config import AppConfig
from graphlab.app.pane_payload import UiState, build_panes
from graphlab.app.scopes import ScopeTree, pipeline_scopes
from graphlab.app.services import Services
from graphlab.app.structure_scopes import CROWDED, LEAF_SIZE, MAX_CHILDREN, structure_scopes


def load(model: onnx.ModelProto):
    buffer = io.BytesIO()
    onnx.save(model, buffer)
    return load_model(buffer.getvalue())


def tree_of(graph) -> ScopeTree:
    return ScopeTree(pipeline_scopes([graph], structure_scopes(graph, pipeline_scopes([graph])))
                     .items())


def levels(tree: ScopeTree):
    """(label, how many items it holds, how many nodes of its own) of every group and the top."""
    yield "", len(tree.roots) + len(tree.top_level_nodes), len(tree.top_level_nodes)
    for group in tree.groups.values():
        yield group.label, len(group.children) + len(group.node_ids), len(group.node_ids)


def chain(ops: list[str]) -> onnx.ModelProto:
    """One op after another, named as an exporter without scopes names them."""
    nodes, value = [], "x"
    for index, op in enumerate(ops):
        nodes.append(helper.make_node(op, [value], [f"v{index}"], name=f"node_{op}_{index}"))
        value = f"v{index}"
    graph = helper.make_graph(nodes, "chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info(value, TensorProto.FLOAT, [4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=10)


def test_the_repeated_layer_of_an_unscoped_stack_becomes_a_block_each():
    graph = load(generated_model(layers=40, branches=2, depth=6, scoped=False))   # 560 nodes
    tree = tree_of(graph)
    blocks = [g for g in tree.groups.values() if g.label.startswith("block ")]
    assert len(blocks) == 40
    # one layer each, from its first op to its residual Add: the cut goes where only the
    # residual stream crosses (one value, though five nodes read it)
    assert [g.size for g in blocks] == [14] * 40
    layers = [n for n in graph.nodes if n.op_type == "Add"][1::2]   # each layer's residual Add
    assert {tree.group_of[n.id] for n in layers} == {g.id for g in blocks}
    runs = [g.label for g in tree.groups.values() if g.label.startswith("blocks ")]
    assert sorted(runs) == sorted(f"blocks {k}–{k + 4}" for k in range(0, 40, 5))   # round
    # runs, as few as fit in one level
    assert not tree.top_level_nodes


def test_every_level_holds_a_readable_handful_and_every_node_is_placed():
    graph = load(chain(["Relu"] * 3000))     # no structure at all: pieces of pieces
    tree = tree_of(graph)
    assert all(items <= MAX_CHILDREN for _, items, _ in levels(tree))
    assert all(own <= LEAF_SIZE for _, _, own in levels(tree))
    placed = sum(len(g.node_ids) for g in tree.groups.values()) + len(tree.top_level_nodes)
    assert placed == 3000


def test_what_does_not_repeat_is_cut_into_stretches_named_by_their_main_ops():
    ops = ["Conv", "Relu"] * 90 + ["MatMul", "Softmax", "Transpose", "Reshape"] * 20
    graph = load(chain([op for pair in zip(ops, ops[::-1]) for op in pair][:len(ops)]))
    labels = [label for label, _, _ in levels(tree_of(graph)) if label]
    stretches = [label for label in labels if not label.startswith("block")]
    assert stretches, labels
    # plumbing (Transpose, Reshape) is named only when nothing computes
    assert all("Reshape" not in label and "Transpose" not in label for label in stretches)
    assert all(label.rsplit(" ", 1)[-1].replace("–", "").isdigit() for label in stretches)


def test_scoped_graphs_and_small_scopes_keep_their_own_groups():
    scoped = load(generated_model(layers=20, branches=2, depth=6))
    assert structure_scopes(scoped, pipeline_scopes([scoped])) == {}
    small = load(chain(["Relu", "Sigmoid"] * (CROWDED // 2)))
    assert structure_scopes(small, pipeline_scopes([small])) == {}


@pytest.fixture(scope="module")
def flat_workspace(tmp_path_factory):
    folder = tmp_path_factory.mktemp("flat")
    path = folder / "flat.onnx"
    onnx.save(generated_model(layers=60, branches=2, depth=6, scoped=False), str(path))
    services = Services.from_config(AppConfig(cache_dir=str(folder / "cache"),
                                              extra_model_path=str(path)))
    return services.workspace(services.default_state, None), services.default_state


def test_an_unscoped_graph_opens_collapsed_into_a_short_column(flat_workspace):
    workspace, state = flat_workspace
    payload = build_panes(workspace, state, UiState())
    drawn = [e for e in payload.after if "position" in e]
    ops = [e for e in drawn if "op" in e["classes"].split()]
    assert not ops, "groups only, at first"
    assert workspace.scopes.structured   # so the page says where the groups came from
    collapsed = [e for e in drawn if "collapsed" in e["classes"]]
    assert 2 <= len(collapsed) <= MAX_CHILDREN
    heights = [e["position"]["y"] for e in drawn]
    assert max(heights) - min(heights) < 3000    # the 900 nodes in one column: ~80,000 px
