"""Input sizes a model runs at: read from its structure, and found by trying when needed."""

from .collect import collect_facts
from .solver import SizePlan, solve

__all__ = ["SizePlan", "collect_facts", "plan_sizes", "solve"]


def plan_sizes(graph, bindings: dict[str, int] | None = None,
               preferred: dict[str, int] | None = None) -> SizePlan:
    """Sizes for every free input dim of ``graph``: the user's ``bindings``, what the model's
    structure fixes, and the ``preferred`` sizes or small defaults for the rest."""
    return solve(collect_facts(graph), bindings, preferred)
