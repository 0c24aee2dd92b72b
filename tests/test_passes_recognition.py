"""LayerNorm and GELU recognition: samples of every exporter, opset-awareness, near misses."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from compiler_core.ir import FUSED_DOMAIN
from fusion_graphs import GELU_CONSTANTS, LN_CONSTANTS, decomposed_layernorm, gelu_nodes
from llm_graphs import F16, gathered_cos_sin, positions_cos_sin, rotary_nodes
from passes_helpers import F, I64, build, load_sample, ops, run_checked, snapshot, tensor

RECOGNIZE = "O1,recognize_layernorm,recognize_gelu,dce"


def decomposed_layernorm_count(name: str) -> int:
    """One Sqrt per written-out LayerNorm (nothing else in these models takes a square root)."""
    return ops(load_sample(name))["Sqrt"]


def test_bert_op13_layernorms_and_gelus_are_all_recognized():
    expected = decomposed_layernorm_count("bert_tiny_op13")
    assert expected == 5  # embeddings + 2 per layer x 2 layers
    result = run_checked(load_sample("bert_tiny_op13"), RECOGNIZE)
    layernorms = snapshot(result, "recognize_layernorm")
    assert layernorms.rewrites == expected and not layernorms.declined
    assert snapshot(result, "recognize_gelu").rewrites == 2
    final = ops(result.final)
    assert final["LayerNormalization"] == expected and final["Gelu"] == 2
    assert not {"Sqrt", "ReduceMean", "Pow", "Erf"} & set(final)
    # opset 13 has neither op: fused nodes whose bodies are the original ops
    fused = [n for n in result.final.nodes if n.op_type in ("LayerNormalization", "Gelu")]
    assert all(n.domain == FUSED_DOMAIN and n.body is not None for n in fused)
    assert any("opset 13 predates" in note for note in layernorms.notes)


def test_gpt2_tanh_gelus_and_layernorms_are_recognized():
    result = run_checked(load_sample("gpt2_tiny"), RECOGNIZE)
    gelus = [n for n in result.final.nodes if n.op_type == "Gelu"]
    assert len(gelus) == 2 and all(n.attrs["approximate"] == "tanh" for n in gelus)
    assert "Tanh" not in ops(result.final)
    assert snapshot(result, "recognize_layernorm").rewrites == decomposed_layernorm_count(
        "gpt2_tiny")


@pytest.mark.parametrize("name", ["bert_tiny_op20", "bert_tiny_dynamo"])
def test_models_with_the_ops_already_have_nothing_to_recognize(name):
    result = run_checked(load_sample(name), RECOGNIZE)
    assert snapshot(result, "recognize_layernorm").rewrites == 0
    assert snapshot(result, "recognize_gelu").rewrites == 0


def test_teach_layernorm_rewrites_the_good_site_and_explains_the_wrong_axis():
    shot = snapshot(run_checked(load_sample("teach_layernorm"), "recognize_layernorm"),
                    "recognize_layernorm")
    assert shot.rewrites == 1 and shot.graph.node_by_name("ln_good_sqrt") is None
    assert shot.graph.node_by_name("ln_wrongaxis_sqrt") is not None
    (declined,) = shot.declined
    assert declined.site == "ln_wrongaxis_shift"
    assert "expected mean over the last axis" in declined.reason
    assert "found axes [1]" in declined.reason
    names = [r.name for r in shot.pattern_reports]
    assert names == ["layernorm", "layernorm_unscaled"]


def test_teach_gelu_rewrites_the_good_site_and_names_the_wrong_constant():
    shot = snapshot(run_checked(load_sample("teach_gelu"), "recognize_gelu"), "recognize_gelu")
    assert shot.rewrites == 1 and shot.graph.node_by_name("gelu_good_erf") is None
    assert shot.graph.node_by_name("gelu_wrongconst_erf") is not None
    (declined,) = shot.declined
    assert declined.site == "gelu_wrongconst_half_mul"
    assert "expected constant ≈ 1.41421" in declined.reason
    assert "found constant 1.5" in declined.reason
    (report,) = shot.pattern_reports
    assert report.near_misses[0].failed_node.name == "gelu_wrongconst_div"


@pytest.mark.parametrize("opset, domain", [(13, FUSED_DOMAIN), (17, "")])
def test_layernorm_is_a_standard_op_from_opset_17(opset, domain):
    graph = build(decomposed_layernorm("x", "y"), [tensor("x", F, [2, 3, 8])],
                  [tensor("y", F, [2, 3, 8])], LN_CONSTANTS, opset=opset)
    (node,) = run_checked(graph, "recognize_layernorm,dce").final.nodes
    assert (node.op_type, node.domain) == ("LayerNormalization", domain)
    assert node.attrs["axis"] == -1 and node.attrs["epsilon"] == pytest.approx(1e-5)
    assert [v.name for v in node.inputs] == ["x", "gamma", "beta"]


def test_unscaled_layernorm_gets_a_unit_scale():
    graph = build(decomposed_layernorm("x", "y")[:-2] + [
        helper.make_node("Identity", ["normed"], ["y"])], [tensor("x", F, [2, 8])],
        [tensor("y", F, [2, 8])], LN_CONSTANTS, opset=17)
    final = run_checked(graph, "recognize_layernorm,dce").final
    layernorm = final.node_by_name("LayerNormalization")
    assert np.all(layernorm.inputs[1].const == 1) and layernorm.input(2) is None


@pytest.mark.parametrize("tanh", [False, True], ids=["erf", "tanh"])
@pytest.mark.parametrize("opset, domain", [(17, FUSED_DOMAIN), (20, "")])
def test_gelu_is_a_standard_op_from_opset_20(tanh, opset, domain):
    graph = build(gelu_nodes("x", "y", tanh), [tensor("x", F, [4, 16])],
                  [tensor("y", F, [4, 16])], GELU_CONSTANTS, opset=opset)
    (node,) = run_checked(graph, "recognize_gelu,dce").final.nodes
    assert (node.op_type, node.domain) == ("Gelu", domain)
    assert node.attrs["approximate"] == ("tanh" if tanh else "none")
    assert [v.name for v in node.inputs] == ["x"]


# ----------------------------------------------------------------------------- RMSNorm
def _rmsnorm_graph(square: str, divide: str, weighted: bool, opset: int):
    """x / sqrt(mean(x²) + ε) (· w), in the spellings exporters use, as a tiny model."""
    rng = np.random.default_rng(3)
    axes_input = opset >= 18
    nodes = [helper.make_node("Pow", ["x", "two"], ["sq"]) if square == "pow"
             else helper.make_node("Mul", ["x", "x"], ["sq"]),
             helper.make_node("ReduceMean", ["sq", "axes"] if axes_input else ["sq"], ["ms"],
                              **({} if axes_input else {"axes": [-1]})),
             helper.make_node("Add", ["ms", "eps"], ["mse"]),
             helper.make_node("Sqrt", ["mse"], ["rms"])]
    if divide == "div":
        nodes.append(helper.make_node("Div", ["x", "rms"], ["n"]))
    elif divide == "reciprocal":
        nodes += [helper.make_node("Reciprocal", ["rms"], ["inv"]),
                  helper.make_node("Mul", ["x", "inv"], ["n"])]
    else:  # Div of one, as TorchScript writes torch.rsqrt
        nodes += [helper.make_node("Div", ["one", "rms"], ["inv"]),
                  helper.make_node("Mul", ["inv", "x"], ["n"])]
    nodes.append(helper.make_node("Mul", ["w", "n"], ["y"]) if weighted
                 else helper.make_node("Identity", ["n"], ["y"]))
    inits = {"two": np.float32(2), "eps": np.float32(1e-6), "one": np.float32(1),
             "w": rng.random(16, dtype=np.float32) + 0.5,
             "axes": np.array([-1], np.int64)}
    used = {name for n in nodes for name in n.input}
    return build(nodes, [tensor("x", F, ["batch", 5, 16])], [tensor("y", F, None)],
                 {k: v for k, v in inits.items() if k in used}, opset=opset)


@pytest.mark.parametrize("square, divide, weighted", [
    ("pow", "div", True), ("mul", "reciprocal", True), ("pow", "div_of_one", True),
    ("mul", "div", False)])
@pytest.mark.parametrize("opset, op_type, domain", [
    (13, "SimplifiedLayerNormalization", FUSED_DOMAIN),
    (18, "SimplifiedLayerNormalization", FUSED_DOMAIN),
    (23, "RMSNormalization", "")])
def test_rmsnorm_forms_become_one_node(square, divide, weighted, opset, op_type, domain):
    graph = _rmsnorm_graph(square, divide, weighted, opset)
    final = run_checked(graph, "eliminate_identity,recognize_rmsnorm",
                        bindings={"batch": 2}).final  # compared with onnxruntime
    (node,) = final.nodes
    assert (node.op_type, node.domain) == (op_type, domain)
    assert node.attrs["epsilon"] == pytest.approx(1e-6) and node.provenance.rule == "rmsnorm"


def test_rmsnorm_lowers_to_onnxruntime_simplified_layernorm():
    from compiler_core.ir import to_bytes
    from compiler_core.lowering import lower_for_onnxruntime
    from compiler_core.runtime_check import run_isolated
    from compiler_core.verify import make_inputs, run

    graph = run_checked(_rmsnorm_graph("pow", "div", True, 17), "recognize_rmsnorm").final
    lowering = lower_for_onnxruntime(graph)
    assert [r.result for r in lowering.nodes] == ["ai.onnx:SimplifiedLayerNormalization"]
    inputs = make_inputs(graph, {"batch": 2})
    ran = run_isolated(to_bytes(lowering.graph), [inputs], level="all")
    assert ran.ok, ran.describe()
    np.testing.assert_allclose(ran.outputs[0]["y"], run(graph, inputs)["y"], rtol=1e-5,
                               atol=1e-6)


def test_the_core_of_a_layernorm_stays_a_layernorm_in_o2():
    final = run_checked(load_sample("teach_layernorm"), "O2").final
    assert "SimplifiedLayerNormalization" not in ops(final)


# ----------------------------------------------------------------------------- rotary
ROTARY = "O1,recognize_rotary,dce"
HEADS_FIRST_X = ["batch", 4, "seq", 16]


def _rotary_graph(x_shape, cos_sin, rotary, *, float16=False, opset=18, ids=False):
    """A rotary embedding of x (cos/sin from ``cos_sin``) as a tiny model."""
    elem = F16 if float16 else F
    table_nodes, table_inits = cos_sin
    nodes, inits = rotary
    inputs = [tensor("x", elem, x_shape)]
    if ids:
        inputs.append(tensor("position_ids", I64, ["batch", "seq"]))
    return build(table_nodes + nodes, inputs, [tensor("y", elem, None)],
                 {**table_inits, **inits}, opset=opset)


ROTARY_FORMS = {
    # HF Llama: rotate_half, cos/sin computed from positions
    "half": (HEADS_FIRST_X, lambda f16: positions_cos_sin("x", 16, float16=f16),
             dict(), dict(interleaved=0, rotary_dim=16, num_heads=4)),
    # Phi / GPT-NeoX: partial rotate_half, negation as Mul by -1, tables gathered by ids
    "half_partial_tables": (
        HEADS_FIRST_X, lambda f16: gathered_cos_sin("position_ids", 8, interleaved=False,
                                                    heads_axis=1, float16=f16),
        dict(rotary_dim=8, negate="mul"), dict(interleaved=0, rotary_dim=8, num_heads=4)),
    # GPT-J: interleaved by slices with steps, partial, sequence-first layout
    "interleaved_slices": (
        ["batch", "seq", 4, 16], lambda f16: gathered_cos_sin(
            "position_ids", 8, interleaved=True, heads_axis=2, float16=f16),
        dict(interleaved=True, rotary_dim=8), dict(interleaved=1, rotary_dim=8, num_heads=4)),
    # the even/odd features from x reshaped to pairs: Gather, or Split + Squeeze
    "interleaved_gather": (
        HEADS_FIRST_X, lambda f16: gathered_cos_sin("position_ids", 16, interleaved=True,
                                                    heads_axis=1, float16=f16),
        dict(interleaved=True, lanes="gather"), dict(interleaved=1, rotary_dim=16)),
    "interleaved_split": (
        HEADS_FIRST_X, lambda f16: gathered_cos_sin("position_ids", 16, interleaved=True,
                                                    heads_axis=1, float16=f16),
        dict(interleaved=True, lanes="split"), dict(interleaved=1, rotary_dim=16)),
}


def rotary_form_graph(form: str, float16: bool = False):
    x_shape, cos_sin, options, _ = ROTARY_FORMS[form]
    return _rotary_graph(x_shape, cos_sin(float16), rotary_nodes("x", "y", x_shape[-1],
                                                                 float16=float16, **options),
                         float16=float16, ids="tables" in form or "interleaved" in form)


@pytest.mark.parametrize("float16", [False, True], ids=["fp32", "fp16"])
@pytest.mark.parametrize("form", sorted(ROTARY_FORMS))
def test_rotary_forms_become_one_node(form, float16):
    result = run_checked(rotary_form_graph(form, float16), ROTARY,
                         bindings={"batch": 2, "seq": 5})
    final = result.final
    (rotary,) = [n for n in final.nodes if n.op_type == "RotaryEmbedding"]
    assert rotary.domain == FUSED_DOMAIN and rotary.provenance.rule == "rotary_embedding"
    expected = ROTARY_FORMS[form][3]
    assert {k: rotary.attrs.get(k) for k in expected} == expected
    assert [v.name for v in rotary.inputs[:3]] == ["x", "cos", "sin"]
    assert rotary.outputs[0].name == "y" and len(rotary.outputs) == 1
    assert not {"Neg", "Slice", "Add"} & set(ops(final))  # the rotation is all inside
    assert snapshot(result, "recognize_rotary").rewrites == 1


def test_rotary_cut_off_centre_is_a_near_miss_that_says_where():
    graph = _rotary_graph(HEADS_FIRST_X, positions_cos_sin("x", 16),
                          rotary_nodes("x", "y", 16, half_at=6))
    shot = snapshot(run_checked(graph, ROTARY, bindings={"batch": 1, "seq": 3}),
                    "recognize_rotary")
    assert shot.rewrites == 0
    (declined,) = shot.declined
    assert "expected −x[..., h:] then x[..., :h]" in declined.reason
    assert "found −x[..., 6:16] then x[..., 0:6] (width 16)" in declined.reason
