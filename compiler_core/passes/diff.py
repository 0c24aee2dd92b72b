"""What a pass changed: node ids removed, added and modified between two graphs.

Ids are stable across passes, so the diff is a set difference; a node whose id survives but
whose op, attributes or wiring changed is "modified".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir import Graph, Node


@dataclass
class GraphDiff:
    removed: list[int] = field(default_factory=list)
    added: list[int] = field(default_factory=list)
    modified: list[int] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.added or self.modified)

    def __repr__(self) -> str:
        return (f"GraphDiff(removed {len(self.removed)}, added {len(self.added)}, modified "
                f"{len(self.modified)})")


def diff_graphs(before: Graph, after: Graph) -> GraphDiff:
    before_ids = before.node_ids()
    after_ids = after.node_ids()
    modified = [i for i in sorted(before_ids & after_ids)
                if not same_node(before.node_by_id(i), after.node_by_id(i))]
    return GraphDiff(sorted(before_ids - after_ids), sorted(after_ids - before_ids), modified)


def same_node(a: Node, b: Node) -> bool:
    if (a.op_type, a.domain, a.name) != (b.op_type, b.domain, b.name):
        return False
    if [v.name if v else "" for v in a.inputs] != [v.name if v else "" for v in b.inputs]:
        return False
    if [v.name if v else "" for v in a.outputs] != [v.name if v else "" for v in b.outputs]:
        return False
    if a.attrs.keys() != b.attrs.keys() or a.body is not b.body:
        return False
    return all(_same_attr(a.attrs[k], b.attrs[k]) for k in a.attrs)


def _same_attr(x, y) -> bool:
    if x is y:
        return True
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.shape == y.shape
                and x.dtype == y.dtype and bool(np.array_equal(x, y)))
    return bool(x == y)
