"""The numerical check: error arithmetic, valid generated inputs, user-supplied inputs."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from compiler_core.compilation import compile_model
from compiler_core.errors import VerificationError
from compiler_core.ir import load_model
from compiler_core.verify import (DEFAULT_RTOL, FLOAT16_RTOL, Verifier, compare_outputs,
                                  load_inputs, make_inputs, run_batches, verify)
from graphlab.samples import get_sample


def _graph(shape=("batch", 4), dtype=TensorProto.FLOAT, scale=1.0):
    w = numpy_helper.from_array(np.full(4, scale, np.float32), "w")
    nodes = [helper.make_node("Mul", ["x", "w"], ["y"], name="mul")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", dtype, list(shape))],
                          [helper.make_tensor_value_info("y", dtype, None)], [w])
    return load_model(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
                      .SerializeToString())


def test_error_is_relative_to_the_output_scale():
    ref = {"y": np.array([100.0, -50.0], np.float32)}
    close = {"y": np.array([100.005, -50.0], np.float32)}
    far = {"y": np.array([100.05, -50.0], np.float32)}
    ok = compare_outputs(ref, close)
    assert ok.ok and ok.max_abs_err == pytest.approx(0.005, rel=1e-2)
    bad = compare_outputs(ref, far)
    assert not bad.ok and bad.outputs[0].scale == 100.0


def test_shape_mismatch_and_missing_output_fail():
    ref = {"y": np.zeros(3, np.float32), "z": np.zeros(1, np.float32)}
    report = compare_outputs(ref, {"y": np.zeros(4, np.float32)})
    notes = {o.name: o.note for o in report.outputs}
    assert not report.ok
    assert "instead of [3]" in notes["y"] and "missing" in notes["z"]


def test_integer_outputs_must_match_exactly():
    report = compare_outputs({"i": np.array([1, 2, 3])}, {"i": np.array([1, 2, 4])})
    assert not report.ok and report.outputs[0].note == "1 elements differ"


def test_nan_in_both_is_equal_but_nan_in_one_is_not():
    ref = {"y": np.array([np.nan, 1.0], np.float32)}
    assert compare_outputs(ref, {"y": np.array([np.nan, 1.0], np.float32)}).ok
    assert not compare_outputs(ref, {"y": np.array([0.0, 1.0], np.float32)}).ok


def test_verify_detects_a_changed_constant():
    same = verify(_graph(), _graph())
    assert same.ok and same.max_abs_err == 0.0
    changed = verify(_graph(), _graph(scale=1.001))
    assert not changed.ok and changed.max_abs_err > 0


def test_generated_inputs_bind_symbolic_dims_and_are_deterministic():
    graph = _graph()
    a = make_inputs(graph, {"batch": 3})
    b = make_inputs(graph, {"batch": 3})
    assert a["x"].shape == (3, 4) and a["x"].dtype == np.float32
    np.testing.assert_array_equal(a["x"], b["x"])
    assert make_inputs(graph)["x"].shape == (2, 4)   # default: a small batch


def test_gather_indices_stay_in_range():
    table = numpy_helper.from_array(np.zeros((7, 3), np.float32), "table")
    g = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["y"], name="embed")],
                          "g", [helper.make_tensor_value_info("ids", TensorProto.INT64, [50])],
                          [helper.make_tensor_value_info("y", 1, None)], [table])
    graph = load_model(helper.make_model(g).SerializeToString())
    ids = make_inputs(graph)["ids"]
    assert ids.min() >= 0 and ids.max() < 7 and len(set(ids.tolist())) > 1


def _label_encoder():
    node = helper.make_node("LabelEncoder", ["animal"], ["id"], domain="ai.onnx.ml",
                            keys_strings=["cat", "dog"], values_int64s=[1, 2], default_int64=0)
    g = helper.make_graph([node], "g",
                          [helper.make_tensor_value_info("animal", TensorProto.STRING, [40])],
                          [helper.make_tensor_value_info("id", TensorProto.INT64, [40])])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                                helper.make_opsetid("ai.onnx.ml", 3)])
    return load_model(model.SerializeToString())


def test_string_inputs_use_the_words_the_model_looks_up():
    graph = _label_encoder()
    words = make_inputs(graph)["animal"]
    assert words.dtype == object and {"cat", "dog", "<other>"} == set(words.tolist())
    assert verify(graph, graph).ok


def test_npz_text_inputs_are_accepted_for_string_inputs(tmp_path):
    path = tmp_path / "animals.npz"
    np.savez(path, animal=np.array(["dog"] * 40))
    loaded = load_inputs(str(path), _label_encoder())["animal"]
    assert loaded.dtype == object and loaded[0] == "dog"

def test_refuses_inputs_too_large_to_generate():
    graph = _graph(shape=("n", 4))
    with pytest.raises(VerificationError, match="--bind"):
        make_inputs(graph, {"n": 1 << 30})


def test_npz_inputs_are_checked_against_the_signature(tmp_path):
    graph = _graph()
    good = tmp_path / "good.npz"
    np.savez(good, x=np.ones((5, 4), np.float32))
    assert load_inputs(str(good), graph)["x"].shape == (5, 4)
    wrong_dtype = tmp_path / "dtype.npz"
    np.savez(wrong_dtype, x=np.ones((5, 4), np.float64))
    with pytest.raises(VerificationError, match="float64, the model expects float32"):
        load_inputs(str(wrong_dtype), graph)
    wrong_name = tmp_path / "name.npz"
    np.savez(wrong_name, images=np.ones((5, 4), np.float32))
    with pytest.raises(VerificationError, match=r"no array for input\(s\) \['x'\]"):
        load_inputs(str(wrong_name), graph)
    wrong_shape = tmp_path / "shape.npz"
    np.savez(wrong_shape, x=np.ones((5, 3), np.float32))
    with pytest.raises(VerificationError, match="expects float32"):
        load_inputs(str(wrong_shape), graph)


def test_a_float16_model_is_checked_at_float16_precision(tmp_path):
    """gpt2_tiny converted to float16 (inputs and outputs kept): folding the norms' scale and
    shift into the next layer's float16 weights moves the logits by a few float16 ulps, which
    float32's 1e-4 called a failure; the check now holds it to float16's tolerance, and says
    so.  The float32 sample keeps 1e-4."""
    from onnxruntime.transformers.float16 import convert_float_to_float16

    sample = get_sample("gpt2_tiny").path
    half = tmp_path / "gpt2_fp16.onnx"
    onnx.save(convert_float_to_float16(onnx.load(sample), keep_io_types=True), half)
    result = compile_model(load_model(half), "O2", verify=True).result
    assert result.verifier.rtol == FLOAT16_RTOL
    assert "computes in half precision" in result.verifier.describe_inputs()
    folded = next(s for s in result.snapshots if s.pass_name == "fold_norm_affine")
    assert folded.changed and folded.verify.ok
    assert DEFAULT_RTOL * _scale(result) < folded.verify.max_abs_err   # float32's would fail
    assert Verifier(load_model(sample)).rtol == DEFAULT_RTOL


def _scale(result) -> float:
    return max(float(np.abs(out).max()) for out in result.verifier.reference_outputs.values())


def test_a_model_onnxruntime_cannot_load_is_named_without_its_source_locations():
    """A kernel that refuses its attributes throws from onnxruntime's C++ sources: the
    message keeps what was wrong, not the header path and the constructor's signature."""
    model = helper.make_model(helper.make_graph(
        [helper.make_node("LpNormalization", ["x"], ["y"], name="norm", p=3)], "lp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])]),
        opset_imports=[helper.make_opsetid("", 17)])
    graph = load_model(model.SerializeToString())
    with pytest.raises(VerificationError) as info:
        run_batches(graph, [{"x": np.ones((2, 4), np.float32)}])
    message = str(info.value)
    assert "p_ == 1 || p_ == 2 was false" in message
    assert "onnxruntime_src" not in message and "[ONNXRuntimeError]" not in message


def test_an_input_model_onnxruntime_refuses_is_said_to_be_refused_as_given():
    """A float16 conversion that left an output declared float: onnxruntime refuses the
    model itself, so the check names the model as given, not an op it may not support."""
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], name="to_half", to=TensorProto.FLOAT16)],
        "converted", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])]),
        opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(VerificationError) as info:
        Verifier(load_model(model.SerializeToString()))
    message = str(info.value)
    assert "onnxruntime cannot load graph 'converted'" in message
    assert "so nothing can be checked against it" in message
    assert "as it was given, before any pass ran" in message
