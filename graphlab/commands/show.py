"""`graphlab show MODEL`: the IR as text, one line per node, the way torch.fx prints a graph."""

from __future__ import annotations

from compiler_core.ir import format_graph

from .common import add_model_argument, load_graph


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("show", help="print the IR as text, one line per node")
    add_model_argument(parser)
    parser.set_defaults(run=run)


def run(args) -> int:
    print(format_graph(load_graph(args.model)))
    return 0
