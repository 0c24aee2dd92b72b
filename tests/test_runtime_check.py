"""The runtime check runs onnxruntime in a child: a crash there is an answer, not our death."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler_core.runtime_check import LEVELS, run_isolated, run_isolated_many


def _layernorm_model(inputs: list[str]) -> bytes:
    """LayerNormalization with the given input names (an empty name = optional input left out)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])
    scale = numpy_helper.from_array(np.linspace(0.5, 1.5, 8, dtype=np.float32), "scale")
    node = helper.make_node("LayerNormalization", inputs, ["y"], axis=-1)
    model = helper.make_model(helper.make_graph([node], "ln", [x], [y], [scale]),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


BATCH = {"x": np.arange(16, dtype=np.float32).reshape(2, 8)}


def test_a_trailing_empty_optional_input_crashes_onnxruntime_optimizer_and_we_survive():
    """onnxruntime's LayerNorm fusion dereferences the empty bias name: SIGSEGV at EXTENDED.

    This is the minimal reproduction of the crash users hit with GraphLab's earlier output;
    if onnxruntime fixes it, this test says so (and the exporter's workaround stays harmless).
    """
    crashed = run_isolated(_layernorm_model(["x", "scale", ""]), [BATCH], level="all")
    assert crashed.stage == "crash"
    assert "SIGSEGV" in crashed.error
    assert "crashes onnxruntime at ORT_ENABLE_ALL" in crashed.describe()
    assert run_isolated(_layernorm_model(["x", "scale", ""]), [BATCH], level="disabled").ok


@pytest.mark.parametrize("level", list(LEVELS))
def test_the_canonical_form_loads_and_runs_at_every_level(level):
    outcome = run_isolated(_layernorm_model(["x", "scale"]), [BATCH], level=level)
    assert outcome.ok, outcome.describe()
    row = BATCH["x"][0]
    expected = (row - row.mean()) / np.sqrt(row.var() + 1e-5) * np.linspace(0.5, 1.5, 8)
    np.testing.assert_allclose(outcome.outputs[0]["y"][0], expected, rtol=1e-4)


def test_load_and_run_failures_are_reported_with_onnxruntime_message():
    broken = onnx.ModelProto()
    broken.ParseFromString(_layernorm_model(["x", "scale"]))
    broken.graph.node[0].op_type = "NoSuchOp"
    outcome = run_isolated(broken.SerializeToString(), [BATCH])
    assert outcome.stage == "load" and "NoSuchOp" in outcome.error
    wrong = run_isolated(_layernorm_model(["x", "scale"]), [{"x": np.zeros((3, 8), np.int64)}])
    assert wrong.stage == "run" and "x" in wrong.error


def test_unknown_level_is_refused_with_the_names():
    with pytest.raises(ValueError, match="disabled, basic, extended, all"):
        run_isolated(b"", level="fast")


def test_many_models_share_a_child_and_a_crash_ends_only_its_own_job():
    good, crashing = _layernorm_model(["x", "scale"]), _layernorm_model(["x", "scale", ""])
    outcomes = run_isolated_many([(good, [BATCH]), (crashing, [BATCH]), (good, [BATCH]),
                                  (good, None)], level="all")
    assert [o.stage for o in outcomes] == ["ran", "crash", "ran", "ran"]
    assert "SIGSEGV" in outcomes[1].error
    np.testing.assert_array_equal(outcomes[0].outputs[0]["y"], outcomes[2].outputs[0]["y"])
    assert outcomes[3].outputs == []
