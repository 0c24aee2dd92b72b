"""Groups found from the graph's structure, for nodes their exporter left without name scopes.

A dynamo export or a hand-built graph names its nodes `node_MatMul_12`: without scopes its
10,000 nodes would be one group, one column hundreds of thousands of pixels tall.  Any scope
(the top level included) holding more than `CROWDED` nodes of its own is cut along the
topological order, the order exporters write a model's modules in:

- **Repeated blocks.**  The op types along the order repeat with a period where a model
  repeats a layer.  The period is the shift that lines up the most op types with themselves;
  the cuts go where the fewest values cross (between two transformer layers only the residual
  stream does, however many nodes read it; on a tie, the fewest edges), and each stretch of
  one period that repeats its neighbour is a block.
- **Stretches.**  What does not repeat is cut into pieces of similar length at the cheapest
  cuts, each labelled by its main ops and its place in the order.

A level never holds more than `MAX_CHILDREN` items (more blocks are gathered in runs,
"blocks 0–9"), and a piece bigger than `LEAF_SIZE` is cut again inside, so every level opens
on a readable handful of boxes.  The answer is a scope path per node; `ScopeTree` makes the
groups from it exactly as from an exporter's scopes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from compiler_core.hardware.op_flops import DATA_MOVEMENT, METADATA_ONLY
from compiler_core.ir import Graph, Node

from .scopes import normalise_scope

CROWDED = 120          # a scope with more nodes of its own than this is cut by structure
LEAF_SIZE = CROWDED    # a piece this small is drawn as its nodes
MAX_CHILDREN = 16      # items per level
RUNS = 10              # too many blocks for one level: gathered in about this many runs
MIN_PERIOD = 4         # a repeated block has at least this many nodes...
MAX_PERIOD = 2048      # ...and at most this many
SAMPLE = 16384         # the period is sought in the first this many nodes of a range
MATCH = 0.9            # share of positions two neighbouring blocks agree on
SAME_PERIOD = 0.02     # a shorter period missing this little more than the best is preferred
COVERED = 0.3          # repeated blocks must cover this share of a range to be used
NO_ARITHMETIC = DATA_MOVEMENT | METADATA_ONLY   # named in a label only when nothing else is


@dataclass
class Piece:
    """A stretch [start, end) of the order: a leaf, or the parent of smaller pieces."""

    label: str
    start: int
    end: int
    children: list["Piece"] = field(default_factory=list)
    block: int | None = None     # its number, for a repeated block

    @property
    def size(self) -> int:
        return self.end - self.start


def structure_scopes(graph: Graph, scopes: dict[int, str]) -> dict[int, str]:
    """A deeper scope for every node of a crowded scope of ``graph`` (``scopes``: each node's
    scope as `pipeline_scopes` resolved it); nodes of other scopes are left out."""
    found: dict[int, str] = {}
    for scope, nodes in _crowded(graph, scopes).items():
        for node_id, path in _paths(nodes).items():
            found[node_id] = scope + path
    return found


def crowded_scopes(graph: Graph, scopes: dict[int, str]) -> dict[str, int]:
    """The scopes `structure_scopes` cuts ('' is the top level) and how many nodes of their
    own each holds: why the page's groups came from structure."""
    return {scope: len(nodes) for scope, nodes in _crowded(graph, scopes).items()}


def _crowded(graph: Graph, scopes: dict[int, str]) -> dict[str, list[Node]]:
    members: dict[str, list[Node]] = {}
    for node in graph.nodes:   # topological order
        members.setdefault(normalise_scope(scopes.get(node.id, "")), []).append(node)
    return {scope: nodes for scope, nodes in members.items() if len(nodes) > CROWDED}


def _paths(nodes: list[Node]) -> dict[int, str]:
    """'/blocks 0–9/block 3/…' for each node, from the pieces of its stretch of the order."""
    ops = [n.op_type for n in nodes]
    order = Order(ops, _links(nodes))
    paths: dict[int, str] = {}

    def walk(pieces: list[Piece], prefix: str) -> None:
        for piece in pieces:
            path = f"{prefix}/{piece.label}"
            if piece.children:
                walk(piece.children, path)
            else:
                for index in range(piece.start, piece.end):
                    paths[nodes[index].id] = path

    walk(order.pieces(0, len(nodes)), "")
    return paths


def _links(nodes: list[Node]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(spans, edges) of the values made and read in the range, as positions in the order:
    a span runs from a value's producer to its last reader (a value read by five nodes
    crosses a cut once), an edge from its producer to each reader.  Constants (nodes reading
    nothing) are left out: an exporter writes them anywhere, and they say nothing about
    where a layer ends."""
    position = {n.id: i for i, n in enumerate(nodes)}
    spans: dict[int, tuple[int, int]] = {}
    edges: list[tuple[int, int]] = []
    for j, node in enumerate(nodes):
        for value in list(node.inputs) + list(node.implicit_inputs):
            producer = value.producer if value is not None else None
            i = position.get(producer.id) if producer is not None else None
            if i is not None and i < j and (producer.inputs or producer.implicit_inputs):
                spans[id(value)] = (i, j)   # readers come in order: the last one stays
                edges.append((i, j))
    return list(spans.values()), edges


def _crossing(size: int, links: Iterable[tuple[int, int]]) -> np.ndarray:
    """How many links cross each cut c (0..size): a link i -> j crosses every c, i < c <= j."""
    crossing = np.zeros(size + 2, dtype=np.int64)
    for i, j in links:
        crossing[i + 1] += 1
        crossing[j + 1] -= 1
    return np.cumsum(crossing)[:size + 1]


class Order:
    """The op types along the topological order, and how many values cross each cut, and
    how many edges (which break the ties between cuts as few values cross: in a real export
    a dozen phases of a layer may have only the residual stream and the mask crossing)."""

    def __init__(self, ops: list[str], links: tuple[list, list]):
        self.ops = ops
        codes = {op: k for k, op in enumerate(dict.fromkeys(ops))}
        self.codes = np.array([codes[op] for op in ops], dtype=np.int64)
        spans, edges = links
        self.crossing = _crossing(len(ops), spans)
        self.crossing_edges = _crossing(len(ops), edges)

    # -- the pieces of a range ----------------------------------------------------------------
    def pieces(self, start: int, end: int) -> list[Piece]:
        """The children of [start, end): blocks and stretches, in runs when too many, each cut
        again while bigger than LEAF_SIZE."""
        found = self._with_blocks(start, end) or self._stretches(start, end)
        found = _in_runs(found, self.ops)
        for piece in found:
            self._fill(piece)
        return found

    def _fill(self, piece: Piece) -> None:
        if piece.children:
            for child in piece.children:
                self._fill(child)
        elif piece.size > LEAF_SIZE:
            piece.children = self.pieces(piece.start, piece.end)

    def _with_blocks(self, start: int, end: int) -> list[Piece]:
        """Repeated blocks and the stretches between them, or [] when nothing repeats."""
        period = self.period(start, end)
        if period is None:
            return []
        windows = self._windows(start, end, period)
        repeated = self._repeated(windows, period)
        covered = sum(b - a for (a, b), r in zip(windows, repeated) if r)
        if sum(repeated) < 2 or covered < COVERED * (end - start):
            return []
        found: list[Piece] = []
        gap = start
        number = 0
        for (a, b), is_block in zip(windows, repeated):
            if not is_block:
                continue
            if a > gap:   # what lies between blocks (cut again inside when big)
                found.append(self._stretch(gap, a))
            found.append(Piece(f"block {number}", a, b, block=number))
            number += 1
            gap = b
        if gap < end:
            found.append(self._stretch(gap, end))
        return found

    def period(self, start: int, end: int) -> int | None:
        """The shift at which the op types of [start, end) repeat over the most positions
        counting only runs of agreement at least a period long, where a whole block repeats
        (the shortest of the near-best: one layer, not two)."""
        codes = self.codes[start:min(end, start + SAMPLE)]
        n = len(codes)
        shifts = np.arange(MIN_PERIOD, min(n // 2, MAX_PERIOD) + 1)
        if not len(shifts):
            return None
        covered = np.array([_long_runs(codes[:-p] == codes[p:], p) for p in shifts])
        best = covered.max()
        if best < COVERED * n:
            return None
        return int(shifts[int(np.argmax(covered >= (1 - SAME_PERIOD) * best))])

    def _windows(self, start: int, end: int, period: int) -> list[tuple[int, int]]:
        """Consecutive stretches of one period, cut at the phase the fewest values cross (on a
        tie: the fewest edges, then where the repetition begins)."""
        values, edges = (_phase_cost(crossing[start:end + 1], period)
                         for crossing in (self.crossing, self.crossing_edges))
        fewest = np.flatnonzero(values <= values.min() + 1e-9)
        cheapest = fewest[edges[fewest] <= edges[fewest].min() + 1e-9]
        begins = (self._repetition_start(start, end, period) - start) % period
        phase = begins if begins in cheapest else int(cheapest[0])
        bounds = sorted({start, end, *range(start + phase, end, period)})
        return list(zip(bounds, bounds[1:]))

    def _repetition_start(self, start: int, end: int, period: int) -> int:
        """The first position from which a whole period agrees with the next one."""
        codes = self.codes[start:end]
        same = np.concatenate([[0], np.cumsum(codes[:-period] == codes[period:])])
        agree = same[period:] - same[:-period]   # agreement of the period starting at each i
        found = np.flatnonzero(agree >= MATCH * period)
        return start + int(found[0]) if len(found) else start

    def _repeated(self, windows: list[tuple[int, int]], period: int) -> list[bool]:
        """A whole-period window that agrees with a neighbour at MATCH of its positions."""
        def agrees(left: tuple[int, int], right: tuple[int, int]) -> bool:
            if left[1] - left[0] != period or right[1] - right[0] != period:
                return False
            a, b = self.codes[left[0]:left[1]], self.codes[right[0]:right[1]]
            return np.count_nonzero(a == b) >= MATCH * period

        pairs = [agrees(a, b) for a, b in zip(windows, windows[1:])]
        repeated = [(k > 0 and pairs[k - 1]) or (k < len(pairs) and pairs[k])
                    for k in range(len(windows))]
        if len(windows) > 2:   # a first or last block a node or two short of the period
            repeated[0] = repeated[0] or (repeated[1] and self._ends_alike(
                windows[0], windows[1], period, at_end=True))
            repeated[-1] = repeated[-1] or (repeated[-2] and self._ends_alike(
                windows[-1], windows[-2], period, at_end=False))
        return repeated

    def _ends_alike(self, short: tuple[int, int], full: tuple[int, int], period: int,
                    at_end: bool) -> bool:
        """A window nearly a period long that agrees with the end (or the start) of a whole
        block: the rest of its block lies beyond the range, or in the neighbour's cut."""
        length = short[1] - short[0]
        if length < MATCH * period:
            return False
        a = self.codes[short[0]:short[1]]
        b = self.codes[full[1] - length:full[1]] if at_end else \
            self.codes[full[0]:full[0] + length]
        return np.count_nonzero(a == b) >= MATCH * length

    def _stretches(self, start: int, end: int) -> list[Piece]:
        """[start, end) in pieces of similar length, each cut where the fewest values cross."""
        size = max(LEAF_SIZE, -(-(end - start) // MAX_CHILDREN))
        count = -(-(end - start) // size)
        if count <= 1:
            return [self._stretch(start, end)]
        cuts = [start]
        for k in range(1, count):
            ideal = start + round(k * (end - start) / count)
            low, high = max(cuts[-1] + 1, ideal - size // 4), min(end - 1, ideal + size // 4)
            cheapest = np.lexsort((self.crossing_edges[low:high + 1],
                                   self.crossing[low:high + 1]))
            cuts.append(low + int(cheapest[0]) if high >= low else ideal)
        cuts.append(end)
        return [self._stretch(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]

    def _stretch(self, start: int, end: int) -> Piece:
        return Piece(stretch_label(self.ops[start:end], start, end), start, end)


def _phase_cost(cuts: np.ndarray, period: int) -> np.ndarray:
    """The mean crossing of the cuts at each phase of the period."""
    rows = -(-len(cuts) // period)
    padded = np.full(rows * period, np.nan)
    padded[:len(cuts)] = cuts
    return np.nanmean(padded.reshape(rows, period), axis=0)


def _long_runs(agree: np.ndarray, length: int) -> int:
    """Positions in runs of at least ``length`` consecutive True."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], agree.view(np.int8), [0]])))
    runs = edges[1::2] - edges[::2]
    return int(runs[runs >= length].sum())


def stretch_label(ops: list[str], start: int, end: int) -> str:
    """'MatMul · Add 41–80': the two commonest ops that compute (shape plumbing and copies
    only when there is nothing else) and the place in the order (1-based)."""
    counts = Counter(ops)
    ranked = sorted(counts, key=lambda op: (op in NO_ARITHMETIC, -counts[op]))
    main = " · ".join(ranked[:2])
    return f"{main} {start + 1}–{end}"


def _in_runs(pieces: list[Piece], ops: list[str]) -> list[Piece]:
    """At most MAX_CHILDREN items: else consecutive blocks gathered in runs of a round number
    ("blocks 10–19"; runs of runs if need be), about RUNS of them, else any consecutive
    pieces."""
    if len(pieces) <= MAX_CHILDREN:
        return pieces
    others = sum(1 for piece in pieces if piece.block is None)
    per_run = 2
    while per_run < len(pieces):
        gathered = _gather_blocks(pieces, ops, per_run)
        if len(gathered) - others <= RUNS and len(gathered) <= MAX_CHILDREN:
            return gathered
        per_run = _next_round(per_run)
    per_run = -(-len(pieces) // MAX_CHILDREN)
    return [_run(_in_runs(pieces[k:k + per_run], ops), ops)
            for k in range(0, len(pieces), per_run)]


def _gather_blocks(pieces: list[Piece], ops: list[str], per_run: int) -> list[Piece]:
    """Blocks numbered k·per_run to (k+1)·per_run - 1 in one run; other pieces as they are."""
    gathered: list[Piece] = []
    run: list[Piece] = []
    for piece in pieces + [None]:
        if run and (piece is None or piece.block is None or piece.block % per_run == 0):
            gathered.append(_run(_in_runs(run, ops), ops))
            run = []
        if piece is not None and piece.block is not None:
            run.append(piece)
        elif piece is not None:
            gathered.append(piece)
    return gathered


def _next_round(count: int) -> int:
    """1, 2, 5, 10, 20, 50, ..."""
    digits = len(str(count)) - 1
    lead = count // 10 ** digits
    return (2 if lead == 1 else 5 if lead == 2 else 10) * 10 ** digits


def _run(pieces: list[Piece], ops: list[str]) -> Piece:
    if len(pieces) == 1:
        return pieces[0]
    start, end = pieces[0].start, pieces[-1].end
    numbers = [_block_numbers(p) for p in pieces]
    label = (f"blocks {numbers[0][0]}–{numbers[-1][-1]}" if all(numbers)
             else stretch_label(ops[start:end], start, end))
    return Piece(label, start, end, children=pieces)


def _block_numbers(piece: Piece) -> list[int]:
    """The blocks a piece is made of, or [] when it holds anything else."""
    if piece.block is not None:
        return [piece.block]
    numbers = [_block_numbers(child) for child in piece.children]
    return [n for found in numbers for n in found] if numbers and all(numbers) else []
