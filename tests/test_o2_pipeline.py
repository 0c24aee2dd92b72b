"""The default pipeline (O2) on every sample: correct after every pass, and at least as small
as onnxruntime's own offline optimizer at its extended level."""

from __future__ import annotations

import os
import tempfile

import onnx
import onnxruntime as ort
import pytest

from graphlab.samples import get_sample, list_samples
from passes_helpers import SAMPLE_BINDINGS, load_sample, run_checked

SAMPLES = [s.name for s in list_samples()]


def ort_extended_node_count(path: str) -> int:
    """Nodes in the model onnxruntime writes after its ORT_ENABLE_EXTENDED optimizations."""
    with tempfile.TemporaryDirectory() as folder:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = os.path.join(folder, "optimized.onnx")
        options.log_severity_level = 3
        ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        return len(onnx.load(options.optimized_model_filepath).graph.node)


@pytest.mark.parametrize("bound", [False, True], ids=["dynamic", "specialized"])
@pytest.mark.parametrize("name", SAMPLES)
def test_every_o2_pass_keeps_every_sample_correct(name, bound):
    graph = load_sample(name)
    result = run_checked(graph, "O2", SAMPLE_BINDINGS.get(name) if bound else None)
    assert [v.name for v in result.final.outputs] == [v.name for v in graph.outputs]


@pytest.mark.parametrize("name", SAMPLES)
def test_o2_ends_with_no_more_nodes_than_onnxruntime_extended(name):
    ours = len(run_checked(load_sample(name), "O2").final)
    assert ours <= ort_extended_node_count(get_sample(name).path)
