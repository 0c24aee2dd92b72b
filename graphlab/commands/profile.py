"""`graphlab profile MODEL`: onnxruntime's own profile of the model, beside the prediction.

The model (with `--pipeline`, the graph the pipeline leaves; with `--runtime onnxruntime`, as
written for onnxruntime) runs in onnxruntime's profiler at ORT_ENABLE_ALL and ORT_DISABLE_ALL
in a child process: warm-up runs, then `--repeats` timed runs, medians and spread.  Each
profiled kernel is traced to the node ids it works for (`compiler_core.profiling`), and each
op's measured time is set beside its roofline prediction on the target — this machine,
measured on first use — with the ratio and, where they differ by more than 2x, which term
dominates.  With `--per-pass`, every snapshot that changed the graph is measured too.
"""

from __future__ import annotations

import sys

from compiler_core.hardware.targets import get_target, measured_targets
from compiler_core.lowering import lower_for_onnxruntime
from compiler_core.profiling.compare import Comparison, compare
from compiler_core.profiling.machine import (DEFAULT_THREADS, MACHINE_TARGET, busy_note,
                                             machine_target)
from compiler_core.profiling.pass_latency import PassLatency, pass_latencies
from compiler_core.profiling.runner import (DEFAULT_REPEATS, DEFAULT_WARMUP, ProfileSettings,
                                            profile_graphs)
from compiler_core.runtime_check import LEVELS, by_level_name
from compiler_core.records import to_json
from compiler_core.verify import make_inputs

from ..units import format_bytes
from .common import add_json_flag, add_model_argument, print_json
from .model_options import add_pipeline_options, analysed_graphs

DEFAULT_TOP = 15
RUNTIMES = ("onnx", "onnxruntime")


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("profile", help="onnxruntime's profile of the model: "
                                                   "measured ms per op beside the predicted")
    add_model_argument(parser)
    add_pipeline_options(parser)
    parser.add_argument("--per-pass", action="store_true",
                        help="also measure the graph after every pass that changed it "
                             "(default pipeline O2)")
    parser.add_argument("--runtime", choices=RUNTIMES, default="onnx",
                        help="onnxruntime: profile the graph as written for onnxruntime "
                             "(fused nodes as its own operators), as `compile --runtime "
                             "onnxruntime` writes it")
    parser.add_argument("--target", default=None, metavar="T",
                        help=f"the target predictions are priced on (default {MACHINE_TARGET}"
                             f", this machine, measured on first use)")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, metavar="N",
                        help=f"timed runs per model and level (default {DEFAULT_REPEATS})")
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, metavar="N",
                        help=f"untimed runs first (default {DEFAULT_WARMUP})")
    parser.add_argument("--threads", type=int, default=0, metavar="N",
                        help="onnxruntime's intra-op threads (default: its own, one per core)")
    parser.add_argument("--top", type=int, default=DEFAULT_TOP, metavar="N",
                        help=f"text output: the N slowest ops (0: all; default {DEFAULT_TOP})")
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    target = get_target(args.target) if args.target else machine_or_measure(args.threads)
    analysed = analysed_graphs(args, pipeline="O2" if args.per_pass else None)
    settings = ProfileSettings(warmup=args.warmup, repeats=args.repeats, threads=args.threads)
    inputs = make_inputs(analysed.initial, analysed.bindings)
    passes = []
    if args.per_pass:   # the last graph that changed is the final one: measured once
        passes = pass_latencies(analysed.result, inputs, target, analysed.bindings, settings,
                                for_onnxruntime=args.runtime == "onnxruntime")
        graph, levels = passes[-1].graph, passes[-1].profiles
    else:
        graph = analysed.final
        if args.runtime == "onnxruntime":
            graph = lower_for_onnxruntime(graph).graph
        levels = profile_graphs([graph], inputs, settings)[0]
    comparisons = {level: compare(graph, profile, target, analysed.bindings)
                   for level, profile in levels.items()}
    record = profile_record(comparisons, passes, settings, analysed, args.runtime)
    record["busy"] = busy_note()
    if analysed.edited:
        record["edits"] = to_json(analysed.edited)
    if args.json:
        print_json(record)
        return 0
    print("\n".join(analysed.head_lines()))
    print_text(comparisons, passes, args.top)
    if record["busy"]:
        print(f"note: {record['busy']}")
    return 0


def machine_or_measure(threads: int):
    """This machine's measured target, measured now (and said so) on first use."""
    if MACHINE_TARGET not in measured_targets():
        print("graphlab: measuring this machine first (graphlab targets --measure); "
              "this takes a minute", file=sys.stderr)
    return machine_target(threads or DEFAULT_THREADS)


def profile_record(comparisons: dict[str, Comparison], passes: list[PassLatency],
                   settings: ProfileSettings, analysed, runtime: str) -> dict:
    """The JSON of `graphlab profile`: the ENABLE_ALL comparison at the top level, every
    level under `levels`, the passes' latencies under `passes`."""
    main = comparisons.get("all") or next(iter(comparisons.values()))
    target = main.target
    return {"target": target.name, "measured_target": target.measured is not None,
            "sizes": to_json(analysed.sizes), "pipeline": analysed.pipeline,
            "runtime": runtime, "settings": to_json(settings),
            **{k: v for k, v in to_json(main).items() if k != "target"},
            "levels": to_json(by_level_name(comparisons)), "passes": to_json(passes)}


def print_text(comparisons: dict[str, Comparison], passes: list[PassLatency], top: int) -> None:
    main = comparisons.get("all") or next(iter(comparisons.values()))
    print(f"target {main.target.name}: {main.target.display_name}")
    print_totals(comparisons)
    print_ops(main, top)
    if main.not_run:
        print(f"{len(main.not_run)} nodes ran as no kernel of their own (onnxruntime folded "
              f"or removed them)")
    if passes:
        print_passes(passes)


def print_totals(comparisons: dict[str, Comparison]) -> None:
    """One line per level: run time measured (median, spread) and predicted, rank correlation."""
    for level, comparison in comparisons.items():
        p = comparison.profile
        rho = comparison.spearman
        ratio = comparison.total_ratio
        print(f"{LEVELS[level]}: {p.total_ms:.3f} ms per run (median of {len(p.wall_ms)}, "
              f"best {comparison.best_ms:.3f}, worst {max(p.wall_ms):.3f}), kernels "
              f"{p.kernel_ms:.3f} ms; predicted {comparison.predicted_total_ms:.3f} ms"
              + (f" (best/predicted {ratio:.2f})" if ratio else "")
              + (f"; rank correlation per op {rho:.2f}" if rho is not None else ""))


def print_ops(comparison: Comparison, top: int) -> None:
    """The ops slowest first: measured beside predicted, the ratio, and why it misses."""
    ops = sorted(comparison.ops, key=lambda op: -op.measured_ms)
    shown = ops if top <= 0 else ops[:top]
    width = min(44, max((len(op.profiled.node) for op in shown), default=4))
    print(f"at {comparison.profile.level_name} on {comparison.target.name}, slowest first "
          f"(ms per run, medians):")
    print(f"{'node':<{width}}  {'op':<22} {'measured':>9} {'predicted':>9} {'ratio':>6}  "
          f"why it misses")
    for op in shown:
        name = op.profiled.node
        op_type = ("*" if op.profiled.fused_by_onnxruntime else "") + op.profiled.op_type
        ratio = "-" if op.ratio is None else f"{op.ratio:.2f}"
        print(f"{name[-width:]:<{width}}  {op_type[:22]:<22} {op.measured_ms:>9.3f} "
              f"{op.predicted_ms:>9.3f} {ratio:>6}  {op.miss() or ''}")
    if len(shown) < len(ops):
        print(f"... {len(ops) - len(shown)} faster ops not shown (--top 0 shows all)")
    if any(op.profiled.fused_by_onnxruntime for op in ops):
        print("* nodes onnxruntime fused itself: measured and predicted for the group")


def print_passes(passes: list[PassLatency]) -> None:
    levels = list(passes[0].measured_ms)
    print("each pass that changed the graph, measured (best of the timed runs, ms) and "
          "predicted:")
    width = max(len(p.pass_name) for p in passes)
    print(f"{'#':>3}  {'pass':<{width}} {'nodes':>6} "
          + " ".join(f"{LEVELS[level]:>16}" for level in levels) + f" {'predicted':>15}"
          + f" {'bytes moved':>10}")
    previous = None
    for p in passes:
        number = "" if p.index < 0 else p.index + 1
        cells = []
        for level in levels:
            before = "" if previous is None else f"{previous.best_ms[level]:.3f} → "
            cells.append(f"{before}{p.best_ms[level]:.3f}".rjust(16))
        predicted = ("" if previous is None else f"{previous.predicted_ms:.3f} → ") + \
            f"{p.predicted_ms:.3f}"
        moved = p.profiles[levels[-1]].bytes
        print(f"{number:>3}  {p.pass_name:<{width}} {p.nodes:>6} " + " ".join(cells)
              + f" {predicted:>15} {format_bytes(moved):>10}")
        previous = p
    print(f"bytes moved: what onnxruntime's kernels read and wrote per run at "
          f"{LEVELS[levels[-1]]} (its profiler's activation, parameter and output sizes)")
