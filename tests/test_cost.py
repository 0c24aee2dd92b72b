"""Per-op cost model: hand-computed FLOPs and bytes, roofline placement, fused nodes, totals."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from compiler_core.compilation import sized
from compiler_core.hardware.cost import compare_costs, graph_cost, node_cost
from compiler_core.hardware.op_flops import op_flops
from compiler_core.hardware.roofline import ridge_point
from compiler_core.ir import Value
from compiler_core.records import to_json
from hardware_graphs import (BINDINGS, F, I64, SAMPLES, Builder, elementwise_chain, fuse_all,
                             load_sample, optimized_sample)


def cost_of(graph):
    """The cost of the graph's only node on asic32."""
    (node,) = graph.nodes
    return node_cost(node, "asic32")


def single(op_type, input_shapes, out_shape, weights=(), **attrs):
    """A graph with one node reading float inputs (and constant `weights` after them)."""
    b = Builder()
    inputs = [b.input(f"in{i}", shape) for i, shape in enumerate(input_shapes)]
    inputs += [b.const(f"w{i}", np.zeros(shape)) for i, shape in enumerate(weights)]
    return b.outputs(b.op(op_type, inputs, out_shape, **attrs))


def test_asic32_ridge_is_13_33_ops_per_byte():
    assert ridge_point("asic32") == pytest.approx(13.333, abs=1e-3)


def test_matmul_batched_activation_times_weight():
    # [2,3,4] . [4,5] -> [2,3,5]: 2 * 30 outputs * K=4 = 240 FLOPs;
    # bytes (24 + 20 + 30) * 4 = 296
    cost = cost_of(single("MatMul", [(2, 3, 4)], (2, 3, 5), weights=[(4, 5)]))
    assert (cost.flops, cost.bytes) == (240, 296)
    assert cost.intensity == pytest.approx(240 / 296)


def test_gemm_reads_k_from_the_transposed_operand_and_adds_the_bias():
    # A [4,3] with transA is 3x4 (M=3, K=4); B [5,4] with transB is 4x5 (N=5); C [5]
    # FLOPs 2 * 15 * 4 + 15 = 135; bytes (12 + 20 + 5 + 15) * 4 = 208
    cost = cost_of(single("Gemm", [(4, 3)], (3, 5), weights=[(5, 4), (5,)], transA=1,
                          transB=1))
    assert (cost.flops, cost.bytes) == (135, 208)
    # without transA the same A is M=4, K=3: 2 * 20 * 3 = 120 (no bias)
    assert op_flops("Gemm", {}, [(4, 3), (3, 5)], [(4, 5)]) == 120


def test_grouped_and_depthwise_conv():
    # X [1,4,8,8], W [6,2,3,3], group 2, pad 1 -> [1,6,8,8]: each of the 384 outputs does
    # 2 * 3 * 3 = 18 MACs: 2 * 384 * 18 = 13824, + 384 for the bias = 14208;
    # bytes (256 + 108 + 6 + 384) * 4 = 3016
    grouped = cost_of(single("Conv", [(1, 4, 8, 8)], (1, 6, 8, 8), weights=[(6, 2, 3, 3), (6,)],
                             group=2, pads=(1, 1, 1, 1), kernel_shape=(3, 3)))
    assert (grouped.flops, grouped.bytes) == (14208, 3016)
    # depthwise: W [4,1,3,3], group 4: 2 * 256 * 9 = 4608; bytes (256 + 36 + 256) * 4 = 2192
    depthwise = cost_of(single("Conv", [(1, 4, 8, 8)], (1, 4, 8, 8), weights=[(4, 1, 3, 3)],
                               group=4, pads=(1, 1, 1, 1), kernel_shape=(3, 3)))
    assert (depthwise.flops, depthwise.bytes) == (4608, 2192)


def test_pooling_counts_one_op_per_window_element():
    # MaxPool 2x2 stride 2 on [1,2,4,4] -> [1,2,2,2]: 8 outputs * 4 = 32; bytes (32 + 8) * 4
    pool = cost_of(single("MaxPool", [(1, 2, 4, 4)], (1, 2, 2, 2), kernel_shape=(2, 2),
                          strides=(2, 2)))
    assert (pool.flops, pool.bytes) == (32, 160)
    # GlobalAveragePool reads every input element once: 32; bytes (32 + 2) * 4
    gap = cost_of(single("GlobalAveragePool", [(1, 2, 4, 4)], (1, 2, 1, 1)))
    assert (gap.flops, gap.bytes) == (32, 136)


def test_softmax_is_five_ops_per_element():
    # max, subtract, exp, sum, divide on 16 elements = 80; bytes 2 * 64
    cost = cost_of(single("Softmax", [(2, 8)], (2, 8), axis=-1))
    assert (cost.flops, cost.bytes) == (80, 128)
    assert cost.bound == "memory"


def test_gelu_counts_its_decomposed_form():
    assert op_flops("Gelu", {}, [(10,)], [(10,)]) == 50                      # erf form: 5
    assert op_flops("Gelu", {"approximate": "tanh"}, [(10,)], [(10,)]) == 80  # tanh form: 8


def test_lstm_counts_gate_matmuls_and_cell_updates():
    # seq 5, batch 2, input 3, hidden 4 (W [1,16,3]): per step and batch entry
    # 2 * 4 gates * 4 * (3 + 4) = 224 MAC-ops + 13 * 4 = 52 cell ops; 10 of them: 2760
    assert op_flops("LSTM", {"hidden_size": 4}, [(5, 2, 3), (1, 16, 3), (1, 16, 4)],
                    [(5, 1, 2, 4)]) == 2760


def test_gather_reads_only_the_rows_it_selects():
    # an embedding lookup: table [1000,64], 16 int64 ids -> [1,16,64]
    # bytes: min(256000, 4096) of the table + 128 of ids + 4096 written = 8320
    b = Builder()
    ids = b.input("ids", (1, 16), I64)
    table = b.const("table", np.zeros((1000, 64)))
    cost = cost_of(b.outputs(b.op("Gather", [table, ids], (1, 16, 64))))
    assert (cost.flops, cost.bytes) == (0, 8320)


def test_metadata_only_ops_cost_nothing():
    b = Builder()
    x = b.input("x", (4, 16))
    shape = b.graph.add_initializer("shape", np.array([64], dtype=np.int64))
    cost = cost_of(b.outputs(b.op("Reshape", [x, shape], (64,))))
    assert (cost.flops, cost.bytes, cost.est_seconds, cost.bound) == (0, 0, 0.0, "none")
    assert cost.modelled


def test_unknown_ops_are_flagged_not_guessed():
    b = Builder()
    x = b.input("x", (4, 16))
    graph = b.outputs(b.op("Frobnicate", [x], (4, 16), domain="my.ops"))
    cost = cost_of(graph)
    assert not cost.modelled and cost.flops == 0
    assert "cannot price my.ops.Frobnicate (unknown op)" in cost.note
    assert to_json(graph_cost(graph, "asic32"))["unmodelled_ops"] == ["my.ops.Frobnicate"]


def test_a_known_op_without_shapes_says_so():
    b = Builder()
    mystery = b.graph.add_input(Value("mystery", F, None))
    node = b.graph.add_node("MatMul", [mystery, mystery], 1)
    cost = node_cost(node, "asic32")
    assert not cost.modelled
    assert "cannot price MatMul (unknown shapes or attributes)" in cost.note


def test_compute_and_memory_bound_on_the_roofline():
    # a 256^3 MatMul: 2 * 256^3 FLOPs over 3 * 256^2 * 4 bytes = 42.7 ops/byte > 13.33
    big = cost_of(single("MatMul", [(256, 256)], (256, 256), weights=[(256, 256)]))
    assert big.intensity == pytest.approx(2 * 256 ** 3 / (3 * 256 ** 2 * 4))
    assert big.bound == "compute" and big.attainable_ops_per_s == 32e12
    assert big.est_seconds == pytest.approx(2 * 256 ** 3 / 32e12)
    # a Relu: 1 op per 8 bytes, memory-bound, time = bytes / bandwidth
    relu = cost_of(single("Relu", [(256, 256)], (256, 256)))
    assert relu.bound == "memory"
    assert relu.attainable_ops_per_s == pytest.approx(2.4e12 / 8)
    assert relu.est_seconds == pytest.approx(2 * 256 ** 2 * 4 / 2.4e12)


def test_fused_node_does_the_same_flops_moves_fewer_bytes_and_has_higher_intensity():
    unfused = elementwise_chain()
    fused = fuse_all(unfused)
    parts = graph_cost(unfused, "asic32")
    (whole,) = graph_cost(fused, "asic32").ops
    # Mul, Add, Relu on 64 elements: 64 FLOPs each
    assert [op.flops for op in parts.ops] == [64, 64, 64]
    assert whole.flops == parts.total_flops == 192
    # unfused: Mul and Add read 256 + 4 and write 256 (516 each), Relu 256 + 256: 1544;
    # fused: x (256), s and t (4 each) in, y (256) out: 520
    assert [op.bytes for op in parts.ops] == [516, 516, 512]
    assert whole.bytes == 520
    assert whole.intensity > max(op.intensity for op in parts.ops)
    assert "would move 1,544 bytes, fused 520" in whole.note


def test_compare_costs_reports_the_pipeline_speedup():
    unfused = elementwise_chain()
    comparison = compare_costs(unfused, fuse_all(unfused), "asic32")
    # every op is memory-bound on asic32, so time is proportional to bytes
    assert comparison.speedup == pytest.approx(1544 / 520)
    data = to_json(comparison)
    assert data["before"]["total_flops"] == data["after"]["total_flops"] == 192
    assert (data["before"]["total_bytes"], data["after"]["total_bytes"]) == (1544, 520)


def test_unbound_dims_count_as_one_and_say_so():
    b = Builder()
    x = b.input("x", ("batch", 16))
    graph = b.outputs(b.op("Relu", [x], ("batch", 16)))
    unbound = graph_cost(graph, "asic32")
    assert unbound.total_bytes == 2 * 16 * 4
    assert unbound.notes == ["unbound dims counted as 1: batch"]
    assert "batch" in unbound.ops[0].note
    bound = graph_cost(graph, "asic32", {"batch": 8})
    assert bound.total_bytes == 8 * 2 * 16 * 4 and bound.notes == []


def test_to_dict_has_the_roofline_record_keys():
    data = to_json(graph_cost(elementwise_chain(), "asic32"))
    assert data["target"] == {"name": "asic32", "peak_ops_per_s": 32e12,
                              "bandwidth_bytes_per_s": 2.4e12,
                              "ridge_point": pytest.approx(40 / 3)}
    assert set(data["ops"][0]) >= {"node", "op_type", "flops", "bytes", "intensity", "bound",
                                   "attainable_ops_per_s", "est_seconds"}
    assert data["total_est_seconds"] == pytest.approx(sum(op["est_seconds"]
                                                          for op in data["ops"]))


@pytest.mark.parametrize("name", SAMPLES)
def test_every_op_in_every_sample_is_priced(name):
    for graph in (load_sample(name), optimized_sample(name)):
        cost = graph_cost(graph, "asic32", BINDINGS)
        assert cost.unmodelled_ops == []
        assert cost.total_flops > 0 and cost.total_est_seconds > 0


@pytest.mark.parametrize("name", ["bert_tiny_op13", "gpt2_tiny", "mobilenet_tiny"])
def test_a_specializing_pipeline_is_compared_at_the_same_sizes(name):
    # The raw export leaves run-time shapes symbolic; priced as 1 they would make the raw
    # graph look cheaper than the optimized one. Borrowed shapes keep the FLOPs equal.
    raw = load_sample(name)
    comparison = compare_costs(sized(raw, BINDINGS), sized(optimized_sample(name), BINDINGS),
                               "asic32", BINDINGS)
    before, after = comparison.before.total_flops, comparison.after.total_flops
    assert after == pytest.approx(before, rel=0.01)
    assert comparison.speedup >= 1.0


COMMON_OPS = {
    # op: (input shapes, output shapes, attrs)
    "Add": ([(4, 8), (8,)], [(4, 8)], {}), "Relu": ([(4, 8)], [(4, 8)], {}),
    "Sigmoid": ([(4, 8)], [(4, 8)], {}), "Tanh": ([(4, 8)], [(4, 8)], {}),
    "Where": ([(4, 8), (4, 8), (4, 8)], [(4, 8)], {}), "Sum": ([(4, 8)] * 3, [(4, 8)], {}),
    "Clip": ([(4, 8)], [(4, 8)], {}), "Erf": ([(4, 8)], [(4, 8)], {}),
    "LayerNormalization": ([(4, 8), (8,)], [(4, 8)], {}),
    "BatchNormalization": ([(1, 4, 8, 8)] + [(4,)] * 4, [(1, 4, 8, 8)], {}),
    "InstanceNormalization": ([(1, 4, 8, 8), (4,), (4,)], [(1, 4, 8, 8)], {}),
    "ReduceMean": ([(4, 8)], [(4, 1)], {}), "ArgMax": ([(4, 8)], [(4, 1)], {}),
    "Transpose": ([(4, 8)], [(8, 4)], {}), "Concat": ([(4, 8)] * 2, [(8, 8)], {}),
    "Resize": ([(1, 4, 8, 8)], [(1, 4, 16, 16)], {}), "Cast": ([(4, 8)], [(4, 8)], {}),
    "ConvTranspose": ([(1, 4, 8, 8), (4, 2, 3, 3)], [(1, 2, 10, 10)], {}),
    "AveragePool": ([(1, 4, 8, 8)], [(1, 4, 4, 4)], {"kernel_shape": (2, 2)}),
    "Einsum": ([(4, 8), (8, 2)], [(4, 2)], {"equation": "ij,jk->ik"}),
    "GRU": ([(5, 2, 3), (1, 12, 3)], [(5, 1, 2, 4)], {}),
    "TopK": ([(4, 8)], [(4, 2)], {}), "CumSum": ([(4, 8)], [(4, 8)], {}),
    "QuantizeLinear": ([(4, 8)], [(4, 8)], {}), "DequantizeLinear": ([(4, 8)], [(4, 8)], {}),
    "LRN": ([(1, 4, 8, 8)], [(1, 4, 8, 8)], {"size": 3}),
}


@pytest.mark.parametrize("op_type", sorted(COMMON_OPS))
def test_common_onnx_ops_are_priced(op_type):
    ins, outs, attrs = COMMON_OPS[op_type]
    assert op_flops(op_type, attrs, ins, outs) is not None


def test_variadic_ops_count_one_op_per_extra_input():
    assert op_flops("Sum", {}, [(4, 8)] * 3, [(4, 8)]) == 64
    assert op_flops("Max", {}, [(4, 8)] * 2, [(4, 8)]) == 32


def test_int8_ops_run_at_the_int8_peak():
    b = Builder()
    a = b.input("a", (64, 64), elem_type=TensorProto.INT8)
    w = b.input("w", (64, 64), elem_type=TensorProto.INT8)
    graph = b.outputs(b.op("MatMulInteger", [a, w], (64, 64), elem_type=TensorProto.INT32))
    cost = cost_of(graph)
    assert cost.dtype == "int8" and cost.flops == 2 * 64 ** 3
    assert cost.bytes == 64 * 64 * (1 + 1 + 4)


# ------------------------------------------------------------------ quantized and partitioned
def _digits_after(pipeline: str, target: str = "asic32"):
    from compiler_core.ir import load_model
    from compiler_core.passes import PassManager
    from graphlab.samples import get_sample

    graph = load_model(get_sample("digits_cnn").path)
    return PassManager(pipeline, bindings={"batch": 1}, target=target).run(graph).final


def test_qdq_graph_is_priced_as_int8_kernels():
    from compiler_core.hardware.cost import graph_cost

    float_cost = {o.node: o for o in graph_cost(_digits_after("O2"), "asic32", {"batch": 1}).ops}
    int8_graph = _digits_after("O2-int8")
    int8_ops = graph_cost(int8_graph, "asic32", {"batch": 1}).ops
    kernels = [o for o in int8_ops if o.dtype == "int8" and o.flops > 0]
    assert kernels, "the quantized convolutions run at the int8 peak"
    for op in kernels:
        if op.node in float_cost:   # same node, int8 traffic: fewer bytes than in float
            assert op.bytes < float_cost[op.node].bytes
    folded = [o for o in int8_ops if o.note == "folded into the int8 kernel next to it"]
    assert folded and all(o.est_seconds == 0 for o in folded)
    assert {o.op_type for o in folded} <= {"QuantizeLinear", "DequantizeLinear"}


def test_partitioned_graph_prices_the_rest_on_the_host_and_the_link():
    from compiler_core.hardware.cost import graph_cost
    from compiler_core.hardware.targets import get_target

    graph = _digits_after("O2-partition")
    ops = graph_cost(graph, "asic32", {"batch": 1}).ops
    (partition,) = [o for o in ops if o.op_type.endswith("AcceleratorPartition")]
    assert "over the host link" in partition.note
    link = get_target("asic32").host.link_bytes_per_s
    node = graph.node_by_name(partition.node)
    crossing = sum(int(np.prod(v.shape)) * 4 for v in list(node.inputs) + list(node.outputs)
                   if v.constant_value() is None)
    assert partition.est_seconds >= crossing / link
