"""Import+export cost of GraphLab's IR against plain `onnx.load` + `onnx.save`, in one run.

    python benchmarks/import_export.py [--model PATH ...] [--repeat 3]

Measures, for the largest bundled sample and a generated 10,000-node graph (and any --model
given, e.g. a BERT-base export from `python sample_models/make_samples.py --large DIR`), the
wall time and peak memory of each in a fresh process, and prints our/onnx ratios.
Targets: <= 3x time, <= 1.5x memory.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._measure import measure_in_subprocess  # noqa: E402
from graphlab.samples import list_samples  # noqa: E402


def generated_model(path: str, nodes: int = 10_000, width: int = 64) -> str:
    """A deep MLP (MatMul, Add, Relu per layer) with real weights: `nodes` nodes in total."""
    rng = np.random.default_rng(0)
    layers = nodes // 3
    graph_nodes, weights = [], []
    current = "x"
    for i in range(layers):
        w, b = f"w{i}", f"b{i}"
        weights.append(numpy_helper.from_array(
            (rng.standard_normal((width, width)) / 8).astype(np.float32), w))
        weights.append(numpy_helper.from_array(rng.standard_normal(width).astype(np.float32), b))
        graph_nodes += [helper.make_node("MatMul", [current, w], [f"mm{i}"], name=f"/l{i}/MatMul"),
                        helper.make_node("Add", [f"mm{i}", b], [f"add{i}"], name=f"/l{i}/Add"),
                        helper.make_node("Relu", [f"add{i}"], [f"r{i}"], name=f"/l{i}/Relu")]
        current = f"r{i}"
    graph_nodes.append(helper.make_node("Identity", [current], ["y"], name="out"))
    graph = helper.make_graph(graph_nodes, "mlp10k",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])],
                              weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    onnx.save(model, path)
    return path


def best_of(kind: str, path: str, out_dir: str, repeat: int) -> dict:
    runs = [measure_in_subprocess(kind, path, out_dir) for _ in range(repeat)]
    return {"seconds": min(r["seconds"] for r in runs),
            "peak_bytes": min(r["peak_bytes"] for r in runs)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", default=[], help="extra model file(s)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        largest = max(list_samples(), key=lambda s: os.path.getsize(s.path))
        models = [(f"largest sample ({largest.name})", largest.path),
                  ("generated 10,000-node graph", generated_model(os.path.join(tmp, "g.onnx")))]
        models += [(os.path.basename(p), p) for p in args.model]
        print(f"{'model':<34}{'MB':>8}{'onnx s':>9}{'ours s':>9}{'time x':>8}"
              f"{'onnx MB':>9}{'ours MB':>9}{'mem x':>7}")
        for label, path in models:
            onnx_cost = best_of("onnx", path, tmp, args.repeat)
            ours = best_of("graphlab", path, tmp, args.repeat)
            time_ratio = ours["seconds"] / onnx_cost["seconds"]
            mem_ratio = ours["peak_bytes"] / max(onnx_cost["peak_bytes"], 1)
            print(f"{label:<34}{os.path.getsize(path) / 2**20:>8.1f}"
                  f"{onnx_cost['seconds']:>9.3f}{ours['seconds']:>9.3f}{time_ratio:>8.2f}"
                  f"{onnx_cost['peak_bytes'] / 2**20:>9.1f}{ours['peak_bytes'] / 2**20:>9.1f}"
                  f"{mem_ratio:>7.2f}")
        print("targets: time x <= 3, mem x <= 1.5")
    return 0


if __name__ == "__main__":
    sys.exit(main())
