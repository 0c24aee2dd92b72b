"""Recognition (LayerNorm, GELU, RMSNorm, rotary, SiLU/SwiGLU) and the skip RMSNorm fusion:
samples of every exporter, models built with onnx.helper in each exporter spelling,
opset-awareness, near misses."""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import helper

from compiler_core.ir import FUSED_DOMAIN, to_bytes
from compiler_core.passes.framework.rulebook import pattern_named, registered_patterns
from compiler_core.patterns import explain
from graphlab.cli import main
from fusion_graphs import GELU_CONSTANTS, LN_CONSTANTS, decomposed_layernorm, gelu_nodes
from llm_graphs import (F16, HEADS_FIRST_X, ROTARY_FORMS, decoder_norms_nodes, gathered_cos_sin,
                        positions_cos_sin, rmsnorm_nodes, rotary_form_graph, rotary_graph,
                        rotary_nodes, silu_nodes, swiglu_mlp_nodes)
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
def rmsnorm_graph(opset: int = 17, float16: bool = False, **form):
    """A tiny model of one written-out RMSNorm over x [batch, 5, 16]."""
    nodes, inits = rmsnorm_nodes("x", "y", 16, axes_input=opset >= 18, float16=float16,
                                 **form)
    elem = F16 if float16 or form.get("cast") else F
    return build(nodes, [tensor("x", elem, ["batch", 5, 16])], [tensor("y", elem, None)],
                 inits, opset=opset)


RMSNORM_SPELLINGS = [
    dict(square="pow", divide="div"), dict(square="mul", divide="reciprocal"),
    dict(square="pow", divide="div_of_one", weight_first=True), dict(divide="pow_half"),
    dict(square="mul", divide="div", weighted=False)]


@pytest.mark.parametrize("form", RMSNORM_SPELLINGS, ids=lambda f: "-".join(map(str, f.values())))
@pytest.mark.parametrize("opset, op_type, domain", [
    (13, "SimplifiedLayerNormalization", FUSED_DOMAIN),
    (18, "SimplifiedLayerNormalization", FUSED_DOMAIN),
    (23, "RMSNormalization", "")])
def test_rmsnorm_spellings_become_one_node(form, opset, op_type, domain):
    final = run_checked(rmsnorm_graph(opset, **form), "eliminate_identity,recognize_rmsnorm",
                        bindings={"batch": 2}).final  # compared with onnxruntime
    (node,) = final.nodes
    assert (node.op_type, node.domain) == (op_type, domain)
    assert node.attrs["epsilon"] == pytest.approx(1e-6) and node.provenance.rule == "rmsnorm"
    assert [v.name for v in node.inputs][0] == "x"


@pytest.mark.parametrize("cast, float16, standard", [
    ("after", True, True),      # HF Llama: float32 statistics, cast back, then weighted
    ("before", True, False),    # weighted in float32, then cast back: not RMSNormalization's
    (None, True, False),        # computed in float16 throughout: stash_type 1 would differ
    (None, False, True)])
@pytest.mark.parametrize("divide", ["reciprocal", "div_of_one"])
def test_rmsnorm_casts_are_inside_and_the_standard_op_only_where_exact(cast, float16, standard,
                                                                       divide):
    """The casts around a half-precision RMSNorm belong to it: one node reads x as given and
    returns y in x's type.  From opset 23 it is RMSNormalization only when that op (cast up,
    normalize, cast back, multiply) computes exactly what the model does."""
    for opset, wanted in ((18, False), (23, standard)):
        graph = rmsnorm_graph(opset, float16, cast=cast, divide=divide)
        final = run_checked(graph, "recognize_rmsnorm,dce", bindings={"batch": 2}).final
        (node,) = final.nodes
        assert node.op_type == ("RMSNormalization" if wanted else "SimplifiedLayerNormalization")
        assert node.inputs[0].name == "x" and node.outputs[0].name == "y"
        if node.body is not None:
            assert ops(node.body)["Cast"] == (2 if cast else 0)
        else:
            assert node.attrs["stash_type"] == 1


def test_rmsnorm_ignores_a_gate_that_is_not_a_weight():
    """norm(x) · g with g computed per token (Mamba's gated norm) keeps its Mul outside."""
    nodes, inits = rmsnorm_nodes("x", "normed", 16, weighted=False)
    nodes.append(helper.make_node("Mul", ["normed", "gate"], ["y"], name="gate_mul"))
    graph = build(nodes, [tensor("x", F, [2, 5, 16]), tensor("gate", F, [2, 5, 16])],
                  [tensor("y", F, None)], inits, opset=18)
    final = run_checked(graph, "eliminate_identity,recognize_rmsnorm,dce").final
    assert sorted(ops(final)) == ["Mul", "SimplifiedLayerNormalization"]
    assert final.node_by_name("gate_mul") is not None


def test_the_core_of_a_layernorm_stays_a_layernorm_in_o2():
    final = run_checked(load_sample("teach_layernorm"), "O2").final
    assert "SimplifiedLayerNormalization" not in ops(final)


# ----------------------------------------------------------------------------- rotary
ROTARY = "O1,recognize_rotary,dce"


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
    graph = rotary_graph(HEADS_FIRST_X, positions_cos_sin("x", 16),
                          rotary_nodes("x", "y", 16, half_at=6))
    shot = snapshot(run_checked(graph, ROTARY, bindings={"batch": 1, "seq": 3}),
                    "recognize_rotary")
    assert shot.rewrites == 0
    (declined,) = shot.declined
    assert "expected −x[..., h:] then x[..., :h]" in declined.reason
    assert "found −x[..., 6:16] then x[..., 0:6] (width 16)" in declined.reason


# ----------------------------------------------------------------------- SiLU, SwiGLU
@pytest.mark.parametrize("float16", [False, True], ids=["fp32", "fp16"])
@pytest.mark.parametrize("pipeline", ["O1,recognize_silu,dce", "O2"])
def test_swiglu_mlp_is_its_gemms_and_one_elementwise_node(pipeline, float16):
    nodes, inits = swiglu_mlp_nodes("x", "y", 16, 32, float16=float16)
    elem = F16 if float16 else F
    graph = build(nodes, [tensor("x", elem, ["batch", 5, 16])], [tensor("y", elem, None)],
                  inits, opset=18)
    final = run_checked(graph, pipeline, bindings={"batch": 2}).final
    (gate,) = [n for n in final.nodes if n.op_type == "SwiGLU"]
    assert gate.domain == FUSED_DOMAIN and gate.attrs["alpha"] == 1.0
    assert sorted(n.op_type for n in gate.body.nodes) == ["Mul", "Mul", "Sigmoid"]
    assert "Sigmoid" not in ops(final)
    # O2 packs the gate and up projections into one MatMul whose halves the gate reads
    assert ops(final)["MatMul"] == (3 if pipeline.startswith("O1") else 2)


@pytest.mark.parametrize("alpha", [None, 1.702], ids=["silu", "quick_gelu"])
@pytest.mark.parametrize("opset", [18, 25])
def test_silu_becomes_one_swish_node(alpha, opset):
    """A fused node at every opset: onnxruntime runs the standard Swish at opset 24 only."""
    nodes, inits = silu_nodes("x", "y", alpha=alpha, sigmoid_first=True)
    graph = build(nodes, [tensor("x", F, [2, 8])], [tensor("y", F, None)], inits, opset=opset)
    (node,) = run_checked(graph, "recognize_silu,dce").final.nodes
    assert (node.op_type, node.domain) == ("Swish", FUSED_DOMAIN)
    assert node.attrs["alpha"] == pytest.approx(alpha or 1.0)


def test_silu_times_a_constant_is_not_a_swiglu():
    nodes, inits = silu_nodes("x", "act")
    nodes.append(helper.make_node("Mul", ["act", "half"], ["y"], name="halve"))
    graph = build(nodes, [tensor("x", F, [2, 8])], [tensor("y", F, None)],
                  {**inits, "half": np.array(0.5, np.float32)}, opset=18)
    final = run_checked(graph, "recognize_silu,dce").final
    assert sorted(ops(final)) == ["Mul", "Swish"]


# ----------------------------------------------------------------------- GELU in float16
@pytest.mark.parametrize("tanh", [False, True], ids=["erf", "tanh"])
@pytest.mark.parametrize("casts", [False, True], ids=["float16", "float32_inside_casts"])
def test_float16_gelus_are_recognized(tanh, casts):
    """float16 constants hold the GELU's constants rounded (√2 is 1.4140625); a model may also
    compute the GELU in float32 between casts."""
    nodes = gelu_nodes("g_in" if casts else "x", "g_out" if casts else "y", tanh)
    constants = GELU_CONSTANTS if casts else {
        name: value.astype(np.float16) for name, value in GELU_CONSTANTS.items()}
    if casts:
        nodes = [helper.make_node("Cast", ["x"], ["g_in"], to=F),
                 *nodes, helper.make_node("Cast", ["g_out"], ["y"], to=F16)]
    used = {name for n in nodes for name in n.input}
    graph = build(nodes, [tensor("x", F16, [4, 16])], [tensor("y", F16, None)],
                  {k: v for k, v in constants.items() if k in used}, opset=18)
    final = run_checked(graph, "recognize_gelu,dce").final
    (gelu,) = [n for n in final.nodes if n.op_type == "Gelu"]
    assert gelu.attrs["approximate"] == ("tanh" if tanh else "none")
    assert ops(final)["Cast"] == (2 if casts else 0)


# ------------------------------------------------------------------ residual Add + RMSNorm
def decoder_graph(**form):
    nodes, inits = decoder_norms_nodes("x", "y", 16, **form)
    elem = F16 if form.get("float16") or form.get("cast") else F
    return build(nodes, [tensor("x", elem, ["batch", 5, 16])], [tensor("y", elem, None)],
                 inits, opset=18)


@pytest.mark.parametrize("form", [dict(divide="reciprocal"), dict(cast="after")],
                         ids=["fp32", "fp16_casts"])
def test_residual_add_and_rmsnorm_become_one_node_returning_the_sum(form):
    result = run_checked(decoder_graph(**form), "O1,recognize_rmsnorm,fuse_skip_rmsnorm,dce",
                         bindings={"batch": 2})
    final = result.final
    skips = [n for n in final.nodes if n.op_type == "SkipSimplifiedLayerNormalization"]
    assert ops(final)["SimplifiedLayerNormalization"] == 1  # the first norm reads no Add
    assert "Add" not in ops(final) and len(skips) == 2
    read_on, last = skips
    # the residual stream goes on to the next Add: the sum is the second result
    assert [v.name for v in read_on.outputs] == ["h1", "sum0"]
    assert [v.name for v in last.outputs] == ["y"]
    assert [v.name for v in read_on.inputs] == ["x", "out0", "n1_w"]
    assert "1 also returning the sum" in snapshot(result, "fuse_skip_rmsnorm").notes[0]


def test_skip_rmsnorm_also_fuses_a_norm_still_written_out():
    """Without recognize_rmsnorm first (a custom pipeline), the Add and the whole written-out
    norm become the one node; graphlab explain shows the pattern on the exported model."""
    final = run_checked(decoder_graph(divide="div_of_one"), "O1,fuse_skip_rmsnorm,dce",
                        bindings={"batch": 2}).final
    skips = [n for n in final.nodes if n.op_type == "SkipSimplifiedLayerNormalization"]
    assert len(skips) == 2 and "Sqrt" in ops(skips[0].body)
    assert ops(final)["Sqrt"] == 1  # the first norm reads no Add


# ------------------------------------------------------------ near misses in graphlab explain
def _near_miss_models():
    """Per new library pattern, a model that almost has it, and the reason explain gives."""
    wrong_axis_nodes, wrong_axis_inits = rmsnorm_nodes("x", "y", 16)
    wrong_axis = build(wrong_axis_nodes, [tensor("x", F, [2, 5, 16])], [tensor("y", F, None)],
                       {**wrong_axis_inits, "axes": np.array([1], np.int64)}, opset=18)
    skip_nodes, skip_inits = rmsnorm_nodes("sum", "y", 16)
    skip = build([helper.make_node("Add", ["x", "r"], ["sum"])] + skip_nodes,
                 [tensor("x", F, [2, 5, 16]), tensor("r", F, [2, 5, 16])],
                 [tensor("y", F, None)], {**skip_inits, "axes": np.array([1], np.int64)},
                 opset=18)
    other_sigmoid = build([helper.make_node("Sigmoid", ["z"], ["s"]),
                           helper.make_node("Mul", ["x", "s"], ["y"])],
                          [tensor("x", F, [2, 8]), tensor("z", F, [2, 8])],
                          [tensor("y", F, None)], opset=18)
    silu, silu_inits = silu_nodes("x", "act")
    scaled = build(silu + [helper.make_node("Mul", ["act", "half"], ["y"])],
                   [tensor("x", F, [2, 8])], [tensor("y", F, None)],
                   {**silu_inits, "half": np.array(0.5, np.float32)}, opset=18)
    off_centre = rotary_graph(HEADS_FIRST_X, positions_cos_sin("x", 16),
                              rotary_nodes("x", "y", 16, half_at=6))
    return [("rmsnorm", wrong_axis, "expected mean over the last axis"),
            ("skip_rmsnorm", skip, "expected mean over the last axis"),
            ("silu", other_sigmoid, "expected the same value as the other use of input ('z')"),
            ("swiglu", scaled, "expected a tensor computed at run time"),
            ("rotary_embedding", off_centre, "found −x[..., 6:16] then x[..., 0:6]")]


NEAR_MISSES = _near_miss_models()


@pytest.mark.parametrize("name, graph, reason", NEAR_MISSES, ids=[c[0] for c in NEAR_MISSES])
def test_new_patterns_explain_their_near_misses(name, graph, reason):
    (report,) = explain(graph, [pattern_named(name)])
    assert not report.matches and report.near_misses
    assert reason in report.near_misses[0].reason
    assert name in registered_patterns() and report.description


def test_graphlab_explain_lists_the_llm_patterns(tmp_path, capsys):
    path = tmp_path / "rotary.onnx"
    path.write_bytes(to_bytes(rotary_form_graph("half")))
    assert main(["explain", str(path), "--json"]) == 0
    reports = {r["name"]: r for r in json.loads(capsys.readouterr().out)["patterns"]}
    assert {"rmsnorm", "skip_rmsnorm", "silu", "swiglu", "rotary_embedding"} <= set(reports)
    assert len(reports["rotary_embedding"]["matches"]) == 1


def test_rotary_with_shapes_computed_at_run_time():
    """TorchScript without bindings: the head split's target has -1 heads and the flattening
    Reshape's target comes from the Shape of the stacked pairs.  The heads are still known
    (64 features / 16 per head), and the Shape arithmetic only the rotation reads moves into
    the node."""
    split_heads = [
        helper.make_node("Shape", ["h"], ["h_shape"]),
        helper.make_node("Gather", ["h_shape", "batch_seq"], ["b_s"], axis=0),
        helper.make_node("Concat", ["b_s", "heads_dims"], ["split_target"], axis=0),
        helper.make_node("Reshape", ["h", "split_target"], ["heads"]),
        helper.make_node("Transpose", ["heads"], ["x"], perm=[0, 2, 1, 3])]
    table_nodes, table_inits = gathered_cos_sin("position_ids", 16, interleaved=True,
                                                heads_axis=1)
    rotary, rotary_inits = rotary_nodes("x", "y", 16, interleaved=True)
    flatten = next(n for n in rotary if n.output[0] == "turned")
    flatten.input[1] = "flat_target"
    rotary += [helper.make_node("Shape", ["stacked"], ["stacked_shape"]),  # as TorchScript
               helper.make_node("Slice", ["stacked_shape", "begin", "but_two", "begin"],
                                ["lead"]),
               helper.make_node("Concat", ["lead", "rest"], ["flat_target"], axis=0)]
    graph = build(split_heads + table_nodes + rotary,
                  [tensor("h", F, ["batch", "seq", 64]), tensor("position_ids", I64,
                                                                ["batch", "seq"])],
                  [tensor("y", F, None)],
                  {**table_inits, **rotary_inits, "batch_seq": np.array([0, 1]),
                   "heads_dims": np.array([-1, 16]), "but_two": np.array([-2]),
                   "rest": np.array([-1])}, opset=17)
    final = run_checked(graph, "recognize_rotary,dce", bindings={"batch": 2, "seq": 5}).final
    (rotary_node,) = [n for n in final.nodes if n.op_type == "RotaryEmbedding"]
    assert rotary_node.attrs["num_heads"] == 4 and rotary_node.attrs["interleaved"] == 1
    assert {"Shape", "Slice", "Concat"} <= set(ops(rotary_node.body))


# ------------------------------------------------------------------ the Llama samples
@pytest.mark.parametrize("name", ["llama_tiny_dynamo", "llama_tiny_torchscript"])
def test_llama_norms_rotary_and_swiglu_are_all_recognized(name):
    """Both exporters' tiny Llama (2 layers): five RMSNorms (four after a residual Add, the
    first one reading the embeddings), a rotary on Q and K per layer (inside the layer's fused
    attention), a SwiGLU gate per MLP; nothing of them left written out."""
    final = run_checked(load_sample(name), "O2", bindings={"batch": 2, "seq": 8}).final
    counts = ops(final)
    assert counts["SkipSimplifiedLayerNormalization"] == 4
    assert counts["SimplifiedLayerNormalization"] == 1
    attention = [n for n in final.nodes if n.op_type == "Attention"]
    assert len(attention) == 2 and counts["SwiGLU"] == 2
    assert sum(ops(n.body)["RotaryEmbedding"] for n in attention) == 4
    assert not {"ReduceMean", "Sqrt", "Reciprocal", "Neg", "Sigmoid"} & set(counts)
    summed = [n for n in final.nodes if n.op_type == "SkipSimplifiedLayerNormalization"
              and len(n.outputs) == 2]
    assert len(summed) == 3  # every residual sum but the last flows on to the next block
