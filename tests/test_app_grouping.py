"""Grouping in the panes: what is drawn never overlaps and flows downward in every grouping
state, places stay put across passes and panes, collapsed groups count (and name) the changes
inside, opened fused bodies stay compact, and a group closed over the selection stays closed."""

from __future__ import annotations

import pytest

from compiler_core.ir import Graph, Value
from compiler_core.passes import PassManager
from graphlab.app.config import AppConfig
from graphlab.app.drawn_graph import drawn_edges
from graphlab.app.elements import element_id
from graphlab.app.graph_layout import Box, layered_layout
from graphlab.app.graph_layout import Box
from graphlab.app.group_elements import collapsed_group_elements, collapsed_size, op_summary
from graphlab.app.scopes import Group
from graphlab.app.nested_layout import BODY_LABEL_HEIGHT, GROUP_LABEL_HEIGHT, IO_HEIGHT, \
    pipeline_layout
from graphlab.app.pane_payload import UiState, build_panes, drawn_groups, regrouped
from graphlab.app.scopes import Group, pipeline_scopes
from graphlab.app.services import Services
from graphlab.app.styles import EDGE_Z
from graphlab.app.view_state import ViewState

MODELS = ("cnn_bn", "bert_tiny_op13", "bert_tiny_dynamo", "gpt2_tiny", "mobilenet_tiny")
NODE = (170.0, 48.0)


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    return Services.from_config(AppConfig(cache_dir=str(tmp_path_factory.mktemp("sessions"))))


def workspace(services, model):
    return services.workspace(ViewState(model=model), None)


def grouping_states(ws) -> dict[str, UiState]:
    every_group = frozenset(ws.scopes.groups)
    return {"default": UiState(), "all closed": UiState(expanded=frozenset()),
            "all open": UiState(expanded=every_group),
            "all open, bodies too": UiState(expanded=every_group,
                                            opened=frozenset(ws.layout.union.bodies))}


def every_pane(ws, model, ui):
    for step in range(len(ws.result.snapshots)):
        payload = build_panes(ws, ViewState(model=model, step=step), ui)
        yield step, payload.before
        yield step, payload.after


# ---- geometry of what cytoscape draws ---------------------------------------------------------

def outer_boxes(elements) -> tuple[dict[str, tuple], dict[str, dict]]:
    """(left, top, right, bottom) of every drawn node; a frame (an open group, an opened fused
    op) with its label strip on top, as it is drawn.  Badges are decorations inside their
    group's box and are left out."""
    nodes = {e["data"]["id"]: e for e in elements
             if "source" not in e["data"] and e["data"].get("kind") != "badge"}
    boxes: dict[str, tuple] = {}
    for key, element in nodes.items():
        data, (x, y) = element["data"], element["position"].values()
        w, h = (data["w"], data["h"]) if "w" in data else \
            (NODE[0], IO_HEIGHT) if data["kind"] in ("in", "out") else NODE
        label = 0.0
        if "group" in element["classes"].split():
            label = GROUP_LABEL_HEIGHT
        elif "opened" in element["classes"].split():
            label = BODY_LABEL_HEIGHT
        boxes[key] = (x - w / 2, y - h / 2 - label, x + w / 2, y + h / 2)
    return boxes, nodes


def test_every_member_is_drawn_inside_its_frame(services):
    ws = workspace(services, "bert_tiny_op13")
    framed = set()
    for name, ui in grouping_states(ws).items():
        for step, pane in every_pane(ws, "bert_tiny_op13", ui):
            boxes, nodes = outer_boxes(pane)
            for key, element in nodes.items():
                within = element["data"].get("within")
                if within is None:
                    continue
                framed.add(nodes[within]["classes"].split()[-1])
                inner, outer = boxes[key], boxes[within]
                assert (outer[0] < inner[0] and outer[1] < inner[1] and inner[2] < outer[2]
                        and inner[3] < outer[3]), f"{name}, pass {step + 1}: {key} outside {within}"
                assert nodes[within]["data"]["z"] < EDGE_Z, key
    assert framed == {"group", "opened"}   # members of open groups and of opened bodies


def overlapping_pairs(elements) -> list[tuple[str, str]]:
    boxes, nodes = outer_boxes(elements)

    def ancestors(key: str) -> set[str]:
        found, parent = set(), nodes[key]["data"].get("within")
        while parent:
            found.add(parent)
            parent = nodes[parent]["data"].get("within")
        return found

    lineage = {key: ancestors(key) for key in boxes}
    found, active = [], []
    for key, b in sorted(boxes.items(), key=lambda kv: kv[1][0]):   # sweep along x
        active = [(k, c) for k, c in active if c[2] > b[0] + 0.5]
        found += [(k, key) for k, c in active if k not in lineage[key] and key not in lineage[k]
                  and c[1] < b[3] - 0.5 and b[1] < c[3] - 0.5]
        active.append((key, b))
    return found


def upward_edges(elements) -> list[tuple[str, str]]:
    boxes, _ = outer_boxes(elements)

    def centre_y(key: str) -> float:
        return (boxes[key][1] + boxes[key][3]) / 2

    return [(e["data"]["source"], e["data"]["target"]) for e in elements
            if "source" in e["data"] and centre_y(e["data"]["source"]) >= centre_y(e["data"]["target"])]


# ---- tests ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("model", MODELS)
def test_nothing_overlaps_and_edges_point_down_in_any_grouping_state(services, model):
    ws = workspace(services, model)
    for name, ui in grouping_states(ws).items():
        for step, pane in every_pane(ws, model, ui):
            assert not overlapping_pairs(pane), f"{name}, pass {step + 1}: items overlap"
            assert not upward_edges(pane), f"{name}, pass {step + 1}: an edge points up"


def test_opening_any_one_group_pushes_the_others_aside(services):
    ws = workspace(services, "bert_tiny_op13")
    shown = frozenset()
    for group in ws.scopes.roots + [g for g in ws.scopes.groups if g not in ws.scopes.roots]:
        shown |= {group}
        for _, pane in every_pane(ws, "bert_tiny_op13", UiState(expanded=shown)):
            assert not overlapping_pairs(pane) and not upward_edges(pane), group


@pytest.mark.parametrize("model", ("bert_tiny_op13", "gpt2_tiny"))
def test_places_stay_put_across_passes_and_panes(services, model):
    ws = workspace(services, model)
    for name, ui in grouping_states(ws).items():
        seen: dict[tuple, tuple] = {}
        for step, pane in every_pane(ws, model, ui):
            for element in pane:
                if "position" in element and element["data"]["kind"] != "badge":
                    data = element["data"]
                    place = (element["position"]["x"], element["position"]["y"],
                             data.get("w"), data.get("h"))
                    drawn_as = (data["id"], data.get("within"))   # a body node: in its op
                    assert seen.setdefault(drawn_as, place) == place, \
                        f"{name}: {data['id']} moved (pass {step + 1})"


def test_collapsed_groups_count_the_changes_inside_them(services):
    ws = workspace(services, "bert_tiny_op13")
    step = next(s.index for s in ws.result.snapshots if s.pass_name == "fuse_attention")
    snapshot = ws.result.snapshots[step]
    payload = build_panes(ws, ViewState(model="bert_tiny_op13", step=step),
                          UiState(expanded=frozenset()))
    for pane, graph, marked in ((payload.before, ws.graphs_of_step(step)[0],
                                 {"removed": snapshot.diff.removed, "modified": snapshot.diff.modified}),
                                (payload.after, snapshot.graph,
                                 {"added": snapshot.diff.added, "modified": snapshot.diff.modified})):
        badges = {e["data"]["id"]: e["data"]["label"] for e in pane if e["data"].get("kind") == "badge"}
        expected = {}
        for mark, node_ids in marked.items():
            for node_id in node_ids:
                if graph.node_by_id(node_id) is not None:
                    group, _ = ws.scopes.representative(node_id, set())
                    expected[f"{group}#{mark}"] = expected.get(f"{group}#{mark}", 0) + 1
        assert badges == {key: f"{count} {key.rsplit('#', 1)[1]}" for key, count in expected.items()}
        assert badges, "the attention fusion changed nothing that a badge shows"
    labels = [e["data"]["label"] for e in payload.after if "collapsed" in e.get("classes", "")]
    assert any(" nodes · Attention" in label for label in labels), "the new op is not named first"


def test_edges_into_collapsed_groups_are_merged_with_their_count(services):
    ws = workspace(services, "bert_tiny_op13")
    graph = ws.result.initial
    payload = build_panes(ws, ViewState(model="bert_tiny_op13"), UiState(expanded=frozenset()))

    def drawn(key) -> str:
        group = ws.scopes.representative(key, set())[0] if isinstance(key, int) else None
        return group or element_id(key)

    expected: dict[tuple[str, str], int] = {}
    for a, b in drawn_edges(graph):
        pair = (drawn(a), drawn(b))
        if pair[0] != pair[1]:
            expected[pair] = expected.get(pair, 0) + 1
    edges = {(e["data"]["source"], e["data"]["target"]): e["data"].get("count", 1)
             for e in payload.before if "source" in e["data"]}
    assert edges == expected
    assert max(edges.values()) > 1


def test_an_opened_fused_body_is_laid_out_compactly_where_the_fused_op_is(services):
    ws = workspace(services, "bert_tiny_op13")
    step = next(s.index for s in ws.result.snapshots if s.pass_name == "fuse_attention")
    graph = ws.result.snapshots[step].graph
    fused = next(i for i in ws.result.snapshots[step].diff.added if graph.node_by_id(i).body)
    body = graph.node_by_id(fused).body
    expanded = frozenset(ws.scopes.groups)
    closed = ws.layout.placement(expanded, frozenset())
    opened = ws.layout.placement(expanded, frozenset({fused}))
    drawn = opened.bodies[fused]
    own = layered_layout([n.id for n in body.nodes],
                         [(a, b) for a, b in drawn_edges(body) if isinstance(a, int) and isinstance(b, int)])

    def extent(points) -> tuple[float, float]:
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        return max(xs) - min(xs), max(ys) - min(ys)

    assert extent(drawn.values()) == pytest.approx(extent(own.values()))
    box = opened.box(fused)
    assert all(abs(x - box.x) <= box.w / 2 and abs(y - box.y) <= box.h / 2 for x, y in drawn.values())
    assert abs(box.x - closed.box(fused).x) < box.w / 2, "the body opened away from its op"


def test_closing_the_group_that_holds_the_selection_keeps_it_closed(services):
    ws = workspace(services, "bert_tiny_op13")
    every_group = frozenset(ws.scopes.groups)
    node = next(n for n in ws.result.initial.nodes if ws.scopes.group_of.get(n.id))
    inner = ws.scopes.group_of[node.id]
    state = ViewState(model="bert_tiny_op13", node=node.id)
    ui = UiState(expanded=frozenset())
    assert inner in drawn_groups(ws, state, ui), "the selection's group did not open"
    shown = drawn_groups(ws, state, ui) - {inner}          # the user closes it
    ui = regrouped(ws, state, shown, set())
    payload = build_panes(ws, state, ui)
    collapsed = {e["data"]["id"] for e in payload.before if "collapsed" in e.get("classes", "")}
    assert inner in collapsed, "the group reopened by itself"
    assert any(e["data"]["id"] == inner and "hl-selected" in e["classes"]
               for e in payload.before), "the selection did not move to the group"
    other = next(n for n in ws.result.initial.nodes
                 if ws.scopes.group_of.get(n.id) not in (None, inner))
    moved = state.with_changes(node=other.id)
    assert ws.scopes.group_of[other.id] in drawn_groups(ws, moved, ui) & every_group


def stacked_layers_graph(layers: int, ops: int) -> Graph:
    """A chain of ``layers`` name scopes of ``ops`` Relus each, the shape of a transformer."""
    graph = Graph("stack")
    value = graph.add_input(Value("x", 1, (4,)))
    for layer in range(layers):
        for op in range(ops):
            value = graph.add_node("Relu", [value], name=f"/model/layer.{layer}/relu{op}").outputs[0]
    graph.set_outputs([value])
    return graph


def test_a_big_model_opens_whole_levels_and_shows_its_layers_collapsed():
    layout = pipeline_layout(PassManager(["dce"]).run(stacked_layers_graph(12, 40)))
    assert layout.default_expanded(250) == {"g:/model"}
    small = pipeline_layout(PassManager(["dce"]).run(stacked_layers_graph(3, 10)))
    assert small.default_expanded(250) == set(small.scopes.groups)


def test_unscoped_nodes_join_the_scope_of_their_sources_or_consumers():
    graph = Graph("loose")
    x = graph.add_input(Value("x", 1, (4,)))
    constant = graph.add_node("Constant", [], name="Constant_7")
    a = graph.add_node("Add", [x, constant.outputs[0]], name="/enc/layer.0/attn/Add")
    b = graph.add_node("Relu", [a.outputs[0]], name="/enc/layer.0/ffn/Relu")
    out = graph.add_node("Relu", [b.outputs[0]], name="Relu_9")
    graph.set_outputs(list(out.outputs))
    scopes = pipeline_scopes([graph])
    assert scopes[constant.id] == "/enc/layer.0/attn"
    assert scopes[out.id] == ""      # it computes the model's output


def test_a_collapsed_summary_leaves_out_whole_op_names_that_do_not_fit():
    graph = Graph("mixed")
    value = graph.add_input(Value("x", 1, (4,)))
    for op in ("Sigmoid", "MatMulInteger", "MatMulInteger", "Sigmoid", "MatMulInteger"):
        value = graph.add_node(op, [value]).outputs[0]
    members = list(graph.nodes)
    assert op_summary(members, {}) == "MatMulInteger 3 · Sigmoid 2"
    assert op_summary(members, {}, chars=20) == "MatMulInteger 3"   # not "…· Sigmoi…"
    assert op_summary(members, {}, chars=5) == "MatMulInteger 3"    # the first op always stays
    changed = {members[0].id: "modified"}
    assert op_summary(members, changed, chars=20) == "Sigmoid 2"    # what the pass changed first


def test_a_long_op_name_is_read_whole_with_the_count_beside_the_group_name():
    graph = Graph("one")
    value = graph.add_input(Value("x", 1, (4,)))
    fused = graph.add_node("SkipLayerNormalization", [value])
    group = Group("g:/layer.0/norm", "norm", None, node_ids=[fused.id], size=1)
    width, height = collapsed_size(group)
    (node,) = collapsed_group_elements(group, Box(0, 0, width, height), [fused], {})
    assert node["data"]["label"].split("\n") == ["norm · 1 node",
                                                 "SkipLayerNormalization"]
    group.label = "encoder/layer.0/attention/output"   # no room beside it: the count stays below
    (node,) = collapsed_group_elements(group, Box(0, 0, *collapsed_size(group)), [fused], {})
    assert node["data"]["label"].split("\n")[0] == group.label
