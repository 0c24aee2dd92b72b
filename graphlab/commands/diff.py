"""`graphlab diff A B`: match the nodes of two models that share no ids and say what differs.

Two exports of one network, a model and GraphLab's output, or (with ``--onnxruntime LEVEL``
and no B) a model and what onnxruntime's optimizer makes of it.  ``--pipeline`` runs a pipeline
on the models given first, so "GraphLab's O2 beside onnxruntime's extended level" is
``graphlab diff MODEL --pipeline O2 --onnxruntime extended``.  The report: counts, a table by op
type, the matched nodes that differ (attributes, weights, input wiring, outputs, dtypes,
shapes), and the nodes found on one side only.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING

from compiler_core.errors import GraphLabError
from compiler_core.runtime_check import LEVELS

from ..samples import resolve_model
from ..user_input import parse_bindings
from .common import add_json_flag, load_graph, print_json

if TYPE_CHECKING:
    from compiler_core.model_diff import ModelDiff

CHANGED_SHOWN = 20   # changed pairs listed without --all


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "diff", help="compare two models node by node (two exports, a model and GraphLab's "
                     "or onnxruntime's optimized version)")
    parser.add_argument("a", metavar="A", help="an .onnx file or a sample name")
    parser.add_argument("b", metavar="B", nargs="?",
                        help="the model to compare with (omit it with --onnxruntime)")
    parser.add_argument("--onnxruntime", metavar="LEVEL", choices=[l for l in LEVELS
                                                                   if l != "disabled"],
                        help="compare A with onnxruntime's optimized model of A at this level "
                             "(basic, extended, all) instead of B")
    parser.add_argument("-p", "--pipeline", metavar="P",
                        help="run this pipeline on A (and on B) first")
    parser.add_argument("--bind", metavar="k=v,...",
                        help="sizes of symbolic dims for --pipeline, e.g. batch=1,seq=128")
    parser.add_argument("--all", action="store_true",
                        help="list every changed pair and every unmatched node by name")
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    diff = compared(args)
    if args.json:
        print_json(diff)
    else:
        print("\n".join(report_lines(diff, everything=args.all)))
    return 0


def compared(args) -> ModelDiff:
    # imported here: the CLI's start-up does not pay for a command it may not run
    from compiler_core.model_diff import diff_models
    from compiler_core.model_diff.sides import (after_pipeline, file_bytes, onnxruntime_label,
                                                onnxruntime_version)

    if (args.b is None) == (args.onnxruntime is None):
        raise GraphLabError("give either a second model B or --onnxruntime LEVEL",
                            hint="e.g. graphlab diff a.onnx b.onnx, or graphlab diff a.onnx "
                                 "--onnxruntime extended")
    bindings = parse_bindings(args.bind)
    loaded = load_graph(args.a)
    a = after_pipeline(loaded, args.pipeline, bindings) if args.pipeline else loaded
    a_label = _label(args.a) + (f" after {args.pipeline}" if args.pipeline else "")
    if args.onnxruntime:
        optimized = onnxruntime_version(loaded, args.onnxruntime,
                                        file_bytes(resolve_model(args.a)))
        return diff_models(a, optimized, a_label, onnxruntime_label(args.onnxruntime))
    b = load_graph(args.b)
    if args.pipeline:
        b = after_pipeline(b, args.pipeline, bindings)
    b_label = _label(args.b) + (f" after {args.pipeline}" if args.pipeline else "")
    if b_label == a_label:
        a_label, b_label = f"A: {a_label}", f"B: {b_label}"
    return diff_models(a, b, a_label, b_label)


def _label(model: str) -> str:
    return os.path.basename(model) if os.path.exists(model) else model


def report_lines(diff: ModelDiff, everything: bool = False) -> list[str]:
    """The text report: headline, the table by op, interface, changed pairs, one-sided nodes."""
    s = diff.summary()
    lines = [f"A  {diff.a_label}  ({s['nodes_a']} nodes)",
             f"B  {diff.b_label}  ({s['nodes_b']} nodes)"]
    if diff.identical:
        lines.append(f"no difference: all {s['matched']} nodes matched, none changed "
                     f"({diff.seconds:.2f} s)")
        return lines
    kinds = ", ".join(f"{kind} {n}" for kind, n in s["change_kinds"].items())
    lines.append(f"{s['matched']} matched: {s['identical']} identical, {s['changed']} changed"
                 + (f" ({kinds})" if kinds else "")
                 + f"; {s['only_a']} only in A, {s['only_b']} only in B  ({diff.seconds:.2f} s)")
    lines += _op_table(diff)
    for change in diff.interface:
        lines.append(f"interface  {change.text()}")
    changed = diff.changed_pairs
    if changed:
        lines.append(f"changed ({len(changed)}):")
        for pair in changed if everything else changed[:CHANGED_SHOWN]:
            lines.append(f"  {pair.a} ↔ {pair.b.name!r}  (matched by {pair.how})")
            lines += [f"      {change.text()}" for change in pair.changes]
        if not everything and len(changed) > CHANGED_SHOWN:
            lines.append(f"  ... and {len(changed) - CHANGED_SHOWN} more (--all lists them)")
    for side, nodes in (("A", diff.only_a), ("B", diff.only_b)):
        if not nodes:
            continue
        if everything:
            lines.append(f"only in {side} ({len(nodes)}):")
            lines += [f"  {node}" for node in nodes]
        else:
            ops = Counter(n.op for n in nodes).most_common()
            lines.append(f"only in {side} ({len(nodes)}): "
                         + ", ".join(f"{count} {op}" for op, count in ops))
    return lines


def _op_table(diff: ModelDiff) -> list[str]:
    rows = [r for r in diff.by_op() if r.changed or r.only_a or r.only_b]
    if not rows:
        return []
    width = max(8, *(len(r.op) for r in rows))
    lines = [f"{'op':<{width}}  {'A':>5} {'B':>5} {'matched':>8} {'changed':>8} "
             f"{'only A':>7} {'only B':>7}"]
    for r in rows:
        lines.append(f"{r.op:<{width}}  {r.a:>5} {r.b:>5} {r.matched:>8} {r.changed:>8} "
                     f"{r.only_a:>7} {r.only_b:>7}")
    same = len(diff.by_op()) - len(rows)
    if same:
        lines.append(f"({same} more op type{'s' if same != 1 else ''} all matched and "
                     f"unchanged)")
    return lines
