"""Helpers every sub-command shares: loading a model by path or sample name, JSON printing."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from compiler_core.errors import GraphLabError
from compiler_core.ir import Graph, load_model
from compiler_core.records import to_json

from ..samples import resolve_model

if TYPE_CHECKING:   # the editing package is imported only when a command is given edits
    from compiler_core.editing import EditedModel


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


def add_edits_option(parser: argparse.ArgumentParser) -> None:
    """``--edits EDITS.json``: the command runs on the model with these edits applied."""
    parser.add_argument("--edits", metavar="EDITS.json", default=None,
                        help="apply this JSON list of edits to the model first (as `graphlab "
                             "edit` does); the output says what was edited")


def load_graph(model: str) -> Graph:
    """Load a model by path or sample name; import warnings go to stderr."""
    return load_edited(model, None)[0]


def load_edited(model: str, edits: str | None) -> tuple[Graph, EditedModel | None]:
    """The model (edited when ``edits`` names an edit file) and the edits' record."""
    path = resolve_model(model)
    edited = None
    if edits:
        from compiler_core.editing import apply_edits
        edited = apply_edits(path, read_edits_file(edits))
    graph = edited.graph if edited else load_model(path)
    for warning in graph.warnings:
        print(f"graphlab: warning: {warning}", file=sys.stderr)
    return graph, edited


def read_edits_file(path: str) -> list:
    """The edit records of a JSON file (a list of edits), refused with a one-line reason."""
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except OSError as err:
        raise GraphLabError(f"cannot read edits from {path}: {err.strerror}", where=path
                            ) from None
    from compiler_core.editing import read_edits_text
    return read_edits_text(text, where=path)


def edits_line(edited: EditedModel) -> str:
    """`edited    2 edits: bypass relu_side; set tensor c = 1.41`: said first by every
    command that ran on an edited model."""
    count = len(edited.edits)
    return (f"edited    {count} edit{'s' if count != 1 else ''}: "
            f"{'; '.join(edited.applied())} ({edited.nodes_before} -> {edited.nodes_after} "
            f"nodes)")


def print_json(obj) -> None:
    """One JSON document on stdout: records (and numpy values) written by ``to_json``."""
    print(json.dumps(to_json(obj), indent=2))
