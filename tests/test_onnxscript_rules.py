"""onnxscript rewrite rules judged by onnxscript itself, on GraphLab's graphs: the verdicts agree
with onnxscript's own `apply_to_model`, failure nodes map to the right GraphLab nodes (unnamed
ones too), a rule that raises is a verdict, and a rule's verdict does not depend on the rules
judged before it."""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler_core.errors import GraphLabError
from compiler_core.ir import load_model
from compiler_core.onnxscript_rules import RulesLoadError, explain_rules, load_rules
from compiler_core.records import to_json
from graphlab.samples import resolve_model

onnx_ir = pytest.importorskip("onnx_ir")
pytest.importorskip("onnxscript")
from onnx_ir.passes.common import ShapeInferencePass  # noqa: E402
from onnxscript.rewriter import RewriteRuleSet  # noqa: E402

ORT_FUSIONS = "onnxscript.rewriter.ort_fusions"
# sample -> whether onnxruntime's rules fuse something in it as exported (the TorchScript
# Llama needs onnxscript's own pre-optimization first, which no rule's verdict is)
SAMPLES = {"bert_tiny_dynamo": True, "bert_tiny_op20": True, "llama_tiny_dynamo": True,
           "llama_tiny_torchscript": False, "bart_tiny": True, "teach_gelu": True}


@pytest.fixture(scope="module")
def ort_rules():
    return load_rules(ORT_FUSIONS)


def _applied(rule, model: onnx.ModelProto) -> int:
    return RewriteRuleSet([rule]).apply_to_model(onnx_ir.serde.deserialize_model(model))


@pytest.mark.parametrize("sample,fuses", SAMPLES.items())
def test_verdicts_agree_with_onnxscripts_own_counts(sample, fuses, ort_rules):
    """Per rule, the sites GraphLab reports as matched are as many as the rewrites onnxscript
    applies to the original file, shape-inferred by onnx_ir (what a user of onnxscript alone
    would run; GraphLab hands onnxscript its export, whose shapes it inferred itself)."""
    graph = load_model(resolve_model(sample))
    report = explain_rules(graph, ort_rules)
    original = onnx_ir.load(resolve_model(sample))
    ShapeInferencePass()(original)
    original = onnx_ir.serde.serialize_model(original)
    rules = [rule for _, _, rule in ort_rules.entries()]
    assert [v.source for v in report.rules] == [s for _, s, _ in ort_rules.entries()]
    for verdict, rule in zip(report.rules, rules):
        assert verdict.error is None, verdict.error
        assert len(verdict.matches) == _applied(rule, original), verdict.name
        for match in verdict.matches:   # every node of a match is a real GraphLab node
            assert all(graph.node_by_id(n.id).name == n.name for n in match.nodes)
    assert any(v.matches for v in report.rules) == fuses


def test_a_rules_verdict_does_not_depend_on_the_rules_before_it(ort_rules):
    """onnxscript builds a replacement for every match even while tracing, and registers the
    nodes it builds as readers of the graph's values; a later rule must not see them."""
    graph = load_model(resolve_model("bert_tiny_dynamo"))
    together = explain_rules(graph, ort_rules).rules
    catalog = type(ort_rules)
    for verdict, group in zip(together, _one_rule_catalogs(ort_rules, catalog)):
        [alone] = explain_rules(graph, group).rules
        assert _judged(alone) == _judged(verdict), verdict.name


def _judged(verdict) -> dict:
    return {k: v for k, v in to_json(verdict).items() if k not in ("source", "name")}


def _one_rule_catalogs(catalog, catalog_type):
    from compiler_core.onnxscript_rules.loading import RuleGroup
    for group in catalog.groups:
        for rule in group.rules:
            yield catalog_type(catalog.spec, (RuleGroup(group.source, (rule,)),))


# ---- a GELU written out, with unnamed nodes ----------------------------------------------------

def _gelu_model(squash: str = "Erf", erf_also_read: bool = False) -> bytes:
    """0.5 * x * (1 + erf(x / sqrt 2)) with no node named (``squash`` instead of Erf);
    optionally Erf's output also read by a Neg whose output the graph returns."""
    nodes = [helper.make_node("Div", ["x", "sqrt2"], ["scaled"]),
             helper.make_node(squash, ["scaled"], ["erf"]),
             helper.make_node("Add", ["erf", "one"], ["shifted"]),
             helper.make_node("Mul", ["x", "shifted"], ["product"]),
             helper.make_node("Mul", ["product", "half"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])]
    if erf_also_read:
        nodes.append(helper.make_node("Neg", ["erf"], ["side"]))
        outputs.append(helper.make_tensor_value_info("side", TensorProto.FLOAT, [2, 8]))
    constants = {"sqrt2": np.sqrt(2.0), "one": 1.0, "half": 0.5}
    graph = helper.make_graph(
        nodes, "gelu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])], outputs,
        [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString()


GELU_ERF = f"{ORT_FUSIONS}.gelu:gelu_rules"


def _gelu_erf_verdict(model: bytes):
    graph = load_model(model)
    report = explain_rules(graph, GELU_ERF)
    return graph, next(v for v in report.rules if v.name == "GeluErfFusion")


def test_a_match_names_graphlabs_nodes_for_unnamed_ones():
    graph, verdict = _gelu_erf_verdict(_gelu_model())
    [match] = verdict.matches
    assert {graph.node_by_id(n.id).op_type for n in match.nodes} == {"Div", "Erf", "Add", "Mul"}
    assert match.root.id == graph.outputs[0].producer.id
    assert all(n.name for n in match.nodes)   # GraphLab's names for the unnamed nodes


def test_a_failure_node_maps_to_the_graphlab_node_where_it_failed():
    graph, verdict = _gelu_erf_verdict(_gelu_model(squash="Tanh"))
    assert not verdict.matches and verdict.verdict == "near miss"
    [site] = verdict.closest
    [tanh] = graph.nodes_of_type("Tanh")
    assert [n.id for n in site.failed_at] == [tanh.id] and tanh.name == "Tanh_1"
    assert site.reason == "OpType mismatch: expected Erf, got Tanh."   # onnxscript's words
    assert site.root.id == graph.outputs[0].producer.id
    assert {graph.node_by_id(n.id).op_type for n in site.nodes} == {"Mul", "Add"}


def test_other_uses_name_the_reader_outside_the_match():
    graph, verdict = _gelu_erf_verdict(_gelu_model(erf_also_read=True))
    [site] = verdict.closest
    assert "other uses" in site.reason
    [neg] = graph.nodes_of_type("Neg")
    assert [n.id for n in site.blocking] == [neg.id]


def test_asking_about_one_node_gives_each_rules_attempt_there():
    graph = load_model(_gelu_model(squash="Tanh"))
    [erf] = graph.nodes_of_type("Tanh")
    report = explain_rules(graph, GELU_ERF, node=erf.name)
    attempts = {v.name: v.at_node for v in report.rules}
    assert attempts["GeluErfFusion"].root.id == erf.id
    assert attempts["GeluErfFusion"].score == 0
    assert attempts["GeluErfFusion"].reason == "OpType mismatch: expected Mul, got Tanh."
    with pytest.raises(GraphLabError, match="no node named 'nowhere'"):
        explain_rules(graph, GELU_ERF, node="nowhere")


# ---- a user's rules file ---------------------------------------------------------------------

USER_RULES = textwrap.dedent('''
    from onnxscript.rewriter import pattern

    def double_neg(op, x):
        return op.Neg(op.Neg(x))

    def identity(op, x):
        return op.Identity(x)

    def broken_check(context, x, **_):
        raise ValueError("my check is broken")

    good = pattern.RewriteRule(double_neg, identity, name="DoubleNeg")
    broken = pattern.RewriteRule(double_neg, identity, broken_check, name="Broken")
    ''')


def _double_neg() -> bytes:
    graph = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["a"]), helper.make_node("Neg", ["a"], ["y"])], "negs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]
                             ).SerializeToString()


def test_a_rule_that_raises_is_reported_and_the_others_still_judged(tmp_path):
    rules = tmp_path / "my_rules.py"
    rules.write_text(USER_RULES)
    graph = load_model(_double_neg())
    report = explain_rules(graph, str(rules))
    verdicts = {v.name: v for v in report.rules}
    assert set(verdicts) == {"DoubleNeg", "Broken"}
    second_neg = graph.outputs[0].producer
    broken = verdicts["Broken"]
    assert broken.verdict == "raised" and "ValueError: my check is broken" in broken.error
    assert f"while trying node {second_neg.name!r}" in broken.error
    assert "my_rules.py, line" in broken.error
    [match] = verdicts["DoubleNeg"].matches
    assert match.root.id == second_neg.id
    assert verdicts["DoubleNeg"].source == f"{rules}:good[0]"
    [only] = explain_rules(graph, f"{rules}:good").rules
    assert only.name == "DoubleNeg" and len(only.matches) == 1


@pytest.mark.parametrize("spec,message", [
    ("", "no rules named"),
    ("not a module!", "neither a module name nor a .py file"),
    ("graphlab_no_such_module", "no module named 'graphlab_no_such_module'"),
    (f"{ORT_FUSIONS}.gelu:no_such_rules", "has no 'no_such_rules'"),
    (f"{ORT_FUSIONS}.gelu:math", "holds no onnxscript rewrite rule"),
    (f"{ORT_FUSIONS}.gelu:_SQRT_TWO", "is a float, not a rewrite rule"),
    ("missing_rules.py", "rules file 'missing_rules.py' not found"),
])
def test_bad_specs_are_clear_errors(spec, message):
    with pytest.raises(GraphLabError, match=message.replace("(", r"\(")):
        load_rules(spec)


def test_a_file_that_fails_to_import_names_its_line(tmp_path):
    rules = tmp_path / "bad_rules.py"
    rules.write_text("x = 1\nraise RuntimeError('no')\n")
    with pytest.raises(RulesLoadError, match=r"failed to import \(bad_rules.py, line 2\): "
                                             r"RuntimeError: no"):
        load_rules(str(rules))


def test_names_of_every_kind_give_their_rules():
    assert [n for n, _, _ in load_rules(f"{ORT_FUSIONS}.gelu:gelu_rules").entries()] == \
        ["GeluTanhFusion", "GeluErfFusion"]
    assert [n for n, _, _ in load_rules(f"{ORT_FUSIONS}.gelu:GeluErfFusion").entries()] == \
        ["GeluErfFusion"]                                       # a RewriteRuleClassBase
    matmul = load_rules(f"{ORT_FUSIONS}.fused_matmul_rule_sets:fused_matmul_rule_sets")
    assert len(list(matmul.entries())) == 14                    # a function returning a set
    whole = load_rules(ORT_FUSIONS)                              # a package, found by type
    sources = [s for _, s, _ in whole.entries()]
    assert len(sources) == len(set(sources))
    assert f"{ORT_FUSIONS}.gelu:gelu_rules[1]" in sources
    assert len({id(r) for _, _, r in whole.entries()}) == len(sources)   # each rule once


def test_without_onnxscript_the_message_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxscript", None)
    monkeypatch.setitem(sys.modules, "onnxscript.rewriter", None)
    with pytest.raises(GraphLabError, match=r'pip install "graphlab\[onnxscript\]"'):
        load_rules(ORT_FUSIONS)


# ---- the command line ------------------------------------------------------------------------

def _explain(capsys, *argv: str) -> tuple[int, str, str]:
    from graphlab.cli import main
    code = main(["explain", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_text_names_matches_closest_sites_and_failure_nodes(capsys, tmp_path):
    model = tmp_path / "gelu_tanh.onnx"
    model.write_bytes(_gelu_model(squash="Tanh"))
    code, out, _ = _explain(capsys, str(model), "--onnxscript-rules", GELU_ERF)
    assert code == 0
    assert out.splitlines()[1] == "  0 matched, 2 came close, 0 found no partial match, 0 raised"
    assert "  GeluErfFusion: 0 matches, 2 near misses" in out
    assert "      ✗ at Mul_4: no match: OpType mismatch: expected Erf, got Tanh." in out
    assert "          failed at  Tanh_1" in out
    assert "          matched    Mul_4, Mul_3, Add_2" in out


def test_cli_json_is_the_report_record(capsys):
    code, out, _ = _explain(capsys, "teach_gelu", "--onnxscript-rules", GELU_ERF, "--json")
    assert code == 0
    report = json.loads(out)["onnxscript_rules"]
    assert report["spec"] == GELU_ERF and report["summary"]["matched"] == 1
    erf = next(r for r in report["rules"] if r["name"] == "GeluErfFusion")
    assert erf["verdict"] == "matched" and len(erf["matches"]) == 1
    assert erf["matches"][0]["status"] == "matched"
    assert set(erf["matches"][0]) == {"status", "root", "score", "reason", "nodes", "failed_at",
                                      "failed_values", "blocking", "where"}


def test_cli_node_option_gives_each_rules_attempt_there(capsys, tmp_path):
    model = tmp_path / "gelu_tanh.onnx"
    model.write_bytes(_gelu_model(squash="Tanh"))
    code, out, _ = _explain(capsys, str(model), "--onnxscript-rules", GELU_ERF, "--node",
                            "Mul_4")
    assert code == 0
    assert "  GeluErfFusion:\n    ✗ at Mul_4: no match: OpType mismatch: expected Erf, got " \
           "Tanh." in out


@pytest.mark.parametrize("argv,message", [
    (["--onnxscript-rules", "graphlab_no_such_module"], "no module named"),
    (["--onnxscript-rules", GELU_ERF, "--pattern", "gelu"], "leave out --pattern"),
])
def test_cli_mistakes_are_one_line_errors(capsys, argv, message):
    code, out, err = _explain(capsys, "teach_gelu", *argv)
    assert code == 2 and out == ""
    assert message in err and len(err.splitlines()) == 1
