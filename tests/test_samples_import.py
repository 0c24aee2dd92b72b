"""Every bundled sample imports with a type and shape for every value and round-trips exactly."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from compiler_core.ir import load_model, to_model_proto
from compiler_core.records import to_json
from compiler_core.verify import compare_outputs, make_inputs, run, with_inference_semantics
from graphlab.samples import list_samples

SAMPLES = [s.name for s in list_samples()]


def _original_outputs(path: str, inputs: dict) -> dict:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


DETERMINISTIC = [name for name in SAMPLES if name != "mlp_dropout"]  # training-mode Dropout


@pytest.mark.parametrize("name", DETERMINISTIC)
def test_sample_round_trips(name):
    sample = next(s for s in list_samples() if s.name == name)
    graph = load_model(sample.path)
    graph.check()
    onnx.checker.check_model(to_model_proto(graph))
    inputs = make_inputs(graph)
    report = compare_outputs(_original_outputs(sample.path, inputs), run(graph, inputs), rtol=0)
    assert report.ok and report.max_abs_err == 0.0, to_json(report)


@pytest.mark.parametrize("name", SAMPLES)
def test_every_value_has_a_type_and_rank(name):
    graph = load_model(next(s for s in list_samples() if s.name == name).path)
    untyped = [v.name for v in graph.values.values()
               if v.type_proto is None and (v.elem_type is None or v.shape is None)]
    assert untyped == []


def test_generated_token_ids_stay_inside_the_embedding_table():
    graph = load_model(next(s for s in list_samples() if s.name == "bert_tiny_op13").path)
    inputs = make_inputs(graph, {"batch": 2, "seq": 16})
    vocab = graph.initializers["bert.embeddings.word_embeddings.weight"].const.shape[0]
    assert inputs["input_ids"].shape == (2, 16)
    assert 0 <= inputs["input_ids"].min() and inputs["input_ids"].max() < vocab
    assert set(np.unique(inputs["attention_mask"])) <= {0, 1}
    assert inputs["token_type_ids"].max() < 2   # type-vocab of BERT is 2


def test_training_mode_dropout_is_verified_with_inference_semantics():
    graph = load_model(next(s for s in list_samples() if s.name == "mlp_dropout").path)
    inputs = make_inputs(graph)
    twice = [run(graph, inputs)["logits"] for _ in range(2)]
    assert not np.array_equal(*twice)          # training mode: a fresh mask every run
    inference = with_inference_semantics(graph)
    again = [run(inference, inputs)["logits"] for _ in range(2)]
    np.testing.assert_array_equal(*again)
    assert len(graph.nodes_of_type("Dropout")) == len(inference.nodes_of_type("Dropout"))
