"""The workspaces one server process keeps in memory, sized by their nodes, and kept out of the
cyclic collector's way.

What is held: the most recently used workspaces while their graphs' nodes add up to at most
`NODE_BUDGET` (the latest one always, however big).  A budget in nodes rather than a count:
a room on the bundled samples (16 of them, 40,000 nodes over all their O2 passes) holds
every one, while three 10,000-node pipelines fill it (a node is about 9 objects, 1.2 KB).
Eight slots thrashed under a class spread over 15 samples: nearly every click unpickled a
workspace again.

The collector: a workspace is many long-lived objects in cycles (a node its values, a value its
producer; 2.5 million objects for a 10,000-node pipeline), and a full collection walks them
all, 1-2 s, whenever one falls due.  So held objects are frozen (`freeze_kept`): collections skip
them.  An evicted workspace's cycles can only be freed by a collection that walks everything
held (unfreeze, collect, freeze); that one runs once the nodes evicted since the last reach
half of those held, so its cost is spread over many evictions (one per eviction took 80 % of a
server's time under a class of 60) and what waits for it stays below half of what is held.
"""

from __future__ import annotations

import gc
import threading
from collections import OrderedDict

from compiler_core.ir.collection import freeze_kept, unfreeze_kept

NODE_BUDGET = 1_000_000   # graph nodes over all held workspaces' snapshots (~1.2 GB)

_held: OrderedDict[str, tuple[object, int]] = OrderedDict()
_lock = threading.Lock()
_evicted_nodes = 0      # nodes of evicted workspaces still frozen, waiting for a collection


def held(key: str):
    """The workspace held under ``key`` (now the most recently used), or None."""
    with _lock:
        if key not in _held:
            return None
        _held.move_to_end(key)
        return _held[key][0]


def hold(key: str, workspace) -> None:
    """Keep ``workspace``, evicting the least recently used past the budget."""
    global _evicted_nodes
    with _lock:
        _held[key] = (workspace, workspace_nodes(workspace))
        _held.move_to_end(key)
        total = sum(nodes for _, nodes in _held.values())
        while total > NODE_BUDGET and len(_held) > 1:
            nodes = _held.popitem(last=False)[1][1]   # no local keeps the evicted alive
            total -= nodes
            _evicted_nodes += nodes
        collect = _evicted_nodes * 2 >= total
        if collect:
            _evicted_nodes = 0
    # Not under the lock: other threads may read meanwhile.  Without the unfreeze, the
    # collection walks only what is not frozen yet: the new workspace and recent garbage.
    if collect:
        unfreeze_kept()
    gc.collect()
    freeze_kept()


def workspace_nodes(workspace) -> int:
    """Nodes over the workspace's distinct graphs (a pass that changed nothing shares its
    graph); 1 for anything that is not a workspace."""
    result = getattr(workspace, "result", None)
    if result is None:
        return 1
    graphs = {id(g): g for g in [result.initial, *(s.graph for s in result.snapshots)]}
    return max(1, sum(len(g) for g in graphs.values()))
