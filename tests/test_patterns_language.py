"""The pattern language and the matcher: every construct matches what it should and no more."""

from __future__ import annotations

import math
import time
from unittest import mock

import numpy as np
import pytest
from onnx import helper

from compiler_core.patterns import (Failure, any_of, any_value, const, explain_at, graph_input,
                                    match_all, match_at, op, optional, predicate, variadic)
from compiler_core.patterns.testing import build_graph

node = helper.make_node
f32 = np.float32


def unary_chain():
    """x -> Relu -> Sigmoid -> y, plus a LeakyRelu without its alpha attribute."""
    return build_graph(
        [node("Relu", ["x"], ["r"], name="relu"), node("Sigmoid", ["r"], ["s"], name="sig"),
         node("LeakyRelu", ["s"], ["y"], name="leaky")],
        {"x": (2, 3)}, {"y": (2, 3)})


# ------------------------------------------------------------------------------------ ops
def test_op_matches_op_type_and_inputs_and_binds_nodes_and_values():
    g = unary_chain()
    x = graph_input().bind("x")
    relu = op("Relu", x).bind("relu")
    found = match_at(g, op("Sigmoid", relu).bind("sig"), "sig")
    assert found is not None
    assert found["sig"].name == "sig" and found["relu"].name == "relu"
    assert found["x"].name == "x"  # leaves bind the Value
    assert [n.name for n in found.nodes] == ["sig", "relu"]
    assert match_at(g, op("Sigmoid", op("Tanh", x)), "sig") is None


def test_modifiers_return_new_patterns_so_a_matched_pattern_never_goes_stale():
    g = unary_chain()
    sigmoid = op("Sigmoid", op("Relu", graph_input()))
    assert "r" not in match_at(g, sigmoid, "sig").bindings  # compiled and matched once
    bound = sigmoid.bind("r")
    assert match_at(g, bound, "sig")["r"].name == "sig"    # the new binding takes effect
    assert "r" not in match_at(g, sigmoid, "sig").bindings  # the original is unchanged
    typed = sigmoid.has_dtype("float64")
    assert match_at(g, typed, "sig") is None and match_at(g, sigmoid, "sig") is not None


def test_op_type_alternatives_and_attribute_defaults():
    g = unary_chain()
    assert match_at(g, op(("Elu", "LeakyRelu"), any_value(), alpha=0.01), "leaky")
    failure = explain_at(g, op("LeakyRelu", any_value(), alpha=0.2), "leaky")
    assert isinstance(failure, Failure)
    assert failure.reason == "LeakyRelu: expected alpha = 0.2, found alpha = 0.01"


def test_attribute_predicate_says_what_it_wanted():
    g = build_graph([node("Transpose", ["x"], ["y"], perm=[0, 2, 1], name="t")],
                    {"x": (1, 2, 3)}, {"y": (1, 3, 2)})
    keeps_batch = predicate(lambda perm: perm[0] == 0, "keeping axis 0 first")
    assert match_at(g, op("Transpose", any_value(), perm=keeps_batch), "t")
    moves_batch = predicate(lambda perm: perm[0] != 0, "moving axis 0")
    failure = explain_at(g, op("Transpose", any_value(), perm=moves_batch), "t")
    assert failure.reason == "Transpose: expected perm moving axis 0, found perm = [0, 2, 1]"


def test_element_type_attributes_are_named_not_numbered():
    """Cast's `to` is an ONNX enum: explanations say float32 / float16, never 1 / 10."""
    from onnx import TensorProto

    from compiler_core.patterns import one_of
    g = build_graph([node("Cast", ["x"], ["y"], to=TensorProto.FLOAT, name="c")],
                    {"x": (2,)}, {"y": (2,)})
    half = one_of(TensorProto.FLOAT16, TensorProto.BFLOAT16)
    failure = explain_at(g, op("Cast", any_value(), to=half), "c")
    assert failure.reason == "Cast: expected to one of float16, bfloat16, found to = float32"
    failure = explain_at(g, op("Cast", any_value(), to=TensorProto.FLOAT16), "c")
    assert failure.reason == "Cast: expected to = float16, found to = float32"
    assert "to one of float16, bfloat16" in op("Cast", any_value(), to=half).text(set())


def test_domain_is_part_of_the_op():
    g = build_graph([node("Gelu", ["x"], ["y"], domain="com.microsoft", name="g")],
                    {"x": (2,)}, {"y": (2,)})
    assert match_at(g, op("Gelu", any_value(), domain="com.microsoft"), "g")
    failure = explain_at(g, op("Gelu", any_value()), "g")
    assert failure.reason == "root: expected Gelu, found com.microsoft.Gelu"


def test_extra_inputs_fail_unless_ellipsis():
    g = build_graph([node("Clip", ["x", "lo", "hi"], ["y"], name="clip")], {"x": (2,)},
                    {"y": (2,)}, {"lo": np.array(0, f32), "hi": np.array(6, f32)})
    failure = explain_at(g, op("Clip", any_value()), "clip")
    assert failure.reason == "Clip: expected 1 inputs, found 3 inputs"
    assert match_at(g, op("Clip", any_value(), ...), "clip")


# ------------------------------------------------------------------------------------ leaves
def sqrt2_graph(divisor_node: bool):
    nodes = [node("Div", ["x", "c"], ["y"], name="div")]
    inits = {}
    if divisor_node:
        nodes.insert(0, node("Constant", [], ["c"], value=helper.make_tensor(
            "v", 1, [], [1.41421356]), name="c_node"))
    else:
        inits["c"] = np.array(1.41421356, f32)
    return build_graph(nodes, {"x": (4,)}, {"y": (4,)}, inits)


@pytest.mark.parametrize("divisor_node", [False, True], ids=["initializer", "Constant node"])
def test_constants_match_with_tolerance(divisor_node):
    g = sqrt2_graph(divisor_node)
    assert match_at(g, op("Div", any_value(), const(1.4142)), "div")
    assert match_at(g, op("Div", any_value(), const(1.5, tol=0.1)), "div")
    failure = explain_at(g, op("Div", any_value(), const(1.5)), "div")
    assert failure.reason == ("Div input 1: expected constant ≈ 1.5 (±0.0001), "
                              "found constant 1.41421")
    assert failure.failed_node.name == ("c_node" if divisor_node else "div")


def test_constant_predicates_and_non_constants():
    g = sqrt2_graph(False)
    positive = predicate(lambda a: (a > 0).all(), "> 0")
    assert match_at(g, op("Div", any_value(), const(where=positive)), "div")
    failure = explain_at(g, op("Div", const(), any_value()), "div")
    assert failure.reason == "Div input 0: expected constant, found graph input 'x'"


def test_graph_input_and_wildcard():
    g = unary_chain()
    assert match_at(g, op("Relu", graph_input()), "relu")
    failure = explain_at(g, op("Sigmoid", graph_input()), "sig")
    assert failure.reason == "Sigmoid input 0: expected graph input, found Relu"
    assert match_at(g, op("Sigmoid", any_value()), "sig")


# ------------------------------------------------------------------------------ combinators
def conv_graph(with_bias: bool):
    inputs = ["x", "w", "b"] if with_bias else ["x", "w"]
    inits = {"w": np.ones((4, 3, 1, 1), f32), "b": np.zeros(4, f32)}
    return build_graph([node("Conv", inputs, ["c"], name="conv"),
                        node("Relu", ["c"], ["y"], name="relu")],
                       {"x": (1, 3, 4, 4)}, {"y": (1, 4, 4, 4)}, inits)


@pytest.mark.parametrize("with_bias", [True, False])
def test_optional_input(with_bias):
    pattern = op("Conv", any_value(), const(), optional(const().bind("bias"))).bind("conv")
    found = match_at(conv_graph(with_bias), pattern, "conv")
    assert found is not None
    assert (found["bias"] is not None) == with_bias


def test_optionally_then_matches_with_and_without_trailing_activation():
    g = conv_graph(True)
    chain = op("Conv", any_value(), const(), ...).optionally_then("Relu")
    assert [m.root.name for m in match_all(g, chain)] == ["relu"]
    lone = build_graph([node("Conv", ["x", "w"], ["y"], name="conv")], {"x": (1, 3, 4, 4)},
                       {"y": (1, 4, 4, 4)}, {"w": np.ones((4, 3, 1, 1), f32)})
    assert [m.root.name for m in match_all(lone, chain)] == ["conv"]


def test_or_keeps_every_branch_failure():
    g = unary_chain()
    pattern = op("Sigmoid", op("Tanh", any_value())) | op("Sigmoid", op("Exp", any_value()))
    failure = explain_at(g, pattern, "sig")
    assert [f.reason for f in failure.leaves()] == [
        "Sigmoid input 0: expected Tanh, found Relu", "Sigmoid input 0: expected Exp, found Relu"]
    assert match_at(g, pattern | op("Sigmoid", op("Relu", any_value())), "sig")
    assert match_at(g, any_of(op("Sigmoid", op("Relu", any_value()))), "sig")


def test_and_and_not():
    g = unary_chain()
    not_input = ~graph_input()
    assert match_at(g, op("Sigmoid", not_input), "sig")
    failure = explain_at(g, op("Relu", ~graph_input()), "relu")
    assert failure.reason == "Relu input 0: expected not graph input, found graph input 'x'"
    both = any_value().has_rank(2) & ~graph_input()
    assert match_at(g, op("Sigmoid", both), "sig")
    assert not match_at(g, op("Relu", both), "relu")


def test_commutative_inputs_match_in_either_order():
    g = build_graph([node("MatMul", ["x", "w"], ["m"], name="mm"),
                     node("Add", ["bias", "m"], ["y"], name="add")],
                    {"x": (2, 3)}, {"y": (2, 4)},
                    {"w": np.ones((3, 4), f32), "bias": np.zeros(4, f32)})
    pattern = op("Add", op("MatMul", any_value(), any_value()), const().bind("b"))
    found = match_at(g, pattern, "add")
    assert found["b"].name == "bias"
    strict = op("Add", op("MatMul", any_value(), any_value()), const(), commutative=False)
    assert match_at(g, strict, "add") is None


def test_variadic_inputs():
    g = build_graph([node("Concat", ["a", "b", "c"], ["y"], axis=0, name="cat")], {},
                    {"y": (6,)}, {n: np.ones(2, f32) for n in "abc"})
    assert match_at(g, op("Concat", variadic(const(), min_count=2).bind("parts")), "cat")[
        "parts"][2].name == "c"
    assert match_at(g, op("Concat", const(), ...), "cat")
    failure = explain_at(g, op("Concat", variadic(const(), min_count=4)), "cat")
    assert failure.expected == "at least 4 inputs"


def split_graph(same_split: bool):
    nodes = [node("Split", ["x"], ["s0", "s1"], axis=0, name="split"),
             node("Split", ["x"], ["t0", "t1"], axis=0, name="split2"),
             node("Add", ["s0", "s1" if same_split else "t1"], ["y"], name="add")]
    return build_graph(nodes, {"x": (4,)}, {"y": (2,), "t0": (2,)})


def test_multi_output_node_is_the_same_node():
    split = op("Split", any_value(), ...).bind("split").allow_external_uses()
    pattern = op("Add", split.output(0), split.output(1), commutative=False)
    assert match_at(split_graph(True), pattern, "add")["split"].name == "split"
    failure = explain_at(split_graph(False), pattern, "add")
    assert failure.expected == "the same Split as before ('split')"
    assert failure.found == "Split 'split2'"


# ------------------------------------------------------------------------- value constraints
def test_dtype_rank_shape_constraints():
    g = unary_chain()
    assert match_at(g, op("Relu", any_value().has_dtype("float32").has_rank(2)), "relu")
    assert match_at(g, op("Relu", any_value().has_shape((None, 3))), "relu")
    failure = explain_at(g, op("Relu", any_value().has_rank(4)), "relu")
    assert failure.reason == "Relu input 0: expected rank 4, found rank 2"
    failure = explain_at(g, op("Relu", any_value().has_dtype("float16")), "relu")
    assert failure.found == "dtype float32"


def test_same_size_as_another_binding():
    def bn_graph(channels):
        inits = {"w": np.ones((4, 3, 1, 1), f32), "s": np.ones(channels, f32)}
        return build_graph([node("Conv", ["x", "w"], ["c"], name="conv"),
                            node("Mul", ["c", "s"], ["y"], name="mul")],
                           {"x": (1, 3, 4, 4)}, {"y": (1, 4, 4, 4)}, inits)
    # the scale comes first in the walk, the weight later: the check waits for both
    pattern = op("Mul", const().same_size_as("weight", axis=0),
                 op("Conv", any_value(), const().bind("weight")), commutative=True)
    assert match_at(bn_graph(4), pattern, "mul")
    failure = explain_at(bn_graph(1), pattern, "mul")
    assert failure.reason == ("Mul input 1: expected as many elements as dimension 0 of 'weight',"
                              " found 1 elements (weight: 4)")


def test_shared_element_means_the_same_node():
    def two_subs(shared: bool):
        nodes = [node("Sub", ["x", "m"], ["d"], name="sub"),
                 node("Sub", ["x", "m"], ["d2"], name="sub2"),
                 node("Mul", ["d", "d" if shared else "d2"], ["y"], name="sq")]
        return build_graph(nodes, {"x": (3,), "m": (3,)}, {"y": (3,), "d2": (3,)})
    sub = op("Sub", any_value(), any_value())
    pattern = op("Mul", sub, sub)
    assert match_at(two_subs(True), pattern, "sq")
    failure = explain_at(two_subs(False), pattern, "sq")
    assert failure.expected == "the same Sub as before ('sub')"


# ---------------------------------------------------------------------- consumer constraints
def test_intermediate_used_outside_the_match_blocks_it_and_is_named():
    g = build_graph([node("Relu", ["x"], ["r"], name="relu"),
                     node("Sigmoid", ["r"], ["y"], name="sig"),
                     node("Tanh", ["r"], ["side"], name="side_tanh")],
                    {"x": (2,)}, {"y": (2,), "side": (2,)})
    pattern = op("Sigmoid", op("Relu", any_value()))
    failure = explain_at(g, pattern, "sig")
    assert failure.reason == "Relu output has another consumer (Tanh 'side_tanh')"
    assert failure.blocking_node.name == "side_tanh" and failure.failed_node.name == "relu"
    assert match_at(g, op("Sigmoid", op("Relu", any_value()).allow_external_uses()), "sig")


def test_intermediate_graph_output_blocks_the_match():
    g = build_graph([node("Relu", ["x"], ["r"], name="relu"),
                     node("Sigmoid", ["r"], ["y"], name="sig")],
                    {"x": (2,)}, {"y": (2,), "r": (2,)})
    failure = explain_at(g, op("Sigmoid", op("Relu", any_value())), "sig")
    assert failure.reason == "Relu output is a graph output"


def test_match_all_is_non_overlapping_and_in_execution_order():
    nodes = [node("Relu", ["x"], ["a"], name="r1"), node("Relu", ["a"], ["b"], name="r2"),
             node("Relu", ["b"], ["c"], name="r3"), node("Relu", ["c"], ["y"], name="r4")]
    g = build_graph(nodes, {"x": (2,)}, {"y": (2,)})
    pairs = match_all(g, op("Relu", op("Relu", any_value())))
    assert [[n.name for n in m.nodes] for m in pairs] == [["r2", "r1"], ["r4", "r3"]]
    three = build_graph(nodes[:3] + [node("Identity", ["c"], ["y"], name="id")], {"x": (2,)},
                        {"y": (2,)})
    # downstream roots first: the pair that reaches furthest down wins
    assert [m.root.name for m in match_all(three, op("Relu", op("Relu", any_value())))] == ["r3"]


# ------------------------------------------------------------------------------ description
def test_patterns_describe_themselves():
    x = any_value().bind("x")
    pattern = op("Add", op("Mul", x, const(0.5)), x)
    assert pattern.describe() == "Matches Add(Mul(x, constant ≈ 0.5), x)."
    named = op("Relu", any_value()).described_as("A lone Relu.")
    assert named.describe() == "A lone Relu."


# ----------------------------------------------------------------------------- performance
def test_explanations_are_not_built_when_matching():
    g = unary_chain()
    built = AssertionError("built an explanation in fast mode")
    with mock.patch("compiler_core.patterns.state.Failure", side_effect=built), \
            mock.patch("compiler_core.patterns.language.describe_value", side_effect=built), \
            mock.patch("compiler_core.patterns.language.input_subject", side_effect=built):
        assert match_all(g, op("Sigmoid", op("Tanh", any_value()))) == []
        assert match_at(g, op("LeakyRelu", any_value(), alpha=3.0), "leaky") is None


def test_commutative_retries_do_not_blow_up():
    """Each Add reads one value twice; the pattern wants a constant at every level.  Without
    remembering failed (pattern, value) pairs the two operand orders would cost 2**depth."""
    depth = 40
    nodes, previous = [], "x"
    for level in range(depth):
        nodes.append(node("Add", [previous, previous], [f"v{level}"], name=f"add{level}"))
        previous = f"v{level}"
    g = build_graph(nodes, {"x": (2,)}, {previous: (2,)})
    pattern = graph_input()
    for _ in range(depth):
        pattern = op("Add", pattern, const(1.0))
    start = time.perf_counter()
    assert match_at(g, pattern, f"add{depth - 1}") is None
    failure = explain_at(g, pattern, f"add{depth - 1}")
    assert time.perf_counter() - start < 10.0  # without the memo: 2**40 operand orders
    assert "expected constant ≈ 1" in failure.reason


def test_scores_grow_with_how_much_matched():
    g = sqrt2_graph(False)
    shallow = explain_at(g, op("Div", const(), any_value()), "div")
    deep = explain_at(g, op("Div", graph_input(), const(math.e)), "div")
    assert 0 < shallow.score < deep.score < 1


def test_a_failed_swap_explains_with_the_order_that_differs_least():
    """Add(Sigmoid(x), Relu(Exp(x))) against Add(Relu(x), Relu(Exp(x))): the swapped order
    gets further (Relu matches Relu(Exp)) but fails on both sides; the written order fails only
    at the real difference, the Sigmoid."""
    g = build_graph([node("Sigmoid", ["x"], ["s"], name="sig"),
                     node("Exp", ["x"], ["e"], name="exp"), node("Relu", ["e"], ["r"], name="relu"),
                     node("Add", ["s", "r"], ["y"], name="add")], {"x": (2,)}, {"y": (2,)})
    x = graph_input()
    failure = explain_at(g, op("Add", op("Relu", x), op("Relu", op("Exp", x))), "add")
    assert failure.failed_node.name == "sig"
    assert failure.reason == "Add input 0: expected Relu, found Sigmoid"
