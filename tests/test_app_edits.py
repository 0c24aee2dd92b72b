"""The app's edits without a browser: the view carries them in its URL within limits, an edited
model is a source of its own (built like any other, keyed by its edits), the inspector knows
what a node offers to edit, and the suggestion build finds the fix."""

from __future__ import annotations

import json

import onnx
import pytest

from compiler_core.errors import EditError
from graphlab.app.config import AppConfig
from graphlab.app.model_edits import (MAX_VIEW_EDITS, MAX_VIEW_EDITS_CHARS, EditedSource,
                                      editable_node, edited_source, edits_text,
                                      read_typed_value, read_view_edits, suggestion_job,
                                      with_edits, without_edit)
from graphlab.app.panels.registry import tab_names
from graphlab.app.services import Services
from graphlab.app.view_state import ViewState, from_query, to_query, with_patch

FIX = '[{"edit":"delete","node":"relu_side"}]'


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    return Services.from_config(AppConfig(cache_dir=str(tmp_path_factory.mktemp("sessions"))))


def _rewrites(workspace, name: str) -> int:
    return next(s.rewrites for s in workspace.result.snapshots if s.pass_name == name)


def test_the_edits_round_trip_through_the_url_and_a_new_model_drops_them():
    default = ViewState(model="cnn_bn")
    state = ViewState(model="teach_conv_bn", step=16, edits=FIX)
    query = to_query(state, default)
    assert "edits=" in query
    assert from_query(query, default, tab_names()).edits == FIX
    patched = with_patch(state, {"edits": with_edits(FIX, {"edit": "bypass", "node": "x"})})
    assert patched.step == 16 and len(read_view_edits(patched.edits)) == 2   # same pass
    too_long = "x" * (2 * MAX_VIEW_EDITS_CHARS + 1)
    assert with_patch(state, {"edits": too_long}).edits == FIX   # refused whole, not cut
    reduced = with_patch(state, {"model": "reduced-abc"}, tab_names())
    assert reduced.edits == ""


def test_the_view_list_is_data_within_limits():
    assert read_view_edits("") == []
    assert without_edit(with_edits(FIX, {"edit": "bypass", "node": "a"}), 0) == \
        '[{"edit":"bypass","node":"a"}]'
    with pytest.raises(EditError, match="not JSON"):
        read_view_edits("[{")
    with pytest.raises(EditError, match="unknown kind 'exec'"):
        with_edits("", {"edit": "exec", "code": "import os"})
    many = [{"edit": "bypass", "node": f"n{i}"} for i in range(MAX_VIEW_EDITS + 1)]
    with pytest.raises(EditError, match="more than"):
        read_view_edits(json.dumps(many, separators=(",", ":")))
    assert edits_text([]) == ""
    assert read_typed_value("[-1]", "axes") == [-1]
    assert read_typed_value("SAME_UPPER", "auto_pad") == "SAME_UPPER"
    with pytest.raises(EditError, match="cannot read"):
        read_typed_value("1.51.4", "value")


def test_an_edited_model_is_its_own_source_and_its_build_fires_the_fold(services):
    plain = ViewState(model="teach_conv_bn")
    edited = plain.with_changes(edits=FIX)
    source = services.workbench.source("teach_conv_bn")
    made = edited_source(source, FIX)
    assert isinstance(made, EditedSource) and made.digest != source.digest
    assert edited_source(source, "") is source
    assert made.label == "teach_conv_bn (1 edit)"
    assert "relu_side" not in {n.name for n in made.load().nodes}
    before = services.workspace(plain, None)
    after = services.workspace(edited, None)
    assert before.key != after.key
    assert _rewrites(after, "fold_batchnorm") == _rewrites(before, "fold_batchnorm") + 1
    downloaded = onnx.load_from_string(made.original_bytes())
    assert "relu_side" not in {n.name for n in downloaded.graph.node}


def test_the_inspector_offers_a_nodes_attributes_constants_and_inputs(services):
    workspace = services.workspace(ViewState(model="teach_gelu"), None)
    div = workspace.result.initial.node_by_name("gelu_wrongconst_div")
    node = editable_node(workspace, div.id)
    assert node.name == "gelu_wrongconst_div" and node.op_type == "Div"
    constant = node.inputs[1]
    assert constant.constant and constant.value == "gelu_wrongconst_sqrt2"
    assert constant.shown == "1.5"
    assert not node.inputs[0].constant
    layernorm = services.workspace(ViewState(model="teach_layernorm"), None)
    mean = layernorm.result.initial.node_by_name("ln_wrongaxis_mean")
    assert ("axes", "[1]") in editable_node(layernorm, mean.id).attributes
    fused = next(i for s in workspace.result.snapshots for i in s.diff.added)
    assert "made this node" in editable_node(workspace, fused)


def test_the_suggestion_build_tries_the_fix(services):
    source = services.workbench.source("teach_gelu")
    job = suggestion_job(source, "", "O2", {}, "gelu_wrongconst_half_mul")
    assert job.key != suggestion_job(source, FIX, "O2", {}, "gelu_wrongconst_half_mul").key
    found = services.workbench.built(job)
    [fix] = [s for s in found if s.pass_name == "recognize_gelu"]
    assert fix.edits[0].name == "gelu_wrongconst_sqrt2"
    assert fix.rewrites_after == fix.rewrites_before + 1 and fix.effect.changed
