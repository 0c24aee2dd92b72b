"""Today's transformers: does GraphLab fuse every attention block and every normalization, and
end with no more nodes than onnxruntime and onnxscript?

    python benchmarks/transformers.py                     # the family, built once if missing
    python benchmarks/transformers.py MODEL.onnx ...      # your own exports
    python benchmarks/transformers.py --models-dir DIR    # a folder of .onnx files

The family (Llama, Qwen2, Mistral, multi-query, a KV-cache decode step, nn.TransformerEncoder,
BART, ViT; TorchScript and dynamo exports; float32 and float16) is built by
``python sample_models/make_samples.py --transformers DIR`` — that step needs torch and
transformers; this script builds it into --models-dir when the folder is empty.

For every model the table shows:

- blocks: attention blocks in the input (its Softmax nodes) and normalizations (LayerNorm /
  RMSNorm ops, or written-out variances: a ReduceMean of a square);
- fused: how many of each GraphLab's O2 turned into one node;
- nodes: the input's node count, GraphLab's O2 output as written for onnxruntime
  (``compile --runtime onnxruntime``), onnxruntime's offline-optimized model at
  ORT_ENABLE_EXTENDED, and onnxscript's ``optimize_for_ort``;
- error: GraphLab's onnxruntime file, run by onnxruntime at every optimization level, against
  the input model on the same inputs (the largest error relative to an output's scale);
- levels: whether GraphLab's output loads and runs in onnxruntime at every optimization level
  (each in a child process).

A row passes when everything fused, GraphLab's node count is at most both others', the error is
within the tolerance ``compile --verify`` checks the export at (1e-4 of each output's scale;
5e-3 when onnxruntime operators compute in float16, whose kernels round their own way) and
every level runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "graphlab" / \
    "transformers"
ATTENTION_OPS = {"Attention", "MultiHeadAttention", "GroupQueryAttention",
                 "PackedMultiHeadAttention"}
NORM_OPS = {"LayerNormalization", "SimplifiedLayerNormalization", "SkipLayerNormalization",
            "SkipSimplifiedLayerNormalization", "RMSNormalization", "EmbedLayerNormalization"}
SQUARES = {"Pow", "Mul"}


# ------------------------------------------------------------------------------ counting
def counts(model: onnx.ModelProto) -> dict[str, int]:
    """Top-level nodes, attention blocks (fused, or a Softmax left unfused) and
    normalizations (fused, or a written-out variance left)."""
    nodes = list(model.graph.node)
    ops = Counter(node.op_type for node in nodes)
    producer = {out: node for node in nodes for out in node.output}
    written_norms = sum(1 for node in nodes if node.op_type == "ReduceMean"
                        and _is_square(producer.get(node.input[0]), producer))
    return {"nodes": len(nodes), "attention": sum(ops[o] for o in ATTENTION_OPS),
            "softmax": ops["Softmax"], "norms": sum(ops[o] for o in NORM_OPS),
            "written_norms": written_norms}


def _is_square(node, producer) -> bool:
    while node is not None and node.op_type == "Cast":
        node = producer.get(node.input[0])
    if node is None or node.op_type not in SQUARES:
        return False
    return node.op_type == "Pow" or node.input[0] == node.input[1]


# ------------------------------------------------------------------------------ the tools
def graphlab_row(path: Path, folder: Path) -> dict:
    """GraphLab's O2, its onnxruntime export, the numerical check and the level checks."""
    from compiler_core.ir import load_model, save_model
    from compiler_core.lowering import lower_for_onnxruntime
    from compiler_core.compilation import compile_model
    from compiler_core.runtime_check import LEVELS, run_isolated
    from compiler_core.verify import DEFAULT_RTOL, Verifier, compare_outputs

    graph = load_model(str(path))
    start = time.perf_counter()
    final = compile_model(graph, "O2").final
    lowering = lower_for_onnxruntime(final)
    seconds = time.perf_counter() - start
    out = folder / "graphlab-ort.onnx"
    save_model(lowering.graph, str(out))
    row = {"graphlab_seconds": seconds, "graphlab": counts(onnx.load(str(out))),
           "limit": lowering.tolerance[0] if lowering.tolerance else DEFAULT_RTOL}
    try:
        verifier = Verifier(graph)
    except Exception as exc:  # noqa: BLE001 -- a model we cannot feed is a row's verdict
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
        verifier = None
    batches = [verifier.inputs] if verifier else None
    data = out.read_bytes()
    failed, errors = [], []
    for level in LEVELS:
        outcome = run_isolated(data, batches, level=level)
        if not outcome.ok:
            failed.append(f"{level}: {outcome.stage}")
        elif verifier:
            report = compare_outputs(verifier.reference_outputs, outcome.outputs[0])
            errors.append(max((c.max_abs_err / max(c.scale, 1e-12) for c in report.outputs),
                              default=0.0))
    if errors:
        row["error"] = max(errors)
    elif verifier:
        row["error"] = "no onnxruntime level ran the model"
    row["levels"] = "all run" if not failed else "; ".join(failed)
    return row


ORT_CHILD = """
import sys, onnxruntime as ort
options = ort.SessionOptions()
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
options.optimized_model_filepath = sys.argv[2]
ort.InferenceSession(sys.argv[1], options, providers=["CPUExecutionProvider"])
"""

ONNXSCRIPT_CHILD = """
import sys, time, onnx_ir as ir
from onnxscript.rewriter.ort_fusions import optimize_for_ort
model = ir.load(sys.argv[1])
start = time.perf_counter()
optimize_for_ort(model)
print(time.perf_counter() - start)
ir.save(model, sys.argv[2])
"""


def reference_counts(code: str, path: Path, out: Path) -> tuple[dict | str, float | None]:
    """Run a reference optimizer in a child process (it may crash); its output's counts and,
    when it prints one, its own time."""
    done = subprocess.run([sys.executable, "-c", code, str(path), str(out)],
                          capture_output=True, text=True)
    if done.returncode != 0 or not out.exists():
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        return f"failed: {last[:60]}", None
    seconds = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else None
    return counts(onnx.load(str(out))), float(seconds) if seconds else None


# ------------------------------------------------------------------------------ the table
def measure(path: Path) -> dict:
    model = onnx.load(str(path), load_external_data=False)
    source = counts(model)
    row = {"model": path.stem, "input": source,
           "blocks": source["attention"] + source["softmax"],
           "norm_sites": source["norms"] + source["written_norms"]}
    with tempfile.TemporaryDirectory(prefix="graphlab-transformers-") as scratch:
        folder = Path(scratch)
        row.update(graphlab_row(path, folder))
        row["ort"], _ = reference_counts(ORT_CHILD, path, folder / "ort.onnx")
        row["onnxscript"], row["onnxscript_seconds"] = reference_counts(
            ONNXSCRIPT_CHILD, path, folder / "onnxscript.onnx")
    row["passes"], row["why"] = verdict(row)
    return row


def verdict(row: dict) -> tuple[bool, str]:
    ours = row["graphlab"]
    reasons = []
    if ours["attention"] < row["blocks"]:
        reasons.append(f"attention {ours['attention']}/{row['blocks']}")
    if ours["norms"] < row["norm_sites"] or ours["written_norms"]:
        reasons.append(f"norms {ours['norms']}/{row['norm_sites']}")
    for tool in ("ort", "onnxscript"):
        theirs = row[tool]
        if isinstance(theirs, dict) and ours["nodes"] > theirs["nodes"]:
            reasons.append(f"more nodes than {tool}")
    if not isinstance(row["error"], float) or row["error"] > row["limit"]:
        reasons.append("outputs differ")
    if row["levels"] != "all run":
        reasons.append("fails in onnxruntime")
    return not reasons, ", ".join(reasons)


def _nodes(entry) -> str:
    return str(entry["nodes"]) if isinstance(entry, dict) else "failed"


def print_table(rows: list[dict]) -> None:
    header = (f"{'model':<36} {'attn':>7} {'norms':>7} {'input':>6} {'GraphLab':>8} "
              f"{'ORT-ext':>7} {'onnxscr':>7} {'rel err':>8}  {'levels':<8} verdict")
    print(header)
    print("-" * len(header))
    for row in rows:
        ours = row["graphlab"]
        error = row["error"]
        error_text = f"{error:.1e}" if isinstance(error, float) else "n/a"
        print(f"{row['model']:<36} {ours['attention']:>3}/{row['blocks']:<3} "
              f"{ours['norms']:>3}/{row['norm_sites']:<3} {row['input']['nodes']:>6} "
              f"{ours['nodes']:>8} {_nodes(row['ort']):>7} {_nodes(row['onnxscript']):>7} "
              f"{error_text:>8}  {'all' if row['levels'] == 'all run' else 'FAIL':<8} "
              f"{'pass' if row['passes'] else 'FAIL: ' + row['why']}")
    passed = sum(row["passes"] for row in rows)
    print(f"\n{passed}/{len(rows)} models meet the goal (every attention block and "
          f"normalization fused; nodes <= ORT EXTENDED and <= onnxscript; outputs match; "
          f"loads at every onnxruntime level)")
    for row in rows:
        if not isinstance(row["error"], float):
            print(f"  {row['model']}: numerical check: {row['error']}")
        if row["levels"] != "all run":
            print(f"  {row['model']}: onnxruntime: {row['levels']}")


def model_files(args) -> list[Path]:
    if args.models:
        return [Path(p) for p in args.models]
    folder: Path = args.models_dir
    if not any(folder.glob("*.onnx")):
        print(f"building the transformer family into {folder} (needs torch and transformers)")
        subprocess.run([sys.executable, str(ROOT / "sample_models" / "make_samples.py"),
                        "--transformers", str(folder)], check=True)
    return sorted(folder.glob("*.onnx"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help="ONNX files (default: the family)")
    parser.add_argument("--models-dir", type=Path, default=DEFAULT_DIR,
                        help=f"folder of the family's exports (default {DEFAULT_DIR})")
    parser.add_argument("--only", help="comma-separated substrings of model names to keep")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON to this file")
    args = parser.parse_args(argv)
    files = model_files(args)
    if args.only:
        keep = [s.strip() for s in args.only.split(",")]
        files = [f for f in files if any(k in f.stem for k in keep)]
    rows = []
    for path in files:
        print(f"  {path.name} ...", file=sys.stderr, flush=True)
        rows.append(measure(path))
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2, default=str))
    return 0 if all(row["passes"] for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
