"""The `graphlab` command: one sub-command per view, each with `--json` output.

Errors a user can cause (a bad file, an unknown sample, a wrong flag value) print one line on
stderr and exit with status 2 — never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from compiler_core.errors import GraphLabError
from compiler_core.plugins import load_plugins

from .version import __version__
from .commands import bisect as bisect_command
from .commands import compile as compile_command
from .commands import diff as diff_command
from .commands import edit as edit_command
from .commands import (explain, info, memory, passes, profile, reduce, report, roofline, samples,
                       schedule, serve, show, targets, worker)

# In the order `graphlab --help` lists them: look at a model, compile it, compare, analyse it,
# serve.
COMMANDS = [samples, info, show, explain, edit_command, passes, compile_command, diff_command,
            bisect_command, reduce, targets, roofline, profile, schedule, memory, report, serve, worker]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphlab",
        description="GraphLab: see what each compiler pass does to an ONNX model.")
    parser.add_argument("--version", action="version", version=f"graphlab {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
