"""Every file GraphLab writes is valid: past protobuf's 2 GiB limit the weights go to an
external data file, and a write that would break the limit anyway is refused, leaving nothing.

The mechanism is tested with the limit lowered; one test writes a real model over 2 GiB.
"""

from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from compiler_core.errors import ModelLoadError
from compiler_core.ir import (Graph, Value, load_model, model_file, model_limits, save_model,
                              to_bytes)
from compiler_core.ir.importer import parse_model_bytes
from compiler_core.ir.model_limits import ModelTooLargeError
from passes_helpers import F, build, load_sample, tensor


def _run(path, feed: dict) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]).run(
        None, feed)


@pytest.fixture
def small_limit(monkeypatch):
    """A 128 KiB 'protobuf limit': a 330 KB sample (70 KB of structure, 260 KB of weights)
    is a model too big for one file."""
    for module in (model_file, model_limits):
        monkeypatch.setattr(module, "PROTOBUF_LIMIT", 128 * 1024)


def _image() -> dict:
    return {"image": np.random.default_rng(0).standard_normal((1, 3, 64, 64), np.float32)}


def test_requested_external_data_round_trips_through_graphlab_and_onnxruntime(tmp_path):
    graph = load_sample("mobilenet_zeropad")
    saved = save_model(graph, tmp_path / "m.onnx", external_data=True)
    single = tmp_path / "single.onnx"
    whole = save_model(graph, single)
    assert saved.data_path == str(tmp_path / "m.onnx.data") and saved.data_bytes > 200_000
    assert (tmp_path / "m.onnx").stat().st_size == saved.model_bytes < whole.model_bytes / 3
    np.testing.assert_array_equal(_run(tmp_path / "m.onnx", _image())[0],
                                  _run(single, _image())[0])
    again = load_model(tmp_path / "m.onnx")
    assert sorted(again.initializers) == sorted(graph.initializers)


def test_too_big_for_one_file_goes_to_external_data_by_itself(tmp_path, small_limit):
    saved = save_model(load_sample("mobilenet_zeropad"), tmp_path / "m.onnx")
    assert saved.data_path is not None and saved.model_bytes < 128 * 1024
    assert "its weights in" in saved.describe()
    assert _run(tmp_path / "m.onnx", _image())[0].shape == (1, 10)


def test_a_single_file_past_the_limit_is_refused_and_nothing_is_left(tmp_path, small_limit):
    with pytest.raises(ModelTooLargeError, match="over protobuf's 2 GiB limit"):
        save_model(load_sample("mobilenet_zeropad"), tmp_path / "m.onnx", external_data=False)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ModelTooLargeError, match="no ONNX reader could parse it"):
        to_bytes(load_sample("mobilenet_zeropad"))


def test_a_structure_too_big_even_without_weights_is_refused(tmp_path, monkeypatch):
    for module in (model_file, model_limits):
        monkeypatch.setattr(module, "PROTOBUF_LIMIT", 2_000)
    nodes = [helper.make_node("Relu", [f"v{i}"], [f"v{i + 1}"], name=f"relu_with_a_long_name_{i}")
             for i in range(40)]
    graph = build(nodes, [tensor("v0", F, [2])], [tensor("v40", F, [2])])
    with pytest.raises(ModelTooLargeError, match="structure itself"):
        save_model(graph, tmp_path / "m.onnx", external_data=True)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ModelTooLargeError, match="no ONNX reader could parse it"):
        to_bytes(graph)  # measured, not estimated from the weights (it has none)


def test_an_oversized_file_that_does_not_parse_is_blamed_on_the_limit(monkeypatch):
    from compiler_core.ir import importer

    monkeypatch.setattr(importer, "PROTOBUF_LIMIT", 16)
    with pytest.raises(ModelLoadError, match="over protobuf's 2 GiB limit.*external data"):
        parse_model_bytes(b"\x08\x07" + b"\xff" * 64, "big.onnx")


@pytest.mark.slow
def test_a_real_model_over_2_gib_is_written_with_external_data_and_runs(tmp_path):
    """2.15 GB of weights: zero pages cost no memory until written; a few rows carry data."""
    rows, width = 525_000, 1024
    table = np.zeros((rows, width), np.float32)
    table[-2:] = np.arange(2 * width, dtype=np.float32).reshape(2, width)
    graph = Graph("big")  # built in the IR: onnx.helper would need one 2 GiB message
    ids = graph.add_input(Value("ids", TensorProto.INT64, (2,)))
    graph.add_node("Gather", [graph.add_initializer("table", table), ids],
                   [Value("y", TensorProto.FLOAT, (2, width))], name="lookup")
    graph.set_outputs([graph.values["y"]])
    graph.opset_imports = {"": 17}
    del table
    try:
        saved = save_model(graph, tmp_path / "big.onnx")
        assert saved.data_bytes > model_limits.PROTOBUF_LIMIT and saved.model_bytes < 10_000
        got = _run(tmp_path / "big.onnx", {"ids": np.array([rows - 1, 0], np.int64)})[0]
        np.testing.assert_array_equal(got[0], np.arange(width, 2 * width, dtype=np.float32))
        np.testing.assert_array_equal(got[1], 0)
    finally:  # pytest keeps recent temporary folders; 2 GB should not stay behind
        for leftover in tmp_path.glob("big.onnx*"):
            leftover.unlink()


def test_a_single_file_past_the_limit_is_read_around_its_weights_and_named(tmp_path,
                                                                          monkeypatch):
    """protobuf parses only the structure: the inline weights are views of the mapped file."""
    from compiler_core.ir import importer

    graph = load_sample("mobilenet_zeropad")
    saved = save_model(graph, tmp_path / "m.onnx", external_data=False)
    monkeypatch.setattr(importer, "PROTOBUF_LIMIT", saved.model_bytes // 2)
    again = load_model(saved.path)
    assert any("over protobuf's 2 GiB limit: GraphLab reads it" in w for w in again.warnings)
    for name, value in graph.initializers.items():
        np.testing.assert_array_equal(again.initializers[name].const, value.const)


def test_a_write_the_system_refuses_is_named_and_leaves_nothing(tmp_path):
    from compiler_core.ir.model_file import ModelWriteError

    with pytest.raises(ModelWriteError, match="does not exist"):
        save_model(load_sample("cnn_bn"), tmp_path / "missing" / "m.onnx")
    (tmp_path / "taken").mkdir()
    with pytest.raises(ModelWriteError, match="cannot write"):
        save_model(load_sample("cnn_bn"), tmp_path / "taken")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_verification_runs_a_model_past_the_limit_from_a_file_with_external_data(
        small_limit, capsys):
    from graphlab.cli import main

    assert main(["compile", "mobilenet_zeropad", "-p", "clean", "--verify", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verify"]["ok"] and report["runtime_check"]["ok"]
