"""`graphlab bisect A B`: the first value where two models that compute the same thing differ.

B is a second model, onnxruntime's optimized version of A (``--onnxruntime LEVEL``), a
pipeline's output (``-p PIPELINE``) or one pass's output with A its input (``--pass NAME``).
Both run on the same inputs with every value that has a counterpart exposed; the report lists
each pair's error in A's order and names the first wrong value, the node that made it and its
inputs' errors (``compiler_core.fault_finding``).
"""

from __future__ import annotations

import os

from compiler_core.errors import GraphLabError
from compiler_core.runtime_check import LEVELS
from compiler_core.verify import DEFAULT_RTOL, load_inputs, make_inputs

from ..samples import resolve_model
from ..user_input import parse_bindings
from .common import add_json_flag, add_plugins_option, load_graph, print_json

SHOWN = 12   # pairs listed around the first divergence in the text report


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "bisect", help="find the first wrong value between two models that compute the same "
                       "thing (two exports, a pass's input and output, onnxruntime's version)")
    parser.add_argument("a", metavar="A", help="an .onnx file or a sample name")
    parser.add_argument("b", metavar="B", nargs="?",
                        help="the model to compare with (omit it with --onnxruntime, "
                             "-p or --pass)")
    parser.add_argument("--onnxruntime", metavar="LEVEL",
                        choices=[level for level in LEVELS if level != "disabled"],
                        help="compare A with onnxruntime's optimized model of A at this level")
    parser.add_argument("-p", "--pipeline", metavar="P",
                        help="compare the input and output of the first pass of this "
                             "pipeline whose output differs (A and the pipeline's output when "
                             "none does); with --pass, of that pass (default O2)")
    parser.add_argument("--pass", dest="pass_name", metavar="NAME|N",
                        help="compare the input and output of this pass (its first run that "
                             "changed the graph, or the N-th pass)")
    parser.add_argument("--inputs", metavar="FILE.npz",
                        help="the inputs to run both on (default: generated as compile does)")
    parser.add_argument("--bind", metavar="k=v,...", help="sizes of symbolic dims")
    parser.add_argument("--rtol", type=float, default=DEFAULT_RTOL,
                        help=f"error allowed, relative to a value's scale (default "
                             f"{DEFAULT_RTOL:g})")
    parser.add_argument("--all", action="store_true", help="list every compared value")
    add_plugins_option(parser)
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    from compiler_core.fault_finding.bisect import bisect_sides

    graph = load_graph(args.a)
    bindings = parse_bindings(args.bind)
    if args.inputs:
        inputs, record = load_inputs(args.inputs, graph), {"generated": False}
    else:   # at the planned sizes; other sizes are tried only if the model refuses them
        inputs = make_inputs(graph, bindings)
        record = {"generated": True, "sizes": "planned from the model's structure"}
    sides = _sides(args, graph, inputs)
    report = bisect_sides(sides, inputs, record, graph=graph, bindings=bindings, rtol=args.rtol)
    if args.json:
        print_json(report)
    else:
        print("\n".join(report_lines(report, everything=args.all)))
    return 1 if report.first is not None else 0


def _sides(args, graph, inputs):
    from compiler_core.fault_finding import sides
    from compiler_core.model_diff.sides import file_bytes

    others = [x for x in (args.b, args.onnxruntime, args.pipeline or args.pass_name) if x]
    if len(others) != 1:
        raise GraphLabError("give exactly one of: a second model B, --onnxruntime LEVEL, "
                            "-p PIPELINE or --pass NAME",
                            hint="e.g. graphlab bisect a.onnx b.onnx, or graphlab bisect "
                                 "a.onnx --pass fuse_attention -p O2")
    label = _label(args.a)
    bindings = parse_bindings(args.bind)
    if args.b:
        b_label = _label(args.b)
        return sides.two_models(graph, load_graph(args.b), label,
                                b_label if b_label != label else f"B: {b_label}")
    if args.onnxruntime:
        return sides.with_onnxruntime(graph, args.onnxruntime, label,
                                      file_bytes(resolve_model(args.a)))
    if args.pass_name:
        return sides.around_pass(graph, args.pipeline or "O2", args.pass_name, label, bindings)
    return sides.after_pipeline(graph, args.pipeline, label, bindings, inputs)


def _label(model: str) -> str:
    return os.path.basename(model) if os.path.exists(model) else model


def report_lines(report, everything: bool = False) -> list[str]:
    """The text report: what was compared, the first wrong value and its inputs, the pairs."""
    values = report.values
    lines = [f"A  {report.a_label}", f"B  {report.b_label}",
             f"{len(values)} values compared, {sum(v.diverged for v in values)} above "
             f"{report.rtol:g} of their scale; without a counterpart: "
             f"{len(report.unmatched_a)} in A, {len(report.unmatched_b)} in B  "
             f"({report.seconds:.2f} s)"]
    first = report.first
    if first is None:
        lines.append("no value differs beyond the tolerance")
    else:
        v = first.value
        made = f", made by pass {first.made_by}" if first.made_by else ""
        lines.append(f"first wrong value: {v.a!r} of {first.a_op} {v.a_node!r} (A) ↔ {v.b!r} "
                     f"of {first.b_op} {v.b_node!r} (B{made}): error {_error(v.error)}"
                     + (f" ({v.note})" if v.note else ""))
        for i in first.inputs:
            error = "" if i.error is None else f"error {_error(i.error)}"
            lines.append(f"  input {i.slot} {i.a!r}" + (f" ↔ {i.b!r}" if i.b else "")
                         + f": {'; '.join(x for x in (error, i.note) if x) or 'agrees'}")
    at = next((k for k, v in enumerate(values) if v.diverged), 0)
    shown = values if everything else values[max(0, at - SHOWN // 2):at + SHOWN // 2]
    if shown:
        lines.append(f"{'error':>10}  value in A ↔ value in B  (how paired)")
        lines += [f"{_error(v.error):>10}{'*' if v.diverged else ' '} {v.a} ↔ {v.b}  ({v.how})"
                  for v in shown]
    if not everything and len(shown) < len(values):
        lines.append(f"({len(values) - len(shown)} more values: --all lists them)")
    return lines


def _error(error: float) -> str:
    return "inf" if error == float("inf") else f"{error:.3g}"
