"""`graphlab.edit(model)` in a notebook: a chain of edits, each checked, read as a model by
every API, with its edits as data."""

from __future__ import annotations

import json

import pytest

import graphlab
from compiler_core.errors import EditError
from graphlab.cli import main


def _rewrites(result, pass_name):
    return next(s.rewrites for s in result.snapshots if s.pass_name == pass_name)


def test_an_editor_is_a_model_to_compile_and_gives_its_edits_as_data(tmp_path, capsys):
    editor = graphlab.edit("teach_conv_bn").delete("relu_side")
    assert _rewrites(graphlab.compile(editor), "fold_batchnorm") == \
        _rewrites(graphlab.compile("teach_conv_bn"), "fold_batchnorm") + 1
    assert editor.edits == [{"edit": "delete", "node": "relu_side"}]
    path = tmp_path / "edits.json"
    path.write_text(json.dumps(editor.edits))           # the same edits, for the CLI
    assert main(["compile", "teach_conv_bn", "--edits", str(path), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert _rewrites(graphlab.compile(editor), "fold_batchnorm") == next(
        p["rewrites"] for p in record["passes"] if p["name"] == "fold_batchnorm")
    assert graphlab.diff("teach_conv_bn", editor).only_a   # diff takes it too


def test_each_call_is_checked_and_returns_a_new_editor():
    start = graphlab.edit("teach_gelu")
    fixed = start.set_tensor("gelu_wrongconst_sqrt2", 2 ** 0.5)
    assert start.edits == [] and len(fixed.edits) == 1
    with pytest.raises(EditError, match=r"edit 2 \(bypass\): no node called 'nope'"):
        fixed.bypass("nope")
    assert fixed.effect().changed
    assert "1 edits" in repr(fixed) and "set tensor gelu_wrongconst_sqrt2" in repr(fixed)
    assert not any(s.pass_name == "recognize_gelu" for s in fixed.suggest())


def test_edits_given_as_data():
    editor = graphlab.edit("teach_conv_bn", [{"edit": "delete", "node": "relu_side"}])
    assert editor.record.nodes_after == 6


def test_save_writes_the_edited_model(tmp_path):
    out = tmp_path / "fixed.onnx"
    graphlab.edit("teach_conv_bn").delete("relu_side").save(str(out))
    assert _rewrites(graphlab.compile(str(out)), "fold_batchnorm") == 2
