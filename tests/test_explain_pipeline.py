"""`graphlab explain` judges each pattern on the graph its pass receives in the pipeline, names
that graph, and lists every match the pass did not rewrite as a decline with its reason."""

from __future__ import annotations

import json

import pytest
from onnx import helper

from compiler_core.ir import load_model
from compiler_core.passes import PassManager
from compiler_core.passes.framework.rules import Rule, RuleSet
from compiler_core.passes.framework.judged import UNRECORDED, judge_pass, judge_pipeline
from compiler_core.patterns import (STRONG_SCORE, NearMissRecord, NodeRef, Pattern,
                                    PatternRecord, any_value, op)
from decline_models import BLOCKING, DECLINED_ROOT, FUSED_ROOT, write_declined_attention
from graphlab.cli import main
from graphlab.samples import get_sample
from passes_helpers import F, build, o2_position, ops, tensor


def explain_json(capsys, *argv: str) -> dict:
    assert main(["explain", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def explain_text(capsys, *argv: str) -> str:
    assert main(["explain", *argv]) == 0
    return capsys.readouterr().out


# ------------------------------------------------------------------- the graph the rule sees
def test_attention_is_judged_after_the_rotary_it_relies_on(capsys):
    """On the Llama export, attention needs the RotaryEmbedding node recognize_rotary makes:
    judged on the model as loaded it has 0 matches; on the graph fuse_attention receives, it
    has the 2 blocks compile fuses, and says which graph that is."""
    data = explain_json(capsys, "llama_tiny_dynamo", "--pattern", "attention",
                        "--pattern", "rotary_embedding")
    reports = {r["name"]: r for r in data["patterns"]}
    attention, rotary = reports["attention"], reports["rotary_embedding"]
    assert attention["graph"]["pass"] == "fuse_attention"
    assert attention["graph"]["after"] == "recognize_rotary"
    assert attention["graph"]["description"].startswith(
        f"the graph pass {o2_position('fuse_attention')} of O2 (fuse_attention) receives, "
        f"after recognize_rotary")
    assert len(attention["matches"]) == 2 and attention["rewritten"] == 2
    assert all(m["rewritten"] for m in attention["matches"]) and attention["declines"] == []
    assert rotary["pass"] == "recognize_rotary" and rotary["rewritten"] == 4

    text = explain_text(capsys, "llama_tiny_dynamo", "--pattern", "attention")
    assert f"── judged on the graph pass {o2_position('fuse_attention')} of O2 " \
           f"(fuse_attention) receives, after " \
           "recognize_rotary" in text
    assert "attention: 2 matches, 0 near misses; fuse_attention rewrote 2, declined 0" in text

    # the model as loaded, asked for explicitly, still shows the old answer, labelled
    before = explain_json(capsys, "llama_tiny_dynamo", "--pattern", "attention",
                          "--before", "1")
    [early] = before["patterns"]
    assert early["graph"]["pass_number"] == 1 and early["matches"] == []
    assert early["graph"]["description"].endswith("eliminate_dropout runs no pattern")


def test_explain_agrees_with_compile_on_what_was_fused():
    """For every sample pass that rewrites with a pattern: each match is rewritten or declined."""
    for sample in ("llama_tiny_dynamo", "bart_tiny", "bert_tiny_op13"):
        result = PassManager("O2").run(load_model(get_sample(sample).path))
        for verdict in judge_pipeline(result, "O2"):
            for judged in verdict.patterns:
                if judged.graph.is_input:
                    continue
                declined = {d.node_id for d in judged.declines}
                for match, done in zip(judged.matches, judged.rewritten):
                    assert done or match.root.id in declined, (sample, judged.name)
        fused = sum(1 for n in result.final.nodes if n.op_type == "Attention")
        attention = [p for v in judge_pipeline(result, "O2", patterns=["attention"])
                     for p in v.patterns]
        assert sum(p.rewrites for p in attention) == fused > 0


def test_node_is_found_on_the_judged_graph(capsys):
    softmax = "node_Softmax_157"
    text = explain_text(capsys, "llama_tiny_dynamo", "--pattern", "attention", "--node", softmax)
    assert "attention: 1 match" in text and softmax in text

    graph = load_model(get_sample("llama_tiny_dynamo").path)
    neg = next(n.name for n in graph.nodes if n.op_type == "Neg")
    data = explain_json(capsys, "llama_tiny_dynamo", "--pattern", "attention", "--node", neg)
    [verdict] = data["judged"]
    assert verdict["note"] == (f"{neg!r} is not in the graph fuse_attention receives: "
                               "recognize_rotary replaced it by RotaryEmbedding "
                               "'RotaryEmbedding', judged instead")
    assert len(verdict["patterns"][0]["matches"]) == 1


# ------------------------------------------------------------------- declines
@pytest.fixture(scope="module")
def declined_model(tmp_path_factory):
    return write_declined_attention(tmp_path_factory.mktemp("declines"))


def test_a_declined_match_names_the_consumer_that_blocks_it(capsys, declined_model):
    data = explain_json(capsys, declined_model, "--pattern", "attention")
    [report] = data["patterns"]
    assert report["pass"] == "fuse_attention" and report["rewritten"] == 1
    [decline] = report["declines"]
    assert decline["site"] == DECLINED_ROOT and decline["blocking_node"] == BLOCKING
    assert decline["reason"] == f"Mul output has another consumer (ReduceMax '{BLOCKING}')"
    assert FUSED_ROOT in [m["root"] for m in report["matches"]]

    text = explain_text(capsys, declined_model, "--pattern", "attention")
    assert f"✓ {FUSED_ROOT}" in text
    assert f"at {DECLINED_ROOT} (score 0.99)" in text and "declined by fuse_attention" in text

    # asked about the declined block's root: the pattern matches there, and the pass declined
    text = explain_text(capsys, declined_model, "--pattern", "attention", "--node",
                        DECLINED_ROOT)
    assert "attention: 1 match, 0 near misses; fuse_attention rewrote 0, declined 1" in text
    assert (f"✗ declined at {DECLINED_ROOT}: Mul output has another consumer (ReduceMax "
            f"'{BLOCKING}')  (blocked by {BLOCKING})") in text


def test_a_match_left_without_a_reason_is_still_said():
    """fold_norm_affine finds LayerNorms with the pattern; one no linear layer reads is left
    as it was, and explain says so instead of counting it as done."""
    result = PassManager("O2").run(load_model(get_sample("bert_tiny_op13").path))
    index = next(s.index for s in result.snapshots if s.pass_name == "fold_norm_affine")
    [layernorm] = judge_pass(result, index, "O2").patterns
    reasons = [d.reason for d in layernorm.declines]
    assert UNRECORDED.format(pass_name="fold_norm_affine") in reasons
    assert any("is also read by Add" in r for r in reasons)
    blocked = [d for d in layernorm.declines if d.blocking is not None]
    assert blocked and all(d.blocking.name.endswith("/Add") for d in blocked)


# ------------------------------------------------------------------- ranking
def _miss(site: int, score: float, reason: str) -> NearMissRecord:
    return NearMissRecord(NodeRef(site, f"n{site}"), score, "", "", "", reason)


def test_a_strong_near_miss_outranks_many_weak_ones():
    weak = [_miss(i, 0.17, "Mul input 0: expected Div, found MatMul") for i in range(8)]
    strong = _miss(99, 0.9, "Softmax output has another consumer (Relu 'r')")
    record = PatternRecord("p", "", (), tuple([*weak, strong]))
    groups = record.grouped()
    assert [reason for reason, _ in groups] == [strong.reason, weak[0].reason]
    assert record.strong_misses == (strong,) and len(record.weak_misses) == 8
    assert strong.score >= STRONG_SCORE > weak[0].score


def test_weak_near_misses_are_folded_in_the_text(capsys):
    text = explain_text(capsys, "bert_tiny_op13", "--before", "recognize_layernorm")
    assert "3 weak near misses (score < 0.50; --all-sites or --node NAME shows them):" in text
    assert "    ✗ 2 sites: Mul input 0: expected Div, found MatMul" in text
    assert "at /bert/encoder/layer.0/attention/self/Add" not in text
    full = explain_text(capsys, "bert_tiny_op13", "--before", "recognize_layernorm",
                        "--all-sites")
    assert "at /bert/encoder/layer.0/attention/self/Add" in full


# ------------------------------------------------------------------- overlapping rewrites
class _GreedyReluRule(Rule):
    """Relu -> a fused node that also swallows the Relu reading it (as attention fusion takes
    what only its block reads), so the next match loses its node."""

    name = "greedy_relu"

    def pattern(self) -> Pattern:
        return op("Relu", any_value()).bind("relu")

    def rewrite(self, graph, ctx, match):
        nodes = [match.root, *match.root.outputs[0].users()]
        return self.fuse(graph, ctx, nodes, "ReluTwice")


FUSE_GREEDY_RELU = RuleSet("fuse_greedy_relu", "fusion", (_GreedyReluRule(),),
                           doc="Fuse a Relu with the one after it (a test's own, never "
                               "registered).")


def test_a_match_an_earlier_rewrite_took_is_declined_not_dropped():
    """Two matches; rewriting the first swallows the second's node.  The pass used to skip it
    silently (or rewrite a node no longer in the graph); now it declines it, naming the node
    that took it, and explain counts 1 rewritten and 1 declined."""
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu_a"),
             helper.make_node("Relu", ["a"], ["b"], name="relu_b")]
    graph = build(nodes, [tensor("x", F, [2, 3])], [tensor("b", F, [2, 3])])
    result = PassManager([FUSE_GREEDY_RELU], check=True).run(graph)
    [verdict] = judge_pipeline(result, "fuse_greedy_relu", patterns=["greedy_relu"])
    [judged] = verdict.patterns
    assert len(judged.matches) == 2 and judged.rewrites == 1
    [decline] = judged.declines
    assert decline.site == "relu_b" and decline.reason.startswith(
        "Relu 'relu_b' of this match was already rewritten by ReluTwice")
    assert dict(ops(result.final)) == {"ReluTwice": 1}


def test_node_without_named_patterns_lists_only_what_concerns_it(capsys):
    """Every pass's patterns, but only sites that reach the node: no attempt of each pattern
    rooted at it (that is for patterns asked for by name); a decline belongs to its rule."""
    text = explain_text(capsys, "teach_conv_bn", "--node", "conv_shared")
    assert "(score 0.00)" not in text and "attention:" not in text
    assert "conv_bn: 0 matches, 1 near miss; fold_batchnorm rewrote 0, declined 1" in text
    assert "conv_act: 0 matches, 1 near miss; fuse_linear_bias_act rewrote 0, declined 1" in text
    assert "matmul_bias_act: 0 matches, 1 near miss; fuse_linear_bias_act rewrote 0, " \
           "declined 0" in text


def test_a_node_a_pass_removed_is_said_to_be_gone(capsys):
    text = explain_text(capsys, "mlp_dropout", "--node", "/2/Dropout", "--pattern", "matmul_add")
    assert ("'/2/Dropout' is not in the graph fuse_linear_bias_act receives: eliminate_dropout "
            "removed it") in text
    # on the model as loaded it is there, and judged
    data = explain_json(capsys, "mlp_dropout", "--node", "/2/Dropout", "--pattern", "dropout")
    [verdict] = data["judged"]
    assert verdict["graph"]["pass"] is None and verdict["note"] is None
    assert data["patterns"][0]["matches"][0]["root"] == "/2/Dropout"


def test_onnxscript_rules_are_judged_on_the_graph_a_pass_receives(capsys):
    pytest.importorskip("onnxscript")
    rules = "onnxscript.rewriter.ort_fusions.gelu"
    loaded = explain_json(capsys, "teach_gelu", "--onnxscript-rules", rules)
    later = explain_json(capsys, "teach_gelu", "--onnxscript-rules", rules, "--before",
                         "fuse_elementwise")
    assert loaded["onnxscript_rules"]["node_count"] == 10      # the model as loaded
    assert later["onnxscript_rules"]["node_count"] == 6        # after recognize_gelu
