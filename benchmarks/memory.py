"""The memory planner on every sample: arena peak against the lower bound and the naive total.

    python benchmarks/memory.py [--large]

For each sample, as loaded (unbound dims count as 1), with its dims bound, and after the O2
pipeline, prints the naive total (every tensor its own buffer), the lower bound (most bytes
live at one step), TFLite's plain greedy-by-size plan, GraphLab's plan (greedy by size plus
the repair loop) with its ratio to the bound, and the planning time. The goal: every ratio
at most 1.05. `--large` adds BERT-base from sample_models/large if it is there.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # runs from a plain checkout

from compiler_core.hardware.memory import plan_memory
from compiler_core.ir import load_model
from compiler_core.compilation import compile_model, sized
from graphlab.samples import list_samples, samples_dir

BINDINGS = {"batch": 1, "seq": 128, "height": 96, "width": 96}
GOAL = 1.05


def variants(graph):
    yield "raw", graph, {}
    yield "bound", graph, BINDINGS
    yield "O2", compile_model(graph, "O2", BINDINGS).final, BINDINGS


def row(name, variant, graph, bindings) -> float:
    graph = sized(graph, bindings)   # the memory planner reads sized graphs
    plain = plan_memory(graph, bindings, repair_rounds=1)
    start = time.perf_counter()
    plan = plan_memory(graph, bindings)
    seconds = time.perf_counter() - start
    bound = plan.lower_bound_bytes
    ratio = plan.peak_bytes / bound if bound else 1.0
    print(f"{name:<18} {variant:<6} {len(plan.buffers):>6} {plan.naive_bytes:>12,} "
          f"{bound:>12,} {plain.peak_bytes:>12,} {plan.peak_bytes:>12,} {ratio:>7.3f} "
          f"{seconds * 1e3:>8.1f}")
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="add BERT-base (440 MB)")
    args = parser.parse_args()
    models = [(s.name, s.path) for s in list_samples()]
    large = Path(samples_dir()) / "large" / "bert_base.onnx"
    if args.large and large.exists():
        models.append(("bert_base", str(large)))
    print(f"{'model':<18} {'graph':<6} {'tensors':>6} {'naive':>12} {'lower bound':>12} "
          f"{'greedy':>12} {'graphlab':>12} {'ratio':>7} {'ms':>8}")
    worst = max(row(name, variant, graph, bindings)
                for name, path in models
                for variant, graph, bindings in variants(load_model(path)))
    print(f"worst ratio {worst:.3f} (goal <= {GOAL})")
    return 0 if worst <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
