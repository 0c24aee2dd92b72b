"""`compile --runtime-check`: the compiled model at the onnxruntime level users run it at.

The options, and how their answer reads in the text report; the check itself is
``compiler_core.runtime_verify``.
"""

from __future__ import annotations

import argparse

from compiler_core.ir import Graph
from compiler_core.passes import PipelineResult
from compiler_core.runtime_check import DEFAULT_LEVEL, LEVELS
from compiler_core.runtime_verify import CHECK_WHEN, RuntimeVerdict, check_pipeline


def add_runtime_check_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runtime-check", choices=CHECK_WHEN, default=None,
                        help="with --verify, also load and run models in onnxruntime at "
                             "--runtime-level in a child process and compare their outputs: "
                             "the final model (final, the default), every pass's output "
                             "(each), or none (off); each and final imply --verify")
    parser.add_argument("--runtime-level", choices=list(LEVELS), default=DEFAULT_LEVEL,
                        help="the onnxruntime optimization level of --runtime-check (default "
                             "all: ORT_ENABLE_ALL, what InferenceSession does by default)")


def wants_verify(args) -> bool:
    """Whether the runtime check asks for the numerical check it compares with."""
    return args.runtime_check in ("final", "each")


def run_runtime_check(args, result: PipelineResult, exported: Graph | None = None,
                      export_tolerance: tuple[float, str] | None = None
                      ) -> RuntimeVerdict | None:
    """The verdict, when the pipeline was verified and the check is not turned off;
    ``exported`` is the model as written for a runtime, checked too (at ``export_tolerance``
    when its operators need a looser one)."""
    if result.verifier is None or args.runtime_check == "off":
        return None
    return check_pipeline(result, result.verifier, level=args.runtime_level,
                          each=args.runtime_check == "each", exported=exported,
                          export_tolerance=export_tolerance)


def runtime_cell(entry: dict) -> str:
    """A pass's cell in the text table's runtime column."""
    check = entry.get("runtime")
    if check is None:
        return "-"
    if check["ok"]:
        return "ok"
    return "MISMATCH" if check["stage"] == "ran" else check["stage"].upper()
