"""GraphLab's default pipeline beside onnxruntime, onnxsim and onnxoptimizer, in one run.

    python benchmarks/pipeline.py [--large PATH] [--repeat 3] [--only NAME,...]

For every bundled sample (and a BERT-base export, if given with --large or found where
`python sample_models/make_samples.py --large sample_models/large` writes it), each tool goes
from the .onnx file to an optimized model written to disk, in a fresh process:

- graphlab:      import, the default pipeline (O2) with a snapshot per pass, export;
- ort-extended:  onnxruntime's offline optimizer (ORT_ENABLE_EXTENDED, optimized_model_filepath);
- onnxsim:       onnxsim.simplify (no numerical check) and onnx.save;
- onnxoptimizer: onnxoptimizer.optimize with its default passes and onnx.save.

It prints wall time (best of --repeat) and node count of each, and our ratios against the
fastest tool and the smallest result.  Targets: our time <= the fastest, our nodes <= the fewest.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

TOOLS = ("graphlab", "ort-extended", "onnxsim", "onnxoptimizer")
DEFAULT_LARGE = os.path.join(ROOT, "sample_models", "large", "bert_base.onnx")


def child(tool: str, path: str, out: str) -> None:
    """Runs in a fresh interpreter: optimize ``path`` with ``tool``, print seconds and nodes."""
    import time

    import onnx

    if tool == "graphlab":
        from compiler_core.ir import load_model, save_model
        from compiler_core.compilation import compile_model

        start = time.perf_counter()
        result = compile_model(load_model(path), "O2")
        save_model(result.final, out)
        seconds = time.perf_counter() - start
    elif tool == "ort-extended":
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = out
        options.log_severity_level = 3
        start = time.perf_counter()
        ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        seconds = time.perf_counter() - start
    elif tool == "onnxsim":
        import onnxsim

        start = time.perf_counter()
        model, _ = onnxsim.simplify(onnx.load(path), check_n=0)
        onnx.save(model, out)
        seconds = time.perf_counter() - start
    else:
        import onnxoptimizer

        start = time.perf_counter()
        onnx.save(onnxoptimizer.optimize(onnx.load(path)), out)
        seconds = time.perf_counter() - start
    nodes = len(onnx.load(out, load_external_data=False).graph.node)
    print(json.dumps({"seconds": seconds, "nodes": nodes}))


def measure(tool: str, path: str, folder: str, repeat: int) -> dict | None:
    out = os.path.join(folder, f"{tool}.onnx")
    code = (f"import sys; sys.path.insert(0, {ROOT!r}); from benchmarks.pipeline import child; "
            f"child({tool!r}, {path!r}, {out!r})")
    runs = []
    for _ in range(repeat):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if done.returncode != 0:
            return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1][:80]}
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {"seconds": min(r["seconds"] for r in runs), "nodes": runs[0]["nodes"]}


def models(args) -> list[tuple[str, str]]:
    from graphlab.samples import list_samples

    chosen = [(s.name, s.path) for s in list_samples()]
    if args.only:
        wanted = set(args.only.split(","))
        chosen = [m for m in chosen if m[0] in wanted]
    large = args.large or (DEFAULT_LARGE if os.path.exists(DEFAULT_LARGE) else None)
    if large:
        chosen.append(("bert_base (large)", large))
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", help="a big model to include (e.g. a BERT-base export)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", help="comma-separated sample names")
    args = parser.parse_args()
    header = f"{'model':<20}" + "".join(f"{t:>22}" for t in TOOLS) + f"{'time x':>8}{'nodes x':>9}"
    print(header)
    print(f"{'':<20}" + "".join(f"{'seconds  nodes':>22}" for _ in TOOLS))
    for name, path in models(args):
        with tempfile.TemporaryDirectory() as folder:
            results = {tool: measure(tool, path, folder, args.repeat) for tool in TOOLS}
        cells = []
        for tool in TOOLS:
            r = results[tool]
            cells.append(f"{'failed':>22}" if "error" in r else
                         f"{r['seconds']:>14.3f}{r['nodes']:>8d}")
        others = [results[t] for t in TOOLS[1:] if "error" not in results[t]]
        ours = results["graphlab"]
        ratios = ""
        if others and "error" not in ours:
            ratios = (f"{ours['seconds'] / min(o['seconds'] for o in others):>8.2f}"
                      f"{ours['nodes'] / max(min(o['nodes'] for o in others), 1):>9.2f}")
        print(f"{name:<20}" + "".join(cells) + ratios)
    print("time x = graphlab / fastest other tool; nodes x = graphlab / fewest nodes of the "
          "others (targets: <= 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
