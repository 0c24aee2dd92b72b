"""Properties on random graphs: a pattern made from a subgraph matches it, and one mutation of
that subgraph makes it fail with an explanation that points at the mutated node."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from onnx import helper

from compiler_core.ir import Graph, Node
from compiler_core.patterns import Failure, explain_at, match_at, pattern_from_nodes
from compiler_core.patterns.testing import build_graph

UNARY = ["Relu", "Sigmoid", "Tanh", "Neg", "Exp", "Abs"]
WITH_ALPHA = ["LeakyRelu", "Elu"]
BINARY = ["Add", "Mul", "Sub", "Div", "Max"]
ALPHAS = [0.1, 0.2, 0.3]
CONSTANTS = [0.5, 1.5, 2.0, 3.0]
SHAPE = (2, 3)


@st.composite
def random_graphs(draw) -> Graph:
    """A random DAG of element-wise ops over 1-3 inputs, with Constant nodes as operands."""
    values = [f"in{i}" for i in range(draw(st.integers(1, 3)))]
    inputs = list(values)
    nodes = []
    for k in range(draw(st.integers(1, 9))):
        kind = draw(st.sampled_from(["unary", "alpha", "binary", "constant"]))
        out, name = f"v{k}", f"n{k}"
        if kind == "unary":
            nodes.append(helper.make_node(draw(st.sampled_from(UNARY)),
                                          [draw(st.sampled_from(values))], [out], name=name))
        elif kind == "alpha":
            nodes.append(helper.make_node(draw(st.sampled_from(WITH_ALPHA)),
                                          [draw(st.sampled_from(values))], [out], name=name,
                                          alpha=draw(st.sampled_from(ALPHAS))))
        else:
            left = draw(st.sampled_from(values))
            if kind == "constant":
                right = f"c{k}"
                data = helper.make_tensor(right, 1, [], [draw(st.sampled_from(CONSTANTS))])
                nodes.append(helper.make_node("Constant", [], [right], name=f"const{k}",
                                              value=data))
            else:
                right = draw(st.sampled_from(values))
            operands = [left, right] if draw(st.booleans()) else [right, left]
            nodes.append(helper.make_node(draw(st.sampled_from(BINARY)), operands, [out],
                                          name=name))
        values.append(out)
    read = {i for n in nodes for i in n.input}
    outputs = {v: SHAPE for v in values if v not in read and v not in inputs}
    return build_graph(nodes, {i: SHAPE for i in inputs}, outputs)


def cone(root: Node) -> list[Node]:
    """The root and every non-Constant node it depends on."""
    seen, stack = {root.id: root}, [root]
    while stack:
        for value in stack.pop().inputs:
            producer = value.producer if value is not None else None
            if producer is not None and producer.op_type != "Constant" and producer.id not in seen:
                seen[producer.id] = producer
                stack.append(producer)
    return list(seen.values())


def pick_site(graph: Graph, data) -> tuple[Node, list[Node]]:
    ops = [n for n in graph.nodes if n.op_type != "Constant"]
    root = data.draw(st.sampled_from(ops))
    return root, cone(root)


SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


@SETTINGS
@given(random_graphs(), st.data())
def test_a_pattern_made_from_a_subgraph_matches_it(graph, data):
    root, nodes = pick_site(graph, data)
    found = match_at(graph, pattern_from_nodes(nodes, root), root)
    assert found is not None
    assert {n.id for n in found.nodes} == {n.id for n in nodes}


@SETTINGS
@given(random_graphs(), st.data())
def test_one_mutation_fails_and_names_the_mutated_node(graph, data):
    root, nodes = pick_site(graph, data)
    pattern = pattern_from_nodes(nodes, root)
    kind = data.draw(st.sampled_from(["op type", "attribute", "constant", "consumer"]))
    if kind == "op type":
        target = data.draw(st.sampled_from(nodes))
        family = BINARY if len(target.inputs) == 2 else UNARY + WITH_ALPHA
        target.op_type = data.draw(st.sampled_from([o for o in family if o != target.op_type]))
    elif kind == "attribute":
        candidates = [n for n in nodes if "alpha" in n.attrs]
        assume(candidates)
        target = data.draw(st.sampled_from(candidates))
        new_alpha = data.draw(st.sampled_from([a for a in ALPHAS
                                               if abs(a - target.attrs["alpha"]) > 1e-6]))
        graph.set_node_attr(target, "alpha", new_alpha)
    elif kind == "constant":
        members = {n.id for n in nodes}
        candidates = [n for n in graph.nodes if n.op_type == "Constant"
                      and any(u.id in members for u, _ in n.outputs[0].uses)]
        assume(candidates)
        target = data.draw(st.sampled_from(candidates))
        graph.set_node_attr(target, "value", target.attrs["value"] + np.float32(0.25))
    else:
        members = {n.id for n in nodes}
        candidates = [n for n in nodes if n is not root and not n.outputs[0].is_graph_output
                      and all(u.id in members for u, _ in n.outputs[0].uses)]
        assume(candidates)
        used = data.draw(st.sampled_from(candidates))
        target = graph.add_node("Relu", [used.outputs[0]], name="extra_consumer")

    failure = explain_at(graph, pattern, root)
    assert isinstance(failure, Failure), f"still matches after changing the {kind}"
    if kind == "consumer":
        assert failure.blocking_node is target
        assert "'extra_consumer'" in failure.reason
    else:
        assert failure.failed_node is target, (kind, failure.reason, failure.path_text)
    assert 0 <= failure.score < 1
