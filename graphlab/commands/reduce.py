"""`graphlab reduce MODEL --until KIND -o SMALL.onnx`: shrink a failing model to a few nodes.

Delta debugging over the graph (``compiler_core.fault_finding.reduce``): each candidate is kept
only when it still fails the same way — onnxruntime crashing or refusing it at ``--level`` (in a
child process), a mismatch between onnxruntime's levels or between a model and GraphLab's output
of it (``-p``), a pass that raises (``-p``).  Writes the smallest model found, its inputs
(SMALL.npz) and a standalone script that reproduces the failure (SMALL.py).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx

from compiler_core.errors import GraphLabError
from compiler_core.records import to_json
from compiler_core.runtime_check import LEVELS
from compiler_core.verify import DEFAULT_RTOL, load_inputs

from ..samples import resolve_model
from ..user_input import parse_bindings
from .common import add_json_flag, add_model_argument, add_plugins_option, load_graph, print_json


def add_parser(subparsers) -> None:
    from compiler_core.fault_finding import KINDS
    from compiler_core.fault_finding.reduce import DEFAULT_SECONDS

    parser = subparsers.add_parser(
        "reduce", help="shrink a model that crashes onnxruntime, fails to load, mismatches "
                       "or breaks a pass to a few nodes that still do")
    add_model_argument(parser)
    parser.add_argument("--until", required=True, choices=KINDS,
                        help="the failure to keep: crash, load-error, mismatch (between "
                             "onnxruntime's levels, or with -p GraphLab's output), pass-error")
    parser.add_argument("--level", choices=[level for level in LEVELS if level != "disabled"],
                        default="all", help="the onnxruntime level that fails (default all)")
    parser.add_argument("-p", "--pipeline", metavar="P",
                        help="for pass-error and mismatch: GraphLab's pipeline to check")
    parser.add_argument("-o", "--output", required=True, metavar="SMALL.onnx",
                        help="where to write the reduced model (SMALL.py and SMALL.npz "
                             "beside it)")
    parser.add_argument("--inputs", metavar="FILE.npz", help="inputs (default: generated)")
    parser.add_argument("--bind", metavar="k=v,...", help="sizes of symbolic dims")
    parser.add_argument("--rtol", type=float, default=DEFAULT_RTOL,
                        help="error allowed for mismatch, relative to an output's scale")
    parser.add_argument("--seconds", type=float, default=DEFAULT_SECONDS,
                        help=f"time limit; the smallest model found by then is written "
                             f"(default {DEFAULT_SECONDS:g})")
    add_plugins_option(parser)
    add_json_flag(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    from compiler_core.fault_finding import failure_of, reduce_model, reproduction_script

    path = resolve_model(args.model)
    model = onnx.load(path)
    feed = _inputs(args)
    failure = failure_of(args.until, model.SerializeToString(), feed, level=args.level,
                         pipeline=args.pipeline, rtol=args.rtol)
    print(f"reduce: {len(model.graph.node)} nodes; the model {failure.describe()}",
          file=sys.stderr)
    reduction = reduce_model(model, feed, failure, seconds=args.seconds,
                             on_progress=lambda s: print(
                                 f"reduce: {s.phase:<13} {s.nodes:>6} nodes  {s.checks:>4} "
                                 f"checks  {s.seconds:6.1f} s", file=sys.stderr))
    written = _write(args.output, reduction, reproduction_script(
        reduction.built.model, reduction.built.feed, failure))
    record = {**to_json(reduction), **written}
    if args.json:
        print_json(record)
    else:
        ops = ", ".join(record["ops"])
        print(f"{record['nodes_before']} -> {record['nodes_after']} nodes ({ops}) in "
              f"{record['seconds']:.1f} s, {record['checks']} checks"
              + (" (time limit reached)" if record["timed_out"] else ""))
        print(f"the reduced model {failure.describe()}")
        print(f"wrote {written['model']}, {written['inputs']}, {written['script']}")
    return 0


def _inputs(args) -> dict[str, np.ndarray]:
    from compiler_core.fault_finding.reduce import generated_feed

    graph = load_graph(args.model)
    if args.inputs:
        return load_inputs(args.inputs, graph)
    return generated_feed(graph, parse_bindings(args.bind))


def _write(output: str, reduction, script: str) -> dict:
    stem = os.path.splitext(output)[0]
    paths = {"model": output, "inputs": stem + ".npz", "script": stem + ".py"}
    try:
        onnx.save(reduction.built.model, paths["model"])
        np.savez(paths["inputs"], **reduction.built.feed)
        with open(paths["script"], "w", encoding="utf-8") as handle:
            handle.write(script)
    except OSError as err:
        raise GraphLabError(f"cannot write {output}: {err.strerror}", where=output,
                            hint="choose a folder that exists and can be written") from None
    return paths
