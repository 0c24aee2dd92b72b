"""The child process of `machine`: micro-benchmarks of this machine in onnxruntime.

Usage: ``python -m compiler_core.profiling.machine_child THREADS OUT.json``.  Prints nothing;
writes {"peak_ops_per_s": {dtype: rate}, "ops_per_s_by_kind": {kind: rate},
"bandwidth_bytes_per_s": rate, "recast_bytes_per_s": rate,
"overhead_seconds_per_op": seconds, "how": {...}} to OUT.json.  It runs in a child so that
onnxruntime's thread pool, and the memory the big copy takes, leave with it.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

MATMUL_SIZE = 1024               # N of the N x N x N matmul: 2.1 GFLOP, large enough for MLAS
COPY_ELEMENTS = 32 * 1024 * 1024  # 128 MiB of float32 read and 128 MiB written per run
CHAIN_LENGTH = 64                 # tiny ops in a row, to see what one op costs beyond its work
RUNS = 15                         # timed runs after one warm-up; the best counts as the peak
# kind -> (channels in, out, input height and width, stride) of a float32 3x3 convolution the
# size of ResNet-50's: a convolution runs at its own rate, not the matmul's, and a strided one
# at a lower rate still (a 1x1 convolution, and ResNet's 7x7 stem on three channels, run at
# about the 3x3's: they have no kind of their own)
CONVS = {"conv": (64, 64, 56, 1), "strided_conv": (128, 128, 56, 2)}
MATMULS = {   # dtype -> (A's element type, B's, the op, its output's element type)
    "float32": (TensorProto.FLOAT, TensorProto.FLOAT, "MatMul", TensorProto.FLOAT),
    "float16": (TensorProto.FLOAT16, TensorProto.FLOAT16, "MatMul", TensorProto.FLOAT16),
    "float64": (TensorProto.DOUBLE, TensorProto.DOUBLE, "MatMul", TensorProto.DOUBLE),
    "int8": (TensorProto.UINT8, TensorProto.INT8, "MatMulInteger", TensorProto.INT32),
}


def session(model: onnx.ModelProto, threads: int, profile_prefix: str | None = None):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    if profile_prefix:
        options.enable_profiling = True
        options.profile_file_prefix = profile_prefix
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def model_of(nodes, inputs, outputs, weights=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "bench", inputs, outputs, list(weights))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def best_seconds(run) -> float:
    run()
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def matmul_rate(dtype: str, threads: int) -> float | None:
    """Operations per second of an N x N x N matmul (2 N^3 operations), None when this
    onnxruntime has no CPU kernel for the dtype."""
    a_type, b_type, op, out_type = MATMULS[dtype]
    n = MATMUL_SIZE
    model = model_of([helper.make_node(op, ["a", "b"], ["y"])],
                     [helper.make_tensor_value_info("a", a_type, [n, n]),
                      helper.make_tensor_value_info("b", b_type, [n, n])],
                     [helper.make_tensor_value_info("y", out_type, [n, n])])
    rng = np.random.default_rng(0)
    feed = {"a": rng.integers(0, 8, (n, n)).astype(helper.tensor_dtype_to_np_dtype(a_type)),
            "b": rng.integers(-4, 4, (n, n)).astype(helper.tensor_dtype_to_np_dtype(b_type))}
    try:
        ran = session(model, threads)
        seconds = best_seconds(lambda: ran.run(None, feed))
    except Exception:  # noqa: BLE001 - no kernel for this dtype: the target leaves it out
        return None
    return 2 * n ** 3 / seconds


def conv_rate(kind: str, threads: int) -> float:
    """Operations per second of the 3x3 convolution CONVS[kind] (2 per multiply-accumulate)."""
    cin, cout, size, stride = CONVS[kind]
    out = (size + 2 - 3) // stride + 1
    rng = np.random.default_rng(0)
    weight = rng.standard_normal((cout, cin, 3, 3)).astype(np.float32)
    # the weight a constant, as in a model: onnxruntime then lays it out for its own kernels
    model = model_of([helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3],
                                       strides=[stride, stride], pads=[1, 1, 1, 1])],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, size, size])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, cout, out, out])],
                     [numpy_helper.from_array(weight, "w")])
    feed = {"x": rng.standard_normal((1, cin, size, size)).astype(np.float32)}
    ran = session(model, threads)
    return 2 * cout * out * out * cin * 9 / best_seconds(lambda: ran.run(None, feed))


def copy_rate(threads: int) -> float:
    """Bytes per second of a large element-wise copy (x * 1: every byte read and written)."""
    model = model_of([helper.make_node("Mul", ["x", "one"], ["y"])],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [COPY_ELEMENTS]),
                      helper.make_tensor_value_info("one", TensorProto.FLOAT, [1])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [COPY_ELEMENTS])])
    feed = {"x": np.ones(COPY_ELEMENTS, np.float32), "one": np.ones(1, np.float32)}
    ran = session(model, threads)
    return 2 * 4 * COPY_ELEMENTS / best_seconds(lambda: ran.run(None, feed))


def recast_rate(threads: int) -> float:
    """Bytes per second of a large float16 -> float32 Cast (2 bytes read and 4 written per
    element): the cast onnxruntime's CPU inserts before an op it has no float16 kernel for."""
    model = model_of([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [COPY_ELEMENTS])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [COPY_ELEMENTS])])
    feed = {"x": np.ones(COPY_ELEMENTS, np.float16)}
    ran = session(model, threads)
    return (2 + 4) * COPY_ELEMENTS / best_seconds(lambda: ran.run(None, feed))


def overhead_per_op(threads: int) -> float:
    """The median kernel time onnxruntime's profiler gives a one-element Add: what an op costs
    when it does (almost) no work."""
    nodes = [helper.make_node("Add", [f"v{i}", "one"], [f"v{i + 1}"], name=f"add{i}")
             for i in range(CHAIN_LENGTH)]
    model = model_of(nodes, [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1]),
                             helper.make_tensor_value_info("one", TensorProto.FLOAT, [1])],
                     [helper.make_tensor_value_info(f"v{CHAIN_LENGTH}", TensorProto.FLOAT,
                                                    [1])])
    feed = {"v0": np.zeros(1, np.float32), "one": np.ones(1, np.float32)}
    with tempfile.TemporaryDirectory() as folder:
        options_prefix = f"{folder}/overhead"
        ran = session(model, threads, options_prefix)
        for _ in range(RUNS + 1):
            ran.run(None, feed)
        with open(ran.end_profiling()) as handle:
            events = json.load(handle)
    durations = [e["dur"] for e in events
                 if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    return float(np.median(durations)) * 1e-6


def main(threads: str, out: str) -> None:
    count = int(threads)
    peaks = {dtype: rate for dtype in MATMULS
             if (rate := matmul_rate(dtype, count)) is not None}
    record = {
        "peak_ops_per_s": peaks,
        "ops_per_s_by_kind": {kind: conv_rate(kind, count) for kind in CONVS},
        "bandwidth_bytes_per_s": copy_rate(count),
        "recast_bytes_per_s": recast_rate(count),
        "overhead_seconds_per_op": overhead_per_op(count),
        "how": {"matmul": f"{MATMUL_SIZE}x{MATMUL_SIZE}x{MATMUL_SIZE} MatMul (MatMulInteger "
                          f"for int8) in onnxruntime, 2*N^3 operations over the best of "
                          f"{RUNS} runs",
                "conv": "float32 3x3 Conv in onnxruntime, "
                        + ", ".join(f"{kind}: {cin}->{cout} channels on {size}x{size} at "
                                    f"stride {stride}" for kind, (cin, cout, size, stride)
                                    in CONVS.items())
                        + f", 2 operations per multiply-accumulate over the best of {RUNS} runs",
                "copy": f"x * 1 over {COPY_ELEMENTS * 4 // 2 ** 20} MiB of float32 in "
                        f"onnxruntime, bytes read plus written over the best of {RUNS} runs",
                "recast": f"Cast of {COPY_ELEMENTS // 2 ** 20} Mi float16 elements to float32 "
                          f"in onnxruntime, bytes read plus written over the best of {RUNS} "
                          f"runs",
                "overhead": f"median kernel time of {CHAIN_LENGTH} one-element Adds in "
                            f"onnxruntime's profiler"},
        "runtime": f"onnxruntime {ort.__version__}",
    }
    with open(out, "w") as handle:
        json.dump(record, handle)


if __name__ == "__main__":
    main(*sys.argv[1:3])
