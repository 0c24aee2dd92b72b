"""Attention fusion: hand-built blocks in every form today's exporters write (BERT-style
encoders, LLM decoders with grouped-query attention, rotary, KV cache and causal / window /
padding masks, cross-attention, nn.MultiheadAttention's sequence-first layout), their near
misses, and every exported sample.

Every run verifies each pass against onnxruntime (``run_checked``), so the fused Attention
nodes are exported as model-local functions and executed.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from attention_graphs import F16, cross_attention, decoder_attention, sequence_first_attention
from compiler_core.passes import PRESETS, PassContext, PassManager, get_pass
from compiler_core.patterns import PatternRecord, explain
from compiler_core.passes.framework.rulebook import pattern_named
from compiler_core.records import to_json
from passes_helpers import (F, SAMPLE_BINDINGS, build, load_sample, ops, run_checked, snapshot,
                            tensor)

SEQ, HIDDEN, HEADS = 4, 8, 2
HEAD_SIZE = HIDDEN // HEADS


def attention_block(*, softmax_axis: int = -1, mask_op: str = "Add", scale_op: str = "Mul",
                    probs_is_output: bool = False, causal: bool = False):
    """One self-attention block as the eager exporter writes it, with knobs for near misses.

    ``mask_op`` "Add" adds the float input ``mask``; "Where" selects with a constant boolean
    mask (lower-triangular when ``causal``); None applies no mask; anything else ("Sub")
    applies ``mask`` with that op, which attention never does.
    """
    rng = np.random.default_rng(0)
    inits = {"split_shape": np.array([1, SEQ, HEADS, HEAD_SIZE], np.int64),
             "merge_shape": np.array([1, SEQ, HIDDEN], np.int64),
             "scale": np.array(HEAD_SIZE ** 0.5 if scale_op == "Div" else HEAD_SIZE ** -0.5,
                               np.float32),
             "fill": np.array(-1e9, np.float32)}
    nodes = []
    for name, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        inits[f"w{name}"] = rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32)
        inits[f"b{name}"] = rng.standard_normal(HIDDEN).astype(np.float32)
        nodes += [helper.make_node("MatMul", ["x", f"w{name}"], [f"{name}_mm"]),
                  helper.make_node("Add", [f"{name}_mm", f"b{name}"], [f"{name}_proj"]),
                  helper.make_node("Reshape", [f"{name}_proj", "split_shape"], [f"{name}_4d"]),
                  helper.make_node("Transpose", [f"{name}_4d"], [f"{name}_heads"], perm=perm)]
    nodes += [helper.make_node("MatMul", ["q_heads", "k_heads"], ["qk"], name="qk"),
              helper.make_node(scale_op, ["qk", "scale"], ["scores"], name="scale")]
    inputs = [tensor("x", F, [1, SEQ, HIDDEN])]
    if mask_op is None:
        nodes.append(helper.make_node("Identity", ["scores"], ["masked"]))
    elif mask_op == "Where":
        allowed = np.tril(np.ones((SEQ, SEQ), bool)) if causal else np.ones((SEQ, SEQ), bool)
        inits["allowed"] = allowed.reshape(1, 1, SEQ, SEQ)
        nodes.append(helper.make_node("Where", ["allowed", "scores", "fill"], ["masked"]))
    else:
        inputs.append(tensor("mask", F, [1, 1, 1, SEQ]))
        nodes.append(helper.make_node(mask_op, ["scores", "mask"], ["masked"]))
    nodes += [helper.make_node("Softmax", ["masked"], ["probs"], name="softmax",
                               axis=softmax_axis),
              helper.make_node("MatMul", ["probs", "v_heads"], ["context"]),
              helper.make_node("Transpose", ["context"], ["merged"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["merged", "merge_shape"], ["y"], name="merge")]
    outputs = [tensor("y", F, [1, SEQ, HIDDEN])]
    if probs_is_output:
        outputs.append(tensor("probs", F, [1, HEADS, SEQ, SEQ]))
    return build(nodes, inputs, outputs, inits)


def fuse(graph, bindings=None):
    """Run the pass (verified, invariants checked); its snapshot."""
    return snapshot(run_checked(graph, ["fuse_attention"], bindings), "fuse_attention")


def only_report(shot) -> PatternRecord:
    (report,) = shot.pattern_reports
    assert report.name == "attention"
    return report


# ------------------------------------------------------------------------------ hand-built
def test_block_becomes_one_attention_node_that_describes_itself():
    graph = attention_block()
    shot = fuse(graph)
    assert shot.rewrites == 1 and dict(ops(shot.graph)) == {"Attention": 1}
    (node,) = shot.graph.nodes
    assert len(node.body) == len(graph) == 19
    assert node.attrs == {"scale": pytest.approx(HEAD_SIZE ** -0.5), "mask": "additive",
                          "causal": 0, "window": 0, "padding": 1, "num_heads": HEADS,
                          "kv_num_heads": HEADS, "head_size": HEAD_SIZE, "qkv": "separate",
                          "cross": 0, "rotary": 0, "past": 0, "layout": "batch-first"}
    assert [m.root.name for m in only_report(shot).matches] == ["merge"]


@pytest.mark.parametrize("causal", [False, True], ids=["padding", "causal"])
def test_where_mask_and_div_scale(causal):
    shot = fuse(attention_block(mask_op="Where", scale_op="Div", causal=causal))
    (node,) = shot.graph.nodes
    assert (node.attrs["mask"], node.attrs["causal"]) == ("select", int(causal))
    assert node.attrs["scale"] == pytest.approx(HEAD_SIZE ** -0.5)


def test_attention_without_a_mask_fuses_too():
    graph = attention_block(mask_op=None)
    graph = run_checked(graph, ["eliminate_identity"]).final   # Softmax reads the scores
    shot = fuse(graph)
    (node,) = shot.graph.nodes
    assert (node.op_type, node.attrs["mask"], node.attrs["causal"]) == ("Attention", "none", 0)
    assert node.attrs["scale"] == pytest.approx(HEAD_SIZE ** -0.5)


def test_softmax_over_the_wrong_axis_is_a_near_miss():
    graph = attention_block(softmax_axis=2)
    shot = fuse(graph)
    assert shot.rewrites == 0 and len(shot.graph) == len(graph)
    report = only_report(shot)
    assert report.matches == ()
    (miss,) = report.near_misses
    assert miss.site.name == "merge" and miss.failed_node.name == "softmax"
    assert miss.reason == ("probabilities: Softmax: expected softmax over the last axis, "
                           "found axis 2 (rank 4)")
    assert miss.score > 0.9  # everything else matched


def test_mask_through_an_unexpected_op_is_a_near_miss():
    shot = fuse(attention_block(mask_op="Sub"))
    assert shot.rewrites == 0
    (miss,) = only_report(shot).near_misses
    # every form of the Softmax's input fails on the Sub: the smallest (no mask) is named first
    assert miss.reason == "mask: Softmax input 0: expected MatMul, found Sub"
    tried = {a["expected"] for a in miss.alternatives if a["found"] == "Sub"}
    assert tried == {"Add", "Where", "Mul", "Div", "Cast", "MatMul", "com.microsoft.FusedMatMul"}


def test_probabilities_read_outside_block_the_fusion():
    shot = fuse(attention_block(probs_is_output=True))
    assert shot.rewrites == 0 and "Attention" not in ops(shot.graph)
    report = only_report(shot)
    assert report.matches == ()
    (miss,) = report.near_misses
    assert miss.reason == "Softmax output is a graph output"
    assert miss.failed_node.name == "softmax" and miss.score == 0.99
    (decline,) = shot.declined
    assert (decline.site, decline.reason) == ("merge", "Softmax output is a graph output")


def test_without_explanations_the_report_still_lists_the_matches():
    graph = attention_block()
    result = get_pass("fuse_attention").run(graph, PassContext(explain=False))
    (report,) = result.pattern_reports
    assert [m.root.name for m in report.matches] == ["merge"] and report.near_misses == ()
    assert result.rewrites == 1 and dict(ops(graph)) == {"Attention": 1}


def test_fusion_runs_in_the_o2_preset():
    assert "fuse_attention" in PRESETS["O2"]


# ------------------------------------------------------------------ LLM decoder attention
PAST_SIZES = {"batch": 2, "seq": 3, "past": 4, "total": 7}
DECODER_FORMS = {  # name: (decoder_attention keywords, attributes the fused node must record)
    "gqa_causal": ({}, {"num_heads": 4, "kv_num_heads": 2, "causal": 1, "window": 0}),
    "mqa": ({"kv_heads": 1}, {"kv_num_heads": 1, "causal": 1}),
    "mha": ({"kv_heads": 4}, {"kv_num_heads": 4}),
    "rotary": ({"rotary": True}, {"rotary": 1}),
    "rotary_before_split": ({"rotary": "before_split"}, {"rotary": 1}),
    "partial_rotary": ({"rotary": "partial"}, {"rotary": 1}),
    "rotary_with_empty_rest": ({"rotary": "empty_rest"}, {"rotary": 1}),
    "gptj_key": ({"rotary": "before_split", "key_split_transposed": True, "kv_heads": 4},
                 {"rotary": 1, "kv_num_heads": 4}),
    "packed_heads": ({"packed_heads": True, "kv_heads": 4, "rotary": "partial"},
                     {"num_heads": 4, "kv_num_heads": 4, "rotary": 1}),
    "kv_cache": ({"past": True}, {"past": 1, "causal": 1}),
    "grouped_query_decode": ({"grouped_query": True, "past": True, "seq": 1},
                             {"kv_num_heads": 2, "past": 1}),
    "sliding_window": ({"mask": "window", "window": 2}, {"causal": 1, "window": 2}),
    "trilu_causal": ({"mask": "trilu"}, {"causal": 1, "mask": "additive"}),
    "min_fill": ({"fill": float(np.finfo(np.float32).min)}, {"causal": 1}),
    "padding": ({"mask": "padding", "nan_guard": True}, {"padding": 1, "causal": 0}),
    "select": ({"mask": "select"}, {"mask": "select", "causal": 1}),
    "select_masked": ({"mask": "select_masked"}, {"mask": "select_masked", "causal": 1}),
    "no_mask": ({"mask": "none"}, {"mask": "none", "causal": 0}),
    "float16": ({"dtype": F16, "fill": -65504.0}, {"causal": 1}),
    "opset14": ({"opset": 14}, {"causal": 1}),
    "opset20": ({"opset": 20}, {"causal": 1}),
}


def recognize_rotary(graph) -> int:
    """Run recognize_rotary (the pass before fuse_attention in O2) in place; how many it made."""
    return get_pass("recognize_rotary").run(graph, PassContext()).rewrites


def decoder(**kwargs):
    """A decoder block with its rotary recognized (as recognize_rotary leaves it) and the sizes
    its inputs need (a KV cache's total = past + seq)."""
    graph = decoder_attention(**kwargs)
    if kwargs.get("qk_norm"):   # recognize_rmsnorm runs before recognize_rotary in O2
        assert get_pass("recognize_rmsnorm").run(graph, PassContext()).rewrites == 2
    if kwargs.get("rotary"):
        assert recognize_rotary(graph) == 2
    sizes = None
    if kwargs.get("past"):
        sizes = dict(PAST_SIZES, seq=kwargs.get("seq", 3))
        sizes["total"] = sizes["past"] + sizes["seq"]
        if kwargs.get("seq") == 1:
            del sizes["seq"]
    return graph, sizes


@pytest.mark.parametrize("form", sorted(DECODER_FORMS))
def test_every_decoder_form_fuses_into_one_attention_node(form):
    kwargs, expected = DECODER_FORMS[form]
    graph, sizes = decoder(**kwargs)
    shot = fuse(graph, sizes)
    (node,) = [n for n in shot.graph.nodes if n.op_type == "Attention"]
    assert {k: node.attrs[k] for k in expected} == expected
    packed = kwargs.get("packed_heads", False)
    assert node.attrs["head_size"] == 8
    assert node.attrs["qkv"] == ("packed" if packed else "separate")
    body = ops(node.body)
    assert body["Softmax"] == 1 and body["MatMul"] == (3 if packed else 5)  # + Q·Kᵀ, ·V
    assert "Softmax" not in ops(shot.graph) and "RotaryEmbedding" not in ops(shot.graph)
    assert body["RotaryEmbedding"] == (2 if kwargs.get("rotary") else 0)


@pytest.mark.parametrize("norm", ["after_split", "before_split", "projection"],
                         ids=["gemma3", "qwen3", "olmo2"])
@pytest.mark.parametrize("rotary", [True, "partial", False])
def test_query_and_key_norms_fuse_with_their_attention(norm, rotary):
    graph, sizes = decoder(rotary=rotary, qk_norm=norm)
    shot = fuse(graph, sizes)
    (node,) = [n for n in shot.graph.nodes if n.op_type == "Attention"]
    assert node.attrs["rotary"] == int(bool(rotary)) and node.attrs["cross"] == 0
    norms = "SimplifiedLayerNormalization"
    # a norm on the heads belongs to the block; one on the whole projection stays before it
    inside = 0 if norm == "projection" else 2
    assert (ops(node.body)[norms], ops(shot.graph)[norms]) == (inside, 2 - inside)


def test_present_keys_and_values_stay_outputs_of_the_fused_node():
    graph, sizes = decoder(past=True, rotary=True)
    shot = fuse(graph, sizes)
    (node,) = [n for n in shot.graph.nodes if n.op_type == "Attention"]
    presents = [v for v in node.outputs if v.is_graph_output]
    assert len(presents) == 2 and len(node.outputs) == 3
    assert all(v.producer is node for v in shot.graph.outputs if v.name != "y")
    assert {v.name for v in node.inputs} >= {"past_key", "past_value", "cos", "sin"}


def test_a_causal_mask_built_from_the_blocks_own_shapes_moves_inside():
    graph, _ = decoder(mask="trilu")
    shot = fuse(graph)
    (node,) = [n for n in shot.graph.nodes if n.op_type == "Attention"]
    assert ops(node.body)["Trilu"] == 1  # it reads Q's shape: outside, the node would feed itself
    assert ops(shot.graph) == {"Attention": 1, "MatMul": 1, "Identity": 1}


def test_written_out_rotary_is_a_near_miss_that_says_so():
    shot = fuse(decoder_attention(rotary=True))  # recognize_rotary has not run
    assert "Attention" not in ops(shot.graph)
    (miss,) = only_report(shot).near_misses
    assert miss.reason.startswith("query › rotary: Add: expected rotary embedding as one "
                                  "RotaryEmbedding node (recognize_rotary)")
    assert "recognize_rotary did not fuse it" in miss.found and miss.score > 0.9


def test_cross_attention_fuses_and_leaves_the_shared_kv_projection_outside():
    graph = cross_attention(layers=2)
    result = run_checked(graph, ["fuse_sibling_matmuls", "fuse_attention"])
    shot = snapshot(result, "fuse_attention")
    fused = [n for n in shot.graph.nodes if n.op_type == "Attention"]
    assert len(fused) == 2
    assert all(n.attrs["cross"] == 1 and n.attrs["qkv"] == "mixed" for n in fused)
    # horizontal fusion packed both layers' K/V projections of the encoder output into one
    (split,) = [n for n in shot.graph.nodes if n.op_type == "Split"]
    assert len(split.outputs) == 4 and all(u.op_type == "Attention"
                                           for v in split.outputs for u in v.users())


@pytest.mark.parametrize("four_d", [True, False], ids=["4d", "heads_in_batch"])
def test_sequence_first_attention_with_a_packed_in_projection_fuses(four_d):
    graph = sequence_first_attention(four_d=four_d)
    result = run_checked(graph, ["fuse_attention"])
    shot = snapshot(result, "fuse_attention")
    (node,) = [n for n in shot.graph.nodes if n.op_type == "Attention"]
    assert (node.attrs["layout"], node.attrs["qkv"]) == ("sequence-first", "packed")
    assert (node.attrs["num_heads"], node.attrs["head_size"]) == (4, 8)
    assert ops(node.body)["Gather"] == 3  # the packed projection's unpacking moved inside
    assert ops(shot.graph) == {"Attention": 1, "Gemm": 1, "Shape": 1, "Reshape": 1,
                               "Identity": 1}


def test_an_attention_shaped_block_is_explained_even_when_its_head_merge_differs():
    """Softmax between two MatMuls with an unknown head merge: the pattern fails right at its
    root, yet the block is reported at the top level, saying which part failed."""
    graph = attention_block()
    merge = graph.node_by_name("merge")
    transpose = merge.inputs[0].producer
    graph.set_node_attr(transpose, "perm", (0, 2, 3, 1))  # not a head merge any more
    (report,) = explain(graph, [pattern_named("attention")])
    assert report.matches == []
    (miss,) = report.near_misses
    assert miss.reason == ("head merge: Transpose: expected perm = [0, 2, 1, 3], "
                           "found perm = [0, 2, 3, 1]")
    assert miss.failure.part == ("head merge",)
    assert to_json(miss.record())["part"] == "head merge"


def test_anchored_explanation_without_any_root_below_names_the_consumers():
    graph = attention_block()
    merge = graph.node_by_name("merge")
    transpose = merge.inputs[0].producer
    context = transpose.inputs[0]
    graph.replace_all_uses(merge.outputs[0], context)  # the context is the model output
    for node in (merge, transpose):
        graph.remove_node(node)
    (report,) = explain(graph, [pattern_named("attention")])
    (miss,) = report.near_misses
    assert miss.site.op_type == "MatMul" and miss.failure.expected.startswith("Reshape at most")
    assert "Softmax" in {n.op_type for n in miss.failure.matched_nodes}


# ------------------------------------------------------------------------------ the samples
LAYERS = 2
SAMPLES = ["bert_tiny_op13", "bert_tiny_op20", "bert_tiny_dynamo", "gpt2_tiny"]


@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.parametrize("bound", [False, True], ids=["dynamic", "specialized"])
def test_every_layer_of_every_sample_fuses(name, bound):
    result = run_checked(load_sample(name), ["O1", "fuse_attention"],
                         SAMPLE_BINDINGS[name] if bound else None)
    shot = snapshot(result, "fuse_attention")
    fused = [n for n in shot.graph.nodes if n.op_type == "Attention"]
    assert shot.rewrites == len(fused) == LAYERS
    assert shot.nodes_before - shot.nodes_after >= LAYERS * (19 - 1)
    for node in fused:
        assert (node.attrs["num_heads"], node.attrs["head_size"]) == (2, 32)
        assert node.attrs["scale"] == pytest.approx(32 ** -0.5)
        assert node.attrs["causal"] == (name == "gpt2_tiny")
    assert "Softmax" not in ops(shot.graph)
    report = only_report(shot)
    assert len(report.matches) == LAYERS and report.near_misses == ()


def test_sdpa_shape_arithmetic_moves_inside_when_only_attention_reads_it():
    result = run_checked(load_sample("bert_tiny_op20"), ["O1", "fuse_attention"])
    fused = [n for n in result.final.nodes if n.op_type == "Attention"]
    assert len(fused) == LAYERS
    for node in fused:
        # SDPA reads the shapes of Q's heads and of the context to compute the merge target
        made_inside = {v.name for n in node.body.nodes for v in n.outputs}
        shapes = [n for n in node.body.nodes if n.op_type == "Shape"]
        assert sum(n.inputs[0].name in made_inside for n in shapes) == 2


def test_the_patterns_panel_names_the_part_that_failed():
    from graphlab.app.panels.patterns import focus_view, report_view
    from graphlab.app.pattern_view import PatternFocus

    (report,) = explain(decoder_attention(rotary=True), [pattern_named("attention")])
    record = report.record()
    (miss,) = record.near_misses
    text = str(focus_view(PatternFocus("miss", "attention", miss)))
    assert "'part'" in text and "'query › rotary'" in text
    assert "recognize_rotary did not fuse it" in str(report_view(0, record, ""))


# ------------------------------------------------------------------- the LLM samples
def cleaned(name: str):
    """A sample after O1 and horizontal fusion (what fuse_attention sees in O2)."""
    return PassManager(["O1", "fuse_sibling_matmuls"]).run(load_sample(name)).final


def test_bart_fuses_encoder_decoder_and_cross_attention():
    shot = fuse(cleaned("bart_tiny"))
    fused = [n for n in shot.graph.nodes if n.op_type == "Attention"]
    assert len(fused) == 6 and "Softmax" not in ops(shot.graph)
    kinds = sorted((n.attrs["cross"], n.attrs["causal"], n.attrs["padding"]) for n in fused)
    # 2 encoder (padding), 2 decoder self (causal), 2 cross (the encoder's padding)
    assert kinds == [(0, 0, 1), (0, 0, 1), (0, 1, 0), (0, 1, 0), (1, 0, 1), (1, 0, 1)]


@pytest.mark.parametrize("name", ["llama_tiny_torchscript", "llama_tiny_dynamo"])
def test_llama_attention_fuses_once_rotary_is_one_node(name):
    graph = cleaned(name)
    # before: every block says what is missing
    (report,) = explain(graph, [pattern_named("attention")])
    assert len(report.near_misses) == 2 and all(
        m.reason.startswith("query › rotary: Add: expected rotary embedding as one")
        for m in report.near_misses)
    assert recognize_rotary(graph) == 4
    shot = fuse(graph)
    fused = [n for n in shot.graph.nodes if n.op_type == "Attention"]
    assert len(fused) == 2 and "Softmax" not in ops(shot.graph)
    for node in fused:
        assert (node.attrs["num_heads"], node.attrs["kv_num_heads"], node.attrs["head_size"],
                node.attrs["rotary"], node.attrs["causal"]) == (4, 2, 16, 1, 1)


def test_code_that_only_starts_like_attention_is_reported_with_all_sites_only():
    """A Reshape of a Transpose of something that is no ·V: no attention-shaped block, so no
    near miss unless every site is asked for."""
    nodes = [helper.make_node("Reshape", ["x", "split"], ["x4"]),
             helper.make_node("Transpose", ["x4"], ["t"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["t", "merge"], ["y"], name="merge")]
    graph = build(nodes, [tensor("x", F, [1, SEQ, HIDDEN])], [tensor("y", F, [1, SEQ, HIDDEN])],
                  {"split": np.array([1, SEQ, HEADS, HEAD_SIZE]),
                   "merge": np.array([1, SEQ, HIDDEN])})
    assert explain(graph, [pattern_named("attention")])[0].near_misses == []
    misses = explain(graph, [pattern_named("attention")], all_sites=True)[0].near_misses
    (miss,) = [m for m in misses if m.site.name == "merge"]
    assert miss.failure.part == ("head merge",)
