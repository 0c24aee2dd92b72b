"""Which node of model B is which node of model A, when the two share no ids.

A graph alignment in the spirit of tree differs (GumTree) and graph-matching heuristics:

1. **Anchors**: nodes whose key is unique in both graphs are matched outright — first the same
   name with the same content label, then equal neighbourhoods (``Fingerprints``), widest
   first, down to the bare label (an op reading one particular weight).
2. **Propagation**: from every matched pair, producers at the same input slot with the same op
   are matched, and consumers of the same output that are the only ones of their op at that
   slot (or the only ones with their label).
3. **Similarity**: for what is left, each node is scored against nearby nodes of the same op in
   the other graph (position in the topological order), and against a node of the same name:
   inputs reading the same thing, consumers already matched to each other, the same name, the
   same label; pairs are taken best first, then propagated from, until nothing new is found.

Every pair records how it was found ("name", "structure", "neighbour", "similarity"), so a
surprising pair can be questioned.
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from ..ir import Graph, Node, Value
from .fingerprints import ROUNDS, Fingerprints, is_commutative

NAME, STRUCTURE, NEIGHBOUR, SIMILARITY = "name", "structure", "neighbour", "similarity"
NEARBY = 6              # candidates per node on each side of its position
MIN_SCORE = 1.0         # after the distance penalty (positions are fractions of the order)
SAME_SLOT, SAME_CONSUMER, SAME_NAME, SAME_LABEL, DISTANCE = 2.0, 1.0, 1.5, 1.0, 2.0


@dataclass
class Alignment:
    """Matched node ids, A -> B and back, with how each pair was found."""

    a_to_b: dict[int, int] = field(default_factory=dict)
    b_to_a: dict[int, int] = field(default_factory=dict)
    how: dict[int, str] = field(default_factory=dict)    # by A's id

    def a_id(self, node_id: int) -> int | None:
        """A's id of A's node, if it is matched (``source_key``'s mapping on A's side)."""
        return node_id if node_id in self.a_to_b else None

    def match(self, a: int, b: int, how: str) -> bool:
        if a in self.a_to_b or b in self.b_to_a:
            return False
        self.a_to_b[a], self.b_to_a[b], self.how[a] = b, a, how
        return True


def align(a: Graph, b: Graph) -> "Aligner":
    """Match the nodes of ``b`` to those of ``a`` (see the module docstring); the aligner
    returned holds the alignment and the fingerprints it used."""
    digests: dict[int, tuple] = {}
    aligner = Aligner(Fingerprints(a, digests), Fingerprints(b, digests))
    aligner.anchor()
    aligner.propagate(list(aligner.alignment.a_to_b.items()))
    while True:
        found = aligner.match_similar()
        if not found:
            return aligner
        aligner.propagate(found)


def op_key(node: Node) -> tuple[str, str]:
    return node.domain, node.op_type


def source_key(fp: Fingerprints, value: Value | None, to_a: Callable[[int], int | None]) -> Any:
    """What a slot reads, comparable across the two graphs: a constant by content (an
    initializer or a Constant's output alike), a matched producer's output (named by A's id:
    ``to_a`` maps a node id of ``fp``'s graph to A's, None when unmatched), a graph input by
    name.  An unmatched producer's output equals nothing on the other side."""
    if value is None:
        return None
    digest = fp.constant_digest(value)
    if digest is not None:
        return ("const", digest)
    producer = value.producer
    if producer is None:
        return ("input", value.name)
    a_id = to_a(producer.id)
    if a_id is not None:
        return ("node", a_id, value.output_index)
    return ("unmatched", id(fp), producer.id)


class Aligner:
    """The state of one alignment: both graphs' fingerprints and the pairs found so far."""

    def __init__(self, fa: Fingerprints, fb: Fingerprints):
        self.fa, self.fb = fa, fb
        self.alignment = Alignment()
        self.a_nodes = {n.id: n for n in fa.nodes}
        self.b_nodes = {n.id: n for n in fb.nodes}

    # -- 1. anchors ----------------------------------------------------------------------------
    def anchor(self) -> None:
        self._anchor_unique(lambda f, i: (self._node(f, i).name, f.label[i]), NAME)
        for radius in range(ROUNDS, -1, -1):
            self._anchor_unique(lambda f, i, r=radius: f.neighbourhood(i, r), STRUCTURE)

    def _anchor_unique(self, key_of, how: str) -> None:
        unique_a = self.fa.unique(lambda i: key_of(self.fa, i))
        unique_b = self.fb.unique(lambda i: key_of(self.fb, i))
        for key, a_id in unique_a.items():
            b_id = unique_b.get(key)
            if b_id is not None:
                self.alignment.match(a_id, b_id, how)

    def _node(self, fp: Fingerprints, node_id: int) -> Node:
        return (self.a_nodes if fp is self.fa else self.b_nodes)[node_id]

    # -- 2. propagation ------------------------------------------------------------------------
    def propagate(self, pairs: list[tuple[int, int]]) -> None:
        queue = deque(pairs)
        while queue:
            a_id, b_id = queue.popleft()
            na, nb = self.a_nodes[a_id], self.b_nodes[b_id]
            for pa, pb in self._producer_pairs(na, nb):
                if self.alignment.match(pa.id, pb.id, NEIGHBOUR):
                    queue.append((pa.id, pb.id))
            for ua, ub in self._consumer_pairs(na, nb):
                if self.alignment.match(ua.id, ub.id, NEIGHBOUR):
                    queue.append((ua.id, ub.id))

    def _producer_pairs(self, na: Node, nb: Node):
        for i, j in self.paired_slots(na, nb):
            va, vb = na.input(i), nb.input(j)
            pa = va.producer if va is not None else None
            pb = vb.producer if vb is not None else None
            if (pa is not None and pb is not None and op_key(pa) == op_key(pb)
                    and va.output_index == vb.output_index and self._free(pa, pb)):
                yield pa, pb

    def paired_slots(self, na: Node, nb: Node) -> list[tuple[int, int]]:
        """Which input slot of ``nb`` stands for which of ``na``: the same index, or for a
        commutative op, slots reading the same thing first, then producers of the same op."""
        count = max(len(na.inputs), len(nb.inputs))
        if not (is_commutative(na) and is_commutative(nb)):
            return [(i, i) for i in range(count)]
        keys_a = [source_key(self.fa, na.input(i), self.alignment.a_id) for i in range(count)]
        keys_b = [source_key(self.fb, nb.input(j), self.alignment.b_to_a.get)
                  for j in range(count)]
        free_b = list(range(count))
        pairs = []
        for same in (lambda i, j: keys_a[i] == keys_b[j],
                     lambda i, j: _producer_op(na.input(i)) == _producer_op(nb.input(j)),
                     lambda i, j: True):
            for i in range(count):
                if any(i == done for done, _ in pairs):
                    continue
                j = next((j for j in free_b if same(i, j)), None)
                if j is not None:
                    pairs.append((i, j))
                    free_b.remove(j)
        return sorted(pairs)

    def _consumer_pairs(self, na: Node, nb: Node):
        for va, vb in zip(na.outputs, nb.outputs):
            if va is None or vb is None:
                continue
            users_a = self._free_users(va, self.alignment.a_to_b)
            users_b = self._free_users(vb, self.alignment.b_to_a)
            for key, group_a in users_a.items():
                group_b = users_b.get(key, [])
                if len(group_a) == 1 and len(group_b) == 1:
                    yield group_a[0], group_b[0]
                elif len(group_a) > 1 and len(group_b) > 1:
                    yield from self._pairs_by_label(group_a, group_b)

    @staticmethod
    def _free_users(value: Value, matched: dict[int, int]) -> dict[tuple, list[Node]]:
        users: dict[tuple, list[Node]] = {}
        for user, index in value.uses:
            slot = -1 if is_commutative(user) else index
            if user.id not in matched and user not in users.get((op_key(user), slot), ()):
                users.setdefault((op_key(user), slot), []).append(user)
        return users

    def _pairs_by_label(self, group_a: list[Node], group_b: list[Node]):
        """Consumers told apart by their labels (e.g. three MatMuls reading different weights)."""
        by_label_a = _unique_by(group_a, lambda n: self.fa.label[n.id])
        by_label_b = _unique_by(group_b, lambda n: self.fb.label[n.id])
        for label, node in by_label_a.items():
            if label in by_label_b:
                yield node, by_label_b[label]

    def _free(self, na: Node, nb: Node) -> bool:
        return na.id not in self.alignment.a_to_b and nb.id not in self.alignment.b_to_a

    # -- 3. similarity -------------------------------------------------------------------------
    def match_similar(self) -> list[tuple[int, int]]:
        """Score leftover nodes against nearby ones of the same op; take the best pairs."""
        free_b: dict[tuple, list[Node]] = {}
        for node in self.fb.nodes:
            if node.id not in self.alignment.b_to_a:
                free_b.setdefault(op_key(node), []).append(node)
        positions = {key: [self.fb.position[n.id] for n in nodes] for key, nodes in free_b.items()}
        b_by_name = {n.name: n for nodes in free_b.values() for n in nodes}
        scored = []
        for na in self.fa.nodes:
            key = op_key(na)
            if na.id in self.alignment.a_to_b or key not in free_b:
                continue
            pos = self.fa.position[na.id]
            where = bisect.bisect_left(positions[key], pos)
            candidates = free_b[key][max(0, where - NEARBY):where + NEARBY]
            named = b_by_name.get(na.name)
            if named is not None and op_key(named) == key and named not in candidates:
                candidates = candidates + [named]
            for nb in candidates:
                score = self._score(na, nb)
                if score >= MIN_SCORE:
                    scored.append((-score, abs(pos - self.fb.position[nb.id]), na.id, nb.id))
        scored.sort()
        return [(a_id, b_id) for _, _, a_id, b_id in scored
                if self.alignment.match(a_id, b_id, SIMILARITY)]

    def _score(self, na: Node, nb: Node) -> float:
        """How alike two nodes of one op are; 0 without support from the graph: an input read
        on both sides, a consumer matched on both sides, or the same name and label."""
        fa, fb, alignment = self.fa, self.fb, self.alignment
        slots = sum(1 for i, j in self.paired_slots(na, nb)
                    if (key := source_key(fa, na.input(i), alignment.a_id)) is not None
                    and key == source_key(fb, nb.input(j), alignment.b_to_a.get))
        consumers_a = {alignment.a_to_b.get(u.id) for v in na.outputs if v is not None
                       for u, _ in v.uses}
        consumers_b = {u.id for v in nb.outputs if v is not None for u, _ in v.uses}
        consumers = len((consumers_a - {None}) & consumers_b)
        same_name = na.name == nb.name
        same_label = fa.label[na.id] == fb.label[nb.id]
        if not (slots or consumers or (same_name and same_label)):
            return 0.0
        return (SAME_SLOT * slots + SAME_CONSUMER * consumers + SAME_NAME * same_name
                + SAME_LABEL * same_label
                - DISTANCE * abs(fa.position[na.id] - fb.position[nb.id]))


def _producer_op(value: Value | None) -> tuple[str, str] | None:
    return op_key(value.producer) if value is not None and value.producer is not None else None


def _unique_by(nodes: list[Node], key_of) -> dict[Any, Node]:
    groups: dict[Any, list[Node]] = {}
    for node in nodes:
        groups.setdefault(key_of(node), []).append(node)
    return {key: group[0] for key, group in groups.items() if len(group) == 1}
