"""Inference latency in onnxruntime of the input model and of what the optimizers make of it.

    python benchmarks/latency.py [MODEL.onnx ...] [--bind batch=1,seq=128] [--only NAME,...]
                                 [--rounds 15] [--max-rounds 60] [--runs 10]

For every bundled sample (or the models named on the command line) four versions of the model
run in onnxruntime (ORT_ENABLE_ALL, intra_op_num_threads=2, CPU):

- original:     the input model;
- ort-opt:      onnxruntime's transformers optimizer (optimize_model, model_type bert or gpt2,
                its default opt_level); only for BERT- and GPT-2-like models, a note otherwise;
- graphlab:     GraphLab's O2 pipeline, exported with fused nodes as model-local functions;
- graphlab-ort: the same graph exported for onnxruntime (`compile --runtime onnxruntime`).

All four load into one child process (onnxruntime may crash on a malformed model) and run on
the same inputs (generated at --bind sizes, or at sizes the model runs at — `fit_inputs`; the
models themselves stay dynamic), interleaved
round by round so that machine noise hits all alike; each figure is the median over rounds of
the mean of --runs runs.

The ratio is graphlab-ort's time over the reference's — the faster (by median) of the input
model and onnxruntime's transformers optimizer — taken round by round (the two ran moments
apart, under the same noise), with a 95 % bootstrap confidence interval of its median.  Rounds
go on past --rounds, up to --max-rounds, until the interval is narrower than the difference
from 1.0 it reports (it excludes 1.0); one that still holds 1.0 then says "no difference
measured".  Goal: the ratio <= 1.0, or no difference measured.
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

VERSIONS = ("original", "ort-opt", "graphlab", "graphlab-ort")
THREADS = 2


def transformer_type(name: str) -> str | None:
    """The transformers optimizer's model_type for a model of this name, if any."""
    lowered = name.lower()
    return "gpt2" if "gpt2" in lowered else "bert" if "bert" in lowered else None


def build_versions(name: str, path: str, folder: str) -> dict[str, str]:
    """Write every version of the model to ``folder``; a version that cannot be made maps to
    the reason, prefixed with "!"."""
    from compiler_core.ir import load_model, save_model
    from compiler_core.lowering import lower_for_onnxruntime
    from compiler_core.compilation import compile_model

    final = compile_model(load_model(path), "O2").final
    files = {"original": path, "graphlab": os.path.join(folder, "graphlab.onnx"),
             "graphlab-ort": os.path.join(folder, "graphlab-ort.onnx")}
    save_model(final, files["graphlab"])
    save_model(lower_for_onnxruntime(final).graph, files["graphlab-ort"])
    model_type = transformer_type(name)
    if model_type is None:
        files["ort-opt"] = "!not a BERT or GPT-2 model"
    else:
        files["ort-opt"] = _ort_optimized(path, model_type, os.path.join(folder, "ort-opt.onnx"))
    return files


def _ort_optimized(path: str, model_type: str, out: str) -> str:
    """Run onnxruntime's transformers optimizer in a child process (it may crash)."""
    code = ("import sys, logging; logging.disable(logging.WARNING); "
            "from onnxruntime.transformers.optimizer import optimize_model; "
            f"optimize_model({path!r}, model_type={model_type!r}).save_model_to_file({out!r})")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        return "!" + ((done.stderr.strip().splitlines() or ["failed"])[-1][:60])
    return out


REFERENCES = ("original", "ort-opt")   # what graphlab-ort must not be slower than
CONFIDENCE = 0.95
ROUND_BATCH = 5                        # rounds added at a time while the interval holds 1.0


def median_ratio_interval(ratios: list[float], resamples: int = 2000) -> tuple[float, float,
                                                                                  float]:
    """The median of paired per-round ratios and its bootstrap confidence interval (a fixed
    seed: the same timings give the same interval)."""
    import numpy as np

    values = np.asarray(ratios, dtype=float)
    picks = np.random.default_rng(0).integers(0, len(values), (resamples, len(values)))
    medians = np.median(values[picks], axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(medians, [tail, 100 - tail])
    return float(np.median(values)), float(low), float(high)


def reference_version(timings: dict[str, list[float]]) -> str:
    """The faster, by median, of the versions graphlab-ort is held to."""
    import statistics

    present = [v for v in REFERENCES if v in timings]
    return min(present, key=lambda v: statistics.median(timings[v]))


def paired_ratios(timings: dict[str, list[float]]) -> list[float]:
    reference = timings[reference_version(timings)]
    return [ours / theirs for ours, theirs in zip(timings["graphlab-ort"], reference)]


def settled(timings: dict[str, list[float]]) -> bool:
    """Whether the ratio's interval excludes 1.0 (the difference is measured)."""
    if "graphlab-ort" not in timings:
        return True
    _, low, high = median_ratio_interval(paired_ratios(timings))
    return high < 1.0 or low > 1.0


def child(files: dict[str, str], bindings: dict[str, int], rounds: int, max_rounds: int,
          runs: int) -> None:
    """Runs in a fresh interpreter: load every version, time them interleaved round by round
    (more rounds while the ratio's interval holds 1.0), print every round's times as JSON."""
    import time

    import onnxruntime as ort

    from compiler_core.ir import load_model
    from compiler_core.verify import fit_inputs

    inputs = fit_inputs(load_model(files["original"]), bindings).inputs
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = THREADS
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    sessions = {}
    for version, path in files.items():
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        feed = {i.name: inputs[i.name] for i in session.get_inputs()}
        for _ in range(runs):  # warm up: first runs allocate and plan
            session.run(None, feed)
        sessions[version] = (session, feed)
    timings: dict[str, list[float]] = {version: [] for version in sessions}
    done = 0
    while done < rounds or (done < max_rounds and not settled(timings)):
        for _ in range(rounds if done == 0 else ROUND_BATCH):
            for version, (session, feed) in sessions.items():
                start = time.perf_counter()
                for _ in range(runs):
                    session.run(None, feed)
                timings[version].append((time.perf_counter() - start) / runs * 1e3)
            done += 1
    print(json.dumps(timings))


def measure(files: dict[str, str], bindings: dict[str, int], rounds: int, max_rounds: int,
            runs: int) -> dict[str, list[float]] | str:
    code = (f"import sys, json; sys.path.insert(0, {ROOT!r}); "
            f"from benchmarks.latency import child; "
            f"child(json.loads({json.dumps(files)!r}), {bindings!r}, {rounds}, {max_rounds}, "
            f"{runs})")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        return (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return json.loads(done.stdout.strip().splitlines()[-1])


def models(args) -> list[tuple[str, str]]:
    if args.models:
        return [(os.path.splitext(os.path.basename(p))[0], p) for p in args.models]
    from graphlab.samples import list_samples

    chosen = [(s.name, s.path) for s in list_samples()]
    if args.only:
        wanted = set(args.only.split(","))
        chosen = [m for m in chosen if m[0] in wanted]
    return chosen


def main() -> int:
    from graphlab.user_input import parse_bindings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", metavar="MODEL.onnx",
                        help="models to measure (default: every bundled sample)")
    parser.add_argument("--bind", metavar="k=v,...",
                        help="input sizes for symbolic dims, e.g. batch=1,seq=128 (default: "
                             "GraphLab's small generated inputs)")
    parser.add_argument("--only", help="comma-separated sample names")
    parser.add_argument("--rounds", type=int, default=15, help="rounds at least")
    parser.add_argument("--max-rounds", type=int, default=60,
                        help="rounds at most, while the ratio's interval holds 1.0")
    parser.add_argument("--runs", type=int, default=10, help="runs per version per round")
    args = parser.parse_args()
    bindings = parse_bindings(args.bind)
    print(f"{'model':<26}" + "".join(f"{v:>13}" for v in VERSIONS)
          + f"{'ratio':>7}{'95% interval':>16}{'rounds':>7}  verdict")
    print(f"{'':<26}" + "".join(f"{'ms':>13}" for _ in VERSIONS))
    notes, slower = [], []
    for name, path in models(args):
        with tempfile.TemporaryDirectory() as folder:
            files = build_versions(name, path, folder)
            runnable = {v: f for v, f in files.items() if not f.startswith("!")}
            timings = measure(runnable, bindings, args.rounds, args.max_rounds, args.runs)
        if isinstance(timings, str):
            print(f"{name:<26}failed: {timings[:100]}")
            continue
        notes += [f"{name}: {v} skipped ({f[1:]})" for v, f in files.items() if f[0] == "!"]
        print(f"{name:<26}" + _row(timings))
        if _verdict(timings) == "slower":
            slower.append(name)
    print(f"ratio = graphlab-ort / the faster of {' and '.join(REFERENCES)}, per round, median "
          f"and {CONFIDENCE:.0%} interval; onnxruntime ORT_ENABLE_ALL, {THREADS} threads, "
          f"interleaved rounds of {args.runs} runs")
    for note in notes:
        print(note)
    print("goal (ratio <= 1.0 or no difference measured): "
          + (f"missed on {', '.join(slower)}" if slower else "met on every model"))
    return 0


def _verdict(timings: dict[str, list[float]]) -> str:
    _, low, high = median_ratio_interval(paired_ratios(timings))
    return "faster" if high < 1.0 else "slower" if low > 1.0 else "no difference measured"


def _row(timings: dict[str, list[float]]) -> str:
    import statistics

    cells = "".join(f"{statistics.median(timings[v]):>13.3f}" if v in timings else f"{'-':>13}"
                    for v in VERSIONS)
    ratio, low, high = median_ratio_interval(paired_ratios(timings))
    rounds = len(timings["graphlab-ort"])
    return (f"{cells}{ratio:>7.2f}{f'[{low:.2f}, {high:.2f}]':>16}{rounds:>7}  "
            f"{_verdict(timings)} (vs {reference_version(timings)})")


if __name__ == "__main__":
    sys.exit(main())
