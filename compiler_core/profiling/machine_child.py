"""The child process of `machine`: micro-benchmarks of this machine in onnxruntime.

Usage: ``python -m compiler_core.profiling.machine_child THREADS OUT.json``.  Prints nothing;
runs the benchmarks in turns (one run of each per round) and writes {"peak_ops_per_s":
{dtype: rate}, "ops_per_s_by_kind": {kind: rate}, "bandwidth_bytes_per_s": rate,
"recast_bytes_per_s": rate, "overhead_seconds_per_op": seconds, "how": {...}} to OUT.json.
It runs in a child so that onnxruntime's thread pools, and the memory the copies take, leave
with it.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from typing import Callable

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

# Each micro-benchmark lasts about as long as the larger kernels of the models profiled (1-3 ms
# on an idle 2-core machine): on a busy machine a run that long has the same chance of finding
# both cores free as a model's kernel has (a 2.1 GFLOP matmul almost never does: at load 10 it
# reached a quarter to a half of the rate a 270 MFLOP one reached in the same minute)
MATMUL_SIZE = 512   # N of the N x N x N matmul: 270 MFLOP, between BERT-base's projections
                    # (150 MFLOP at seq 128) and its FFN matmuls (600 MFLOP)
COPY_ELEMENTS = 4 * 1024 * 1024   # 16 MiB of float32 read and 16 MiB written per run
CHAIN_LENGTH = 64                 # tiny ops in a row, to see what one op costs beyond its work
RUNS = 30                         # timed runs after one warm-up; the best counts as the peak
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


def session(model: onnx.ModelProto, profile_prefix: str | None = None):
    """The model loaded in onnxruntime on the one thread pool every benchmark shares (`main`
    sizes it): run in turns, models with pools of their own would spin while another runs
    and take its cores."""
    options = ort.SessionOptions()
    options.use_per_session_threads = False
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


def best_seconds(runs: dict[str, Callable[[], object]]) -> dict[str, float]:
    """The fastest of RUNS timed runs of each benchmark, run in turns (one run of each per
    round, after one warm-up each), so a busy minute slows them all alike."""
    for run in runs.values():
        run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(RUNS):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {name: min(seconds) for name, seconds in times.items()}


Benchmark = tuple[Callable[[], object], float]   # one run, and its work per run


def matmul_bench(dtype: str) -> Benchmark | None:
    """An N x N x N matmul (2 N^3 operations), None when this onnxruntime has no CPU kernel
    for the dtype."""
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
        ran = session(model)
        ran.run(None, feed)
    except Exception:  # noqa: BLE001 - no kernel for this dtype: the target leaves it out
        return None
    return (lambda: ran.run(None, feed)), 2 * n ** 3


def conv_bench(kind: str) -> Benchmark:
    """The 3x3 convolution CONVS[kind] (2 operations per multiply-accumulate)."""
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
    ran = session(model)
    return (lambda: ran.run(None, feed)), 2 * cout * out * out * cin * 9


def copy_bench() -> Benchmark:
    """An element-wise copy (x * 1: every byte read and written), in bytes."""
    model = model_of([helper.make_node("Mul", ["x", "one"], ["y"])],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT, [COPY_ELEMENTS]),
                      helper.make_tensor_value_info("one", TensorProto.FLOAT, [1])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [COPY_ELEMENTS])])
    feed = {"x": np.ones(COPY_ELEMENTS, np.float32), "one": np.ones(1, np.float32)}
    ran = session(model)
    return (lambda: ran.run(None, feed)), 2 * 4 * COPY_ELEMENTS


def recast_bench() -> Benchmark:
    """A float16 -> float32 Cast (2 bytes read and 4 written per element), in bytes: the cast
    onnxruntime's CPU inserts before an op it has no float16 kernel for."""
    model = model_of([helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
                     [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [COPY_ELEMENTS])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [COPY_ELEMENTS])])
    feed = {"x": np.ones(COPY_ELEMENTS, np.float16)}
    ran = session(model)
    return (lambda: ran.run(None, feed)), (2 + 4) * COPY_ELEMENTS


def overhead_per_op() -> float:
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
        ran = session(model, options_prefix)
        for _ in range(RUNS + 1):
            ran.run(None, feed)
        with open(ran.end_profiling()) as handle:
            events = json.load(handle)
    durations = [e["dur"] for e in events
                 if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")]
    return float(np.median(durations)) * 1e-6


def main(threads: str, out: str) -> None:
    count = int(threads)
    ort.set_global_thread_pool_sizes(count, 1)
    benches: dict[str, Benchmark] = {f"peak {dtype}": bench for dtype in MATMULS
                                     if (bench := matmul_bench(dtype)) is not None}
    benches.update({f"kind {kind}": conv_bench(kind) for kind in CONVS})
    benches.update(copy=copy_bench(), recast=recast_bench())
    best = best_seconds({name: run for name, (run, _) in benches.items()})
    rate = {name: work / best[name] for name, (_, work) in benches.items()}
    record = {
        "peak_ops_per_s": {dtype: rate[f"peak {dtype}"] for dtype in MATMULS
                           if f"peak {dtype}" in rate},
        "ops_per_s_by_kind": {kind: rate[f"kind {kind}"] for kind in CONVS},
        "bandwidth_bytes_per_s": rate["copy"],
        "recast_bytes_per_s": rate["recast"],
        "overhead_seconds_per_op": overhead_per_op(),
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
                "order": f"the matmuls, convolutions, copy and cast run in turns, one run of "
                         f"each per round for {RUNS} rounds, so a busy minute slows them all "
                         f"alike",
                "overhead": f"median kernel time of {CHAIN_LENGTH} one-element Adds in "
                            f"onnxruntime's profiler"},
        "runtime": f"onnxruntime {ort.__version__}",
    }
    with open(out, "w") as handle:
        json.dump(record, handle)


if __name__ == "__main__":
    main(*sys.argv[1:3])
