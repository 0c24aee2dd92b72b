"""The patterns a command was asked about: library names (``--pattern``) and the patterns of
text files (``--patterns FILE``, see docs/patterns.md)."""

from __future__ import annotations

from compiler_core.patterns import Pattern
from compiler_core.patterns.text import load_patterns


def add_patterns_option(parser) -> None:
    parser.add_argument("--patterns", action="append", default=[], metavar="FILE",
                        help="a text file of patterns to explain (repeatable; the format is in "
                             "docs/patterns.md: read, never run, so any file is safe to give)")


def chosen_patterns(names: list[str] | None, files: list[str]) -> list[str | Pattern] | None:
    """The library patterns named and every pattern of the files, in that order; None (the
    whole library) when neither was given."""
    if not files:
        return names
    return [*(names or []), *(p for path in files for p in load_patterns(path).patterns)]
