"""`graphlab bisect` and `graphlab reduce` on large models, beside Polygraphy where it installs.

    python benchmarks/fault_finding.py [--model BERT.onnx] [--skip-polygraphy]

Bisect: a BERT-base-shaped model (12 layers, hidden 768, 12 heads, FFN 3072, the opset-13
TorchScript form: decomposed LayerNorm, Erf GELU, reshape targets computed from Shape, scalars
as Constant nodes; 440 MB of weights), built with the onnx library since torch is not needed
here — or a real export given with --model — against a copy with one weight of layer 6's
value projection changed. Goal: the first wrong value named at that MatMul in <= 30 s.
Polygraphy's way to the same question: `polygraphy run --onnxrt --onnx-outputs mark all` on
each model, the second comparing with the first's saved outputs.

Reduce: a ~1,000-node model of the same form with LayerNormalization ops, one of which has
its optional bias written as an empty name (onnxruntime's optimizer dies with SIGSEGV at
ORT_ENABLE_ALL). Goal: <= 5 nodes in <= 120 s. Polygraphy's `debug reduce` with a check that
runs the model at ORT_ENABLE_ALL in onnxruntime.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLANTED_LAYER = 6


class _Builder:
    """Nodes and weights of one generated transformer encoder."""

    def __init__(self, seed: int = 0):
        self.nodes: list[onnx.NodeProto] = []
        self.weights: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def op(self, op_type: str, inputs: list[str], name: str, **attrs) -> str:
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=name, **attrs))
        return out

    def const(self, name: str, value) -> str:
        array = np.asarray(value)
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node("Constant", [], [out], name=name,
                                           value=numpy_helper.from_array(array)))
        return out

    def weight(self, name: str, shape: tuple[int, ...], scale: float = 0.02) -> str:
        data = (self.rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32)
        self.weights.append(numpy_helper.from_array(data, name))
        return name

    def integers(self, name: str, array: np.ndarray) -> str:
        self.weights.append(numpy_helper.from_array(array.astype(np.int64), name))
        return name

    def dim(self, x: str, axis: int, scope: str) -> str:
        shape = self.op("Shape", [x], f"{scope}/Shape")
        index = self.const(f"{scope}/Constant", np.array(axis, np.int64))
        picked = self.op("Gather", [shape, index], f"{scope}/Gather", axis=0)
        axes = self.const(f"{scope}/Constant_1", np.array([0], np.int64))
        return self.op("Unsqueeze", [picked, axes], f"{scope}/Unsqueeze")

    def split_heads(self, x: str, heads: int, head: int, scope: str, perm) -> str:
        batch, seq = self.dim(x, 0, f"{scope}/b"), self.dim(x, 1, f"{scope}/s")
        target = self.op("Concat", [batch, seq, self.const(f"{scope}/h", np.array([heads])),
                                    self.const(f"{scope}/d", np.array([head]))],
                         f"{scope}/Concat", axis=0)
        return self.op("Transpose", [self.op("Reshape", [x, target], f"{scope}/Reshape")],
                       f"{scope}/Transpose", perm=perm)

    def linear(self, x: str, width_in: int, width_out: int, scope: str) -> str:
        y = self.op("MatMul", [x, self.weight(f"{scope}.weight", (width_in, width_out))],
                    f"{scope}/MatMul")
        return self.op("Add", [self.weight(f"{scope}.bias", (width_out,)), y], f"{scope}/Add")

    def layernorm(self, x: str, width: int, scope: str, fused: bool) -> str:
        gamma = self.weight(f"{scope}.weight", (width,), 1.0)
        beta = self.weight(f"{scope}.bias", (width,))
        if fused:
            return self.op("LayerNormalization", [x, gamma, beta], f"{scope}/LayerNormalization",
                           axis=-1, epsilon=1e-12)
        mean = self.op("ReduceMean", [x], f"{scope}/ReduceMean", axes=[-1])
        centered = self.op("Sub", [x, mean], f"{scope}/Sub")
        square = self.op("Pow", [centered, self.const(f"{scope}/two", np.float32(2))],
                         f"{scope}/Pow")
        var = self.op("ReduceMean", [square], f"{scope}/ReduceMean_1", axes=[-1])
        std = self.op("Sqrt", [self.op("Add", [var, self.const(f"{scope}/eps",
                                                                np.float32(1e-12))],
                                       f"{scope}/Add")], f"{scope}/Sqrt")
        normed = self.op("Div", [centered, std], f"{scope}/Div")
        return self.op("Add", [self.op("Mul", [normed, gamma], f"{scope}/Mul"), beta],
                       f"{scope}/Add_1")


def encoder_model(layers: int, hidden: int, heads: int, ffn: int, vocab: int,
                  fused_norm: bool, opset: int) -> onnx.ModelProto:
    """A BERT-like encoder in the TorchScript export's form (see the module docstring)."""
    b = _Builder()
    head = hidden // heads
    words = b.op("Gather", [b.weight("embeddings.word", (vocab, hidden)), "input_ids"],
                 "/embeddings/word/Gather")
    positions = b.op("Gather", [b.weight("embeddings.position", (512, hidden)),
                                b.op("Slice", [b.integers("position_ids", np.arange(512)[None]),
                                               b.const("/embeddings/start", np.array([0])),
                                               b.dim("input_ids", 1, "/embeddings/len"),
                                               b.const("/embeddings/axis", np.array([1]))],
                                     "/embeddings/Slice")], "/embeddings/position/Gather")
    x = b.layernorm(b.op("Add", [words, positions], "/embeddings/Add"), hidden,
                    "/embeddings/LayerNorm", fused_norm)
    mask = b.op("Mul", [b.op("Sub", [b.const("/mask/one", np.float32(1)), b.op(
        "Cast", [b.op("Unsqueeze", [b.op("Unsqueeze", ["attention_mask", b.const(
            "/mask/ax1", np.array([1]))], "/mask/Unsqueeze"), b.const("/mask/ax2", np.array(
                [2]))], "/mask/Unsqueeze_1")], "/mask/Cast", to=TensorProto.FLOAT)], "/mask/Sub"),
        b.const("/mask/min", np.float32(-10000.0))], "/mask/Mul")
    for layer in range(layers):
        s = f"/encoder/layer.{layer}"
        q = b.split_heads(b.linear(x, hidden, hidden, f"{s}/attention/self/query"), heads,
                          head, f"{s}/attention/self/q", [0, 2, 1, 3])
        k = b.split_heads(b.linear(x, hidden, hidden, f"{s}/attention/self/key"), heads,
                          head, f"{s}/attention/self/k", [0, 2, 3, 1])
        v = b.split_heads(b.linear(x, hidden, hidden, f"{s}/attention/self/value"), heads,
                          head, f"{s}/attention/self/v", [0, 2, 1, 3])
        scores = b.op("Div", [b.op("MatMul", [q, k], f"{s}/attention/self/MatMul"),
                              b.const(f"{s}/attention/self/sqrt", np.float32(np.sqrt(head)))],
                      f"{s}/attention/self/Div")
        probs = b.op("Softmax", [b.op("Add", [scores, mask], f"{s}/attention/self/Add")],
                     f"{s}/attention/self/Softmax", axis=-1)
        context = b.op("Transpose", [b.op("MatMul", [probs, v], f"{s}/attention/self/MatMul_1")],
                       f"{s}/attention/self/Transpose_3", perm=[0, 2, 1, 3])
        target = b.op("Concat", [b.dim(context, 0, f"{s}/attention/self/cb"),
                                 b.dim(context, 1, f"{s}/attention/self/cs"),
                                 b.const(f"{s}/attention/self/width", np.array([hidden]))],
                      f"{s}/attention/self/Concat_3", axis=0)
        merged = b.op("Reshape", [context, target], f"{s}/attention/self/Reshape_3")
        attended = b.op("Add", [b.linear(merged, hidden, hidden, f"{s}/attention/output/dense"),
                                x], f"{s}/attention/output/Add")
        x = b.layernorm(attended, hidden, f"{s}/attention/output/LayerNorm", fused_norm)
        up = b.linear(x, hidden, ffn, f"{s}/intermediate/dense")
        erf = b.op("Erf", [b.op("Div", [up, b.const(f"{s}/intermediate/sqrt2",
                                                    np.float32(np.sqrt(2)))],
                                f"{s}/intermediate/Div")], f"{s}/intermediate/Erf")
        gelu = b.op("Mul", [b.op("Mul", [up, b.op("Add", [erf, b.const(
            f"{s}/intermediate/one", np.float32(1))], f"{s}/intermediate/Add_1")],
            f"{s}/intermediate/Mul"), b.const(f"{s}/intermediate/half", np.float32(0.5))],
            f"{s}/intermediate/Mul_1")
        down = b.op("Add", [b.linear(gelu, ffn, hidden, f"{s}/output/dense"), x],
                    f"{s}/output/Add")
        x = b.layernorm(down, hidden, f"{s}/output/LayerNorm", fused_norm)
    graph = helper.make_graph(
        b.nodes, "encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", "seq", hidden])],
        b.weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def bert_base() -> onnx.ModelProto:
    return encoder_model(12, 768, 12, 3072, 30522, fused_norm=False, opset=13)


def with_changed_weight(model: onnx.ModelProto, layer: int) -> tuple[onnx.ModelProto, str]:
    """A copy with one weight of ``layer``'s value projection changed; the MatMul reading it."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    name = f"/encoder/layer.{layer}/attention/self/value.weight"
    matmul = next(n for n in copy.graph.node if name in n.input)
    tensor = next(t for t in copy.graph.initializer if t.name == name)
    array = numpy_helper.to_array(tensor).copy()
    array[:, 0] += 0.05
    tensor.CopyFrom(numpy_helper.from_array(array, name))
    return copy, matmul.name


def crashing_model() -> onnx.ModelProto:
    """~1,000 nodes with LayerNormalization ops; one's bias an empty name (SIGSEGV at ALL)."""
    model = encoder_model(11, 256, 4, 1024, 1000, fused_norm=True, opset=17)
    norms = [n for n in model.graph.node if n.op_type == "LayerNormalization"]
    node = norms[len(norms) // 2 + 1]
    del node.input[2:]
    node.input.append("")
    return model


def timed(command: list[str], timeout: float = 900,
          cwd: str | None = None) -> tuple[float, subprocess.CompletedProcess]:
    """Wall seconds of ``command`` (run in ``cwd``: Polygraphy writes its files there)."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": ROOT})
    return time.perf_counter() - start, done


def bisect_rows(model_path: str, folder: str, polygraphy: bool) -> list[str]:
    model = onnx.load(model_path)
    changed, planted = with_changed_weight(model, PLANTED_LAYER)
    changed_path = os.path.join(folder, "changed.onnx")
    onnx.save(changed, changed_path)
    rows = []
    seconds, done = timed([sys.executable, "-m", "graphlab", "bisect", model_path, changed_path,
                           "--json"])
    report = json.loads(done.stdout)
    found = report["first_divergence"]["a"]["node"] if report["first_divergence"] else None
    rows.append(f"| graphlab bisect A B (one weight changed) | {len(model.graph.node)} | "
                f"{seconds:.1f} | {len(report['values'])} values; first wrong: {found} "
                f"{'[ok]' if found == planted else f'[WRONG: {planted}]'} |")
    seconds, done = timed([sys.executable, "-m", "graphlab", "bisect", model_path,
                           "--onnxruntime", "all", "--json"])
    report = json.loads(done.stdout)
    rows.append(f"| graphlab bisect A --onnxruntime all | {len(model.graph.node)} | "
                f"{seconds:.1f} | {len(report['values'])} values; first wrong: "
                f"{(report['first_divergence'] or {}).get('a', {}).get('node')} |")
    if polygraphy:
        saved = os.path.join(folder, "a_outputs.json")
        first, one = timed(["polygraphy", "run", model_path, "--onnxrt", "--onnx-outputs",
                            "mark", "all", "--save-outputs", saved], cwd=folder)
        second, two = timed(["polygraphy", "run", changed_path, "--onnxrt", "--onnx-outputs",
                             "mark", "all", "--load-outputs", saved], cwd=folder)
        failed = two.stdout.count("FAILED | Output:")
        rows.append(f"| polygraphy run --onnx-outputs mark all (x2, compare) | "
                    f"{len(model.graph.node)} | {first + second:.1f} | exit {one.returncode}/"
                    f"{two.returncode}; {failed} outputs reported mismatched, in its own "
                    f"order, no first one named |")
    return rows


def reduce_rows(folder: str, polygraphy: bool, seconds_limit: float) -> list[str]:
    model = crashing_model()
    path = os.path.join(folder, "crash.onnx")
    onnx.save(model, path)
    out = os.path.join(folder, "small.onnx")
    seconds, done = timed([sys.executable, "-m", "graphlab", "reduce", path, "--until", "crash",
                           "--seconds", str(seconds_limit), "-o", out, "--json"])
    record = json.loads(done.stdout) if done.returncode == 0 else {}
    rows = [f"| graphlab reduce --until crash | {len(model.graph.node)} | {seconds:.1f} | "
            f"-> {record.get('nodes_after')} nodes ({', '.join(record.get('ops', []))}), "
            f"{record.get('checks')} checks; exit {done.returncode} |"]
    if polygraphy:
        check = os.path.join(folder, "check.py")
        with open(check, "w") as handle:
            handle.write("import sys, onnxruntime as ort\n"
                         "o = ort.SessionOptions()\n"
                         "o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL\n"
                         "ort.InferenceSession(sys.argv[1], o, providers=['CPUExecutionProvider'])\n")
        reduced = os.path.join(folder, "polygraphy_reduced.onnx")
        seconds, done = timed(["polygraphy", "debug", "reduce", path, "-o", reduced,
                               "--check", sys.executable, check, "polygraphy_debug.onnx"],
                              timeout=max(600, seconds_limit * 3), cwd=folder)
        size = len(onnx.load(reduced).graph.node) if os.path.exists(reduced) else None
        rows.append(f"| polygraphy debug reduce (check: session at ORT_ENABLE_ALL) | "
                    f"{len(model.graph.node)} | {seconds:.1f} | exit {done.returncode}; "
                    f"{'wrote ' + str(size) + ' nodes' if size is not None else 'wrote nothing'}"
                    f" |")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a BERT-base .onnx (default: the generated one)")
    parser.add_argument("--skip-polygraphy", action="store_true")
    parser.add_argument("--seconds", type=float, default=300, help="reduce's time limit")
    args = parser.parse_args(argv)
    polygraphy = not args.skip_polygraphy and shutil.which("polygraphy") is not None
    if not polygraphy and not args.skip_polygraphy:
        print("(polygraphy is not installed: `pip install polygraphy onnx-graphsurgeon` adds "
              "its rows)")
    folder = tempfile.mkdtemp(prefix="fault-finding-")
    try:
        model_path = args.model
        if model_path is None:
            model_path = os.path.join(folder, "bert_base_shaped.onnx")
            onnx.save(bert_base(), model_path)
        print("| what | nodes | seconds | result |")
        print("|---|---|---|---|")
        for row in bisect_rows(model_path, folder, polygraphy):
            print(row, flush=True)
        for row in reduce_rows(folder, polygraphy, args.seconds):
            print(row, flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
