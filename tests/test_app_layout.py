"""The layout engine: no overlaps within a layer, edges point down, positions that stay put."""

from __future__ import annotations

import random

import pytest

from compiler_core.ir import Graph, Value, load_model
from compiler_core.passes import PassContext, PassManager
from compiler_core.passes.diff import diff_graphs
from compiler_core.passes.manager import PipelineResult, Snapshot
from compiler_core.passes.rewrite import fuse_nodes
from graphlab.app.drawn_graph import drawn_edges, drawn_keys
from graphlab.app.graph_layout import LayoutOptions, layered_layout, separated_positions
from graphlab.app.stable_positions import pipeline_positions
from graphlab.samples import resolve_model

OPTIONS = LayoutOptions()


def random_dag(n: int, seed: int) -> tuple[list[int], list[tuple[int, int]]]:
    rng = random.Random(seed)
    edges = [(rng.randrange(0, b), b) for b in range(1, n) for _ in range(rng.choice((1, 1, 2)))]
    return list(range(n)), edges


def assert_well_formed(positions: dict, edges) -> None:
    rows: dict[float, list[float]] = {}
    for x, y in positions.values():
        rows.setdefault(y, []).append(x)
    for xs in rows.values():
        xs.sort()
        gaps = [b - a for a, b in zip(xs, xs[1:])]
        assert all(g >= OPTIONS.column_step - 1e-6 for g in gaps), "nodes overlap in a layer"
    for a, b in edges:
        assert positions[a][1] < positions[b][1], f"edge {a}->{b} does not point down"


@pytest.mark.parametrize("seed", range(5))
def test_random_dags_have_no_overlaps_and_downward_edges(seed):
    keys, edges = random_dag(300, seed)
    positions = layered_layout(keys, edges)
    assert set(positions) == set(keys)
    assert_well_formed(positions, edges)


def test_a_chain_is_a_straight_vertical_line():
    positions = layered_layout(list(range(6)), [(i, i + 1) for i in range(5)])
    assert len({x for x, _ in positions.values()}) == 1


def test_constants_sit_just_above_their_consumer():
    # 0 -> 1 -> 2 -> 3 -> 4, and a constant 5 read only by 4
    positions = layered_layout(list(range(6)), [(0, 1), (1, 2), (2, 3), (3, 4), (5, 4)])
    assert positions[5][1] == positions[3][1]


def test_separated_positions_keep_order_and_gap():
    placed = separated_positions([0.0, 0.0, 0.0, 500.0], 100.0)
    assert placed == sorted(placed)
    assert all(b - a >= 100.0 - 1e-9 for a, b in zip(placed, placed[1:]))
    assert placed[3] == 500.0


def test_a_10000_node_graph_is_laid_out():
    keys, edges = random_dag(10_000, seed=7)
    positions = layered_layout(keys, edges)
    assert len(positions) == 10_000


def test_sample_model_layout_is_well_formed():
    graph = load_model(resolve_model("bert_tiny_op13"))
    positions = layered_layout(drawn_keys(graph), drawn_edges(graph))
    assert_well_formed(positions, drawn_edges(graph))


def test_positions_are_stable_across_passes_and_new_nodes_sit_near_their_sources():
    graph = load_model(resolve_model("cnn_bn"))
    result = PassManager("O2").run(graph)
    positions = pipeline_positions(result)
    alone = layered_layout(drawn_keys(graph), drawn_edges(graph))
    for key, where in alone.items():
        assert positions[key] == where, "a node of the input graph moved"
    for snapshot in result.snapshots:
        assert set(drawn_keys(snapshot.graph)) <= set(positions)
        present = [positions[k] for k in drawn_keys(snapshot.graph)]
        assert len(set(present)) == len(present), "two nodes share a position"


def fused_pipeline_graph() -> Graph:
    """a -> Relu r1 -> Relu r2 -> Relu r3 -> out, for a hand-made fusion."""
    g = Graph("chain")
    x = g.add_input(Value("x", 1, (4,)))
    value = x
    for i in range(3):
        value = g.add_node("Relu", [value], name=f"r{i}").outputs[0]
    g.set_outputs([value])
    return g


def test_a_node_made_by_a_pass_is_placed_on_its_sources():
    before = fused_pipeline_graph()
    after = before.copy()
    nodes = [after.node_by_name("r1"), after.node_by_name("r2")]
    fused = fuse_nodes(after, PassContext(pass_name="fuse"), nodes, "ReluRelu", "relu_relu")
    snapshot = Snapshot(0, "fuse", "", after, len(before), diff_graphs(before, after), 1, 0.0)
    positions = pipeline_positions(PipelineResult(before, [snapshot], 0.0))
    sources = [positions[n.id] for n in before.nodes if n.name in ("r1", "r2")]
    x, y = positions[fused.id]
    assert x == pytest.approx(sum(s[0] for s in sources) / 2)
    assert min(s[1] for s in sources) <= y <= max(s[1] for s in sources)
    alone = layered_layout(drawn_keys(before), drawn_edges(before))
    for node in before.nodes:  # removed nodes keep their place (the before pane never moves)
        assert positions[node.id] == alone[node.id]
