"""GraphLab's pattern library: named patterns that passes and the explain command share.

Each builder's docstring says what it matches, why a compiler cares, and its bindings.
"""

# Imported for their registrations, in the order list_patterns() reports them.
from . import (  # noqa: F401  # isort: skip
    convolution, linear, normalization, activation, attention, cleanup)
from .registry import get_pattern, list_patterns, pattern_doc

__all__ = ["get_pattern", "list_patterns", "pattern_doc"]
