"""Two compared models in one numbering, so a view made for a pass's before/after can show them.

A pass diff works on node ids both graphs share.  Here B is copied with the id of its A partner
on every matched node and fresh ids (past A's) on the rest; the diff in those ids says removed
= only in A, added = only in B, modified = matched but changed.  Stable layout, linked
selection and the change marks then work as they do for a pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph
from ..passes.framework.diff import GraphDiff
from .records import ModelDiff


@dataclass
class SideBySide:
    graph: Graph               # B, its nodes numbered in A's ids
    diff: GraphDiff            # removed: only in A; added: only in B; modified: changed pairs
    view_id: dict[int, int]    # B's own node id -> its id in ``graph``


def b_in_a_ids(diff: ModelDiff) -> SideBySide:
    """B renumbered into A's ids, and the diff in those ids."""
    a, b = diff.graph_a, diff.graph_b
    if a is None or b is None:
        raise ValueError("this ModelDiff does not carry its graphs")
    view_id = {pair.b.id: pair.a.id for pair in diff.pairs}
    fresh = max(a.next_id, max(a.node_ids(), default=-1) + 1)
    for node in diff.only_b:
        view_id[node.id] = fresh
        fresh += 1
    return SideBySide(b.renumbered(view_id),
                      GraphDiff(removed=sorted(n.id for n in diff.only_a),
                                added=sorted(view_id[n.id] for n in diff.only_b),
                                modified=sorted(p.a.id for p in diff.changed_pairs)),
                      view_id)
