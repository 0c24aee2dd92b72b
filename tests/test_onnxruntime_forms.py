"""Models in onnxruntime's own forms read as what they mean: GraphLab's `--runtime onnxruntime`
output and the model onnxruntime's optimizer makes (FusedMatMul for the scaled Q·Kᵀ, its Gelu,
QuickGelu, the contrib norms) explained with no warning and no near miss that mistakes an
operator for another domain's twin; onnxruntime's optimized BERT and GPT-2 fused by O2 through
its FusedMatMul and Gelu, lowered, and run at onnxruntime's default level."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from compiler_core.ir import FUSED_DOMAIN, load_model, to_bytes
from compiler_core.lowering import lower_for_onnxruntime
from compiler_core.passes import PassManager
from compiler_core.records import to_json
from compiler_core.runtime_check import onnxruntime_optimized, run_isolated_many
from compiler_core.verify import compare_outputs, make_inputs
from graphlab.cli import main
from graphlab.samples import resolve_model

SAMPLES = ("bert_tiny_op13", "gpt2_tiny")
MS = "com.microsoft"


@lru_cache(maxsize=None)
def _form(sample: str, form: str) -> bytes:
    """``sample`` as GraphLab writes it for onnxruntime ("graphlab") or as onnxruntime's
    optimizer writes it at its extended level ("onnxruntime")."""
    if form == "graphlab":
        source = load_model(resolve_model(sample))
        return to_bytes(lower_for_onnxruntime(PassManager("O2").run(source).final).graph)
    return onnxruntime_optimized(Path(resolve_model(sample)).read_bytes(), "extended")


def _explained(path, capsys) -> tuple[list[dict], str]:
    assert main(["explain", str(path), "--all-sites", "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    return [(p["name"], m) for p in report["patterns"] for m in p["near_misses"]], captured.err


@pytest.mark.parametrize("form", ["graphlab", "onnxruntime"])
@pytest.mark.parametrize("sample", SAMPLES)
def test_explain_reads_onnxruntime_forms_with_no_warning_and_no_false_near_miss(
        sample, form, tmp_path, capsys):
    path = tmp_path / f"{sample}_{form}.onnx"
    path.write_bytes(_form(sample, form))
    graph = load_model(path.read_bytes())
    assert any(n.domain == MS for n in graph.nodes)   # the forms hold onnxruntime's ops
    domain_of = {n.name: n.domain for n in graph.nodes}
    near_misses, warnings = _explained(path, capsys)
    assert warnings == ""
    assert near_misses
    for pattern, miss in near_misses:
        # a pattern that anchors at one of onnxruntime's operators takes it as what it means
        # (an activation, ...) and fails further on, or not at all
        assert domain_of.get(miss["site"]) != MS or miss["failed_node"] != miss["site"], (
            pattern, miss["site"], miss["reason"])
        # nor is one the pattern accepts in another domain ("expected Gelu, found ...Gelu")
        found = miss["found"]
        if found.startswith(MS + "."):
            assert found.split(".")[-1] not in miss["expected"], (pattern, miss["reason"])


@pytest.mark.parametrize("sample", SAMPLES)
def test_onnxruntime_optimized_models_fuse_through_its_fused_matmul_and_gelu(sample):
    source = load_model(_form(sample, "onnxruntime"))
    assert source.nodes_of_type("FusedMatMul", MS)       # the scaled Q·Kᵀ
    final = PassManager("O2", check=True).run(source).final
    fused = final.nodes_of_type("Attention", FUSED_DOMAIN)
    assert len(fused) == 2
    for node in fused:
        (product,) = [n for n in node.body.nodes if n.op_type == "FusedMatMul"]
        assert node.attrs["scale"] == pytest.approx(product.attrs["alpha"])
    if sample == "bert_tiny_op13":   # onnxruntime's Gelu after MatMul + bias
        gelus = [n for n in final.nodes if n.op_type == "FusedMatMulBias"
                 and n.attrs.get("activation") == "Gelu"]
        assert len(gelus) == len(source.nodes_of_type("Gelu", MS)) == 2
    lowering = lower_for_onnxruntime(final)
    lowering.graph.check()
    lowered = [r for r in lowering.nodes if r.result == MS + ":Attention"]
    assert lowered   # BERT's second layer leaves its head count unknown, so it stays inline
    inputs = make_inputs(source)
    original, rewritten = run_isolated_many(
        [(to_bytes(source), [inputs]), (to_bytes(lowering.graph), [inputs])], level="all")
    assert original.ok and rewritten.ok, (original.describe(), rewritten.describe())
    report = compare_outputs(original.outputs[0], rewritten.outputs[0])
    assert report.ok, to_json(report)
