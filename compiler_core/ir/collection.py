"""Python's cycle collector paused while a graph is read, rewritten or written.

Those phases make hundreds of thousands of objects that nearly all live on (nodes, values,
their records); every collection the allocations trigger walks the survivors again, which
cost 40 % of the passes of a 100,000-node compile.  What they drop is freed by reference
counting (a removed node no longer points at its outputs' producer, nor they at it), so
nothing waits for the collector, which resumes afterwards.  The app's builders pause it for
a whole build the same way.
"""

from __future__ import annotations

import functools
import gc
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)


def collection_paused(function: F) -> F:
    """``function`` runs with the cycle collector off (as it was again afterwards)."""
    @functools.wraps(function)
    def paused(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()
    return paused  # type: ignore[return-value]
