"""Python's cycle collector paused while a graph is read, rewritten or written.

Those phases make hundreds of thousands of objects that nearly all live on (nodes, values,
their records); every collection the allocations trigger walks the survivors again, which
cost 40 % of the passes of a 100,000-node compile.  What they drop is freed by reference
counting (a removed node no longer points at its outputs' producer, nor they at it), so
nothing waits for the collector, which resumes afterwards.  The app pauses it the same way
while it unpickles a stored workspace.

Resuming alone would not spare the walk: the objects the paused phase made are all still the
youngest, so the first allocation after it collects them (a tenth of a 10,000-node compile's
instructions went there).  So they are handed to the oldest generation as the collector
resumes (``gc.freeze`` then ``gc.unfreeze`` moves every tracked object there without
looking at it), and only full collections, which walked them anyway, walk them again.  Not
when the process keeps objects frozen on purpose (the app's held workspaces, through
`freeze_kept`): unfreezing would hand those back to every full collection.  Which is known
from a flag, not from ``gc.get_freeze_count()``: that walks every frozen object to count
them, milliseconds per million, on every pause's end.
"""

from __future__ import annotations

import functools
import gc
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

F = TypeVar("F", bound=Callable)

_kept_frozen = False   # objects are frozen on purpose (`freeze_kept`) and stay so


@contextmanager
def collector_paused() -> Iterator[None]:
    """The block runs with the cycle collector off (as it was again afterwards)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if not _kept_frozen:
                gc.freeze()     # every tracked object to the oldest generation, unwalked
                gc.unfreeze()
            gc.enable()


def freeze_kept() -> None:
    """Every tracked object out of the collector's sight, to stay so (a server's held
    workspaces): paused phases no longer unfreeze everything as they end."""
    global _kept_frozen
    gc.freeze()
    _kept_frozen = True


def unfreeze_kept() -> None:
    """What `freeze_kept` (or anything else) froze back in the collector's sight."""
    global _kept_frozen
    gc.unfreeze()
    _kept_frozen = False


def collection_paused(function: F) -> F:
    """``function`` runs with the cycle collector off (as it was again afterwards)."""
    @functools.wraps(function)
    def paused(*args, **kwargs):
        with collector_paused():
            return function(*args, **kwargs)
    return paused  # type: ignore[return-value]
