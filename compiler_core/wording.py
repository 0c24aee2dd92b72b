"""Counts in words: "1 rewrite", "2 rewrites" — never "1 rewrites" or "node(s)"."""

from __future__ import annotations


def plural(count: int, word: str, many: str | None = None) -> str:
    """'1 node', '3 nodes'; ``many`` for an irregular plural ('1 pass', '2 passes' need it
    only when adding an 's' is wrong: plural(2, 'pass', 'passes'))."""
    return f"{count} {word if count == 1 else (many or word + 's')}"
