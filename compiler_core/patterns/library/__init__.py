"""GraphLab's pattern library: named patterns that passes and the explain command share.

Each builder's docstring says what it matches, why a compiler cares, and its bindings.
"""

from . import activation, cleanup, convolution, linear, normalization  # noqa: F401 (register)
from .registry import get_pattern, list_patterns, pattern_doc

__all__ = ["get_pattern", "list_patterns", "pattern_doc"]
