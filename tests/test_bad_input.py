"""Every kind of malformed model is refused with one clear line: what, where, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import bad_models
from compiler_core.errors import GraphLabError, InvalidGraphError, ModelLoadError
from compiler_core.ir import load_model
from compiler_core.records import to_json

CASES = {
    # name: (model builder, words the message must contain)
    "cycle": (bad_models.cycle, ["cycle", "relu_"]),
    "undefined_input": (bad_models.undefined_input, ["add_ghost", "'ghost'", "produces"]),
    "duplicate_output": (bad_models.duplicate_output, ["'y'", "first", "second"]),
    "missing_graph_output": (bad_models.missing_graph_output, ["graph output", "'nowhere'"]),
    "initializer_mismatch": (bad_models.initializer_mismatch,
                             ["'weights'", "[4, 4]", "12 bytes"]),
    "absolute_external": (lambda: bad_models.external("/etc/passwd"),
                          ["absolute", "/etc/passwd", "refused"]),
    "escaping_external": (lambda: bad_models.external("../../secret.bin"),
                          ["outside", "../../secret.bin", "refused"]),
    "huge_tensor": (bad_models.huge_tensor, ["'enormous'", "more than"]),
    "no_op_type": (bad_models.no_op_type, ["'blank'", "no op type"]),
    "wrong_attribute_type": (bad_models.wrong_attribute_type,
                             ["'flip'", "'perm'", "FLOATS", "INTS"]),
    "no_outputs": (bad_models.no_outputs, ["no graph outputs"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_library_raises_a_named_error(case, tmp_path):
    builder, words = CASES[case]
    path = bad_models.write(builder(), str(tmp_path), f"{case}.onnx")
    with pytest.raises(GraphLabError) as info:
        load_model(path)
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message, f"{word!r} missing from: {message}"
    assert isinstance(info.value, (ModelLoadError, InvalidGraphError))


def _run_cli(*args):
    return subprocess.run([sys.executable, "-m", "graphlab", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("case", ["cycle", "undefined_input", "escaping_external"])
def test_cli_prints_one_line_and_exits_2(case, tmp_path):
    builder, words = CASES[case]
    path = bad_models.write(builder(), str(tmp_path), f"{case}.onnx")
    result = _run_cli("info", path)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("graphlab: error:"), result.stderr
    assert "Traceback" not in result.stderr
    assert words[0] in lines[0]


def test_not_an_onnx_file(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_text("these are my lecture notes, not a model\n")
    result = _run_cli("info", str(path))
    assert result.returncode == 2
    assert "is not an ONNX file" in result.stderr and str(path) in result.stderr


def test_truncated_file(tmp_path):
    data = bad_models.good_bytes()
    path = bad_models.write(data[: len(data) // 2], str(tmp_path), "truncated.onnx")
    result = _run_cli("info", path)
    assert result.returncode == 2
    assert "truncated or corrupt" in result.stderr
    assert result.stderr.count("\n") == 1


def test_empty_file(tmp_path):
    path = bad_models.write(b"", str(tmp_path), "empty.onnx")
    with pytest.raises(ModelLoadError, match="empty"):
        load_model(path)


def test_missing_file_and_unknown_sample():
    result = _run_cli("info", "no_such_model_or_sample")
    assert result.returncode == 2
    assert "neither a file nor a sample name" in result.stderr
    assert "cnn_bn" in result.stderr  # the message lists the samples to choose from


def test_external_data_inside_the_model_directory_loads(tmp_path):
    import numpy as np

    (tmp_path / "weights.bin").write_bytes(np.array([1.5, -2.0], np.float32).tobytes())
    path = bad_models.write(bad_models.external("weights.bin"), str(tmp_path), "ok.onnx")
    graph = load_model(path)
    assert graph.initializers["weights"].const.tolist() == [1.5, -2.0]


def test_external_data_file_too_short(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"\x00" * 4)
    path = bad_models.write(bad_models.external("weights.bin"), str(tmp_path), "short.onnx")
    with pytest.raises(ModelLoadError, match="has only 4"):
        load_model(path)


def test_external_data_refused_before_opening(tmp_path, monkeypatch):
    opened = []
    real_open = open

    def spy(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    path = bad_models.write(bad_models.external("/etc/hostname"), str(tmp_path), "abs.onnx")
    monkeypatch.setattr("builtins.open", spy)
    with pytest.raises(ModelLoadError):
        load_model(path)
    assert not any("hostname" in p for p in opened)


def test_custom_domain_op_loads_as_opaque_with_warning(tmp_path):
    path = bad_models.write(bad_models.custom_op(), str(tmp_path), "custom.onnx")
    graph = load_model(path)
    node = graph.node_by_name("fancy")
    assert node.domain == "com.example" and node.op_type == "FancyOp"
    assert any("com.example.FancyOp" in w and "opaque" in w for w in graph.warnings)
    result = _run_cli("info", path, "--json")
    assert result.returncode == 0
    assert "com.example.FancyOp" in result.stderr
    assert '"com.example.FancyOp": 1' in result.stdout


def test_bytes_with_external_data_are_refused():
    data = bad_models.external("weights.bin").SerializeToString()
    with pytest.raises(ModelLoadError, match="given as bytes"):
        load_model(data)


def test_library_errors_carry_where(tmp_path):
    path = bad_models.write(bad_models.undefined_input(), str(tmp_path), "u.onnx")
    with pytest.raises(ModelLoadError) as info:
        load_model(path)
    assert info.value.where == "add_ghost"
    assert to_json(info.value.record())["error"] == "ModelLoadError"


def test_environment_is_clean_of_debug_flag():
    assert "GRAPHLAB_DEBUG" not in os.environ


def test_inconsistent_shapes_load_with_a_warning_that_names_the_op(tmp_path):
    graph = load_model(bad_models.inconsistent_shapes().SerializeToString())
    assert any("inconsistent" in w and "MatMul" in w and "Incompatible dimensions" in w
               for w in graph.warnings), graph.warnings


def test_a_scikit_learn_scaler_in_front_of_standard_ops_is_not_called_inconsistent():
    """onnx types no ai.onnx.ml Scaler output, so its strict inference fails on the Sub
    after it ("expected to have type but instead is null"): skl2onnx writes such pipelines,
    and onnxruntime runs them. GraphLab's rule types the Scaler and the check passes."""
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Scaler", ["x"], ["scaled"], name="scaler", domain="ai.onnx.ml",
                          offset=[0.5, 0.5, 0.5], scale=[2.0, 2.0, 2.0]),
         helper.make_node("Sub", ["scaled", "mean"], ["y"], name="sub")],
        "pipeline", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.ones(3, np.float32), "mean")]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)])
    graph = load_model(model.SerializeToString())
    assert graph.warnings == []
    assert graph.values["y"].shape == ("n", 3)
    assert graph.values["y"].elem_type == TensorProto.FLOAT


def test_a_model_without_an_onnx_opset_is_read_with_a_stated_one():
    model = bad_models.good_bytes()
    proto = onnx.load_from_string(model)
    del proto.opset_import[:]
    graph = load_model(proto.SerializeToString())
    assert graph.warnings == ["the model imports no ai.onnx opset: its ops are read as opset 18"]


def test_a_dim_written_as_minus_one_is_an_unknown_size(tmp_path):
    """-1 is no size: read as unknown, it gets a name, and compile runs the model at a size
    it chooses (it crashed making inputs of size -1)."""
    graph = load_model(bad_models.minus_one_dim().SerializeToString())
    (x,) = graph.inputs
    assert x.shape[0] is None or isinstance(x.shape[0], str), x.shape
    assert x.shape[1] == 3
    path = bad_models.write(bad_models.minus_one_dim(), str(tmp_path), "minus_one.onnx")
    done = _run_cli("compile", path, "--verify", "-o", str(tmp_path / "out.onnx"))
    assert done.returncode == 0, done.stderr
    assert "outputs match the input model's" in done.stdout, done.stdout
    written = onnx.load(str(tmp_path / "out.onnx")).graph.input[0].type.tensor_type.shape.dim
    assert written[0].dim_value >= 0 and written[1].dim_value == 3
