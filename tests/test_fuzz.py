"""Differential fuzzing as a standing test: on a few hundred random small models, every preset's
output loads and runs in onnxruntime with its optimizer off and at ENABLE_ALL (the default
users get), with the original's outputs — or GraphLab refuses it cleanly.

`python benchmarks/fuzz.py --graphs 5000` runs the same property at scale.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest

import differential
from compiler_core.errors import GraphLabError, PropertyViolationError
from compiler_core.ir import to_bytes
from differential import (CRASH, FAILURES, LOAD_FAILURE, MISCOMPILE, OK, PRESETS, REFUSED,
                          check_cases)
from random_graphs import CONTRIB_OPS, generate

CI_GRAPHS = 250  # about 40 s on two cores


def test_every_preset_keeps_random_models_loadable_and_correct_at_every_level():
    cases = generate(CI_GRAPHS, start_seed=0)
    verdicts = check_cases(cases)
    counts = Counter(v.outcome for per_case in verdicts for v in per_case.values())
    failures = [f"case {number} ({cases[number].describe()})\n  {preset}: {v.outcome}: "
                f"{v.detail}" for number, per_case in enumerate(verdicts)
                for preset, v in per_case.items() if v.outcome in FAILURES]
    assert not failures, f"{counts}\n" + "\n".join(failures[:10])
    assert counts[OK] >= 0.9 * CI_GRAPHS * len(PRESETS)  # refusals stay the exception


def test_the_generated_models_cover_the_families_the_passes_rewrite():
    cases = generate(CI_GRAPHS, start_seed=0)
    ops = Counter(node.op_type for case in cases for node in case.model.graph.node)
    expected = {"MatMul", "Gemm", "Conv", "Pad", "BatchNormalization", "ReduceMean", "Erf",
                "Tanh", "LayerNormalization", "Gelu", "Relu", "Clip", "Sigmoid", "Transpose",
                "Reshape", "Dropout", "Identity", "Softmax", "Where", "Cast", "Slice", "Concat",
                "QuantizeLinear", "DequantizeLinear", *CONTRIB_OPS}
    assert expected <= set(ops), expected - set(ops)
    assert {case.model.opset_import[0].version for case in cases} == set(range(13, 21))
    for case in cases[:25]:
        onnx.checker.check_model(case.model, full_check=True)


def _sabotaged_export(kind: str):
    """An exporter standing in for a broken pass, to see each failure classified as such."""
    def export(graph):
        if kind == "refusal":
            raise GraphLabError("refused on purpose", where=graph.name, hint="none")
        if kind == "crash":
            raise KeyError("a pass bug")
        if kind == "broken_promise":   # worded as for a user, but a pass's fault all the same
            raise PropertyViolationError("pass p ensures 'x', which does not hold after it",
                                         where="p")
        model = onnx.load_from_string(to_bytes(graph))
        if kind == "miscompile":
            weights = max((t for t in model.graph.initializer if t.data_type == 1),
                          key=lambda t: np.prod(t.dims))
            array = onnx.numpy_helper.to_array(weights)
            weights.CopyFrom(onnx.numpy_helper.from_array(array * 2 + 1, weights.name))
        else:  # onnxruntime's optimizer segfaults on a LayerNormalization with an empty bias
            model.graph.node.extend([onnx.helper.make_node(
                "LayerNormalization", [model.graph.input[0].name, "ln_scale", ""], ["ln_out"])])
            width = model.graph.input[0].type.tensor_type.shape.dim[-1].dim_value
            model.graph.initializer.append(onnx.numpy_helper.from_array(
                np.ones(width, np.float32), "ln_scale"))
            model.graph.output.append(onnx.helper.make_tensor_value_info("ln_out", 1, None))
        return model.SerializeToString()
    return export


@pytest.mark.parametrize("kind, outcome", [("refusal", REFUSED), ("crash", CRASH),
                                           ("broken_promise", CRASH),
                                           ("miscompile", MISCOMPILE),
                                           ("ort_crash", LOAD_FAILURE)])
def test_a_broken_pipeline_is_classified(monkeypatch, kind, outcome):
    case = next(c for c in generate(40, start_seed=1)
                if c.model.opset_import[0].version >= 17 and c.model.graph.initializer
                and c.model.graph.input[0].type.tensor_type.shape.dim[-1].dim_value)
    monkeypatch.setattr(differential, "to_bytes", _sabotaged_export(kind))
    (verdicts,) = check_cases([case], presets=("O1",))
    assert verdicts["O1"].outcome == outcome, verdicts["O1"]
