"""The onnxruntime export: which fused nodes become which onnxruntime op, that the result
computes what the portable (function) export computes, and that onnxruntime loads and runs it
with all its own optimizations on."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import lru_cache

import numpy as np
import pytest
from onnx import TensorProto, helper

from attention_graphs import (conv1d_attention, cross_attention, decoder_attention,
                              sequence_first_attention)
from compiler_core.ir import FUSED_DOMAIN, from_proto, load_model, to_bytes, to_model_proto
from compiler_core.lowering import INLINE, lower_for_onnxruntime
from compiler_core.passes import PassManager
from compiler_core.records import to_json
from compiler_core.runtime_check import run_isolated, run_isolated_many
from compiler_core.verify import DEFAULT_RTOL, FLOAT16_RTOL, compare_outputs, make_inputs, run
from graphlab.cli import main
from graphlab.samples import get_sample
from fusion_graphs import prenorm_stream
from llm_graphs import (F16, ROTARY_FORMS, decoder_norms_nodes, positions_cos_sin, rmsnorm_nodes,
                        rotary_form_graph, rotary_nodes, silu_nodes, swiglu_mlp_nodes)
from passes_helpers import build, ops, run_checked, tensor

MS = "com.microsoft:"
# Per sample: how many fused nodes must become each op (ops not listed may appear too).
EXPECTED = {
    "bert_tiny_op13": {MS + "Attention": 2, MS + "BiasGelu": 2, MS + "FusedGemm": 1,
                       MS + "SkipLayerNormalization": 2, "ai.onnx:LayerNormalization": 3},
    "bert_tiny_op20": {MS + "Attention": 2, MS + "BiasGelu": 2, MS + "FusedGemm": 1,
                       MS + "SkipLayerNormalization": 4},
    "bert_tiny_dynamo": {MS + "Attention": 2, MS + "BiasGelu": 2, MS + "FusedGemm": 1,
                         MS + "SkipLayerNormalization": 5},
    # pre-norm: all five norms fuse with their residual Add, but three of the sums have sizes
    # the exporter left unrelated (unk__ dims), so only two become onnxruntime's op
    "gpt2_tiny": {MS + "Attention": 2, MS + "FastGelu": 2, MS + "SkipLayerNormalization": 2,
                  "ai.onnx:LayerNormalization": 3},
    "bart_tiny": {MS + "Attention": 4, MS + "MultiHeadAttention": 2},  # 2 of them cross
    "llama_tiny_dynamo": {"ai.onnx:SimplifiedLayerNormalization": 1,
                          MS + "SkipSimplifiedLayerNormalization": 4, MS + "RotaryEmbedding": 4,
                          MS + "GroupQueryAttention": 2},
    "llama_tiny_torchscript": {"ai.onnx:SimplifiedLayerNormalization": 1,
                               MS + "SkipSimplifiedLayerNormalization": 4,
                               MS + "RotaryEmbedding": 4, MS + "GroupQueryAttention": 2},
    "cnn_bn": {MS + "FusedConv": 3},
    "mobilenet_tiny": {MS + "FusedConv": 9},
    "mlp_dropout": {MS + "FusedGemm": 2},
    "teach_conv_bn": {MS + "FusedConv": 1},
    "teach_matmul_bias": {MS + "FusedGemm": 1},
    "teach_gelu": {MS + "Gelu": 1, INLINE: 1},
    "teach_layernorm": {"ai.onnx:LayerNormalization": 1, INLINE: 1},
}


@lru_cache(maxsize=None)
def _compiled(name: str):
    final = PassManager("O2").run(load_model(get_sample(name).path)).final
    return final, lower_for_onnxruntime(final)


def _run_fully_optimized(tmp_path, graph, inputs: dict) -> dict:
    """Outputs of ``graph`` in onnxruntime at ORT_ENABLE_ALL, in a child process (onnxruntime
    can crash on a malformed model instead of raising)."""
    model, feeds, results = tmp_path / "m.onnx", tmp_path / "in.npz", tmp_path / "out.npz"
    model.write_bytes(to_model_proto(graph).SerializeToString())
    np.savez(feeds, **inputs)
    code = (
        "import sys, numpy as np, onnxruntime as ort\n"
        "o = ort.SessionOptions()\n"
        "o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL\n"
        "s = ort.InferenceSession(sys.argv[1], o, providers=['CPUExecutionProvider'])\n"
        "feeds = dict(np.load(sys.argv[2]))\n"
        "names = [o.name for o in s.get_outputs()]\n"
        "np.savez(sys.argv[3], **dict(zip(names, s.run(names, feeds))))\n")
    done = subprocess.run([sys.executable, "-c", code, str(model), str(feeds), str(results)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(np.load(results))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fused_nodes_lower_to_onnxruntime_ops(name):
    _, lowering = _compiled(name)
    counts = lowering.counts()
    assert {op: counts.get(op, 0) for op in EXPECTED[name]} == EXPECTED[name]
    lowering.graph.check()
    assert not any(n.body is not None or n.domain == FUSED_DOMAIN for n in lowering.graph.nodes)
    model = to_model_proto(lowering.graph)
    assert not model.functions
    assert all(r.reason for r in lowering.nodes if r.result == INLINE)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_lowered_model_matches_the_function_form_at_every_level(name, tmp_path):
    final, lowering = _compiled(name)
    inputs = make_inputs(final)
    reference = run(final, inputs)  # the function form, onnxruntime's optimizations off
    assert compare_outputs(reference, run(lowering.graph, inputs)).ok
    assert compare_outputs(reference, _run_fully_optimized(tmp_path, lowering.graph, inputs)).ok


def test_attention_reads_packed_weights_and_the_shared_mask_once():
    _, lowering = _compiled("bert_tiny_op20")
    attention = [n for n in lowering.graph.nodes if n.op_type == "Attention"]
    assert {n.domain for n in attention} == {"com.microsoft"}
    assert all(n.attrs["num_heads"] == 2 for n in attention)
    assert all(n.inputs[1].shape == (64, 192) and n.inputs[2].shape == (192,)
               for n in attention)
    biases = {n.inputs[5].name for n in attention}
    assert len(biases) == 1  # one Expand of the mask serves both layers
    assert lowering.graph.values[biases.pop()].producer.op_type == "Expand"


def _attention_biases(graph) -> list:
    """The attention_bias input of every onnxruntime attention operator in ``graph``."""
    at = {"Attention": 5, "MultiHeadAttention": 5, "GroupQueryAttention": 10}
    return [n.inputs[at[n.op_type]] for n in graph.nodes
            if n.domain == "com.microsoft" and n.op_type in at]


def test_a_mask_already_shaped_as_attention_bias_is_read_without_expand():
    # BART's masks are [batch, 1, seq, seq] (self) and [batch, 1, target, seq] (cross): the
    # operators take them as they are; BERT's [batch, 1, 1, seq] still needs its broadcast
    _, bart = _compiled("bart_tiny")
    biases = _attention_biases(bart.graph)
    assert len(biases) == 6 and {b.producer.op_type for b in biases} == {"Where"}
    assert "Expand" not in {n.op_type for n in bart.graph.nodes if n.name.endswith(
        "attention_bias")}
    _, bert = _compiled("bert_tiny_op20")
    assert {b.producer.op_type for b in _attention_biases(bert.graph)} == {"Expand"}
    _, lowering, _ = _attention_lowered("gqa_additive")
    assert [b.name for b in _attention_biases(lowering.graph)] == ["mask"]


def _skip_layernorm_model(x_shape, skip_shape):
    nodes = [helper.make_node("Add", ["x", "skip"], ["sum"]),
             helper.make_node("LayerNormalization", ["sum", "g", "b"], ["y"], epsilon=1e-5)]
    graph = helper.make_graph(
        nodes, "sln", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape),
                       helper.make_tensor_value_info("skip", TensorProto.FLOAT, skip_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [helper.make_tensor("g", TensorProto.FLOAT, [8], np.linspace(0.5, 1.5, 8)),
         helper.make_tensor("b", TensorProto.FLOAT, [8], np.linspace(-1, 1, 8))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return from_proto(model)


@pytest.mark.parametrize("x_shape, skip_shape, lowered", [
    (["b", "s", 8], ["b", "s", 8], True),
    ([2, 5, 8], [1, 5, 8], True),
    ([1, 5, 8], [2, 5, 8], True),       # the full-size operand becomes the op's input
    (["b", "s", 8], ["b2", "s", 8], False),  # cannot prove the batch sizes agree
])
def test_skip_layernorm_lowers_only_when_the_shapes_are_proven(x_shape, skip_shape, lowered):
    final = PassManager("O2").run(_skip_layernorm_model(x_shape, skip_shape)).final
    record, = lower_for_onnxruntime(final).nodes
    assert record.fused_op == "SkipLayerNormalization"
    if lowered:
        assert record.result == MS + "SkipLayerNormalization"
    else:
        assert record.result == INLINE and "cannot be proven" in record.reason


def test_prenorm_skip_layernorm_lowers_with_the_bias_and_the_sum_as_fourth_output():
    nodes, inits = prenorm_stream()
    graph = build(nodes, [tensor("x", TensorProto.FLOAT, ["batch", 5, 8])],
                  [tensor("y", TensorProto.FLOAT, None)], inits)
    lowering = _lowered(graph, "O2", {"batch": 2})
    assert lowering.counts()[MS + "SkipLayerNormalization"] == 2
    read_on, last = [n for n in lowering.graph.nodes if n.op_type == "SkipLayerNormalization"]
    assert [v and v.name for v in read_on.outputs] == ["h1", None, None, "sum0"]
    assert [v.name for v in last.outputs] == ["y"]
    assert all(len(n.inputs) == 5 for n in (read_on, last))  # ..., beta, the absorbed bias
    assert not any(n.op_type == "Add" for n in lowering.graph.nodes)


def test_compile_json_reports_what_each_fused_node_became(capsys, tmp_path):
    out = tmp_path / "gpt2.onnx"
    code = main(["compile", get_sample("gpt2_tiny").path, "--runtime", "onnxruntime",
                 "-o", str(out), "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)["export"]
    assert report["runtime"] == "onnxruntime"
    assert report["lowered"][MS + "Attention"] == 2
    assert {r["result"] for r in report["nodes"] if r["fused_op"] == "Gelu"} == {MS + "FastGelu"}
    loaded = out.read_bytes()
    assert b"com.microsoft" in loaded and FUSED_DOMAIN.encode() not in loaded


def test_default_runtime_keeps_the_function_form(capsys):
    assert main(["compile", get_sample("teach_gelu").path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["export"] == {"runtime": "onnx"}


# ------------------------------------------------------------------ attention operators
GQA, MHA = MS + "GroupQueryAttention", MS + "MultiHeadAttention"
# name: (graph builder, its sizes, the op the Attention node becomes, or the inline reason)
ATTENTION_CASES = {
    "gqa_causal": (lambda: decoder_attention(), None, GQA),
    "gqa_rotary": (lambda: decoder_attention(rotary=True), None, GQA),
    "gqa_rotary_with_empty_rest": (lambda: decoder_attention(rotary="empty_rest"), None, GQA),
    "mha_packed_heads_partial_rotary": (lambda: decoder_attention(
        packed_heads=True, kv_heads=4, rotary="partial"), None, MHA),
    "mha_gptj_key": (lambda: decoder_attention(
        rotary="before_split", key_split_transposed=True, kv_heads=4), None, MHA),
    "gqa_rotary_before_split": (
        lambda: decoder_attention(rotary="before_split"), None, GQA),
    # a norm on Q and K before rotary: Gemma-3 (on [B, N, S, H]), Qwen3 ([B, S, N, H]),
    # OLMo2 (on the projections); the norms stay inline before the operator
    "gqa_gemma3_qk_norm": (lambda: decoder_attention(rotary=True, qk_norm="after_split"),
                           None, GQA),
    "gqa_qwen3_qk_norm": (lambda: decoder_attention(rotary=True, qk_norm="before_split"),
                          None, GQA),
    "gqa_olmo2_qk_norm": (lambda: decoder_attention(rotary=True, qk_norm="projection"),
                          None, GQA),
    "mha_qk_norm_partial_rotary": (lambda: decoder_attention(
        rotary="partial", qk_norm="after_split", kv_heads=4), None, MHA),
    "gqa_window": (lambda: decoder_attention(mask="window"), None, GQA),
    "gqa_additive": (lambda: decoder_attention(mask="additive"), None, GQA),
    "gqa_trilu": (lambda: decoder_attention(mask="trilu"), None, GQA),
    "gqa_select_min": (lambda: decoder_attention(mask="select", fill=-3.4e38), None, GQA),
    "gqa_padding_nan_guard": (lambda: decoder_attention(mask="padding", nan_guard=True), None,
                              GQA),
    "mqa_float16": (lambda: decoder_attention(kv_heads=1, dtype=F16, fill=-65504.0), None, GQA),
    # float16 computing the softmax (and ·V) in float32: the float16 operator, cast up after
    "gqa_float16_upcast_softmax": (lambda: decoder_attention(dtype=F16, upcast="softmax"),
                                   None, GQA),
    "gqa_float16_upcast_context_padding": (lambda: decoder_attention(
        dtype=F16, upcast="context", rotary=True, mask="padding", nan_guard=True), None, GQA),
    "mha_float16_upcast_context": (lambda: decoder_attention(
        dtype=F16, upcast="context", kv_heads=4), None, MHA),
    "float16_upcast_float32_mask_input": (lambda: decoder_attention(
        dtype=F16, upcast="context", mask="additive"), None,
        "values that type cannot hold exactly"),
    "gqa_decode_step": (lambda: decoder_attention(past=True, seq=1),
                        {"batch": 2, "past": 4, "total": 5}, GQA),
    "gqa_grouped_query_decode": (lambda: decoder_attention(past=True, seq=1, grouped_query=True),
                                 {"batch": 2, "past": 4, "total": 5}, GQA),
    "mha_kv_cache": (lambda: decoder_attention(kv_heads=4, past=True),
                     {"batch": 2, "seq": 3, "past": 4, "total": 7}, MHA),
    "mha_cross": (lambda: cross_attention(layers=2), None, MHA),
    "mha_sequence_first": (lambda: sequence_first_attention(), None, MHA),
    # GPT-2 through the dynamo exporter: the block's output is rows [B·S, E] for a 2-D Gemm
    "packed_conv1d_rows": (lambda: conv1d_attention(), None, MS + "Attention"),
    "gqa_kv_cache_prefill": (lambda: decoder_attention(past=True),
                             {"batch": 2, "seq": 3, "past": 4, "total": 7},
                             "needs one query token or one sequence"),
    "select_small_fill": (lambda: decoder_attention(mask="select", fill=-1e9), None,
                          "adding it instead would change rows with every key masked"),
    "head_size_4": (lambda: decoder_attention(heads=8, head=4), None,
                    "head_size a multiple of 8, not 4"),
}


@lru_cache(maxsize=None)
def _attention_lowered(name: str):
    build_graph, sizes, _ = ATTENTION_CASES[name]
    final = PassManager(["fuse_sibling_matmuls", "recognize_rmsnorm", "recognize_rotary",
                         "fuse_attention"]).run(build_graph()).final
    inputs = make_inputs(final, sizes)
    if "attention_mask" in inputs:
        inputs["attention_mask"][0] = 0  # a sequence with every key masked: the NaN guard's case
    return final, lower_for_onnxruntime(final), inputs


@pytest.fixture(scope="module")
def attention_at_every_level():
    """Each case's onnxruntime export run at ORT_ENABLE_ALL, all in one child process."""
    names = sorted(ATTENTION_CASES)
    jobs = []
    for name in names:
        _, lowering, inputs = _attention_lowered(name)
        jobs.append((to_model_proto(lowering.graph).SerializeToString(), [inputs]))
    return dict(zip(names, run_isolated_many(jobs, level="all")))


@pytest.mark.parametrize("name", sorted(ATTENTION_CASES))
def test_attention_lowers_to_the_operator_that_fits_or_says_why_not(
        name, attention_at_every_level):
    final, lowering, inputs = _attention_lowered(name)
    expected = ATTENTION_CASES[name][2]
    records = [r for r in lowering.nodes if r.fused_op == "Attention"]
    assert records
    for record in records:
        if expected.startswith(MS):
            assert (record.result, record.reason) == (expected, None)
        else:
            assert record.result == INLINE and expected in record.reason
    lowering.graph.check()
    assert "Softmax" not in ops(lowering.graph) or not expected.startswith(MS)
    tolerance = 2e-3 if any(v.elem_type == TensorProto.FLOAT16 for v in final.inputs) else 1e-4
    reference = run(final, inputs)  # the function form, onnxruntime's optimizations off
    assert compare_outputs(reference, run(lowering.graph, inputs), rtol=tolerance).ok
    outcome = attention_at_every_level[name]
    assert outcome.ok, outcome.describe()
    assert compare_outputs(reference, outcome.outputs[0], rtol=tolerance).ok


def test_group_query_attention_returns_the_present_keys_and_values():
    _, lowering, _ = _attention_lowered("gqa_decode_step")
    (gqa,) = lowering.graph.nodes_of_type("GroupQueryAttention", "com.microsoft")
    assert [v.name for v in gqa.inputs[3:5]] == ["past_key", "past_value"]
    assert all(v.is_graph_output for v in gqa.outputs[1:3])
    assert (gqa.attrs["num_heads"], gqa.attrs["kv_num_heads"], gqa.attrs["causal"]) == (4, 2, 0)


# --------------------------------------------------------------- LLM decoder pieces
def _lowered(graph, pipeline, bindings=None):
    """``graph`` through ``pipeline`` and lowered; the lowering must compute what the function
    form computes (within the tolerance it declares: float16 operators round their own way),
    and load and run in onnxruntime at ORT_ENABLE_ALL in a child process."""
    final = run_checked(graph, pipeline, bindings=bindings).final
    lowering = lower_for_onnxruntime(final)
    lowering.graph.check()
    rtol = lowering.tolerance[0] if lowering.tolerance else DEFAULT_RTOL
    inputs = make_inputs(final, bindings)
    reference = run(final, inputs)  # the function form, onnxruntime's optimizations off
    assert compare_outputs(reference, run(lowering.graph, inputs), rtol).ok
    ran = run_isolated(to_bytes(lowering.graph), [inputs], level="all")
    assert ran.ok, ran.describe()
    report = compare_outputs(reference, ran.outputs[0], rtol)
    assert report.ok, to_json(report)
    return lowering


def _results(lowering, fused_op: str) -> list:
    return [r for r in lowering.nodes if r.fused_op == fused_op]


def _rmsnorm_model(**form):
    nodes, inits = rmsnorm_nodes("x", "y", 16, **form)
    elem = F16 if form.get("float16") or form.get("cast") else TensorProto.FLOAT
    return build(nodes, [tensor("x", elem, ["batch", 5, 16])], [tensor("y", elem, None)],
                 inits, opset=18)


@pytest.mark.parametrize("form, ops_after", [
    (dict(divide="reciprocal"), ["SimplifiedLayerNormalization"]),
    # float16 statistics in float32, cast back, then the weight: the Mul stays after the op
    (dict(cast="after"), ["SimplifiedLayerNormalization", "Cast", "Mul"]),
    # the weight applied in float32, then cast back: the Cast follows
    (dict(cast="before", divide="pow_half"), ["SimplifiedLayerNormalization", "Cast"]),
], ids=["fp32", "fp16_weight_after_cast", "fp16_weight_before_cast"])
def test_rmsnorm_lowers_to_simplified_layernorm_exactly(form, ops_after):
    lowering = _lowered(_rmsnorm_model(**form), "recognize_rmsnorm,dce", {"batch": 2})
    assert [r.result for r in lowering.nodes] == ["ai.onnx:SimplifiedLayerNormalization"]
    assert [n.op_type for n in lowering.graph.nodes] == ops_after


def test_rmsnorm_computed_in_float16_is_written_inline():
    lowering = _lowered(_rmsnorm_model(float16=True), "recognize_rmsnorm,dce", {"batch": 2})
    (record,) = lowering.nodes
    assert record.result == INLINE and "computes in float16" in record.reason


def test_skip_rmsnorm_lowers_with_the_sum_as_fourth_output():
    nodes, inits = decoder_norms_nodes("x", "y", 16)
    graph = build(nodes, [tensor("x", TensorProto.FLOAT, ["batch", 5, 16])],
                  [tensor("y", TensorProto.FLOAT, None)], inits, opset=18)
    lowering = _lowered(graph, "O2", {"batch": 2})
    assert lowering.counts() == {MS + "SkipSimplifiedLayerNormalization": 2,
                                 "ai.onnx:SimplifiedLayerNormalization": 1}
    read_on, last = [n for n in lowering.graph.nodes
                     if n.op_type == "SkipSimplifiedLayerNormalization"]
    assert [v and v.name for v in read_on.outputs] == ["h1", None, None, "sum0"]
    assert [v.name for v in last.outputs] == ["y"]


def test_skip_rmsnorm_lowers_with_the_absorbed_bias():
    nodes, inits = decoder_norms_nodes("x", "y", 16, bias=True)
    graph = build(nodes, [tensor("x", TensorProto.FLOAT, ["batch", 5, 16])],
                  [tensor("y", TensorProto.FLOAT, None)], inits, opset=18)
    lowering = _lowered(graph, "O2", {"batch": 2})
    skips = [n for n in lowering.graph.nodes if n.op_type == "SkipSimplifiedLayerNormalization"]
    assert [len(n.inputs) for n in skips] == [4, 4]  # input, skip, gamma, bias
    assert [n.inputs[3].name for n in skips] == ["bias0", "bias1"]
    assert [n.op_type for n in lowering.graph.nodes].count("Add") == 0


def test_float16_skip_rmsnorm_lowers_as_a_float16_operator():
    nodes, inits = decoder_norms_nodes("x", "y", 16, cast="after")
    graph = build(nodes, [tensor("x", F16, ["batch", 5, 16])], [tensor("y", F16, None)],
                  inits, opset=18)
    lowering = _lowered(graph, "O2", {"batch": 2})
    skips = _results(lowering, "SkipSimplifiedLayerNormalization")
    assert [(r.result, r.float16) for r in skips] == [(MS + "SkipSimplifiedLayerNormalization",
                                                       True)] * 2
    assert lowering.counts()["ai.onnx:SimplifiedLayerNormalization"] == 1  # the final norm
    assert lowering.tolerance[0] == FLOAT16_RTOL
    assert "SkipSimplifiedLayerNormalization" in lowering.tolerance[1]


def test_float32_operators_keep_the_exact_tolerance():
    nodes, inits = decoder_norms_nodes("x", "y", 16)
    graph = build(nodes, [tensor("x", TensorProto.FLOAT, ["batch", 5, 16])],
                  [tensor("y", TensorProto.FLOAT, None)], inits, opset=18)
    lowering = _lowered(graph, "O2", {"batch": 2})
    assert lowering.counts()[MS + "SkipSimplifiedLayerNormalization"] == 2
    assert lowering.tolerance is None and not any(r.float16 for r in lowering.nodes)


@pytest.mark.parametrize("form, cache_rows, nodes", [
    ("half", "offset", 1),                  # cos [1, 1, S, 16]: one row per position
    ("half_partial_tables", "tables", 1),   # cos gathered by ids from a 32-row table
    ("interleaved_slices", "tables", 4),    # [B, S, N, H] goes in as [B, S, N·H]
    ("interleaved_gather", "tables", 1),
    ("interleaved_split", "tables", 1)])
@pytest.mark.parametrize("bindings", [{"batch": 2, "seq": 5}, {}])
def test_rotary_lowers_to_onnxruntime_rotary_embedding(form, cache_rows, nodes, bindings):
    if cache_rows == "offset" and not bindings:
        pytest.skip("positions 0..S-1 with S unbound: the cache is computed at run time")
    lowering = _lowered(rotary_form_graph(form), "O1,recognize_rotary,dce", bindings)
    assert [r.result for r in lowering.nodes] == [MS + "RotaryEmbedding"]
    (rotary,) = [n for n in lowering.graph.nodes if n.op_type == "RotaryEmbedding"]
    expected = ROTARY_FORMS[form][3]
    assert rotary.attrs["interleaved"] == expected["interleaved"]
    partial = expected["rotary_dim"] != 16 or form == "interleaved_slices"
    assert rotary.attrs.get("rotary_embedding_dim", 0) == (expected["rotary_dim"] if partial
                                                          else 0)
    positions = rotary.inputs[1]
    if cache_rows == "offset":
        assert positions.constant_value().tolist() == [0]
    else:   # the tables' rows bound the positions: constant caches, the model's own ids
        assert positions.name == "position_ids"
        caches = [rotary.inputs[i].constant_value() for i in (2, 3)]
        assert [c.shape for c in caches] == [(32, expected["rotary_dim"] // 2)] * 2
    assert len(lowering.graph.nodes) == nodes   # no cos/sin arithmetic left at run time


def test_rotary_lowering_shares_caches_between_queries_and_keys():
    nodes, inits = positions_cos_sin("q", 16)
    for name in ("q", "k"):
        rotary, rotary_inits = rotary_nodes(name, f"{name}_rot", 16, prefix=f"{name}/")
        nodes += rotary
        inits.update(rotary_inits)
    shape = ["batch", 4, "seq", 16]
    graph = build(nodes, [tensor("q", TensorProto.FLOAT, shape),
                          tensor("k", TensorProto.FLOAT, shape)],
                  [tensor("q_rot", TensorProto.FLOAT, None),
                   tensor("k_rot", TensorProto.FLOAT, None)], inits)
    lowering = _lowered(graph, "O1,recognize_rotary,dce", {"batch": 2, "seq": 5})
    rotaries = [n for n in lowering.graph.nodes if n.op_type == "RotaryEmbedding"]
    assert len(rotaries) == 2
    assert rotaries[0].inputs[2] is rotaries[1].inputs[2]  # one cos cache
    assert rotaries[0].inputs[3] is rotaries[1].inputs[3]


def test_float16_rotary_lowers_as_a_float16_operator():
    float16 = _lowered(rotary_form_graph("half", float16=True), "O1,recognize_rotary,dce",
                       {"batch": 2, "seq": 5})
    (record,) = _results(float16, "RotaryEmbedding")
    assert (record.result, record.float16) == (MS + "RotaryEmbedding", True)
    (rotary,) = float16.graph.nodes_of_type("RotaryEmbedding", "com.microsoft")
    assert {rotary.inputs[i].constant_value().dtype for i in (2, 3)} == {np.dtype(np.float16)}


def test_rotary_falls_back_inline_with_the_reason():
    # cos and sin given by the caller: nothing shows both features of a pair share an angle
    nodes, inits = rotary_nodes("x", "y", 16)
    table = tensor("cos", TensorProto.FLOAT, [1, 1, "seq", 16])
    graph = build(nodes, [tensor("x", TensorProto.FLOAT, ["batch", 4, "seq", 16]), table,
                          tensor("sin", TensorProto.FLOAT, [1, 1, "seq", 16])],
                  [tensor("y", TensorProto.FLOAT, None)], inits)
    given = _lowered(graph, "O1,recognize_rotary,dce", {"batch": 2, "seq": 5})
    assert "cannot be proven to repeat each angle" in _results(given, "RotaryEmbedding")[0].reason


def test_swish_lowers_to_quick_gelu_and_swiglu_is_inline():
    nodes, inits = swiglu_mlp_nodes("x", "mlp", 16, 32)
    silu, silu_inits = silu_nodes("mlp", "y", alpha=1.702)
    graph = build(nodes + silu, [tensor("x", TensorProto.FLOAT, ["batch", 5, 16])],
                  [tensor("y", TensorProto.FLOAT, None)], {**inits, **silu_inits}, opset=18)
    lowering = _lowered(graph, "O1,recognize_silu,dce", {"batch": 2})
    (swish,) = _results(lowering, "Swish")
    assert swish.result == MS + "QuickGelu"
    (quick,) = [n for n in lowering.graph.nodes if n.op_type == "QuickGelu"]
    assert quick.attrs["alpha"] == pytest.approx(1.702)
    (gate,) = _results(lowering, "SwiGLU")
    assert gate.result == INLINE and "no operator for a fused SwiGLU" in gate.reason


def test_float16_swish_lowers_to_quick_gelu_as_a_float16_operator():
    nodes, inits = silu_nodes("x", "y", alpha=1.702, float16=True)
    graph = build(nodes, [tensor("x", F16, ["batch", 5, 16])], [tensor("y", F16, None)], inits,
                  opset=18)
    lowering = _lowered(graph, "O1,recognize_silu,dce", {"batch": 2})
    assert [(r.result, r.float16) for r in lowering.nodes] == [(MS + "QuickGelu", True)]
