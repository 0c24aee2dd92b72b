"""Options the hardware commands share: a target, an optional pipeline and symbolic-dim bindings.

`roofline`, `memory` and `schedule` analyse the model as loaded or, with `--pipeline`, the
graph the pipeline leaves (its last snapshot), so a student sees what the passes bought.
The compile entry (`compiler_core.compilation`) decides the sizes: symbolic dims the user does
not bind take representative sizes, which the commands print on their first line and in their
JSON; the pipeline specializes only the dims the user bound (as `compile` does), and the
analyses read the graphs sized at the decided sizes (``priced_initial``, ``priced_final``).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from compiler_core.compilation import Compilation, compile_model, decide_sizes, sized
from compiler_core.hardware.representative_sizes import ChosenSizes
from compiler_core.hardware.targets import DEFAULT_TARGET, list_targets
from compiler_core.ir import Graph
from compiler_core.passes import PipelineResult

from ..samples import size_hints
from ..user_input import parse_bindings
from compiler_core.records import to_json

from .common import add_edits_option, edits_line, load_edited

if TYPE_CHECKING:   # the editing package is imported only when a command is given edits
    from compiler_core.editing import EditedModel


def add_target_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default=DEFAULT_TARGET, metavar="T",
                        help=f"a built-in target ({', '.join(list_targets())}) or the path of "
                             f"a target JSON file (default {DEFAULT_TARGET})")


def add_pipeline_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-p", "--pipeline", metavar="P", default=None,
                        help="run this preset or comma-separated list of passes first and "
                             "analyse the graph it produces")
    add_bind_option(parser)
    add_edits_option(parser)


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
    compilation: Compilation | None = None   # every pass's snapshot, when a pipeline ran
    edited: EditedModel | None = None        # the edits applied first (--edits)

    @property
    def bindings(self) -> dict[str, int]:
        return self.sizes.bindings

    @property
    def result(self) -> PipelineResult | None:
        return self.compilation.result if self.compilation else None

    def head(self) -> dict:
        """What every analysis's JSON starts with: the sizes, and the edits when there were."""
        return {"sizes": to_json(self.sizes),
                **({"edits": to_json(self.edited)} if self.edited else {})}

    def head_lines(self) -> list[str]:
        """What its text output starts with: the edits (if any), then the sizes."""
        return [*([edits_line(self.edited)] if self.edited else []), sizes_line(self.sizes)]

    @cached_property
    def priced_initial(self) -> Graph:
        """The model as loaded, sized at the decided sizes (what the hardware models read)."""
        return self._sized(self.initial)

    @cached_property
    def priced_final(self) -> Graph:
        return self._sized(self.final)

    def _sized(self, graph: Graph) -> Graph:
        return self.compilation.sized(graph) if self.compilation else sized(graph,
                                                                            self.bindings)


def analysed_graphs(args, pipeline: str | None = None) -> Analysed:
    """The model, and with ``--pipeline`` (or ``pipeline``, the caller's default) the graph
    the pipeline leaves, compiled for ``--target``."""
    initial, edited = load_edited(args.model, getattr(args, "edits", None))
    pipeline = args.pipeline or pipeline
    if not pipeline:
        sizes = decide_sizes(initial, parse_bindings(args.bind), size_hints(args.model))
        return Analysed(initial, initial, sizes, None, edited=edited)
    compiled = compile_model(initial, pipeline, parse_bindings(args.bind),
                             getattr(args, "target", None), size_hints=size_hints(args.model))
    return Analysed(initial, compiled.final, compiled.decisions.sizes, pipeline, compiled,
                    edited)


def sizes_line(sizes: ChosenSizes) -> str:
    """The first line of every analysis's text output: the sizes it priced the model at."""
    change = "" if sizes.all_given else "; --bind name=size,... to change"
    return f"sizes: {sizes.describe()}{change}"
