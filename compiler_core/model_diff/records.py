"""The diff of two models as records: what `graphlab diff --json` prints and the app shows.

Nodes are named by their own model's id and name (the two models share no ids); a matched pair
carries the differences found between its two nodes, each a ``Change`` of one kind.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..ir import Graph, Node
from ..ir.proto_types import fused_op_of
from ..records import name_of, record_field

# The kinds of difference a matched pair (or the models' interface) can have, in report order.
KINDS = ("attributes", "weights", "inputs", "outputs", "dtypes", "shapes")


def op_name(node: Node, graph: Graph | None = None) -> str:
    """The node's op as the diff groups it (domain.op), a read-back fused call by its op."""
    calls = graph is not None and node.body is None and (
        node.domain, node.op_type, node.overload) in graph.functions
    op = fused_op_of(node.op_type, node.domain, calls)
    return op if node.domain in ("", "ai.onnx") else f"{node.domain}.{op}"


@dataclass(frozen=True)
class DiffNode:
    """A node as the diff names it: its id in its own model, its name, its op."""

    id: int = record_field(omit=True)   # records name nodes; ids are each model's own
    name: str
    op: str

    @classmethod
    def of(cls, node: Node, graph: Graph | None = None) -> "DiffNode":
        """``graph``: the node's own, to name a call of an exported fused function by its
        op (graphlab.Attention_2 is one of the bodies of graphlab.Attention)."""
        return cls(node.id, node.name, op_name(node, graph))

    def __str__(self) -> str:
        return f"{self.op} {self.name!r}"


@dataclass(frozen=True)
class Change:
    """One difference: its kind, where on the node ("attribute axis", "input 1", "output 0"),
    and what each side has there."""

    kind: str
    where: str
    a: str
    b: str

    def text(self) -> str:
        return f"{self.where}: {self.a} → {self.b}"


@dataclass(frozen=True)
class NodePair:
    """A node of A and the node of B it was matched to, how, and what differs between them."""

    a: DiffNode = record_field(convert=name_of)
    b: DiffNode = record_field(convert=name_of)
    how: str
    changes: tuple[Change, ...] = ()

    json_derived = (("op", "a.op"),)
    json_order = ("op",)

    @property
    def changed(self) -> bool:
        return bool(self.changes)


@dataclass(frozen=True)
class OpCount:
    """One op type across the two models."""

    op: str
    a: int = 0
    b: int = 0
    matched: int = 0
    changed: int = 0
    only_a: int = 0
    only_b: int = 0


@dataclass
class ModelDiff:
    """Two models compared: matched pairs (changed or not), nodes only in A, only in B, and
    differences of the models' inputs and outputs.  ``graph_a``/``graph_b`` are the graphs
    compared (for views that draw them; not part of the record)."""

    a_label: str = record_field(key="a")
    b_label: str = record_field(key="b")
    pairs: list[NodePair] = record_field(key="matched")
    only_a: list[DiffNode]
    only_b: list[DiffNode]
    interface: list[Change]
    seconds: float = record_field(digits=6)
    graph_a: Graph | None = record_field(omit=True, default=None, repr=False, compare=False)
    graph_b: Graph | None = record_field(omit=True, default=None, repr=False, compare=False)

    json_derived = ("summary", "by_op")
    json_order = ("a", "b", "summary", "by_op", "interface")

    @property
    def changed_pairs(self) -> list[NodePair]:
        return [p for p in self.pairs if p.changed]

    @property
    def identical(self) -> bool:
        """No node only on one side, no matched node changed, the same interface."""
        return not (self.only_a or self.only_b or self.interface or self.changed_pairs)

    def kinds(self) -> dict[str, int]:
        """Matched pairs with at least one change of each kind."""
        counts = Counter(kind for p in self.pairs for kind in {c.kind for c in p.changes})
        return {kind: counts[kind] for kind in KINDS if counts[kind]}

    def how_matched(self) -> dict[str, int]:
        return dict(Counter(p.how for p in self.pairs).most_common())

    def by_op(self) -> list[OpCount]:
        """Per op type: count in A and B, matched, changed, only in A, only in B; the ops with
        the most unmatched nodes first."""
        counts: dict[str, Counter] = {}

        def bump(op: str, **fields: int) -> None:
            counts.setdefault(op, Counter()).update(fields)

        for pair in self.pairs:
            bump(pair.a.op, a=1, matched=1, changed=int(pair.changed))
            bump(pair.b.op, b=1)
        for node in self.only_a:
            bump(node.op, a=1, only_a=1)
        for node in self.only_b:
            bump(node.op, b=1, only_b=1)
        rows = [OpCount(op, **c) for op, c in counts.items()]
        return sorted(rows, key=lambda r: (-(r.only_a + r.only_b + r.changed), -r.a - r.b, r.op))

    def summary(self) -> dict:
        matched = len(self.pairs)
        changed = len(self.changed_pairs)
        return {"nodes_a": matched + len(self.only_a), "nodes_b": matched + len(self.only_b),
                "matched": matched, "identical": matched - changed, "changed": changed,
                "only_a": len(self.only_a), "only_b": len(self.only_b),
                "interface_changes": len(self.interface), "change_kinds": self.kinds(),
                "matched_by": self.how_matched()}

    def headline(self) -> str:
        """One line: the counts a reader wants first."""
        s = self.summary()
        if self.identical:
            return (f"{self.a_label} and {self.b_label}: no difference "
                    f"({s['matched']} nodes matched)")
        return (f"{self.a_label} ({s['nodes_a']} nodes) vs {self.b_label} ({s['nodes_b']} "
                f"nodes): {s['matched']} matched ({s['identical']} identical, {s['changed']} "
                f"changed), {s['only_a']} only in {self.a_label}, {s['only_b']} only in "
                f"{self.b_label}")

    def __repr__(self) -> str:
        return f"<ModelDiff {self.headline()}>"
