"""Run one measured operation in a fresh process: wall time and peak memory above baseline.

Peak memory is the process's peak resident set size minus its size just before the operation.
Before that baseline, each side does one warm-up round trip of a tiny model, so one-time costs
(imports, onnx's op-schema registry that shape inference loads) are not billed to the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def _status_bytes(field: str) -> int:
    # VmHWM (peak RSS) belongs to the address space, so unlike ru_maxrss it does not inherit
    # the parent's peak across fork+exec.
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not found in /proc/self/status")


def _rss_bytes() -> int:
    return _status_bytes("VmRSS")


def measure_in_subprocess(kind: str, path: str, out_dir: str) -> dict:
    """Run ``kind`` on ``path`` in a new interpreter; returns {"seconds", "peak_bytes"}."""
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.dirname(__file__))!r}); "
            f"from benchmarks._measure import child; child({kind!r}, {path!r}, {out_dir!r})")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{kind} on {path} failed: {result.stderr.strip()[-500:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def child(kind: str, path: str, out_dir: str) -> None:
    import onnx  # noqa: F401 - imported before the baseline on both sides

    from compiler_core.ir import load_model, save_model

    def round_trip(source: str, target: str) -> None:
        if kind == "onnx":
            onnx.save(onnx.load(source), target)
        else:
            save_model(load_model(source), target)

    out = os.path.join(out_dir, f"{kind}.onnx")
    round_trip(_tiny_model(out_dir), out)
    baseline = _rss_bytes()
    start = time.perf_counter()
    round_trip(path, out)
    seconds = time.perf_counter() - start
    peak = _status_bytes("VmHWM") - baseline
    print(json.dumps({"seconds": seconds, "peak_bytes": max(peak, 0)}))


def _tiny_model(folder: str) -> str:
    from onnx import TensorProto, helper

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "warmup",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    path = os.path.join(folder, "warmup.onnx")
    with open(path, "wb") as handle:
        handle.write(model.SerializeToString())
    return path
