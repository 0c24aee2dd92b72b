"""The layout engine: no overlaps within a layer, edges point down, grown items push their
neighbours aside, and one slot per set of nodes that are never drawn together."""

from __future__ import annotations

import random

import pytest

from compiler_core.ir import Graph, Value, load_model
from compiler_core.passes import PassContext, PassManager
from compiler_core.passes.framework.diff import diff_graphs
from compiler_core.passes.framework.manager import PipelineResult, Snapshot
from compiler_core.passes.framework.rewrite import fuse_nodes
from graphlab.app.drawn_graph import drawn_edges, drawn_keys
from graphlab.app.graph_layout import LayoutOptions, layered_layout, layered_order, \
    place_layers, separated_positions
from graphlab.app.stable_positions import pipeline_graph
from graphlab.samples import resolve_model

OPTIONS = LayoutOptions()


def random_dag(n: int, seed: int) -> tuple[list[int], list[tuple[int, int]]]:
    rng = random.Random(seed)
    edges = [(rng.randrange(0, b), b) for b in range(1, n) for _ in range(rng.choice((1, 1, 2)))]
    return list(range(n)), edges


def assert_well_formed(positions: dict, edges, sizes: dict | None = None) -> None:
    sizes = sizes or {}
    rows: dict[float, list] = {}
    for key, (x, y) in positions.items():
        rows.setdefault(y, []).append((x, sizes.get(key, OPTIONS.node_size)[0]))
    for items in rows.values():
        items.sort()
        for (xa, wa), (xb, wb) in zip(items, items[1:]):
            assert xb - xa >= (wa + wb) / 2 + OPTIONS.column_gap - 1e-6, "items overlap"
    for a, b in edges:
        assert positions[a][1] < positions[b][1], f"edge {a}->{b} does not point down"


@pytest.mark.parametrize("seed", range(5))
def test_random_dags_have_no_overlaps_and_downward_edges(seed):
    keys, edges = random_dag(300, seed)
    positions = layered_layout(keys, edges)
    assert set(positions) == set(keys)
    assert_well_formed(positions, edges)


@pytest.mark.parametrize("seed", range(3))
def test_items_of_different_sizes_do_not_overlap(seed):
    keys, edges = random_dag(200, seed)
    rng = random.Random(seed)
    sizes = {k: (rng.choice((170.0, 420.0, 900.0)), rng.choice((48.0, 130.0, 600.0)))
             for k in keys}
    positions = layered_layout(keys, edges, sizes=sizes)
    assert_well_formed(positions, edges, sizes)
    for a, b in edges:   # a whole layer band lies between producer and consumer
        assert positions[a][1] + sizes[a][1] / 2 < positions[b][1] - sizes[b][1] / 2


def test_a_chain_is_a_straight_vertical_line():
    positions = layered_layout(list(range(6)), [(i, i + 1) for i in range(5)])
    assert len({x for x, _ in positions.values()}) == 1


def test_constants_sit_just_above_their_consumer():
    # 0 -> 1 -> 2 -> 3 -> 4, and a constant 5 read only by 4
    positions = layered_layout(list(range(6)), [(0, 1), (1, 2), (2, 3), (3, 4), (5, 4)])
    assert positions[5][1] == positions[3][1]


def test_separated_positions_keep_order_and_gaps():
    placed = separated_positions([0.0, 0.0, 0.0, 500.0], [100.0, 300.0, 100.0])
    assert placed == sorted(placed)
    assert all(b - a >= gap - 1e-9 for a, b, gap in zip(placed, placed[1:], (100, 300, 100)))
    assert placed[3] == 500.0


def test_a_grown_item_pushes_its_neighbours_aside_and_nothing_else_moves():
    # 0 fans out to 1, 2, 3, which join in 4
    keys, edges = list(range(5)), [(0, 1), (0, 2), (0, 3), (1, 4), (2, 4), (3, 4)]
    order = layered_order(keys, edges)
    small = place_layers(order, {})
    grown = place_layers(order, {2: (800.0, 400.0)})
    assert grown[0] == small[0], "the layer above moved"
    assert grown[2][0] == pytest.approx(small[2][0]), "the grown item left its place"
    assert grown[1][0] < small[1][0] and grown[3][0] > small[3][0], "neighbours not pushed"
    assert grown[1][0] <= grown[2][0] - 400 - 85 - OPTIONS.column_gap + 1e-6
    assert grown[4][0] == small[4][0] and grown[4][1] > small[4][1], "below: only moved down"


def test_a_10000_node_graph_is_laid_out():
    keys, edges = random_dag(10_000, seed=7)
    positions = layered_layout(keys, edges)
    assert len(positions) == 10_000


def test_sample_model_layout_is_well_formed():
    graph = load_model(resolve_model("bert_tiny_op13"))
    positions = layered_layout(drawn_keys(graph), drawn_edges(graph))
    assert_well_formed(positions, drawn_edges(graph))


def test_nodes_drawn_together_never_share_a_slot():
    result = PassManager("O2").run(load_model(resolve_model("bert_tiny_op13")))
    union = pipeline_graph(result, lambda key: None)
    for graph in [result.initial] + [s.graph for s in result.snapshots]:
        slots = [union.slot_of[key] for key in drawn_keys(graph)]
        assert len(set(slots)) == len(slots)
    shared = [key for key, slot in union.slot_of.items() if key != slot]
    assert shared, "no node a pass made took over the slot of a node it replaced"


def fused_pipeline_graph() -> Graph:
    """a -> Relu r1 -> Relu r2 -> Relu r3 -> out, for a hand-made fusion."""
    g = Graph("chain")
    x = g.add_input(Value("x", 1, (4,)))
    value = x
    for i in range(3):
        value = g.add_node("Relu", [value], name=f"r{i}").outputs[0]
    g.set_outputs([value])
    return g


def one_fusion() -> tuple[Graph, Graph, int]:
    before = fused_pipeline_graph()
    after = before.copy()
    nodes = [after.node_by_name("r1"), after.node_by_name("r2")]
    fused = fuse_nodes(after, PassContext(pass_name="fuse"), nodes, "ReluRelu", "relu_relu")
    return before, after, fused.id


def test_a_node_made_by_a_pass_takes_the_slot_of_its_last_source():
    before, after, fused = one_fusion()
    snapshot = Snapshot(0, "fuse", "", after, len(before), diff_graphs(before, after), 1, 0.0)
    union = pipeline_graph(PipelineResult(before, [snapshot], 0.0), lambda key: None)
    assert union.slot_of[fused] == before.node_by_name("r2").id
    assert fused in union.bodies


def test_a_node_made_in_another_group_gets_a_slot_of_its_own():
    before, after, fused = one_fusion()
    snapshot = Snapshot(0, "fuse", "", after, len(before), diff_graphs(before, after), 1, 0.0)
    union = pipeline_graph(PipelineResult(before, [snapshot], 0.0),
                           lambda key: "g:/fused" if key == fused else None)
    assert union.slot_of[fused] == fused
