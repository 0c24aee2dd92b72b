"""onnxruntime's operators read whole: every output typed as onnxruntime computes it, priced
(FLOPs as their decomposed forms count, weights at their stored bytes), mapped to GEMMs where
they multiply matrices, and no opaque-op warning; nodes that break onnxruntime's schema are
refused."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from compiler_core.errors import ModelLoadError
from compiler_core.hardware.cost import graph_cost
from compiler_core.hardware.gemm_shapes import gemm_problems, has_gemm
from compiler_core.ir import from_proto
from compiler_core.ir.contrib_shapes import SHAPE_RULES
from compiler_core.hardware.contrib_flops import RULES as FLOPS_RULES

from contrib_models import MS, build, cases, feeds

CASES = cases()


def _run_in_onnxruntime(case):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(build(case).SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, feeds(case))))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_types_and_shapes_match_onnxruntime(case):
    produced = _run_in_onnxruntime(case)
    graph = from_proto(build(case))
    assert not [w for w in graph.warnings if "not known to GraphLab" in w]
    for name, array in produced.items():
        value = graph.values[name]
        assert value.shape == array.shape, name
        assert value.elem_type is not None
        assert np.dtype(np.float32 if value.elem_type == 1 else
                        {2: np.uint8, 3: np.int8}[value.elem_type]) == array.dtype, name


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.label)
def test_priced(case):
    cost = graph_cost(from_proto(build(case)))
    (op,) = cost.ops
    assert op.modelled and op.flops > 0 and op.bytes > 0, op.note


def test_every_known_contrib_op_has_a_flops_rule():
    missing = [key for key in SHAPE_RULES
               if key not in FLOPS_RULES and key[0].startswith(MS)]
    assert not missing


def _case(label):
    return next(c for c in CASES if c.label == label)


def test_matmul_nbits_counts_its_packed_bytes_and_2mnk():
    case = _case(f"{MS}.MatMulNBits")
    (op,) = graph_cost(from_proto(build(case))).ops
    m, n, k = 3, 8, 32
    assert op.flops == 2 * m * n * k
    packed = case.weights["B"].nbytes          # k * n * 4 bits
    assert packed == k * n // 2
    activations = 4 * (m * k + m * n)
    assert op.bytes == packed + case.weights["scales"].nbytes + activations
    assert op.dtype == "float32"


@pytest.mark.parametrize("label", [f"{MS}.DynamicQuantizeMatMul",
                                   f"{MS}.MatMulIntegerToFloat", f"{MS}.QGemm"])
def test_int8_matmuls_run_at_the_int8_peak_and_move_int8_weights(label):
    case = _case(label)
    (op,) = graph_cost(from_proto(build(case))).ops
    assert op.dtype == "int8"
    assert op.flops >= 2 * 3 * 8 * 16
    weight = case.weights["B"]
    float_weight = weight.size * 4
    assert op.bytes < float_weight + 4 * 3 * 8 + 4 * 3 * 16   # the weight is not priced as float


@pytest.mark.parametrize("label,expected", [
    (f"{MS}.MatMulNBits", [(3, 8, 32, 1)]),
    (f"{MS}.DynamicQuantizeMatMul", [(3, 8, 16, 1)]),
    (f"{MS}.QGemm", [(3, 8, 16, 1)]),
    (f"{MS}.Attention", [(10, 48, 16, 1), (5, 5, 8, 4), (5, 8, 5, 4)]),
    (f"{MS}.GroupQueryAttention", [(4, 4, 8, 4), (4, 8, 4, 4)]),
    ("ai.onnx.Attention", [(3, 4, 8, 2), (3, 8, 4, 2)]),
])
def test_gemm_shapes(label, expected):
    graph = from_proto(build(_case(label)))
    (node,) = graph.nodes
    assert has_gemm(node)
    assert [(p.M, p.N, p.K, p.instances) for p in gemm_problems(node)] == expected


def test_attention_flops_are_its_decomposed_form():
    """onnxruntime's Attention = projection + bias + scores + scale + softmax + context."""
    (op,) = graph_cost(from_proto(build(_case(f"{MS}.Attention")))).ops
    b, s, hidden, heads, head = 2, 5, 16, 2, 8
    projection = 2 * b * s * hidden * 3 * hidden + b * s * 3 * hidden
    scores = b * heads * s * s
    assert op.flops == projection + 2 * scores * head * 2 + scores * (1 + 5)


def test_a_node_onnxruntime_would_refuse_is_refused():
    case = _case(f"{MS}.FastGelu")
    model = build(case)
    model.graph.node[0].attribute.add(name="approximate", type=3, s=b"tanh")
    with pytest.raises(ModelLoadError, match="does not define"):
        from_proto(model)


def test_a_tokenizer_is_typed_as_onnxruntime_splits_text():
    """scikit-learn's text pipelines start with onnxruntime's Tokenizer: strings in, one more
    dim of tokens out, as long as the longest split (known only when it runs)."""
    from onnx import TensorProto, helper

    node = helper.make_node("Tokenizer", ["text"], ["tokens"], domain=MS, mark=0,
                            mincharnum=1, pad_value="#", separators=[" "])
    model = helper.make_model(
        helper.make_graph([node], "tokenize",
                          [helper.make_tensor_value_info("text", TensorProto.STRING, [2, 1])],
                          [onnx.ValueInfoProto(name="tokens")]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (tokens,) = session.run(None, {"text": np.array([["the cat sat"], ["a dog"]], object)})
    graph = from_proto(model)
    assert not graph.warnings
    value = graph.values["tokens"]
    assert value.elem_type == TensorProto.STRING
    assert value.shape[:-1] == tokens.shape[:-1] and len(value.shape) == tokens.ndim == 3
    assert value.shape[-1] is None    # 3 here: the most tokens a string gave
    (op,) = graph_cost(graph).ops
    assert op.modelled and op.flops == 0
