"""The pattern registry: passes and the explain command find library patterns by name."""

from __future__ import annotations

from typing import Callable

from ..language import Pattern

_BUILDERS: dict[str, Callable[[], Pattern]] = {}


def register(name: str) -> Callable[[Callable[[], Pattern]], Callable[[], Pattern]]:
    """Register a builder; ``get_pattern(name)`` returns a fresh pattern from it."""
    def decorate(builder: Callable[[], Pattern]) -> Callable[[], Pattern]:
        if name in _BUILDERS:
            raise ValueError(f"pattern {name!r} is registered twice")
        _BUILDERS[name] = builder
        return builder
    return decorate


def get_pattern(name: str) -> Pattern:
    """A fresh copy of library pattern ``name`` (its builder's docstring lists the bindings)."""
    try:
        builder = _BUILDERS[name]
    except KeyError:
        known = ", ".join(sorted(_BUILDERS))
        raise KeyError(f"no pattern named {name!r} (known: {known})") from None
    return builder().named(name)


def list_patterns() -> list[str]:
    """Names of the library patterns, in registration order."""
    return list(_BUILDERS)


def pattern_doc(name: str) -> str:
    """The builder's docstring: what the pattern matches, why it matters, its bindings."""
    return (_BUILDERS[name].__doc__ or "").strip()
