"""Options the hardware commands share: a target, an optional pipeline and symbolic-dim bindings.

`roofline`, `memory` and `schedule` analyse the model as loaded or, with `--pipeline`, the
graph the pipeline leaves (its last snapshot), so a student sees what the passes bought.
Symbolic dims the user does not bind take representative sizes (`representative_sizes`); the
commands print them on their first line and in their JSON, and the pipeline is run with them.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from compiler_core.hardware.representative_sizes import ChosenSizes, choose_sizes
from compiler_core.hardware.targets import DEFAULT_TARGET, list_targets
from compiler_core.ir import Graph
from compiler_core.passes import PassManager, PipelineResult

from ..samples import size_hints
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
    add_bind_option(parser)


def add_bind_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bind", metavar="k=v,...", default=None,
                        help="sizes of symbolic dims, e.g. batch=1,seq=128 (dims left "
                             "unbound take representative sizes, printed first)")


@dataclass
class Analysed:
    """The model as loaded, the graph to analyse (after the pipeline, if any), the sizes."""

    initial: Graph
    final: Graph
    sizes: ChosenSizes
    pipeline: str | None
    result: PipelineResult | None = None   # every pass's snapshot, when a pipeline ran

    @property
    def bindings(self) -> dict[str, int]:
        return self.sizes.bindings


def model_sizes(model: str, graph: Graph, bind: str | None) -> ChosenSizes:
    """The user's ``--bind``, and representative sizes for every dim it leaves out."""
    return choose_sizes(graph, parse_bindings(bind), size_hints(model))


def analysed_graphs(args, pipeline: str | None = None) -> Analysed:
    """The model, and with ``--pipeline`` (or ``pipeline``, the caller's default) the graph
    the pipeline leaves."""
    initial = load_graph(args.model)
    sizes = model_sizes(args.model, initial, args.bind)
    pipeline = args.pipeline or pipeline
    if not pipeline:
        return Analysed(initial, initial, sizes, None)
    target = getattr(args, "target", None) or "asic32"  # passes that partition read the target
    result = PassManager(pipeline, bindings=sizes.bindings, target=target).run(initial)
    return Analysed(initial, result.final, sizes, pipeline, result)


def sizes_line(sizes: ChosenSizes) -> str:
    """The first line of every analysis's text output: the sizes it priced the model at."""
    change = "" if sizes.all_given else "; --bind name=size,... to change"
    return f"sizes: {sizes.describe()}{change}"
