"""`graphlab edit` and `--edits` on compile, explain, roofline, memory and report: the real
commands, every kind of edit and every refusal (one line, exit status 2), and a near miss made
to fire from the command line."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest

from graphlab.cli import main

from edit_models import C, S, W, X, run, toy

FIX_CONV_BN = [{"edit": "delete", "node": "relu_side"}]


@pytest.fixture
def toy_path(tmp_path):
    path = tmp_path / "toy.onnx"
    onnx.save(toy(), path)
    return str(path)


def _edits_file(tmp_path, edits, name="edits.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(edits))
    return str(path)


def _json(capsys, argv):
    code = main(argv + ["--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


@pytest.mark.parametrize("edits, expect_y", [
    ([{"edit": "set_tensor", "name": "s", "value": 0.5}],
     lambda: np.maximum(X @ W + C, 0) * 0.5),
    ([{"edit": "set_tensor", "name": "c", "value": [0, 0, 0, 0]}],
     lambda: np.maximum(X @ W, 0) * S),
    ([{"edit": "insert", "op": "LeakyRelu", "on": "add", "consumers": ["relu"],
       "name": "leaky"},
      {"edit": "set_attribute", "node": "leaky", "name": "alpha", "value": 0.5}],
     lambda: np.maximum(np.where(X @ W + C > 0, X @ W + C, 0.5 * (X @ W + C)), 0) * S),
    ([{"edit": "bypass", "node": "relu"}], lambda: (X @ W + C) * S),
    ([{"edit": "rewire", "node": "scale_mul", "input": 1, "value": "c"}],
     lambda: np.maximum(X @ W + C, 0) * C),
    ([{"edit": "delete", "node": "side"}], lambda: np.maximum(X @ W + C, 0) * S),
    ([{"edit": "insert", "op": "Neg", "on": "relu_out"}], lambda: -np.maximum(X @ W + C, 0) * S),
    ([{"edit": "rename", "node": "relu", "to": "r"}, {"edit": "rename", "value": "add",
                                                      "to": "sum"}],
     lambda: np.maximum(X @ W + C, 0) * S),
])
def test_every_kind_of_edit_writes_a_model_that_computes_the_edit(capsys, tmp_path, toy_path,
                                                                  edits, expect_y):
    out = tmp_path / "out.onnx"
    code, record = _json(capsys, ["edit", toy_path, _edits_file(tmp_path, edits),
                                  "-o", str(out)])
    assert code == 0
    assert record["edits"] == edits and len(record["applied"]) == len(edits)
    assert record["output"] == str(out)
    np.testing.assert_allclose(run(onnx.load(out))["y"], expect_y(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("edits, words", [
    ([{"edit": "bypass", "node": "nope"}], "edit 1 (bypass): no node called 'nope'"),
    ([{"edit": "set_attribute", "node": "relu", "name": "alpha", "value": 1}],
     "edit 1 (set_attribute): Relu has no attribute 'alpha'"),
    ([{"edit": "set_tensor", "name": "w", "value": [1, 2]}],
     "edit 1 (set_tensor): tensor 'w': 2 values given for shape [4, 4]"),
    ([{"edit": "set_tensor", "name": "w", "value": 1, "shape": [3, 3]}],
     "edit 1 (set_tensor): the edited graph is not well typed"),
    ([{"edit": "rewire", "node": "mm", "input": 0, "value": "y"}],
     "edit 1 (rewire): it would make a cycle"),
    ([{"edit": "delete", "node": "relu"}], "edit 1 (delete): its output 'relu_out' is read"),
    ([{"edit": "insert", "op": "Nope", "on": "add"}], "edit 1 (insert): no op 'Nope'"),
    ([{"edit": "rename", "node": "relu", "to": "side"}],
     "edit 1 (rename): a node called 'side' exists already"),
    ([{"edit": "bypass", "node": "relu"}, {"edit": "bypass", "node": "relu"}],
     "edit 2 (bypass): no node called 'relu'"),
    ([{"edit": "unknown"}], "edit 1: unknown kind 'unknown'"),
    ({"edit": "bypass", "node": "relu"}, "must be a JSON list of edits"),
])
def test_every_refusal_is_one_line_and_exit_status_2(capsys, tmp_path, toy_path, edits, words):
    out = tmp_path / "out.onnx"
    code = main(["edit", toy_path, _edits_file(tmp_path, edits), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert words in err and err.count("\n") == 1, err
    assert not out.exists()   # nothing written, nothing half applied


def test_an_unreadable_edit_file_is_refused(capsys, tmp_path, toy_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[{'edit': 'bypass'}]")
    assert main(["edit", toy_path, str(bad)]) == 2
    assert "are not JSON" in capsys.readouterr().err
    assert main(["compile", toy_path, "--edits", str(tmp_path / "missing.json")]) == 2
    assert "cannot read edits from" in capsys.readouterr().err
    assert main(["edit", toy_path]) == 2
    assert "give an edit file" in capsys.readouterr().err


def test_edit_text_lists_the_edits_and_the_effect(capsys, tmp_path, toy_path):
    edits = _edits_file(tmp_path, [{"edit": "set_tensor", "name": "s", "value": 3}])
    assert main(["edit", toy_path, edits, "--effect"]) == 0
    out = capsys.readouterr().out
    assert "edit 1   set tensor s = 3" in out
    assert "effect    output y changes by up to" in out
    assert "nothing written" in out


def test_compile_with_edits_makes_the_declined_fusion_fire(capsys, tmp_path):
    _, plain = _json(capsys, ["compile", "teach_conv_bn"])
    _, edited = _json(capsys, ["compile", "teach_conv_bn", "--edits",
                               _edits_file(tmp_path, FIX_CONV_BN)])
    rewrites = {r["name"]: r["rewrites"] for r in plain["passes"]}
    after = {r["name"]: r["rewrites"] for r in edited["passes"]}
    assert after["fold_batchnorm"] == rewrites["fold_batchnorm"] + 1
    assert edited["edits"]["edits"] == FIX_CONV_BN
    assert "edits" not in plain
    assert main(["compile", "teach_conv_bn", "--edits", _edits_file(tmp_path, FIX_CONV_BN)]) == 0
    assert capsys.readouterr().out.startswith("edited    1 edit: delete relu_side (7 -> 6 nodes)")


def test_explain_roofline_memory_say_what_was_edited(capsys, tmp_path):
    edits = _edits_file(tmp_path, FIX_CONV_BN)
    _, explained = _json(capsys, ["explain", "teach_conv_bn", "--edits", edits])
    conv_bn = next(p for p in explained["patterns"] if p["name"] == "conv_bn")
    assert len(conv_bn["matches"]) == 2 and not conv_bn["near_misses"]
    assert explained["edits"]["applied"] == ["delete relu_side"]
    for command in ("roofline", "memory"):
        _, record = _json(capsys, [command, "teach_conv_bn", "--edits", edits])
        assert record["edits"]["nodes_after"] == 6, command
    assert main(["roofline", "teach_conv_bn", "--edits", edits]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("edited    1 edit")


def test_the_report_lists_the_edits(capsys, tmp_path):
    page = tmp_path / "report.html"
    assert main(["report", "teach_conv_bn", "--edits", _edits_file(tmp_path, FIX_CONV_BN),
                 "-o", str(page)]) == 0
    html = page.read_text()
    assert "Edits made to the model before the pipeline" in html
    assert "<li>delete relu_side</li>" in html and "edited first: 1 edit" in html


def test_suggest_offers_the_fix_and_applying_it_fires(capsys, tmp_path):
    code, record = _json(capsys, ["edit", "teach_gelu", "--suggest"])
    assert code == 0
    fix = next(s for s in record["suggestions"] if s["pass"] == "recognize_gelu")
    assert fix["edits"][0]["name"] == "gelu_wrongconst_sqrt2"
    assert fix["rewrites_after"] == fix["rewrites_before"] + 1
    assert fix["effect"]["changed"] and fix["effect"]["max_relative_change"] > 0.001
    edits = _edits_file(tmp_path, fix["edits"])
    _, compiled = _json(capsys, ["compile", "teach_gelu", "--edits", edits])
    gelu = next(p for p in compiled["passes"] if p["name"] == "recognize_gelu")
    assert gelu["rewrites"] == fix["rewrites_after"]
    assert main(["edit", "teach_gelu", "--suggest"]) == 0
    text = capsys.readouterr().out
    assert "fix: set tensor gelu_wrongconst_sqrt2 = 1.41421" in text
