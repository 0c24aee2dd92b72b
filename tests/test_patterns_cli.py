"""`graphlab explain`: readable text, the report JSON, and one-line errors."""

from __future__ import annotations

import json

import pytest

from graphlab.cli import main
from passes_helpers import o2_position

REPORT_KEYS = {"name", "description", "matches", "near_misses", "reasons", "pass", "graph",
               "rewritten", "declines"}
MISS_KEYS = {"site", "score", "path", "part", "expected", "found", "reason", "blocking_node",
             "matched_nodes", "failed_node", "alternatives"}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["explain", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_text_groups_near_misses_by_reason_with_expected_and_found(capsys):
    code, out, _ = run(capsys, "teach_conv_bn")
    assert code == 0
    assert "conv_bn: 1 match, 1 near miss" in out
    assert "✓ bn_good  (with conv_good)" in out
    assert "✗ 1 site: Conv output has another consumer (Relu 'relu_side')" in out
    assert "at bn_shared (score 0.88): BatchNormalization ← input 0: Conv" in out
    assert "found    2 consumers, Relu 'relu_side' outside the match" in out
    last = out.rstrip().splitlines()[-1]
    assert last.startswith("no match and no near miss: ") and "--all-sites lists them" in last


def test_node_option_shows_every_branch(capsys):
    code, out, _ = run(capsys, "teach_gelu", "--pattern", "gelu", "--node", "gelu_wrongconst_div")
    assert code == 0
    assert "expected constant ≈ 1.41421 (±0.0001)" in out and "found    constant 1.5" in out
    assert "or: Add input 0: expected Tanh, found Erf" in out


def test_json_is_the_report_record(capsys):
    """Each pattern judged where its pass meets it: fuse_linear_bias_act's first rule takes the
    MatMul + constant bias and the Relu after it; its matmul_add rule
    then sees only the Add of a graph input, a near miss the pass declines."""
    code, out, _ = run(capsys, "teach_matmul_bias", "--pattern", "matmul_bias_act",
                       "--pattern", "matmul_add", "--json")
    assert code == 0
    data = json.loads(out)
    fused, report = data["patterns"]
    assert set(report) == REPORT_KEYS
    assert fused["name"] == "matmul_bias_act" and fused["pass"] == "fuse_linear_bias_act"
    assert fused["matches"][0]["root"] == "relu" and fused["matches"][0]["rewritten"]
    assert "add_bias_good" in fused["matches"][0]["nodes"]
    assert report["graph"]["pass"] == "fuse_linear_bias_act"
    assert report["graph"]["description"].startswith(
        f"the graph pass {o2_position('fuse_linear_bias_act')} of O2 "
        f"(fuse_linear_bias_act) receives")
    [miss] = report["near_misses"]
    assert set(miss) == MISS_KEYS
    assert miss["site"] == "add_inputbias" and miss["failed_node"] == "add_inputbias"
    assert report["reasons"] == {"Add input 1: expected constant, found graph input 'bias'": 1}
    [decline] = report["declines"]
    assert decline["site"] == "add_inputbias" and "graph input 'bias'" in decline["reason"]


@pytest.mark.parametrize("argv,message", [
    (["teach_gelu", "--pattern", "gelu_fast"], "unknown pattern 'gelu_fast'"),
    (["teach_gelu", "--node", "nowhere"], "no node named 'nowhere'"),
])
def test_mistakes_are_one_line_errors(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("graphlab: error: ") and message in err and len(err.splitlines()) == 1
