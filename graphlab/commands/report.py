"""`graphlab report MODEL -o report.html`: the whole story of a pipeline run in one HTML file
that opens without a server — passes, diffs, pattern matches and near misses, roofline, memory.
With `--measured`, also each pass's latency measured in onnxruntime's profiler beside its
predicted one, and the final graph's ops measured and predicted, on this machine's measured
target (`graphlab profile`).
"""

from __future__ import annotations

import os

from compiler_core.compilation import VERIFY_IF_RUNNABLE, compile_model, decide
from compiler_core.errors import GraphLabError
from compiler_core.hardware.targets import get_target
from compiler_core.profiling.pipeline import measure_pipeline
from compiler_core.profiling.runner import DEFAULT_REPEATS, ProfileSettings

from ..report import render, tell
from ..samples import size_hints
from ..user_input import parse_bindings
from .profile import machine_or_measure
from .common import add_edits_option, add_model_argument, edits_line, load_edited
from .model_options import add_bind_option, add_target_option, sizes_line
from ..units import format_bytes


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "report", help="write one self-contained HTML page telling a pipeline run's story")
    add_model_argument(parser)
    parser.add_argument("-p", "--pipeline", default="default", metavar="NAME|p1,p2,...",
                        help="a preset (clean, O1, O2; default O2) or comma-separated pass names")
    add_target_option(parser)
    add_bind_option(parser)
    add_edits_option(parser)
    parser.add_argument("-o", "--output", metavar="REPORT.html", default=None,
                        help="where to write the page (default: MODEL_report.html here)")
    parser.add_argument("--measured", action="store_true",
                        help="also measure every pass's graph in onnxruntime's profiler on "
                             "this machine (measured first if it never was)")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, metavar="N",
                        help=f"with --measured: timed runs per graph (default {DEFAULT_REPEATS})")
    parser.set_defaults(run=run)


def run(args) -> int:
    graph, edited = load_edited(args.model, args.edits)
    if edited:
        print(edits_line(edited))
    asked = (graph, args.pipeline, parse_bindings(args.bind), args.target)
    hints = size_hints(args.model)
    print(sizes_line(decide(*asked, size_hints=hints).sizes))   # before the long run
    output = args.output or f"{_stem(args.model)}_report.html"
    compiled = compile_model(*asked, size_hints=hints, verify=VERIFY_IF_RUNNABLE)
    measured = None
    if args.measured:
        measured = measure_pipeline(compiled.result, machine_or_measure(0), compiled.bindings,
                                    ProfileSettings(repeats=args.repeats))
    document = render(tell(compiled, os.path.basename(args.model), get_target(args.target),
                           measured=measured, edited=edited))
    try:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(document)
    except OSError as err:
        raise GraphLabError(f"cannot write {output}: {err.strerror}") from err
    print(f"wrote {output} ({format_bytes(len(document.encode('utf-8')))})")
    return 0


def _stem(model: str) -> str:
    return os.path.splitext(os.path.basename(model))[0] or "model"
