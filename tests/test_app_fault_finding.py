"""The app's fault-finding builds on real models: a comparison's first wrong value lands on the
panes' node that reads a changed weight; the error overlay paints the panes by band; a pass
whose model onnxruntime refuses is reduced to the nodes it refuses, which open as a model of
their own and still fail in onnxruntime."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from compiler_core.errors import GraphLabError
from compiler_core.plugins import load_plugins
from compiler_core.runtime_check import run_isolated
from graphlab.app import AppConfig
from graphlab.app.error_heat import ERROR_BANDS, NOT_COMPARABLE, band_of
from graphlab.app.fault_jobs import (keep_wrong_values, reduce_crash_job, wrong_values_job)
from graphlab.app.numeric_check import check_step
from graphlab.app.pane_payload import UiState, build_panes
from graphlab.app.services import Services
from graphlab.app.view_state import ViewState
from graphlab.samples import resolve_model

PLUGINS = os.path.join(os.path.dirname(__file__), "broken_passes.py")
load_plugins([PLUGINS], entry_points_too=False)
BROKEN = next(module for name, module in sys.modules.items()
              if name.startswith("graphlab_plugin_broken_passes"))
MODEL = "bert_tiny_op13"
WEIGHT = "bert.encoder.layer.0.attention.self.key.bias"   # read by one Add


@pytest.fixture
def services(tmp_path):
    return Services.from_config(AppConfig(cache_dir=str(tmp_path / "cache")))


def test_a_comparison_finds_the_node_that_reads_the_changed_weight(services):
    model = onnx.load(resolve_model(MODEL))
    weight = next(t for t in model.graph.initializer if t.name == WEIGHT)
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) * 2 + 0.5, WEIGHT))
    upload = services.workbench.sessions.save_upload("changed.onnx", model.SerializeToString())
    state = ViewState(model=MODEL, versus="upload")
    job = services.workspace_job(state, None, upload.token)
    workspace = services.workbench.built(job)
    builds = services.workbench.builds
    found = builds.get(wrong_values_job(builds, job, workspace, 0))

    before, after = workspace.graphs_of_step(0)
    reader = next(n for n in before.nodes if any(v is not None and v.name == WEIGHT
                                                 for v in n.inputs))
    assert found.first_node == reader.id
    first = found.report.first
    changed = next(i for i in first.inputs if i.a == WEIGHT)
    assert changed.diverged and "changed" in changed.note
    assert all(not i.diverged for i in first.inputs if i.a != WEIGHT)
    # every node before it in A's order agrees; on B's side the partner is the same node id
    errors_a, errors_b = found.node_errors("a"), found.node_errors("b")
    assert errors_b[reader.id] == errors_a[reader.id] > found.report.rtol
    order = [n.id for n in before.nodes]
    assert all(errors_a.get(i, 0) <= found.report.rtol for i in order[:order.index(reader.id)]
               if before.node_by_id(i).op_type != "Constant")


def test_the_error_overlay_paints_both_panes_by_band(services):
    state = ViewState(model=MODEL, pipeline=f"dce,{BROKEN.ChangeOneConstant.name}", step=1)
    job = services.workspace_job(state, None)
    workspace = services.workbench.built(job)
    builds = services.workbench.builds
    found = builds.get(wrong_values_job(builds, job, workspace, 1))
    plain = build_panes(workspace, state.with_changes(overlay="error"), UiState(frozenset()))
    assert not any("err-" in e.get("classes", "") for e in plain.after)   # not found yet

    keep_wrong_values(workspace, 1, found)
    ui = UiState(expanded=frozenset(workspace.scopes.groups))
    painted = build_panes(workspace, state.with_changes(overlay="error"), ui)
    broken = workspace.result.graph_before(1).node_by_name(BROKEN.CHANGED_ADD).id
    for elements in (painted.before, painted.after):
        classes = {e["data"].get("node_id"): e.get("classes", "") for e in elements
                   if e["data"].get("kind") == "node"}
        assert "err-3" in classes[broken]
        wrong = [i for i, c in classes.items() if "err-3" in c or "err-inf" in c]
        assert wrong and len(wrong) < len(classes) / 2   # the error starts late in the model


def test_bands_follow_the_tolerance():
    rtol = 1e-4
    assert [band_of(x * rtol, rtol).css_class for x in (0, 1e-4, 0.05, 0.5, 1.0, 7.0)] == \
        ["err-0", "err-0", "err-1", "err-2", "err-3", "err-3"]
    assert band_of(math.inf, rtol) is NOT_COMPARABLE
    assert len({band.fill for band, _ in ERROR_BANDS}) == len(ERROR_BANDS)


def test_a_pass_model_onnxruntime_refuses_is_reduced_and_opens_as_its_own_model(services):
    state = ViewState(model=MODEL, pipeline=BROKEN.Float64ReluClip.name)
    job = services.workspace_job(state, None)
    workspace = services.workbench.built(job)
    check = check_step(workspace, 0)
    assert check.runtime.outcome.stage == "load"
    builds = services.workbench.builds
    reduced = builds.get(reduce_crash_job(builds, job, workspace, 0, "load", "all"))
    assert reduced.record["nodes_before"] > 250
    assert reduced.record["nodes_after"] <= 5
    assert {"Relu", "Clip"} <= set(reduced.record["ops"])

    source = services.workbench.source(reduced.name)   # opens by its name, like an upload
    graph = source.load()
    assert len(graph) == reduced.record["nodes_after"]
    small = onnx.load_from_string(reduced.data)
    feed = {i.name: np.random.default_rng(0).standard_normal(
        [d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
        for i in small.graph.input}
    outcome = run_isolated(reduced.data, [feed], level="all")
    assert outcome.stage == "load" and "Clip" in outcome.error
    assert run_isolated(reduced.data, [feed], level="disabled").ok
    assert "onnxruntime" in reduced.script and "Clip" in reduced.script


def test_a_name_that_is_no_reduction_is_refused(services):
    with pytest.raises(GraphLabError, match="no longer kept"):
        services.workbench.source("reduced-" + "0" * 64)
