"""Every registered pass's rules and patterns, by the name their reports carry.

`graphlab explain`, the judged records behind the app's Patterns tab and the notebook read
patterns here, from the passes themselves: a rule's pattern is the rule's own (no registry of
pattern names beside the passes), and importing any module of ``compiler_core.passes`` has
imported every family through the presets, so the list is the same whatever was imported
first.  Passes a plugin registers join it as they register.
"""

from __future__ import annotations

from ...patterns import Pattern
from .pass_registry import all_passes, get_pass


def registered_patterns() -> dict[str, Pattern]:
    """Every registered pass's patterns (``Pass.patterns``) by name, in registration order; a
    pattern two passes run (``layernorm``: recognized, or found to fold an affine into it) is
    listed once, as the first pass gives it."""
    found = {}
    for name in all_passes():
        for pattern in get_pass(name).patterns():
            found.setdefault(pattern.title, pattern)
    return found


def pattern_named(name: str) -> Pattern:
    """The registered pattern called ``name`` (the rule's own object: patterns never change,
    a modifier makes a new one)."""
    patterns = registered_patterns()
    if name not in patterns:
        raise KeyError(f"no pattern named {name!r} (known: {', '.join(sorted(patterns))})")
    return patterns[name]
