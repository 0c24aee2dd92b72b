"""Export writes canonical ONNX: no trailing empty optional inputs or outputs.

onnxruntime's graph optimizer dereferences some trailing empty names (LayerNormalization's
bias) and kills the process, so what GraphLab writes must load at every optimization level —
checked here in a child process, the way users load it.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from compiler_core.ir import load_model, to_bytes, to_model_proto
from compiler_core.passes import PassManager
from compiler_core.runtime_check import LEVELS, run_isolated
from compiler_core.verify import compare_outputs, make_inputs, run
from tests.passes_helpers import F, build, tensor


def _norm_then_linear():
    """LayerNormalization feeding MatMul+Add: fold_norm_affine moves γ, β into the layer and
    leaves the LayerNormalization without a bias."""
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["ln"], name="ln"),
             helper.make_node("MatMul", ["ln", "w"], ["mm"], name="mm"),
             helper.make_node("Add", ["mm", "b"], ["y"], name="bias")]
    return build(nodes, [tensor("x", F, [2, 8])], [tensor("y", F, [2, 6])],
                 {"gamma": rng.random(8, dtype=np.float32) + 0.5,
                  "beta": rng.standard_normal(8).astype(np.float32),
                  "w": rng.standard_normal((8, 6)).astype(np.float32),
                  "b": rng.standard_normal(6).astype(np.float32)})


@pytest.fixture(scope="module")
def folded():
    graph = _norm_then_linear()
    result = PassManager("fold_norm_affine").run(graph)
    assert result.snapshots[0].rewrites == 1
    assert result.final.node_by_name("ln").input(2) is None  # the IR says: no bias
    return graph, result.final


def test_layernorm_without_bias_is_written_with_two_inputs(folded):
    _, final = folded
    (layernorm,) = [n for n in to_model_proto(final).graph.node
                    if n.op_type == "LayerNormalization"]
    assert list(layernorm.input) == ["x", "ln_unit_scale"]


@pytest.mark.parametrize("level", list(LEVELS))
def test_the_folded_model_loads_runs_and_matches_at_every_level(folded, level):
    graph, final = folded
    inputs = make_inputs(graph)
    outcome = run_isolated(to_bytes(final), [inputs], level=level)
    assert outcome.ok, outcome.describe()
    assert compare_outputs(run(graph, inputs), outcome.outputs[0]).ok


def test_model_local_function_bodies_are_written_canonically_too():
    x, y = tensor("x", F, [2, 8]), tensor("y", F, [2, 8])
    body = [helper.make_node("LayerNormalization", ["a", "s", ""], ["b"], axis=-1)]
    function = helper.make_function("local", "Norm", ["a", "s"], ["b"], body,
                                    [helper.make_opsetid("", 17)])
    call = helper.make_node("Norm", ["x", "scale"], ["y"], domain="local")
    model = helper.make_model(
        helper.make_graph([call], "g", [x], [y],
                          [onnx.numpy_helper.from_array(np.ones(8, np.float32), "scale")]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        functions=[function])
    model.ir_version = 10
    exported = to_model_proto(load_model(model.SerializeToString()))
    (written,) = exported.functions
    assert list(written.node[0].input) == ["a", "s"]
    outcome = run_isolated(exported.SerializeToString(),
                           [{"x": np.arange(16, dtype=np.float32).reshape(2, 8)}], level="all")
    assert outcome.ok, outcome.describe()


def test_trailing_empty_outputs_are_dropped_but_a_required_one_stays():
    nodes = [helper.make_node("Dropout", ["x"], ["y", ""], name="drop"),
             helper.make_node("Split", ["x"], ["", "half"], name="split", axis=1,
                              num_outputs=2)]
    graph = build(nodes, [tensor("x", F, [2, 8])], [tensor("y", F, [2, 8]),
                                                    tensor("half", F, [2, 4])], opset=18)
    written = {n.name: list(n.output) for n in to_model_proto(graph).graph.node}
    assert written == {"drop": ["y"], "split": ["", "half"]}  # an empty name before a used one
