"""`graphlab roofline MODEL`: every op's FLOPs, bytes, intensity and bound on a target.

With `--pipeline`, the ops are those of the pipeline's last snapshot, and the report adds the
loaded model's total and the estimated speed-up the pipeline buys on the target.  With
`--per-pass`, the traffic story instead: FLOPs, bytes moved, estimated time and arena peak
after every pass of the pipeline (O2 unless `--pipeline` names one), and what each kind of
fused node keeps on chip.  With `--measured`, onnxruntime's profile of the same graph
(`graphlab profile`) beside each op's predicted time on the target — this machine, measured
on first use, unless `--target` names another — with the ratio and, where they differ by more
than 2x, the term that dominates.
"""

from __future__ import annotations

from compiler_core.compilation.pass_traffic import PipelineTraffic, pipeline_traffic
from compiler_core.hardware.cost import compare_costs, graph_cost
from compiler_core.hardware.targets import DEFAULT_TARGET, get_target
from compiler_core.profiling.compare import compare
from compiler_core.profiling.runner import DEFAULT_REPEATS, ProfileSettings, profile_graphs
from compiler_core.records import to_json
from compiler_core.verify import make_inputs

from .common import add_json_flag, add_model_argument, print_json
from .profile import machine_or_measure, print_ops, print_totals
from .model_options import add_pipeline_options, add_target_option, analysed_graphs
from ..units import format_bytes, format_seconds, format_si

DEFAULT_TOP = 15
DEFAULT_PIPELINE = "O2"   # --per-pass without --pipeline
ASSUMED_MARK = "*"   # beside an op priced with a dim counted as 1


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("roofline", help="per-op roofline on a hardware target: "
                                                    "FLOPs, bytes, intensity, bound, time")
    add_model_argument(parser)
    add_target_option(parser)
    add_pipeline_options(parser)
    parser.add_argument("--per-pass", action="store_true",
                        help="FLOPs, bytes moved, estimated time and arena peak after every "
                             "pass of the pipeline (default O2), and the traffic fused nodes "
                             "keep on chip")
    parser.add_argument("--top", type=int, default=DEFAULT_TOP, metavar="N",
                        help=f"text output: show the N slowest ops (0: all; default "
                             f"{DEFAULT_TOP})")
    parser.add_argument("--measured", action="store_true",
                        help="also run the graph in onnxruntime's profiler (ORT_ENABLE_ALL) "
                             "and show each op's measured time beside the predicted one, on "
                             "this machine's measured target unless --target is given")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, metavar="N",
                        help=f"with --measured: timed runs (default {DEFAULT_REPEATS})")
    add_json_flag(parser)
    parser.set_defaults(run=run, target=None)


def roofline_record(analysed, target) -> dict:
    """graph_cost's record of the analysed graph, the sizes it was priced at (and the edits
    made first); with a pipeline, the comparison too."""
    sizes = analysed.head()
    if analysed.pipeline is None:
        return {**sizes, **to_json(graph_cost(analysed.priced_final, target,
                                              analysed.bindings))}
    comparison = compare_costs(analysed.priced_initial, analysed.priced_final, target,
                               analysed.bindings)
    return {**sizes, **to_json(comparison.after), "pipeline": analysed.pipeline,
            "initial": comparison.before.totals(),
            "initial_total_est_seconds": comparison.before.total_est_seconds,
            "initial_notes": comparison.before.notes,
            "speedup": comparison.speedup}


def run(args) -> int:
    if args.target:
        target = get_target(args.target)
    else:
        target = machine_or_measure(0) if args.measured else get_target(DEFAULT_TARGET)
        args.target = target.name   # passes that partition read it
    if args.per_pass:
        return run_per_pass(args, target)
    analysed = analysed_graphs(args)
    record = roofline_record(analysed, target)
    measured = None
    if args.measured:
        profile = profile_graphs([analysed.final], make_inputs(analysed.initial,
                                                                analysed.bindings),
                                 ProfileSettings(levels=("all",), repeats=args.repeats))[0]
        measured = compare(analysed.final, profile["all"], target, analysed.bindings)
        record["measured"] = to_json(measured)
    if args.json:
        print_json(record)
        return 0
    print("\n".join(analysed.head_lines()))
    print_text(record, args.top)
    if measured is not None:
        print("measured in onnxruntime's profiler:")
        print_totals({"all": measured})
        print_ops(measured, args.top)
    return 0


def run_per_pass(args, target) -> int:
    analysed = analysed_graphs(args, pipeline=DEFAULT_PIPELINE)
    traffic = pipeline_traffic(analysed.result, target, analysed.bindings)
    if args.json:
        print_json({**analysed.head(), "pipeline": analysed.pipeline, **to_json(traffic)})
        return 0
    print("\n".join(analysed.head_lines()))
    print_per_pass(traffic, analysed.pipeline)
    return 0


def print_per_pass(traffic: PipelineTraffic, pipeline: str) -> None:
    print(f"pipeline {pipeline} on {traffic.target.name}: the graph after each pass that "
          f"changed it")
    width = max(len(s.pass_name) for s in traffic.steps)
    print(f"{'#':>3}  {'pass':<{width}}  {'nodes':>6} {'FLOPs':>10} {'bytes':>10} "
          f"{'time':>9} {'arena peak':>10}")
    for step in traffic.steps:
        if step.changed:
            number = "" if step.index < 0 else step.index + 1
            print(f"{number:>3}  {step.pass_name:<{width}}  {step.nodes:>6} "
                  f"{format_si(step.flops, ''):>10} {format_bytes(step.bytes):>10} "
                  f"{format_seconds(step.est_seconds):>9} "
                  f"{format_bytes(step.arena_peak_bytes):>10}"
                  + (f"  {ASSUMED_MARK}{step.ops_with_assumed_dims} ops unsized"
                     if step.ops_with_assumed_dims else ""))
    unchanged = sum(1 for s in traffic.steps if not s.changed)
    if unchanged:
        print(f"     ({unchanged} passes changed nothing: not shown, their figures are their "
              f"predecessor's)")
    first, last = traffic.steps[0], traffic.steps[-1]
    print(f"bytes moved {format_bytes(first.bytes)} -> {format_bytes(last.bytes)} "
          f"({_less(first.bytes, last.bytes)}), FLOPs {format_si(first.flops, '')} -> "
          f"{format_si(last.flops, '')}, estimated time {format_seconds(first.est_seconds)} -> "
          f"{format_seconds(last.est_seconds)}")
    fused = traffic.fused_by_op()
    if fused:
        print("fused nodes keep their intermediates on chip (bytes moved fused vs their body "
              "run op by op):")
        for op_type, (count, moved, unfused) in fused.items():
            print(f"  {op_type} x{count}: {format_bytes(moved)} vs {format_bytes(unfused)} "
                  f"({_less(unfused, moved)})")


def _less(before: int, after: int) -> str:
    return f"{1 - after / before:.0%} less" if before else "n/a"


OP_COLUMN = 26   # characters: the longest of onnxruntime's names are cut at the front


def print_text(record: dict, top: int) -> None:
    t = record["target"]
    print(f"target {t['name']}: peak {format_si(t['peak_ops_per_s'], 'OPS')}, bandwidth "
          f"{format_si(t['bandwidth_bytes_per_s'], 'B/s')}, ridge {t['ridge_point']:.2f} "
          f"ops/byte (ops below the ridge are memory-bound)")
    ops = sorted(record["ops"], key=lambda op: -op["est_seconds"])
    shown = ops if top <= 0 else ops[:top]
    width = min(48, max((len(op["node"]) for op in shown), default=4))
    op_width = min(OP_COLUMN, max((len(op["op_type"]) + 1 for op in shown), default=4))
    print(f"{'node':<{width}}  {'op':<{op_width}} {'FLOPs':>10} {'bytes':>10} {'ops/B':>7} "
          f"{'bound':<7} {'time':>9}")
    for op in shown:
        intensity = "inf" if op["intensity"] is None else f"{op['intensity']:.2f}"
        mark = ASSUMED_MARK if op["assumed_dims"] else ""
        op_type = _tail(op["op_type"], op_width - len(mark)) + mark
        print(f"{op['node'][-width:]:<{width}}  {op_type:<{op_width}} "
              f"{format_si(op['flops'], ''):>10} {format_bytes(op['bytes']):>10} "
              f"{intensity:>7} {op['bound']:<7} {format_seconds(op['est_seconds']):>9}")
    if len(shown) < len(ops):
        print(f"... {len(ops) - len(shown)} faster ops not shown (--top 0 shows all)")
    print(f"total: {format_si(record['total_flops'], 'FLOP')}, "
          f"{format_bytes(record['total_bytes'])} moved, estimated "
          f"{format_seconds(record['total_est_seconds'])} on {t['name']}")
    if "speedup" in record:
        speedup = record["speedup"]
        print(f"before {record['pipeline']}: {format_seconds(record['initial_total_est_seconds'])}"
              f" estimated; speed-up " + ("n/a" if speedup is None else f"{speedup:.2f}x"))
    print(ridge_sides(ops, t["ridge_point"]))
    marked = [op for op in ops if op["assumed_dims"]]
    if marked:
        print(f"{ASSUMED_MARK} {len(marked)} ops are priced with a dim nobody could size "
              f"counted as 1, so their figures are too small (bind the dims to size them)")
    if record["unmodelled_ops"]:
        print("not priced (counted as 0): " + ", ".join(record["unmodelled_ops"]))
    for note in record["notes"]:
        print(f"note: {note}")


def _tail(text: str, width: int) -> str:
    """``text`` in ``width`` characters, cut at the front: an op's own name is at its end
    (com.microsoft.QLinearGlobalAveragePool -> ….QLinearGlobalAveragePool)."""
    return text if len(text) <= width else "…" + text[len(text) - width + 1:]


def ridge_sides(ops: list[dict], ridge: float) -> str:
    """How many ops sit on each side of the ridge (ops that do no arithmetic, and those
    GraphLab cannot price, on neither)."""
    priced = [op for op in ops if op["modelled"]]
    working = [op for op in priced if op["bound"] != "none" and op["flops"] > 0]
    right = sum(1 for op in working if op["intensity"] is None or op["intensity"] >= ridge)
    unpriced = len(ops) - len(priced)
    return (f"ridge: {len(working) - right} ops left of it (memory-bound), {right} right of "
            f"it (compute-bound); {len(priced) - len(working)} ops do no arithmetic"
            + (f", {unpriced} not priced" if unpriced else ""))
