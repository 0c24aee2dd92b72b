"""The `graphlab` command: one sub-command per view, each with `--json` output.

Errors a user can cause (a bad file, an unknown sample, a wrong flag value) print one line on
stderr and exit with status 2 — never a traceback.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import traceback

from compiler_core.errors import GraphLabError
from compiler_core.plugins import load_plugins

from .version import __version__

# The modules in graphlab/commands, in the order `graphlab --help` lists them: look at a model,
# compile it, compare, analyse it, serve.  A run imports only the module of the command it
# names (their imports reach from onnxruntime to the Dash app); `--help` imports them all.
COMMANDS = ["samples", "info", "show", "explain", "edit", "passes", "compile", "diff", "bisect",
            "reduce", "targets", "roofline", "profile", "schedule", "memory", "report", "serve",
            "worker"]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or, given a command's name, the part that parses it."""
    parser = argparse.ArgumentParser(
        prog="graphlab",
        description="GraphLab: see what each compiler pass does to an ONNX model.")
    parser.add_argument("--version", action="version", version=f"graphlab {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for name in COMMANDS if command is None else [command]:
        importlib.import_module(f"{__package__}.commands.{name}").add_parser(subparsers)
    return parser


def _command_named(argv: list[str]) -> str | None:
    """The command ``argv`` runs (the top level has only --help and --version), or None when
    it names none: then the whole parser prints the help or says what is wrong."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def program(argv: list[str] | None = None) -> int:
    """The `graphlab` command as a process (its console script, `python -m graphlab`):
    ``main``, then everything the process still holds frozen out of the cycle collector's
    reach.  The process ends next, and Python's exit would otherwise walk every live object
    for cycles (0.05 s after a 10,000-node compile) only to free them anyway; scratch files
    go by their own exit hooks."""
    status = main(argv)
    gc.freeze()
    return status


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(_command_named(argv)).parse_args(argv)
    try:
        if hasattr(args, "plugins"):   # the commands with --plugins (common.add_plugins_option)
            load_plugins(args.plugins)
        return int(args.run(args) or 0)
    except GraphLabError as err:
        print(f"graphlab: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as err:  # noqa: BLE001 - the last line of defence: one line, not a trace
        if os.environ.get("GRAPHLAB_DEBUG"):
            traceback.print_exc()
        print(f"graphlab: internal error: {type(err).__name__}: {err} "
              f"(set GRAPHLAB_DEBUG=1 for the traceback, and please report it)", file=sys.stderr)
        return 1
