"""How fast is the pattern matcher?  Run: ``python benchmarks/matcher.py [--sizes 10000 ...]``.

Prints, in one run:
1. every library pattern over generated models of 10k, 50k and 100k nodes (match counts and
   time; time should grow linearly with the node count), plus the cost of a full explanation;
2. the same LayerNorm and GELU patterns written with onnxscript's rewriter
   (``onnxscript.rewriter.pattern``), matching only, on the same models: same counts, and the
   ratio of the two times.

The models are built from realistic blocks: Conv/BatchNorm/Relu, BERT-style transformer
layers (decomposed LayerNorm, erf GELU), GPT-2-style layers (tanh GELU), and a few no-ops.
onnxscript gets the patterns in exactly the operand orders the model uses (its commutation
support enumerates every order as a separate pattern, which would only slow it down), so the
comparison favours it.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from compiler_core.ir import Graph, load_model
from compiler_core.passes.framework.rulebook import registered_patterns
from compiler_core.patterns import NodeIndex, Pattern, explain, match_all

BATCH, SEQ, HIDDEN, HEADS, CHANNELS = 1, 4, 16, 2, 8
SQRT2, SQRT_2_OVER_PI = math.sqrt(2.0), math.sqrt(2.0 / math.pi)
COMPARED = ("layernorm", "gelu")


# -------------------------------------------------------------------------------- the model
class ModelBuilder:
    """Appends blocks to two chains (an image and a hidden state) with shared weights."""

    def __init__(self):
        self.nodes: list[onnx.NodeProto] = []
        self.count = 0
        self.image, self.hidden = "image", "hidden"
        self.initializers = [numpy_helper.from_array(np.asarray(array), name) for name, array in {
            "conv_w": np.full((CHANNELS, CHANNELS, 3, 3), 0.01, np.float32),
            "conv_b": np.zeros(CHANNELS, np.float32),
            "bn_scale": np.ones(CHANNELS, np.float32), "bn_b": np.zeros(CHANNELS, np.float32),
            "bn_mean": np.zeros(CHANNELS, np.float32), "bn_var": np.ones(CHANNELS, np.float32),
            "w": np.full((HIDDEN, HIDDEN), 0.01, np.float32), "b": np.zeros(HIDDEN, np.float32),
            "gamma": np.ones(HIDDEN, np.float32), "beta": np.zeros(HIDDEN, np.float32),
            "heads_shape": np.array([BATCH, SEQ, HEADS, HIDDEN // HEADS], np.int64),
            "hidden_shape": np.array([BATCH, SEQ, HIDDEN], np.int64),
            "flat_shape": np.array([BATCH * SEQ, HIDDEN], np.int64),
            "attn_scale": np.array(math.sqrt(HIDDEN // HEADS), np.float32),
            "two": np.array(2.0, np.float32), "three": np.array(3.0, np.float32),
            "eps": np.array(1e-5, np.float32), "one": np.array(1.0, np.float32),
            "half": np.array(0.5, np.float32), "sqrt2": np.array(SQRT2, np.float32),
            "c_tanh": np.array(SQRT_2_OVER_PI, np.float32),
            "c_cube": np.array(0.044715, np.float32)}.items()]

    def add(self, op_type: str, inputs: list[str], **attrs) -> str:
        self.count += 1
        out = f"v{self.count}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f"{op_type}_{self.count}",
                                           **attrs))
        return out

    # -- blocks ---------------------------------------------------------------------------
    def conv_bn_relu(self) -> None:
        conv = self.add("Conv", [self.image, "conv_w", "conv_b"], pads=[1, 1, 1, 1])
        bn = self.add("BatchNormalization", [conv, "bn_scale", "bn_b", "bn_mean", "bn_var"])
        self.image = self.add("Relu", [bn])

    def linear(self, x: str) -> str:
        return self.add("Add", [self.add("MatMul", [x, "w"]), "b"])

    def layernorm(self, x: str) -> str:
        mean = self.add("ReduceMean", [x], axes=[-1])
        centered = self.add("Sub", [x, mean])
        var = self.add("ReduceMean", [self.add("Pow", [centered, "two"])], axes=[-1])
        std = self.add("Sqrt", [self.add("Add", [var, "eps"])])
        normed = self.add("Div", [centered, std])
        return self.add("Add", [self.add("Mul", [normed, "gamma"]), "beta"])

    def gelu_erf(self, x: str) -> str:  # the order torch's exporter writes at opset 13
        erf = self.add("Erf", [self.add("Div", [x, "sqrt2"])])
        return self.add("Mul", [self.add("Mul", [x, self.add("Add", [erf, "one"])]), "half"])

    def gelu_tanh(self, x: str) -> str:  # GPT-2's gelu_new as exported
        half_x = self.add("Mul", [x, "half"])
        cube = self.add("Mul", [self.add("Pow", [x, "three"]), "c_cube"])
        inner = self.add("Mul", [self.add("Add", [x, cube]), "c_tanh"])
        return self.add("Mul", [half_x, self.add("Add", [self.add("Tanh", [inner]), "one"])])

    def transformer_layer(self, gelu: Callable[[str], str]) -> None:
        h = self.hidden
        q, k, v = (self.add("Reshape", [self.linear(h), "heads_shape"]) for _ in range(3))
        q = self.add("Transpose", [q], perm=[0, 2, 1, 3])
        k = self.add("Transpose", [k], perm=[0, 2, 3, 1])
        v = self.add("Transpose", [v], perm=[0, 2, 1, 3])
        scores = self.add("Div", [self.add("MatMul", [q, k]), "attn_scale"])
        probs = self.add("Softmax", [self.add("Add", [scores, "mask"])], axis=-1)
        context = self.add("Transpose", [self.add("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        attended = self.linear(self.add("Reshape", [context, "hidden_shape"]))
        first = self.layernorm(self.add("Add", [attended, h]))
        ffn = self.linear(gelu(self.linear(first)))
        self.hidden = self.layernorm(self.add("Add", [ffn, first]))

    def no_ops(self) -> None:
        x = self.add("Dropout", [self.add("Identity", [self.hidden])])
        x = self.add("Transpose", [self.add("Transpose", [x], perm=[0, 2, 1])], perm=[0, 2, 1])
        flat = self.add("Reshape", [x, "flat_shape"])
        self.hidden = self.add("Reshape", [flat, "hidden_shape"])

    def model(self) -> onnx.ModelProto:
        image = helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, CHANNELS, 4, 4])
        hidden = helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [BATCH, SEQ, HIDDEN])
        mask = helper.make_tensor_value_info("mask", TensorProto.FLOAT, [BATCH, 1, 1, SEQ])
        outputs = [helper.make_tensor_value_info(v, TensorProto.FLOAT, None)
                   for v in (self.image, self.hidden)]
        graph = helper.make_graph(self.nodes, "generated", [image, hidden, mask], outputs,
                                  self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        model.ir_version = 8
        return model


def generated_model(n_nodes: int) -> onnx.ModelProto:
    """Repeat a unit (10 Conv/BN/Relu blocks, a BERT layer, a GPT-2 layer, no-ops) to size."""
    builder = ModelBuilder()
    while builder.count < n_nodes:
        for _ in range(10):
            builder.conv_bn_relu()
        builder.transformer_layer(builder.gelu_erf)
        builder.transformer_layer(builder.gelu_tanh)
        builder.no_ops()
    return builder.model()


# ------------------------------------------------------------------------------- timing
def measure(work: Callable[[], object], repeats: int = 3) -> tuple[object, float, float]:
    """The work's result, and its best wall-clock and best CPU seconds over ``repeats`` runs
    (CPU time is the steadier figure on a shared machine)."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = work()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return result, min(walls), min(cpus)


def graphlab_counts(graph: Graph, patterns: dict[str, Pattern]) -> dict[str, int]:
    """Match counts for ``patterns`` (the node index is built inside, so it is timed too)."""
    index = NodeIndex(graph)
    return {name: len(match_all(graph, pattern, index=index))
            for name, pattern in patterns.items()}


# ---------------------------------------------------------------------------- onnxscript
def onnxscript_patterns() -> dict[str, list]:
    from onnxscript.rewriter import pattern

    def layernorm(op, x, scale, bias, epsilon):
        mean = op.ReduceMean(x, axes=[-1])
        centered = op.Sub(x, mean)
        var = op.ReduceMean(op.Pow(centered, 2.0), axes=[-1])
        normed = op.Div(centered, op.Sqrt(op.Add(var, epsilon)))
        return op.Add(op.Mul(normed, scale), bias)

    def epsilon_is_constant(context, epsilon, **_):
        return epsilon.const_value is not None

    def gelu_erf(op, x):
        return op.Mul(op.Mul(x, op.Add(op.Erf(op.Div(x, SQRT2)), 1.0)), 0.5)

    def gelu_tanh(op, x):
        inner = op.Mul(op.Add(x, op.Mul(op.Pow(x, 3.0), 0.044715)), SQRT_2_OVER_PI)
        return op.Mul(op.Mul(x, 0.5), op.Add(op.Tanh(inner), 1.0))

    return {"layernorm": [pattern.Pattern(layernorm, epsilon_is_constant)],
            "gelu": [pattern.Pattern(gelu_erf), pattern.Pattern(gelu_tanh)]}


def onnxscript_counts(model, patterns: dict[str, list]) -> dict[str, int]:
    """Every node tried against each pattern, as the rewriter does (matching only)."""
    graph = model.graph
    counts = dict.fromkeys(patterns, 0)
    for node in graph:
        for name, alternatives in patterns.items():
            if any(p.match(model, graph, node) for p in alternatives):
                counts[name] += 1
    return counts


# ----------------------------------------------------------------------------------- main
def main() -> None:
    import onnx_ir as ir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000, 100_000])
    args = parser.parse_args()
    patterns = registered_patterns()
    theirs_patterns = onnxscript_patterns()
    print(f"GraphLab matcher: all {len(patterns)} patterns of the passes on generated models "
          f"(best of 3; wall clock / CPU seconds)\n")
    first = last = None
    for size in args.sizes:
        model = generated_model(size)
        graph = load_model(model.SerializeToString())
        n = len(graph)
        counts, wall, cpu = measure(lambda: graphlab_counts(graph, patterns))
        _, explain_wall, explain_cpu = measure(lambda: explain(graph, patterns.values()),
                                               repeats=1)
        print(f"{n:>7,} nodes: all patterns {wall:6.3f} / {cpu:6.3f} s "
              f"({cpu / n * 1e6:4.1f} µs/node CPU); full explain {explain_wall:6.3f} / "
              f"{explain_cpu:6.3f} s")
        print("         " + ", ".join(f"{name} {c}" for name, c in counts.items()))
        compared = {name: patterns[name] for name in COMPARED}
        ours_counts, ours_wall, ours_cpu = measure(lambda: graphlab_counts(graph, compared))
        ir_model = ir.serde.deserialize_model(model)
        theirs_counts, theirs_wall, theirs_cpu = measure(
            lambda: onnxscript_counts(ir_model, theirs_patterns))
        same = "same counts" if ours_counts == theirs_counts else "COUNTS DIFFER"
        print(f"         LayerNorm+GELU {ours_counts} ({same}): GraphLab {ours_wall:6.3f} / "
              f"{ours_cpu:6.3f} s, onnxscript {theirs_wall:6.3f} / {theirs_cpu:6.3f} s; "
              f"onnxscript/GraphLab = {theirs_cpu / ours_cpu:4.1f}x CPU, "
              f"{theirs_wall / ours_wall:4.1f}x wall\n")
        first = first or (n, cpu)
        last = (n, cpu)
    if first != last:
        print(f"scaling: {last[0] / first[0]:.1f}x the nodes took {last[1] / first[1]:.1f}x the "
              f"CPU time (all patterns)")


if __name__ == "__main__":
    main()
