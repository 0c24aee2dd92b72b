"""How well does the roofline predict what onnxruntime measures on this machine?

    python benchmarks/profile_accuracy.py                 # BERT-base, ResNet-50, Llama-shaped
    python benchmarks/profile_accuracy.py --rounds 5 --repeats 10 --seq 128
    python benchmarks/profile_accuracy.py --models resnet50 --per-pass
    python benchmarks/profile_accuracy.py --threads 1     # a shared machine: no thread waits

The models are built with the onnx library alone (random weights): BERT-base in the
TorchScript export's form (`fault_finding.encoder_model`: 12 layers, hidden 768, 12 heads,
FFN 3072), a ResNet-50 (Conv + BatchNormalization + Relu bottlenecks [3, 4, 6, 3], 224x224)
and a Llama-shaped decoder (`decoder_models`: RMSNorm, rotary embeddings, grouped-query
attention, SwiGLU; float16 weights) at hidden 512, 4 layers.  Each is profiled as loaded and
after GraphLab's O2 as written for onnxruntime (`--runtime onnxruntime`: its fused nodes as
onnxruntime's operators where it has them; the portable export's model-local functions are
written inline by onnxruntime and run op by op), in onnxruntime's profiler at ORT_ENABLE_ALL
and ORT_DISABLE_ALL (`compiler_core.profiling`), and priced on this machine's measured
target, measured again just before each round's profile (a shared machine's rates change
with its load from minute to minute, and the prediction should see the machine the profile
sees; `--keep-target` prices every round on the last one).  For each, over ``--rounds``
whole profiles:

- Spearman's rank correlation of predicted and measured per-op times (goal >= 0.8), with
  each op's median and with its best run in each round (a busy machine's waits land in
  medians), and with its best run over all rounds;
- the total predicted beside the measured run time, median and best (goal: within 2x; the
  ratio is taken with the best run, which a busy machine delays least), and beside the
  kernels' own best times summed (each kernel's fastest run: what is left of a run when no
  kernel waited for a CPU);
- the profiler's own overhead: the same model in two sessions, profiling on and off, run in
  turns, median run time with over without.

The machine this runs on is usually shared: the table gives each figure's spread over the
rounds, the overhead's over paired runs, and the one-minute load average before and after
each round (its range).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.decoder_models import DecoderShape, build_decoder  # noqa: E402
from benchmarks.fault_finding import encoder_model  # noqa: E402
from compiler_core.ir import load_model  # noqa: E402
from compiler_core.ir.model_file import model_for_runtime  # noqa: E402
from compiler_core.compilation import compile_model  # noqa: E402
from compiler_core.hardware.targets import Target  # noqa: E402
from compiler_core.lowering import lower_for_onnxruntime  # noqa: E402
from compiler_core.profiling.compare import compare, spearman  # noqa: E402
from compiler_core.profiling.machine import (  # noqa: E402
    DEFAULT_THREADS, machine_target, measure_machine)
from compiler_core.profiling.pass_latency import pass_latencies  # noqa: E402
from compiler_core.profiling.runner import ProfileSettings, profile_graphs  # noqa: E402
from compiler_core.runtime_check import LEVELS  # noqa: E402
from compiler_core.verify import make_inputs  # noqa: E402

LLAMA_SHAPED = DecoderShape("llama-shaped", hidden=512, layers=4, heads=8, kv_heads=2,
                            intermediate=1536, vocab=8192, tied_embeddings=True)
RESNET50_STAGES = ((64, 256, 3, 1), (128, 512, 4, 2), (256, 1024, 6, 2), (512, 2048, 3, 2))


def resnet50() -> onnx.ModelProto:
    """ResNet-50 as the TorchScript exporter writes it with BatchNormalization unfolded
    (do_constant_folding=False): random weights, dynamic batch, 3x224x224 input."""
    rng = np.random.default_rng(0)
    nodes, weights = [], []

    def weight(name, shape, scale=0.05):
        weights.append(numpy_helper.from_array((rng.standard_normal(shape) * scale)
                                               .astype(np.float32), name))
        return name

    def conv_bn(x, cin, cout, kernel, stride, name, relu=True):
        pad = kernel // 2
        conv = f"{name}/Conv"
        nodes.append(helper.make_node("Conv", [x, weight(f"{name}.w", (cout, cin, kernel,
                                                                        kernel))], [conv],
                                      name=conv, kernel_shape=[kernel, kernel],
                                      strides=[stride, stride], pads=[pad] * 4))
        out = f"{name}/BatchNormalization"
        stats = [weight(f"{name}.gamma", (cout,), 0.1), weight(f"{name}.beta", (cout,), 0.1),
                 weight(f"{name}.mean", (cout,), 0.1)]
        weights.append(numpy_helper.from_array(np.ones(cout, np.float32), f"{name}.var"))
        nodes.append(helper.make_node("BatchNormalization", [conv, *stats, f"{name}.var"],
                                      [out], name=out))
        if not relu:
            return out
        nodes.append(helper.make_node("Relu", [out], [f"{name}/Relu"], name=f"{name}/Relu"))
        return f"{name}/Relu"

    x = conv_bn("input", 3, 64, 7, 2, "/conv1")
    nodes.append(helper.make_node("MaxPool", [x], ["/maxpool"], name="/maxpool",
                                  kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = "/maxpool", 64
    for stage, (width, cout, blocks, stride) in enumerate(RESNET50_STAGES, 1):
        for block in range(blocks):
            s = f"/layer{stage}/layer{stage}.{block}"
            step = stride if block == 0 else 1
            y = conv_bn(x, cin, width, 1, 1, f"{s}/conv1")
            y = conv_bn(y, width, width, 3, step, f"{s}/conv2")
            y = conv_bn(y, width, cout, 1, 1, f"{s}/conv3", relu=False)
            skip = conv_bn(x, cin, cout, 1, step, f"{s}/downsample", relu=False) \
                if block == 0 else x
            nodes.append(helper.make_node("Add", [y, skip], [f"{s}/Add"], name=f"{s}/Add"))
            nodes.append(helper.make_node("Relu", [f"{s}/Add"], [f"{s}/Relu"],
                                          name=f"{s}/Relu"))
            x, cin = f"{s}/Relu", cout
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["/avgpool"], name="/avgpool"))
    nodes.append(helper.make_node("Flatten", ["/avgpool"], ["/flatten"], name="/flatten"))
    nodes.append(helper.make_node("Gemm", ["/flatten", weight("fc.w", (1000, 2048)),
                                           weight("fc.b", (1000,))], ["output"], name="/fc",
                                  transB=1))
    graph = helper.make_graph(
        nodes, "resnet50",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 1000])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def model_files(folder: Path, names: list[str]) -> dict[str, Path]:
    files = {}
    for name in names:
        path = folder / f"{name}.onnx"
        if name == "bert-base":
            onnx.save(encoder_model(12, 768, 12, 3072, 30522, fused_norm=False, opset=13), path)
        elif name == "resnet50":
            onnx.save(resnet50(), path)
        else:
            build_decoder(LLAMA_SHAPED, path)
        files[name] = path
    return files


def profile_overhead(graph, inputs: dict, runs: int, threads: int
                     ) -> tuple[float, float, float]:
    """Median run time with profiling over without (and the spread of the paired ratios):
    two sessions at ORT_ENABLE_ALL, one run of each in turn."""
    import onnxruntime as ort

    sessions = []
    with tempfile.TemporaryDirectory() as folder, model_for_runtime(graph) as model:
        for profiling in (False, True):
            options = ort.SessionOptions()
            options.log_severity_level = 3
            options.intra_op_num_threads = threads
            if profiling:
                options.enable_profiling = True
                options.profile_file_prefix = f"{folder}/overhead"
            sessions.append(ort.InferenceSession(model if isinstance(model, bytes)
                                                 else str(model), options,
                                                 providers=["CPUExecutionProvider"]))
        feed = {i.name: inputs[i.name] for i in sessions[0].get_inputs()}
        times: list[list[float]] = [[], []]
        for turn in range(runs + 1):
            for index, session in enumerate(sessions):
                start = time.perf_counter()
                session.run(None, feed)
                if turn:
                    times[index].append(time.perf_counter() - start)
        sessions[1].end_profiling()
    ratios = [on / off for off, on in zip(*times)]
    return statistics.median(times[1]) / statistics.median(times[0]), min(ratios), max(ratios)


def round_target(threads: int, keep: bool, last: Target | None) -> Target:
    """The target a round is priced on: measured just before it (the machine's load changes
    from minute to minute, and the profile should see the machine the target saw), or the
    one measured before, with --keep-target."""
    if keep:
        return last or machine_target(threads)
    return measure_machine(threads)


def describe(target: Target) -> str:
    """The measured rates a round is priced on, in one line."""
    kinds = target.measured.get("ops_per_s_by_kind", {})
    return (f"peak float32 {target.peak('float32') / 1e9:.0f}, float16 "
            f"{target.peak('float16') / 1e9:.0f} GFLOP/s, convolutions "
            + ", ".join(f"{kind} {rate / 1e9:.0f}" for kind, rate in kinds.items())
            + f" GFLOP/s, bandwidth {target.bandwidth_bytes_per_s / 1e9:.1f} GB/s, casts "
              f"{target.recast_bytes_per_s / 1e9:.1f} GB/s, per-op overhead "
              f"{target.overhead_seconds_per_op * 1e6:.0f} µs")


def pooled_figures(pooled: dict[tuple, tuple[list[float], list[float]]]
                   ) -> tuple[float, float]:
    """Spearman's rho of each op's median prediction and its fastest run over every round, and
    those fastest runs summed over the predictions summed: the more runs a kernel has, the
    likelier one of them found both cores free on a busy machine, as the prediction assumes."""
    best = [min(runs) / 1000 for runs, _ in pooled.values()]
    predicted = [statistics.median(p) for _, p in pooled.values()]
    return spearman(predicted, best), sum(best) / sum(predicted)


def spread(values: list[float], digits: int = 2) -> str:
    middle = statistics.median(values)
    if len(values) == 1:
        return f"{middle:.{digits}f}"
    return f"{middle:.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["bert-base", "resnet50", "llama-shaped"],
                        choices=["bert-base", "resnet50", "llama-shaped"])
    parser.add_argument("--rounds", type=int, default=3, help="whole profiles per model")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per profile")
    parser.add_argument("--seq", type=int, default=128, help="sequence length (transformers)")
    parser.add_argument("--keep-target", action="store_true",
                        help="price every round on the machine's target as measured before "
                             "(default: measure it again just before each round, so the "
                             "prediction and the profile see the machine in the same state)")
    parser.add_argument("--per-pass", action="store_true",
                        help="also measure every pass of O2 on the first model")
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS,
                        help="onnxruntime's threads, for the target's micro-benchmarks and "
                             "every profile (default: one per core; on a shared machine one "
                             "thread does not wait for another at each parallel kernel)")
    args = parser.parse_args(argv)
    print("target: this machine, " + ("as measured before" if args.keep_target else
                                       "measured again just before each round's profile")
          + f"; {args.threads} thread(s)\n")
    settings = ProfileSettings(repeats=args.repeats, warmup=2, threads=args.threads)
    rows = ["| model | graph | level | ops | Spearman ρ (medians) | ρ (best runs) | ρ (best of "
            "all rounds) | predicted ms | measured ms, median | measured ms, best | "
            "best/predicted | kernels' best, summed | kernels/predicted | kernels' best of all "
            "rounds / predicted | profiler overhead | load |",
            "|---|---|---|---:|---|---|---|---|---|---|---|---|---|---|---|---|"]
    target = None
    with tempfile.TemporaryDirectory(prefix="graphlab-accuracy-") as scratch:
        files = model_files(Path(scratch), args.models)
        first_result = None
        for name, path in files.items():
            bindings = {"batch": 1, "seq": args.seq}
            initial = load_model(str(path))
            result = compile_model(initial, "O2", bindings).result
            first_result = first_result or (name, result, bindings)
            inputs = make_inputs(initial, bindings)
            graphs = {"as loaded": initial,
                      "GraphLab O2, for onnxruntime": lower_for_onnxruntime(result.final).graph}
            figures = {(g, level): {"rho": [], "rho_best": [], "measured": [], "best": [],
                                    "kernels": [], "predicted": [], "ops": 0, "pooled": {}}
                       for g in graphs for level in settings.levels}
            loads = []
            for number in range(1, args.rounds + 1):
                target = round_target(args.threads, args.keep_target, target)
                loads.append(os.getloadavg()[0])
                print(f"{name}, round {number}: load {loads[-1]:.1f}; {describe(target)}",
                      flush=True)
                profiles = profile_graphs(list(graphs.values()), inputs, settings)
                loads.append(os.getloadavg()[0])
                for (label, graph), levels in zip(graphs.items(), profiles):
                    for level, profile in levels.items():
                        comparison = compare(graph, profile, target, bindings)
                        cell = figures[label, level]
                        cell["rho"].append(comparison.spearman)
                        cell["rho_best"].append(comparison.spearman_best)
                        cell["measured"].append(profile.total_ms)
                        cell["best"].append(min(profile.wall_ms))
                        cell["kernels"].append(sum(op.profiled.best_ms
                                                   for op in comparison.ops))
                        cell["predicted"].append(comparison.predicted_total_ms)
                        cell["ops"] = len(comparison.ops)
                        for op in comparison.ops:   # each op's runs and predictions, all rounds
                            runs, predicted = cell["pooled"].setdefault(op.profiled.ids,
                                                                        ([], []))
                            runs.extend(op.profiled.micros)
                            predicted.append(op.predicted_ms)
            overheads = {label: profile_overhead(graph, inputs, args.repeats * 2, args.threads)
                         for label, graph in graphs.items()}
            load = f"{min(loads):.1f}–{max(loads):.1f}"
            for (label, level), cell in figures.items():
                ratios = [m / p for m, p in zip(cell["best"], cell["predicted"])]
                kernel_ratios = [k / p for k, p in zip(cell["kernels"], cell["predicted"])]
                pooled_rho, pooled_ratio = pooled_figures(cell["pooled"])
                over, low, high = overheads[label]
                rows.append(f"| {name} | {label} | {LEVELS[level]} | {cell['ops']} | "
                            f"{spread(cell['rho'])} | {spread(cell['rho_best'])} | "
                            f"{pooled_rho:.2f} | {spread(cell['predicted'], 1)}"
                            f" | {spread(cell['measured'], 1)} | {spread(cell['best'], 1)} | "
                            f"{spread(ratios)} | {spread(cell['kernels'], 1)} | "
                            f"{spread(kernel_ratios)} | {pooled_ratio:.2f} | "
                            + (f"{over - 1:+.1%} ({low - 1:+.0%}…{high - 1:+.0%})"
                               if level == "all" else "") + f" | {load} |")
            print("\n".join(rows[-len(figures):]), flush=True)
    print("\n" + "\n".join(rows))
    if args.per_pass and first_result:
        name, result, bindings = first_result
        target = round_target(args.threads, args.keep_target, target)
        print(f"\nper pass, {name} (best run in ms; predicted on {target.name}):")
        inputs = make_inputs(result.initial, bindings)
        previous = None
        for row in pass_latencies(result, inputs, target, bindings, settings,
                                  for_onnxruntime=True):
            measured = " ".join(f"{LEVELS[k]} {v:.2f}" for k, v in row.best_ms.items())
            change = "" if previous is None else (
                f"  ({previous.best_ms['all']:.2f} → {row.best_ms['all']:.2f} ms "
                f"measured, {previous.predicted_ms:.2f} → {row.predicted_ms:.2f} predicted)")
            print(f"  {row.pass_name:<28} {row.nodes:>5} nodes  best {measured}  predicted "
                  f"{row.predicted_ms:.2f}{change}")
            previous = row
    return 0


if __name__ == "__main__":
    sys.exit(main())
