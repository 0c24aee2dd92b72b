"""The passes' patterns (each rule's own) on the teaching samples, the tiny transformers, and
small graphs."""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from onnx import helper

from compiler_core.ir import Graph, load_model
from compiler_core.passes import all_passes, get_pass
from compiler_core.passes.framework.rulebook import pattern_named, registered_patterns
from compiler_core.patterns import explain, match_all
from compiler_core.records import to_json
from compiler_core.patterns.testing import (assert_fails, assert_matches, build_graph,
                                            count_matches)

SAMPLES = Path(__file__).resolve().parents[1] / "sample_models"
node = helper.make_node
f32 = np.float32

PATTERNS = ["conv_bn", "linear_bn", "matmul_add", "matmul_bias_act", "conv_act", "gemm_act",
            "layernorm", "layernorm_unscaled", "gelu", "silu", "swiglu", "rmsnorm",
            "rotary_embedding", "attention", "skip_layernorm", "skip_rmsnorm", "transpose_pair",
            "reshape_chain", "dropout", "identity"]
RULES = [rule for name in all_passes() for rule in getattr(get_pass(name), "rules", ())]


@lru_cache(maxsize=None)
def sample(name: str) -> Graph:
    return load_model(SAMPLES / f"{name}.onnx")


def report(graph: Graph, name: str):
    return explain(graph, [pattern_named(name)])[0]


# ------------------------------------------------------------------------------ by name
def test_the_passes_patterns_are_known_by_name():
    assert set(PATTERNS) <= set(registered_patterns())  # with those of plugins a test loaded
    with pytest.raises(KeyError, match="no pattern named 'conv_relu'"):
        pattern_named("conv_relu")


@pytest.mark.parametrize("name", PATTERNS)
def test_every_pattern_describes_itself(name):
    pattern = pattern_named(name)
    assert pattern.title == name
    assert pattern.describe().endswith(".") and len(pattern.describe()) > 20


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_every_rule_documents_its_pattern_and_bindings(rule):
    doc = rule.pattern_doc()
    assert "Why" in doc and "Bindings" in doc


# ------------------------------------------------------------------------ teaching samples
def test_teach_conv_bn_folds_one_pair_and_names_the_blocking_consumer():
    rep = report(sample("teach_conv_bn"), "conv_bn")
    assert [to_json(m.record())["bindings"] | {"root": m.root.name} for m in rep.matches] == [{
        "bn": "bn_good", "conv": "conv_good", "scale": "bn_good_scale", "b": "bn_good_bias",
        "mean": "bn_good_mean", "var": "bn_good_var", "x": "image", "weight": "conv_good_w",
        "bias": "conv_good_b", "root": "bn_good"}]
    [miss] = rep.near_misses
    data = to_json(miss.record())
    assert data["site"] == "bn_shared"
    assert data["reason"] == "Conv output has another consumer (Relu 'relu_side')"
    assert data["blocking_node"] == "relu_side" and data["failed_node"] == "conv_shared"
    assert data["path"] == "BatchNormalization ← input 0: Conv"
    assert set(data["matched_nodes"]) == {"bn_shared", "conv_shared"}
    assert rep.reasons == {"Conv output has another consumer (Relu 'relu_side')": 1}


def test_teach_layernorm_reports_the_wrong_axis():
    rep = report(sample("teach_layernorm"), "layernorm")
    [good] = rep.matches
    assert good.root.name == "ln_good_shift"
    assert good["epsilon"] == pytest.approx(1e-5) and good["axis"] == -1
    assert {n.name for n in good.nodes} == {f"ln_good_{s}" for s in (
        "mean", "sub", "pow", "var", "add_eps", "sqrt", "div", "scale", "shift")}
    [miss] = rep.near_misses
    assert miss.site.name == "ln_wrongaxis_shift"
    assert miss.failure.failed_node.name == "ln_wrongaxis_mean"
    assert miss.reason == ("ReduceMean: expected mean over the last axis (axes [-1], keepdims 1),"
                           " found axes [1], keepdims 1 (rank 3)")
    assert miss.failure.path_text == ("Add ← input 0: Mul ← input 0: Div ← input 0: Sub"
                                      " ← input 1: ReduceMean")
    assert miss.score > 0.8  # everything but the axis matched


def test_teach_gelu_reports_the_wrong_constant():
    rep = report(sample("teach_gelu"), "gelu")
    [good] = rep.matches
    assert good.root.name == "gelu_good_half_mul"
    assert good["form"] == "erf" and good["input"].name == "x" and good["tanh"] is None
    [miss] = rep.near_misses
    assert miss.site.name == "gelu_wrongconst_half_mul"
    assert miss.reason == "Div input 1: expected constant ≈ 1.41421 (±0.0001), found constant 1.5"
    assert miss.failure.failed_node.name == "gelu_wrongconst_div"
    data = to_json(miss.record())
    assert data["path"] == ("Mul ← input 0: Mul ← input 1: Add ← input 0: Erf ← input 0: Div"
                            " ← input 1: constant ≈ 1.41421")
    # the three groupings of the product are an OR: every branch keeps its own failure
    assert len(data["alternatives"]) >= 3
    assert data["alternatives"][0]["reason"] == data["reason"]
    assert {"path", "part", "expected", "found", "reason"} == set(data["alternatives"][1])


def test_teach_matmul_bias_reports_the_non_constant_bias():
    rep = report(sample("teach_matmul_bias"), "matmul_add")
    [good] = rep.matches
    assert to_json(good.record()) == {"nodes": ["add_bias_good", "matmul_good"], "root": "add_bias_good",
                              "bindings": {"add": "add_bias_good", "matmul": "matmul_good",
                                           "x": "x", "weight": "matmul_good_w",
                                           "bias": "add_bias_good_b"}}
    [miss] = rep.near_misses
    assert miss.site.name == "add_inputbias"
    assert miss.reason == "Add input 1: expected constant, found graph input 'bias'"


# ------------------------------------------------------------------- tiny transformers
def decomposed_layernorm_sqrts(graph: Graph) -> set[str]:
    """Sqrt(Add(ReduceMean(...), c)): one per decomposed layer norm, found by hand."""
    found = set()
    for n in graph.nodes:
        add = n.inputs[0].producer if n.op_type == "Sqrt" else None
        if add is not None and add.op_type == "Add" and any(
                v.producer is not None and v.producer.op_type == "ReduceMean" for v in add.inputs):
            found.add(n.name)
    return found


def decomposed_gelu_cores(graph: Graph) -> set[str]:
    """Erf nodes, and Tanh nodes whose argument is scaled by √(2/π)."""
    found = set()
    for n in graph.nodes:
        if n.op_type == "Erf":
            found.add(n.name)
        elif n.op_type == "Tanh" and n.inputs[0].producer is not None:
            constants = [v.constant_value() for v in n.inputs[0].producer.inputs]
            if any(c is not None and c.size == 1 and abs(float(c.reshape(-1)[0])
                   - math.sqrt(2 / math.pi)) < 1e-4 for c in constants):
                found.add(n.name)
    return found


@pytest.mark.parametrize("name", ["bert_tiny_op13", "gpt2_tiny", "bert_tiny_dynamo",
                                  "bert_tiny_op20"])
def test_every_decomposed_layernorm_and_gelu_matches(name):
    graph = sample(name)
    sqrts = decomposed_layernorm_sqrts(graph)
    layernorms = match_all(graph, pattern_named("layernorm"))
    assert {n.name for m in layernorms for n in m.nodes if n.op_type == "Sqrt"} == sqrts
    cores = decomposed_gelu_cores(graph)
    gelus = match_all(graph, pattern_named("gelu"))
    assert {(m["erf"] or m["tanh"]).name for m in gelus} == cores
    expected = {"bert_tiny_op13": (5, 2), "gpt2_tiny": (5, 2)}.get(name, (0, 0))
    assert (len(layernorms), len(gelus)) == expected  # 2 layers x 2 + final/embedding LN
    if name == "gpt2_tiny":
        assert {m["form"] for m in gelus} == {"tanh"}
    if name == "bert_tiny_op13":
        assert {m["form"] for m in gelus} == {"erf"}


@pytest.mark.parametrize("name", ["bert_tiny_dynamo", "bert_tiny_op20", "bert_tiny_op13"])
def test_skip_layernorm_on_bert(name):
    graph = sample(name)
    matches = match_all(graph, pattern_named("skip_layernorm"))
    # BERT is post-LN: every layer norm (embeddings + 2 per layer) reads a residual Add
    assert len(matches) == 5
    forms = {m["form"] for m in matches}
    assert forms == ({"decomposed"} if name == "bert_tiny_op13" else {"op"})
    for m in matches:
        assert m["skip_add"].op_type == "Add" and m["epsilon"] == pytest.approx(1e-12)


def test_gpt2_pre_ln_residuals_match_with_the_sum_read_on():
    graph = sample("gpt2_tiny")
    matches = match_all(graph, pattern_named("skip_layernorm"))
    assert len(matches) == 5
    read_on = [m for m in matches
               if any(u.op_type == "Add" and u not in m.nodes
                      for u in m["skip_add"].outputs[0].users())]
    assert len(read_on) == 4  # every residual sum but the last flows on to the next block


def test_cnn_and_mlp_samples():
    assert count_matches(sample("cnn_bn"), pattern_named("conv_bn")) == 3
    assert count_matches(sample("cnn_bn"), pattern_named("identity")) == 2
    assert count_matches(sample("mlp_dropout"), pattern_named("dropout")) == 2
    assert count_matches(sample("mlp_dropout"), pattern_named("gemm_act")) == 2


# ------------------------------------------------------------------------- small graphs
INITS = {"w": np.ones((3, 4), f32), "b": np.zeros(4, f32), "scale": np.ones(4, f32),
         "beta": np.zeros(4, f32), "mean": np.zeros(4, f32), "var": np.ones(4, f32)}
BN = node("BatchNormalization", ["h", "scale", "beta", "mean", "var"], ["y"], name="bn")


@pytest.mark.parametrize("linear,expected", [
    ([node("MatMul", ["x", "w"], ["h"], name="mm")], {"linear": "mm", "add": None, "bias": None}),
    ([node("MatMul", ["x", "w"], ["m"], name="mm"), node("Add", ["m", "b"], ["h"], name="add")],
     {"linear": "mm", "add": "add", "bias": "b"}),
    ([node("Gemm", ["x", "w", "b"], ["h"], name="gemm")],
     {"linear": "gemm", "add": None, "bias": "b"}),
    ([node("Gemm", ["x", "w"], ["h"], name="gemm")], {"linear": "gemm", "bias": None}),
], ids=["matmul", "matmul+add", "gemm+bias", "gemm"])
def test_linear_bn_forms(linear, expected):
    g = build_graph(linear + [BN], {"x": (2, 3)}, {"y": (2, 4)}, INITS)
    assert_matches(g, pattern_named("linear_bn"), "bn", bn="bn", weight="w", **expected)


def test_linear_bn_needs_a_constant_weight():
    g = build_graph([node("MatMul", ["x", "wt"], ["h"], name="mm"), BN], {"x": (2, 3),
                    "wt": (3, 4)}, {"y": (2, 4)}, INITS)
    failure = assert_fails(g, pattern_named("linear_bn"), "bn", failed_node="mm")
    assert {f.reason for f in failure.leaves()} >= {
        "MatMul input 1: expected constant, found graph input 'wt'"}


CONV_INITS = {"w": np.ones((4, 3, 1, 1), f32), "lo": np.array(0, f32), "hi": np.array(6, f32)}


@pytest.mark.parametrize("act", [node("Relu", ["c"], ["y"], name="act"),
                                 node("LeakyRelu", ["c"], ["y"], alpha=0.1, name="act"),
                                 node("Clip", ["c", "lo", "hi"], ["y"], name="act")],
                         ids=["relu", "leaky", "clip"])
def test_conv_act(act):
    g = build_graph([node("Conv", ["x", "w"], ["c"], name="conv"), act], {"x": (1, 3, 4, 4)},
                    {"y": (1, 4, 4, 4)}, CONV_INITS)
    assert_matches(g, pattern_named("conv_act"), "act", conv="conv", act="act", weight="w",
                   bias=None)


def test_conv_act_clip_bounds_must_be_constant():
    g = build_graph([node("Conv", ["x", "w"], ["c"], name="conv"),
                     node("Clip", ["c", "lo", "top"], ["y"], name="act")],
                    {"x": (1, 3, 4, 4), "top": ()}, {"y": (1, 4, 4, 4)}, CONV_INITS)
    failure = assert_fails(g, pattern_named("conv_act"), "act")
    assert "Clip input 2: expected constant, found graph input 'top'" in {
        f.reason for f in failure.leaves()}


def test_gemm_act():
    g = build_graph([node("Gemm", ["x", "w", "b"], ["h"], transB=0, name="gemm"),
                     node("Sigmoid", ["h"], ["y"], name="sig")], {"x": (2, 3)}, {"y": (2, 4)},
                    INITS)
    assert_matches(g, pattern_named("gemm_act"), "sig", gemm="gemm", act="sig", a="x", b="w", c="b")


def layernorm_nodes(prefix: str, x: str, axes_as_input: bool, shared_sub: bool = True):
    def mean(name, source):
        if axes_as_input:
            return node("ReduceMean", [source, "axes"], [f"{name}_out"], name=f"{prefix}{name}")
        return node("ReduceMean", [source], [f"{name}_out"], axes=[-1], name=f"{prefix}{name}")
    sub2 = [] if shared_sub else [node("Sub", [x, "mean_out"], ["d2"], name=f"{prefix}sub2")]
    return [
        mean("mean", x), node("Sub", [x, "mean_out"], ["d"], name=f"{prefix}sub"), *sub2,
        node("Pow", ["d", "two"], ["sq"], name=f"{prefix}pow"), mean("var", "sq"),
        node("Add", ["var_out", "eps"], ["ve"], name=f"{prefix}add_eps"),
        node("Sqrt", ["ve"], ["std"], name=f"{prefix}sqrt"),
        node("Div", ["d" if shared_sub else "d2", "std"], ["n"], name=f"{prefix}div"),
        node("Mul", ["gamma", "n"], ["s"], name=f"{prefix}mul"),
        node("Add", ["beta", "s"], ["y"], name=f"{prefix}add")]


LN_INITS = {"two": np.array(2, f32), "eps": np.array(1e-6, f32), "gamma": np.ones(8, f32),
            "beta": np.zeros(8, f32), "axes": np.array([-1], np.int64)}


@pytest.mark.parametrize("opset,axes_as_input", [(13, False), (18, True)])
def test_layernorm_axes_attribute_and_axes_input(opset, axes_as_input):
    g = build_graph(layernorm_nodes("", "x", axes_as_input), {"x": (2, 5, 8)}, {"y": (2, 5, 8)},
                    LN_INITS, opset=opset)
    found = assert_matches(g, pattern_named("layernorm"), "add", input="x", scale="gamma",
                           shift="beta", sub="sub", div="div", layernorm="add")
    assert found["epsilon"] == pytest.approx(1e-6)


def test_layernorm_needs_the_same_sub_for_pow_and_div():
    g = build_graph(layernorm_nodes("", "x", False, shared_sub=False), {"x": (2, 5, 8)},
                    {"y": (2, 5, 8)}, LN_INITS, opset=13)
    failure = assert_fails(g, pattern_named("layernorm"), "add", failed_node="sub")
    assert failure.expected == "the same Sub as before ('sub2')"


def test_layernorm_scale_must_fit_the_last_axis():
    inits = dict(LN_INITS, gamma=np.ones(5, f32))
    g = build_graph(layernorm_nodes("", "x", False), {"x": (2, 5, 8)}, {"y": (2, 5, 8)}, inits,
                    opset=13)
    assert_fails(g, pattern_named("layernorm"), "add",
                 reason="expected as many elements as dimension -1 of 'input', found 5 elements "
                        "(input: 8)")


def test_skip_layernorm_op_form():
    g = build_graph([node("Add", ["x", "r"], ["h"], name="skip"),
                     node("LayerNormalization", ["h", "gamma", "beta"], ["y"], epsilon=1e-3,
                          name="ln")], {"x": (2, 8), "r": (2, 8)}, {"y": (2, 8)}, LN_INITS)
    found = assert_matches(g, pattern_named("skip_layernorm"), "ln", skip_add="skip",
                           input="x", skip="r", scale="gamma", shift="beta", layernorm="ln",
                           form="op")
    assert found["epsilon"] == pytest.approx(1e-3)


@pytest.mark.parametrize("bias_size, absorbed", [(8, True), (1, False)])
def test_skip_layernorm_absorbs_a_bias_vector_over_the_last_axis(bias_size, absorbed):
    """The residual's other operand (either side of the Add) may be x + bias; a bias that is
    not a vector over the normalized axis stays outside, and the sum is then the input."""
    inits = dict(LN_INITS, bias=np.arange(bias_size, dtype=f32))
    g = build_graph([node("Add", ["bias", "x"], ["proj"], name="bias_add"),
                     node("Add", ["r", "proj"], ["h"], name="skip"),
                     node("LayerNormalization", ["h", "gamma", "beta"], ["y"], name="ln")],
                    {"x": (2, 3, 8), "r": (2, 3, 8)}, {"y": (2, 3, 8)}, inits)
    if absorbed:
        assert_matches(g, pattern_named("skip_layernorm"), "ln", skip_add="skip",
                       bias_add="bias_add", input="x", bias="bias", skip="r")
    else:
        found = assert_matches(g, pattern_named("skip_layernorm"), "ln", skip_add="skip")
        assert {found["input"].name, found["skip"].name} == {"proj", "r"}
        assert found.bindings.get("bias") is None


SQRT2, SQRT_2_PI = math.sqrt(2), math.sqrt(2 / math.pi)
GELU_INITS = {"sqrt2": np.array(SQRT2, f32), "inv_sqrt2": np.array(1 / SQRT2, f32),
              "one": np.array(1, f32), "half": np.array(0.5, f32),
              "c1": np.array(SQRT_2_PI, f32), "c2": np.array(0.044715, f32),
              "three": np.array(3, f32)}


def gelu_nodes(form: str, grouping: str, swapped: bool) -> list:
    """x → GELU → y in one of the forms exporters write (see the gelu pattern)."""
    if form.startswith("erf"):
        core = [node("Div", ["x", "sqrt2"], ["arg"]) if form == "erf_div"
                else node("Mul", ["inv_sqrt2", "x"] if swapped else ["x", "inv_sqrt2"], ["arg"]),
                node("Erf", ["arg"], ["core"], name="core")]
    else:
        cube = ([node("Pow", ["x", "three"], ["cube"])] if form == "tanh_pow" else
                [node("Mul", ["x", "x"], ["sq"]), node("Mul", ["sq", "x"], ["cube"])])
        core = cube + [node("Mul", ["c2", "cube"], ["k"]), node("Add", ["x", "k"], ["s"]),
                       node("Mul", ["c1", "s"], ["t_arg"]),
                       node("Tanh", ["t_arg"], ["core"], name="core")]
    plus = [node("Add", ["one", "core"] if swapped else ["core", "one"], ["p"])]
    first, second = {"x(1+)·½": (["x", "p"], ["m", "half"]),
                     "x·(½(1+))": (["half", "p"], ["x", "m"]),
                     "(x½)(1+)": (["x", "half"], ["m", "p"])}[grouping]
    if swapped:
        first, second = first[::-1], second[::-1]
    return core + plus + [node("Mul", first, ["m"]), node("Mul", second, ["y"], name="root")]


@pytest.mark.parametrize("swapped", [False, True], ids=["written", "swapped"])
@pytest.mark.parametrize("grouping", ["x(1+)·½", "x·(½(1+))", "(x½)(1+)"])
@pytest.mark.parametrize("form", ["erf_div", "erf_mul", "tanh_pow", "tanh_cube"])
def test_gelu_forms(form, grouping, swapped):
    g = build_graph(gelu_nodes(form, grouping, swapped), {"x": (2, 8)}, {"y": (2, 8)},
                    GELU_INITS)
    found = assert_matches(g, pattern_named("gelu"), "root", input="x", form=form.split("_")[0])
    assert found[form.split("_")[0]].name == "core"
    assert len(found.nodes) == len(g.nodes)


def test_transpose_pair_only_when_perms_cancel():
    def pair(second_perm):
        return build_graph([node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1], name="t1"),
                            node("Transpose", ["t"], ["y"], perm=second_perm, name="t2")],
                           {"x": (1, 2, 3, 4)}, {"y": None})
    assert_matches(pair([0, 3, 1, 2]), pattern_named("transpose_pair"), "t2", first="t1",
                   second="t2", input="x")
    assert_fails(pair([0, 2, 3, 1]), pattern_named("transpose_pair"), "t2",
                 reason="Transpose: expected perms that cancel, found perm [0, 2, 3, 1] after "
                        "perm [0, 2, 3, 1]")


def test_reshape_chain_dropout_identity():
    g = build_graph([node("Reshape", ["x", "s1"], ["a"], name="r1"),
                     node("Reshape", ["a", "s2"], ["b"], name="r2"),
                     node("Dropout", ["b"], ["c"], name="drop"),
                     node("Identity", ["c"], ["y"], name="id")],
                    {"x": (2, 6)}, {"y": (3, 4)},
                    {"s1": np.array([12], np.int64), "s2": np.array([3, 4], np.int64)})
    assert_matches(g, pattern_named("reshape_chain"), "r2", first="r1", second="r2",
                   shape="s2", input="x")
    assert_matches(g, pattern_named("dropout"), "drop", dropout="drop", input="b")
    assert_matches(g, pattern_named("identity"), "id", identity="id", input="c")
