"""Options the hardware commands share: a target, an optional pipeline and symbolic-dim bindings.

`roofline`, `memory` and `schedule` analyse the model as loaded or, with `--pipeline`, the
graph the pipeline leaves (its last snapshot), so a student sees what the passes bought.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from compiler_core.hardware.targets import DEFAULT_TARGET, list_targets
from compiler_core.ir import Graph
from compiler_core.passes import PassManager

from ..user_input import parse_bindings
from .common import load_graph


def add_target_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default=DEFAULT_TARGET, metavar="T",
                        help=f"a built-in target ({', '.join(list_targets())}) or the path of "
                             f"a target JSON file (default {DEFAULT_TARGET})")


def add_pipeline_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-p", "--pipeline", metavar="P", default=None,
                        help="run this preset or comma-separated list of passes first and "
                             "analyse the graph it produces")
    parser.add_argument("--bind", metavar="k=v,...", default=None,
                        help="sizes of symbolic dims, e.g. batch=1,seq=128 (unbound dims "
                             "count as 1)")


@dataclass
class Analysed:
    """The model as loaded, the graph to analyse (after the pipeline, if any), the bindings."""

    initial: Graph
    final: Graph
    bindings: dict[str, int]
    pipeline: str | None


def analysed_graphs(args) -> Analysed:
    bindings = parse_bindings(args.bind)
    initial = load_graph(args.model)
    if not args.pipeline:
        return Analysed(initial, initial, bindings, None)
    target = getattr(args, "target", None) or "asic32"  # passes that partition read the target
    result = PassManager(args.pipeline, bindings=bindings, target=target).run(initial)
    return Analysed(initial, result.final, bindings, args.pipeline)
