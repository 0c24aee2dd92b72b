"""`graphlab diff` speed and matching quality, in one run.

    python benchmarks/model_diff.py [--large PATH]

Cases: two exports of BERT-tiny; a model against onnxruntime's extended optimization of it;
BERT-base (if given with --large or found where `python sample_models/make_samples.py --large
sample_models/large` writes it) against its own export and against GraphLab's O2 output; a
generated 10,000-node graph against a copy whose every node is renamed, with one weight
changed and one node removed — where the right answer is known, the script checks it.
Targets: BERT-base against itself under 3 s (most of it hashing 440 MB of weights), the
10,000-node graph under 10 s with exactly the planted differences found.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from benchmarks.app import generated_model  # noqa: E402
from compiler_core.ir import load_model, to_bytes  # noqa: E402
from compiler_core.model_diff import diff_models  # noqa: E402
from compiler_core.model_diff.sides import file_bytes, onnxruntime_version  # noqa: E402
from compiler_core.compilation import compile_model  # noqa: E402
from graphlab.samples import resolve_model  # noqa: E402

DEFAULT_LARGE = os.path.join(ROOT, "sample_models", "large", "bert_base.onnx")


def report(case: str, a, b, expected: str | None = None, check=None) -> None:
    start = time.perf_counter()
    diff = diff_models(a, b)
    seconds = time.perf_counter() - start
    s = diff.summary()
    verdict = "" if check is None else ("  [ok]" if check(diff) else f"  [WRONG: {expected}]")
    print(f"{case:<44} {len(a):>6} {len(b):>6} {seconds:>8.3f} {s['matched']:>7} "
          f"{s['changed']:>7} {s['only_a']:>7} {s['only_b']:>7}{verdict}")


def planted(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with every node renamed, the first weight changed, one Sigmoid removed."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    for index, node in enumerate(graph.node):
        node.name = f"renamed_{index}"
    weight = onnx.numpy_helper.to_array(graph.initializer[0]).copy()
    weight[0, 0] += 1.0
    graph.initializer[0].CopyFrom(onnx.numpy_helper.from_array(weight, graph.initializer[0].name))
    index = next(i for i, n in enumerate(graph.node) if n.op_type == "Sigmoid")
    removed = graph.node[index]
    for node in graph.node:
        for slot, name in enumerate(node.input):
            if name == removed.output[0]:
                node.input[slot] = removed.input[0]
    del graph.node[index]
    return copy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large", default=DEFAULT_LARGE, help="a BERT-base .onnx")
    args = parser.parse_args()
    print(f"{'case':<44} {'A':>6} {'B':>6} {'seconds':>8} {'matched':>7} {'changed':>7} "
          f"{'only A':>7} {'only B':>7}")
    op13, dynamo = (load_model(resolve_model(n)) for n in ("bert_tiny_op13", "bert_tiny_dynamo"))
    report("bert_tiny_op13 vs bert_tiny_dynamo", op13, dynamo)
    report("bert_tiny_op13 vs onnxruntime extended", op13, onnxruntime_version(
        op13, "extended", file_bytes(resolve_model("bert_tiny_op13"))))
    if os.path.exists(args.large):
        bert = load_model(args.large)
        report("BERT-base vs its own export", bert, load_model(to_bytes(bert)),
               "identical", lambda d: d.identical)
        report("BERT-base vs its O2 output", bert, compile_model(bert, "O2").final)
    else:
        print(f"(no BERT-base at {args.large}: skipped)")
    model = generated_model(layers=100, branches=4, depth=24)
    report("generated vs renamed, 1 weight, 1 node removed", load_model(model.SerializeToString()),
           load_model(planted(model).SerializeToString()),
           "1 Sigmoid only in A, 1 MatMul with changed weights, 1 rewired reader",
           lambda d: [n.op for n in d.only_a] == ["Sigmoid"] and not d.only_b
           and sorted(k for p in d.changed_pairs for k in {c.kind for c in p.changes})
           == ["inputs", "weights"])


if __name__ == "__main__":
    main()
