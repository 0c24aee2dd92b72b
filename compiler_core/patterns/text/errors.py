"""The one error a pattern text gives: where it went wrong (line, column) and what was expected.

Positions are 1-based and count characters, as an editor shows them (``ast`` counts columns
in UTF-8 bytes from 0).  The error keeps the offending line so the CLI and the app can show it
with a caret under the column.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ...errors import ErrorRecord, GraphLabError


@dataclass(frozen=True)
class PatternTextErrorRecord(ErrorRecord):
    """An error record with the position in the pattern text and what was expected there."""

    line: int
    column: int
    problem: str
    expected: str


class PatternTextError(GraphLabError):
    """A pattern text that cannot be read or evaluated."""

    def __init__(self, problem: str, *, source: str, line: int, column: int, expected: str,
                 text_line: str = ""):
        self.problem, self.expected = problem, expected
        self.source, self.line, self.column = source, line, column
        self.text_line = text_line
        super().__init__(f"{source}, line {line}, column {column}: {problem}",
                         where=f"{source}:{line}:{column}", hint=f"expected {expected}")

    def excerpt(self) -> str:
        """The offending line with a caret under the column ('' when there is no line)."""
        if not self.text_line:
            return ""
        return f"{self.text_line}\n{' ' * (self.column - 1)}^"

    def record(self) -> PatternTextErrorRecord:
        return PatternTextErrorRecord(**vars(super().record()), line=self.line,
                                      column=self.column, problem=self.problem,
                                      expected=self.expected)


class Refusal(Exception):
    """Raised inside the reader at an AST node; ``SourceText.error`` turns it into a
    PatternTextError with the node's position."""

    def __init__(self, node: ast.AST | None, problem: str, expected: str):
        super().__init__(problem)
        self.node, self.problem, self.expected = node, problem, expected


class SourceText:
    """A pattern text and its name, for turning AST positions into errors."""

    def __init__(self, text: str, name: str):
        self.text, self.name = text, name
        self.lines = text.splitlines()

    def error(self, refusal: Refusal) -> PatternTextError:
        node = refusal.node
        line = getattr(node, "lineno", 1) or 1
        offset = getattr(node, "col_offset", 0) or 0
        return self.at(line, self._column(line, offset), refusal.problem, refusal.expected)

    def at(self, line: int, column: int, problem: str, expected: str) -> PatternTextError:
        """An error at a 1-based line and character column."""
        text_line = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return PatternTextError(problem, source=self.name, line=line, column=max(column, 1),
                                expected=expected, text_line=text_line)

    def _column(self, line: int, byte_offset: int) -> int:
        if not 0 < line <= len(self.lines):
            return byte_offset + 1
        prefix = self.lines[line - 1].encode("utf-8")[:byte_offset]
        return len(prefix.decode("utf-8", errors="ignore")) + 1
