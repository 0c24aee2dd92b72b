"""Mapping MatMul, Gemm and convolution nodes (fused or not) to the simulator's GEMMs."""

from __future__ import annotations

import numpy as np
import pytest

from compiler_core.hardware.gemm_shapes import gemm_problems, has_gemm
from compiler_core.hardware.systolic import ScheduleError
from compiler_core.ir import Value
from compiler_core.passes.framework.base import PassContext
from compiler_core.passes.framework.rewrite import fuse_nodes
from hardware_graphs import Builder


def problem_of(op_type, a_shape, b_shape, out_shape, **attrs):
    """The GEMMs of one node reading input `a` and a constant `b`."""
    b = Builder()
    node = b.node(op_type, [b.input("a", a_shape), b.const("b", np.zeros(b_shape))],
                  out_shape, **attrs)
    b.outputs(node.outputs[0])
    return gemm_problems(node)


def dims(problems):
    return [(p.M, p.N, p.K, p.instances) for p in problems]


def test_gemm_transposes_pick_m_k_and_n():
    assert dims(problem_of("Gemm", (4, 3), (5, 4), (3, 5), transA=1, transB=1)) == [(3, 5, 4, 1)]
    assert dims(problem_of("Gemm", (3, 4), (4, 5), (3, 5))) == [(3, 5, 4, 1)]


@pytest.mark.parametrize("a, b, out, expected", [
    ((2, 3, 4), (4, 5), (2, 3, 5), (6, 5, 4, 1)),        # shared weights: batch folds into M
    ((3, 4), (2, 4, 5), (2, 3, 5), (3, 10, 4, 1)),       # shared A: B's batch folds into N
    ((2, 3, 4), (2, 4, 5), (2, 3, 5), (3, 5, 4, 2)),     # both batched: one GEMM per entry
    ((3, 1, 3, 4), (2, 4, 5), (3, 2, 3, 5), (3, 5, 4, 6)),  # broadcast batch 3 x 2
    ((4,), (4, 5), (5,), (1, 5, 4, 1)),                  # a vector times a matrix
])
def test_matmul_batching(a, b, out, expected):
    assert dims(problem_of("MatMul", a, b, out)) == [expected]


def test_conv_with_the_exact_conv_form_covers_only_the_rows_its_windows_read():
    # 10x10 input, 3x3, stride 2, no padding: ONNX gives floor(7 / 2) + 1 = 4 rows; the
    # windows read rows 0..8, so the conv form's input is 9 (SCALE-Sim's ceil rule on 10
    # would claim 5 output rows)
    (problem,) = problem_of("Conv", (1, 3, 10, 10), (8, 3, 3, 3), (1, 8, 4, 4), strides=(2, 2),
                            kernel_shape=(3, 3))
    assert (problem.M, problem.N, problem.K) == (16, 8, 27)
    conv = problem.conv
    assert (conv.H, conv.W, conv.S, conv.OH, conv.OW) == (9, 9, 2, 4, 4)
    assert (conv.gemm().M, conv.gemm().N, conv.gemm().K) == (16, 8, 27)


def test_padding_is_part_of_the_conv_form_input():
    (problem,) = problem_of("Conv", (1, 3, 8, 8), (4, 3, 3, 3), (1, 4, 8, 8),
                            pads=(1, 1, 1, 1), kernel_shape=(3, 3))
    assert (problem.conv.H, problem.conv.OH) == (10, 8)


def test_batched_or_dilated_convs_use_the_gemm_form():
    batched, = problem_of("Conv", (2, 3, 8, 8), (4, 3, 3, 3), (2, 4, 6, 6), kernel_shape=(3, 3))
    assert (batched.M, batched.N, batched.K, batched.conv) == (72, 4, 27, None)
    dilated, = problem_of("Conv", (1, 3, 8, 8), (4, 3, 3, 3), (1, 4, 4, 4), dilations=(2, 2),
                          kernel_shape=(3, 3))
    assert (dilated.M, dilated.K, dilated.conv) == (16, 27, None)


def test_grouped_conv_is_one_gemm_per_group():
    (problem,) = problem_of("Conv", (1, 8, 6, 6), (12, 2, 3, 3), (1, 12, 4, 4), group=4,
                            kernel_shape=(3, 3))
    assert dims([problem]) == [(16, 3, 18, 4)] and problem.conv is None
    assert "4 groups" in problem.note


def test_conv_transpose_is_the_gemm_before_col2im():
    # W [Cin=4, Cout=2, 3, 3]: M = 25 input pixels, K = 4, N = 2 * 9
    assert dims(problem_of("ConvTranspose", (1, 4, 5, 5), (4, 2, 3, 3), (1, 2, 7, 7))) == \
        [(25, 18, 4, 1)]


def test_a_fused_node_maps_to_the_gemms_in_its_body():
    b = Builder()
    product = b.op("MatMul", [b.input("x", (2, 8)), b.const("w", np.zeros((8, 16)))], (2, 16),
                   name="mm")
    graph = b.outputs(b.op("Relu", [product], (2, 16), name="relu"))
    fused = fuse_nodes(graph, PassContext(pass_name="test"), graph.nodes, "FusedMatMulRelu",
                       "test")
    assert has_gemm(fused)
    (problem,) = gemm_problems(fused)
    assert (problem.source, problem.M, problem.N, problem.K) == ("mm", 2, 16, 8)


def test_nodes_without_a_gemm_map_to_nothing_and_unknown_shapes_are_refused():
    b = Builder()
    relu = b.node("Relu", [b.input("x", (4,))], (4,))
    assert not has_gemm(relu) and gemm_problems(relu) == []
    mystery = b.graph.add_input(Value("mystery", relu.outputs[0].elem_type, None))
    unknown = b.graph.add_node("MatMul", [mystery, b.const("w", np.zeros((4, 4)))], 1)
    with pytest.raises(ScheduleError, match="shapes of .* are unknown"):
        gemm_problems(unknown)


def test_unbound_dims_are_noted():
    b = Builder()
    node = b.node("MatMul", [b.input("x", ("batch", 8)), b.const("w", np.zeros((8, 4)))],
                  ("batch", 4))
    (problem,) = gemm_problems(node)
    assert problem.M == 1 and "batch" in problem.note
    assert gemm_problems(node, {"batch": 32})[0].M == 32
