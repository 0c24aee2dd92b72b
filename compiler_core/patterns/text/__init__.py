"""Patterns written as text: Python-expression syntax over the pattern language, read with
``ast`` and evaluated by a whitelist — never executed — so a shared server can accept them.

    def gelu(x):
        '''GELU, erf form.'''
        return x * 0.5 * (1 + Erf(x / sqrt(2)))

``parse_patterns(text)`` and ``load_patterns(path)`` return a ``PatternFile`` whose patterns go
wherever library patterns go: ``explain(graph, file.patterns)``, ``match_all``, a ``Rule``'s
``pattern()``.  A text outside the language raises ``PatternTextError`` with its line, column
and what was expected.  The format is documented in docs/patterns.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ...errors import GraphLabError
from ..language import Pattern
from .errors import PatternTextError, Refusal
from .evaluate import Builder
from .examples import EXAMPLES, example_text
from .syntax import MAX_CHARS, read_source

__all__ = ["EXAMPLES", "MAX_CHARS", "PatternFile", "PatternTextError", "example_text",
           "load_patterns", "parse_patterns"]


@dataclass(frozen=True)
class PatternFile:
    """The patterns of one text, in the order written, with the text's own description."""

    name: str
    description: str
    patterns: tuple[Pattern, ...]

    @property
    def names(self) -> list[str]:
        return [p.title for p in self.patterns]

    def pattern(self, name: str) -> Pattern:
        """The pattern defined as ``def name(...)`` (a KeyError lists the names there are)."""
        for pattern in self.patterns:
            if pattern.title == name:
                return pattern
        raise KeyError(f"no pattern {name!r} in {self.name} (there: {', '.join(self.names)})")


def parse_patterns(text: str, name: str = "pattern text") -> PatternFile:
    """Read every pattern of ``text`` (``name`` says where it came from in messages)."""
    source = read_source(text, name)
    builder = Builder(source)
    patterns = []
    for pattern_name in source.pattern_names:
        try:
            patterns.append(builder.build(pattern_name))
        except Refusal as refusal:
            raise source.text.error(refusal) from None
    return PatternFile(name, source.description, tuple(patterns))


def load_patterns(path: str | os.PathLike) -> PatternFile:
    """Read a pattern file (UTF-8), refusing one too big to be a pattern file unread."""
    shown = os.fspath(path)
    try:
        size = os.path.getsize(shown)
        if size > 4 * MAX_CHARS:   # at most 4 bytes a character
            raise GraphLabError(f"pattern file {shown!r} has {size:,} bytes, too many for a "
                                "pattern file", where=shown,
                                hint=f"a pattern file holds at most {MAX_CHARS:,} characters")
        with open(shown, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise GraphLabError(f"pattern file {shown!r} not found", where=shown,
                            hint="give the path of a text file of patterns "
                                 "(see docs/patterns.md)") from None
    except (OSError, UnicodeDecodeError) as err:
        raise GraphLabError(f"pattern file {shown!r} cannot be read: {err}", where=shown,
                            hint="a pattern file is UTF-8 text") from None
    return parse_patterns(text, shown)
