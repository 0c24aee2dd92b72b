"""Helpers every sub-command shares: loading a model by path or sample name, JSON printing."""

from __future__ import annotations

import argparse
import json
import sys


from compiler_core.ir import Graph, load_model
from compiler_core.records import to_json

from ..samples import resolve_model


def add_model_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL",
                        help="path to an .onnx file, or the name of a bundled sample")


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def add_plugins_option(parser: argparse.ArgumentParser) -> None:
    """``--plugins FILE.py`` (repeatable): user passes or rule sets to register.  The CLI loads
    them, and the installed ``graphlab.plugins`` entry points, before the command."""
    parser.add_argument("--plugins", action="append", default=[], metavar="FILE.py",
                        help="a Python file that registers passes or rule sets "
                             "(repeatable; it runs as code: give only files you trust)")


def load_graph(model: str) -> Graph:
    """Load a model by path or sample name; import warnings go to stderr."""
    graph = load_model(resolve_model(model))
    for warning in graph.warnings:
        print(f"graphlab: warning: {warning}", file=sys.stderr)
    return graph


def print_json(obj) -> None:
    """One JSON document on stdout: records (and numpy values) written by ``to_json``."""
    print(json.dumps(to_json(obj), indent=2))
