"""A layered (Sugiyama-style) top-to-bottom layout that stays fast on 10,000-node graphs.

Layout is the bottleneck of every graph viewer, so this one is computed on the server in
near-linear time:

1. layering: longest path from the sources, then a few "median" sweeps that move each node
   inside its feasible range towards the layers of its neighbours (network-simplex-ish: a
   Constant or a shape computation ends up just above its consumer, not at the very top);
2. ordering: barycentric sweeps down and up, on real x coordinates, to reduce crossings;
3. coordinates: each layer is placed as close as possible to its neighbours' barycentres while
   keeping its order and a minimum gap (isotonic regression by pool-adjacent-violators, O(n)).

Items may have different sizes (a collapsed group is a big box).  Steps 1-2 and a first
placement make a `LayerOrder`, the expensive part, which a nested view computes once per group;
`place_layers` then turns it into centres for whatever sizes the items have now: a layer is as
tall as its tallest item, and an item that grew pushes its neighbours aside, nothing else moves.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from statistics import median_low
from typing import Hashable, Iterable, Mapping, Sequence

Key = Hashable
Size = tuple[float, float]
Position = tuple[float, float]


@dataclass(frozen=True)
class LayoutOptions:
    node_width: float = 170.0
    node_height: float = 48.0
    column_gap: float = 30.0
    layer_gap: float = 42.0
    sweeps: int = 4

    @property
    def node_size(self) -> Size:
        return self.node_width, self.node_height


@dataclass(frozen=True)
class Box:
    """A centre and a size."""

    x: float
    y: float
    w: float
    h: float

    @property
    def left(self) -> float:
        return self.x - self.w / 2

    @property
    def top(self) -> float:
        return self.y - self.h / 2


@dataclass(frozen=True)
class LayerOrder:
    """Layers top to bottom, each left to right, and each key's preferred x centre."""

    layers: list[list[Key]]
    x: dict[Key, float]


def layered_layout(keys: Sequence[Key], edges: Iterable[tuple[Key, Key]],
                   options: LayoutOptions = LayoutOptions(),
                   sizes: Mapping[Key, Size] | None = None) -> dict[Key, Position]:
    """Centres for a DAG; ``keys`` in a preferred order (ties are broken by it)."""
    sizes = sizes or {}
    return place_layers(layered_order(keys, edges, options, sizes), sizes, options)


def layered_order(keys: Sequence[Key], edges: Iterable[tuple[Key, Key]],
                  options: LayoutOptions = LayoutOptions(),
                  sizes: Mapping[Key, Size] | None = None) -> LayerOrder:
    """Layers, order and preferred x of a DAG whose items have the given (default) sizes."""
    sizes = sizes or {}
    index = {key: i for i, key in enumerate(keys)}
    preds: list[list[int]] = [[] for _ in keys]
    succs: list[list[int]] = [[] for _ in keys]
    seen: set[tuple[int, int]] = set()
    for a, b in edges:
        ia, ib = index.get(a), index.get(b)
        if ia is None or ib is None or ia == ib or (ia, ib) in seen:
            continue
        seen.add((ia, ib))
        preds[ib].append(ia)
        succs[ia].append(ib)
    order = _topological_order(preds, succs)
    layer = _assign_layers(order, preds, succs)
    layers = [members for members in _initial_layers(order, layer) if members]
    widths = [sizes.get(key, options.node_size)[0] for key in keys]
    x = _order_and_place(layers, preds, succs, widths, options)
    return LayerOrder([[keys[i] for i in members] for members in layers],
                      {key: x[i] for key, i in index.items()})


def place_layers(order: LayerOrder, sizes: Mapping[Key, Size],
                 options: LayoutOptions = LayoutOptions()) -> dict[Key, Position]:
    """Centres for the items' current sizes, as close to their preferred x as widths allow."""
    positions: dict[Key, Position] = {}
    top = 0.0
    for members in order.layers:
        dims = [sizes.get(key, options.node_size) for key in members]
        height = max(h for _, h in dims)
        xs = separated_positions([order.x[key] for key in members],
                                 _gaps([w for w, _ in dims], options))
        for key, x in zip(members, xs):
            positions[key] = (x, top + height / 2)
        top += height + options.layer_gap
    return positions


def _topological_order(preds: list[list[int]], succs: list[list[int]]) -> list[int]:
    """Kahn's algorithm, preferring the caller's order; nodes on a cycle are appended last."""
    indegree = [len(p) for p in preds]
    ready = deque(i for i, d in enumerate(indegree) if d == 0)
    order: list[int] = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for s in succs[node]:
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.append(s)
    if len(order) < len(preds):
        placed = set(order)
        order += [i for i in range(len(preds)) if i not in placed]
    return order


def _assign_layers(order: list[int], preds: list[list[int]], succs: list[list[int]]) -> list[int]:
    position = {node: rank for rank, node in enumerate(order)}
    layer = [0] * len(order)
    for node in order:
        layer[node] = max((layer[p] + 1 for p in preds[node] if position[p] < position[node]),
                          default=0)
    for _ in range(3):
        for node in reversed(order):
            _move_to_median(node, layer, preds, succs)
    return layer


def _move_to_median(node: int, layer: list[int], preds: list[list[int]],
                    succs: list[list[int]]) -> None:
    """Move a node within [max pred + 1, min succ - 1] to the median of its neighbours."""
    if not succs[node]:
        return  # sinks stay right below their producers
    low = max((layer[p] + 1 for p in preds[node]), default=0)
    high = min(layer[s] - 1 for s in succs[node])
    if high < low:
        return  # only on a cycle, which a valid graph does not have
    wanted = median_low([layer[p] + 1 for p in preds[node]] + [layer[s] - 1 for s in succs[node]])
    layer[node] = min(max(wanted, low), high)


def _initial_layers(order: list[int], layer: list[int]) -> list[list[int]]:
    layers: list[list[int]] = [[] for _ in range(max(layer, default=-1) + 1)]
    for node in order:
        layers[layer[node]].append(node)
    return layers


def _order_and_place(layers: list[list[int]], preds: list[list[int]], succs: list[list[int]],
                     widths: list[float], options: LayoutOptions) -> list[float]:
    x = [0.0] * len(preds)
    for members in layers:
        left = 0.0
        for node in members:
            x[node] = left + widths[node] / 2
            left += widths[node] + options.column_gap
    for sweep in range(options.sweeps):
        downward = sweep % 2 == 0
        sequence = layers if downward else layers[::-1]
        for members in sequence:
            neighbours = preds if downward else succs
            wanted = [_barycentre(neighbours[n], x, x[n]) for n in members]
            ranked = sorted(range(len(members)), key=lambda i: wanted[i])
            members[:] = [members[i] for i in ranked]
            _place(members, [wanted[i] for i in ranked], x, widths, options)
    for members in layers:  # final polish: keep the order, centre on both sides
        wanted = [_barycentre(preds[n] + succs[n], x, x[n]) for n in members]
        _place(members, wanted, x, widths, options)
    return x


def _barycentre(neighbours: list[int], x: list[float], default: float) -> float:
    return sum(x[n] for n in neighbours) / len(neighbours) if neighbours else default


def _place(members: list[int], wanted: list[float], x: list[float], widths: list[float],
           options: LayoutOptions) -> None:
    """Closest positions to ``wanted`` that keep the order and the items apart."""
    gaps = _gaps([widths[n] for n in members], options)
    for node, value in zip(members, separated_positions(wanted, gaps)):
        x[node] = value


def _gaps(widths: Sequence[float], options: LayoutOptions) -> list[float]:
    """Minimum distance between the centres of neighbours in a layer."""
    return [(a + b) / 2 + options.column_gap for a, b in zip(widths, widths[1:])]


def separated_positions(wanted: Sequence[float], gaps: Sequence[float]) -> list[float]:
    """Least-squares fit of ordered positions, neighbours at least ``gaps[i]`` apart (pool
    adjacent violators on the positions minus their minimum offsets)."""
    offsets = [0.0]
    for gap in gaps:
        offsets.append(offsets[-1] + gap)
    blocks: list[list[float]] = []  # [mean, count]
    for value, offset in zip(wanted, offsets):
        blocks.append([value - offset, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, count = blocks.pop()
            prev = blocks[-1]
            prev[0] = (prev[0] * prev[1] + mean * count) / (prev[1] + count)
            prev[1] += count
    fitted: list[float] = []
    for mean, count in blocks:
        fitted += [mean] * int(count)
    return [value + offset for value, offset in zip(fitted, offsets)]
