"""The nested layout: every open group lays out its own items (its member nodes, and each child
group as a single box), one group at a time, like Model Explorer, so a collapsed group is a
compact box rather than a hole the size of its members.

- A group's layer order is computed once, with its children collapsed, and cached; opening or
  closing a group re-places only the items of that group and of its ancestors: the opened group
  grows in place and pushes its neighbours aside (`place_layers`).
- What is laid out is the whole pipeline's graph (stable_positions), so for one grouping state
  a node or a group has one place in every pass and in both panes.
- An opened fused op is a box holding its body's own small layout, in place of the fused node.
- Which groups start open depends on the area they take (`default_expanded`).

Boxes are centres and sizes; an open group's box includes the strip above its frame where the
frame's label is drawn.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field

from compiler_core.passes import PipelineResult

from .drawn_graph import Key, drawn_edges
from .graph_layout import Box, LayerOrder, LayoutOptions, Position, Size, layered_layout, \
    layered_order, place_layers
from .group_elements import collapsed_size
from .scopes import ScopeTree, StructureCut, pipeline_scopes
from .stable_positions import PipelineGraph, pipeline_graph
from .structure_scopes import CROWDED, crowded_scopes, structure_scopes

Item = Key   # a slot (node id, 'in:x', 'out:y') or a group id ('g:/bert/encoder')

IO_HEIGHT = 30.0
GROUP_PADDING = 14.0        # around an open group's members, inside its frame
GROUP_LABEL_HEIGHT = 30.0   # the frame's label sits above the frame
BODY_PADDING = 12.0         # around an opened fused op's body
BODY_LABEL_HEIGHT = 44.0    # a fused op's two-line label above its opened body
LABEL_CHAR_WIDTH = 9.5      # of the 16 px frame labels, to keep a long label inside the box
PLACEMENTS_CACHED = 16
LAYOUT_VERSION = 3          # of the grouping and the layout: a change makes cached ones stale


def pipeline_layout(result: PipelineResult) -> NestedLayout:
    """The scope groups of every snapshot (crowded scopes cut by structure), and the layout
    of the whole pipeline's graph."""
    given = pipeline_scopes([result.initial])
    structured = structure_scopes(result.initial, given)
    graphs = [result.initial] + [s.graph for s in result.snapshots]
    scopes = ScopeTree(pipeline_scopes(graphs, structured).items(), structured=bool(structured),
                       cut=StructureCut.of(result.initial, crowded_scopes(result.initial, given),
                                         CROWDED)
                       if structured else None)
    return NestedLayout(pipeline_graph(result, scopes.group_of.get), scopes)


@dataclass
class Placement:
    """Where everything visible in one grouping state is drawn."""

    boxes: dict[Item, Box]                     # visible slots and groups (open or collapsed)
    bodies: dict[int, dict[int, Position]]     # opened fused node id -> its body nodes' centres
    slot_of: dict[Key, Key]
    frames: dict[Item, Box] = field(default_factory=dict)   # open group or opened fused node ->
    # the rectangle drawn round its members, below its label strip

    def box(self, key: Key) -> Box:
        return self.boxes[self.slot_of.get(key, key)]

    def centre(self, key: Key) -> Position:
        box = self.box(key)
        return box.x, box.y


@dataclass
class _Local:
    """One group's items placed in its own coordinates."""

    positions: dict[Item, Position]
    sizes: dict[Item, Size]
    left: float
    top: float
    width: float


class NestedLayout:
    """Placements of the pipeline's graph for any set of open groups and opened fused ops."""

    def __init__(self, union: PipelineGraph, scopes: ScopeTree,
                 options: LayoutOptions = LayoutOptions()):
        self.union = union
        self.scopes = scopes
        self.options = options
        self._items: dict[str | None, list[Item]] = defaultdict(list)
        self._edges: dict[str | None, set[tuple[Item, Item]]] = defaultdict(set)
        self._orders: dict[str | None, LayerOrder] = {}
        self._body_layouts: dict[int, dict[int, Position]] = {}
        self._split_by_group()
        self.__setstate__(self.__dict__)

    def __getstate__(self) -> dict:
        """Workspaces travel between processes; placements are caches, rebuilt on demand."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_placements", "_lock")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._placements: OrderedDict[tuple, Placement] = OrderedDict()
        self._lock = threading.Lock()

    def _split_by_group(self) -> None:
        """Each slot and group is an item of its parent group; each edge belongs to the
        innermost group holding both ends, between the items that hold them there."""
        chains: dict[Key, list[str]] = {}
        seen: set[str] = set()
        for slot in self.union.slots:
            group = self.scopes.group_of.get(slot) if isinstance(slot, int) else None
            chain = chains[slot] = self.scopes.ancestors(group)
            for depth, group_id in enumerate(chain):
                if group_id not in seen:
                    seen.add(group_id)
                    self._items[chain[depth - 1] if depth else None].append(group_id)
            self._items[chain[-1] if chain else None].append(slot)
        for a, b in self.union.edges:
            ca, cb = chains[a], chains[b]
            common = 0
            while common < min(len(ca), len(cb)) and ca[common] == cb[common]:
                common += 1
            source = ca[common] if common < len(ca) else a
            target = cb[common] if common < len(cb) else b
            if source != target:
                self._edges[ca[common - 1] if common else None].add((source, target))

    def content_key(self) -> str:
        """A digest of everything the layer orders depend on: the pipeline's slots and edges,
        the groups, the options and the layout's version."""
        digest = hashlib.sha256(repr((LAYOUT_VERSION, self.options)).encode())
        for group in [None, *self.scopes.groups]:
            digest.update(repr((group, self._items[group], sorted(map(repr, self._edges[group]))))
                          .encode())
        return digest.hexdigest()

    @property
    def orders(self) -> dict[str | None, LayerOrder]:
        """Every group's layer order (computed now for those not yet asked for)."""
        for group in [None, *self.scopes.groups]:
            self._order(group)
        return dict(self._orders)

    def adopt(self, orders: dict[str | None, LayerOrder]) -> None:
        """Layer orders computed earlier for this very content (`content_key`)."""
        self._orders.update(orders)

    def placement(self, expanded: frozenset[str], opened: frozenset[int]) -> Placement:
        """Where everything is drawn while the ``expanded`` groups are open and the ``opened``
        fused ops show their bodies (the last few states are kept)."""
        expanded = self.scopes.visible_expanded(expanded)
        opened = frozenset(i for i in opened if i in self.union.bodies)
        key = (expanded, opened)
        with self._lock:
            if key in self._placements:
                self._placements.move_to_end(key)
                return self._placements[key]
        placement = self._place(expanded, opened)
        with self._lock:
            self._placements[key] = placement
            while len(self._placements) > PLACEMENTS_CACHED:
                self._placements.popitem(last=False)
        return placement

    def default_expanded(self, budget: int) -> set[str]:
        """Open whole levels of the tree, outermost first, while what is drawn covers at most
        ``budget`` nodes' worth of area: repeated blocks (a model's layers) then look alike, and
        a zoomed-out view of a big model shows its structure in readable boxes."""
        groups = self.scopes.groups
        gaps = self.options.column_gap, self.options.layer_gap
        node_area = (self.options.node_width + gaps[0]) * (self.options.node_height + gaps[1])

        def area(group_id: str) -> float:
            w, h = self._closed_size(group_id)
            return (w + gaps[0]) * (h + gaps[1]) / node_area

        expanded: set[str] = set()
        drawn = len(self.scopes.top_level_nodes) + sum(area(g) for g in self.scopes.roots)
        level = list(self.scopes.roots)
        while level:
            cost = sum(len(groups[g].node_ids) + sum(area(c) for c in groups[g].children)
                       - area(g) for g in level)
            if drawn + cost > budget:
                break
            expanded.update(level)
            drawn += cost
            level = [c for g in level for c in groups[g].children]
        return expanded

    def _place(self, expanded: frozenset[str], opened: frozenset[int]) -> Placement:
        opened_in: dict[Key, list[int]] = defaultdict(list)
        for node_id in opened:
            opened_in[self.union.slot_of[node_id]].append(node_id)
        local: dict[str | None, _Local] = {}
        self._measure(None, expanded, opened_in, local)
        placement = Placement({}, {}, self.union.slot_of)
        self._translate(None, 0.0, 0.0, local, opened_in, placement)
        return placement

    def _measure(self, group: str | None, expanded: frozenset[str],
                 opened_in: dict[Key, list[int]], local: dict[str | None, _Local]) -> Size:
        """Place the group's items (open children first, inside out); return its box size."""
        sizes: dict[Item, Size] = {}
        for item in self._items[group]:
            if item in expanded:
                sizes[item] = self._measure(item, expanded, opened_in, local)
            elif item in opened_in:
                sizes[item] = max((self._body_size(i) for i in opened_in[item]),
                                  key=lambda s: s[0] * s[1])
            else:
                sizes[item] = self._closed_size(item)
        positions = place_layers(self._order(group), sizes, self.options)
        left, top, right, bottom = _extent(positions, sizes)
        local[group] = _Local(positions, sizes, left, top, right - left)
        if group is None:
            return right - left, bottom - top
        label = len(self.scopes.groups[group].label) * LABEL_CHAR_WIDTH
        return (max(right - left, label) + 2 * GROUP_PADDING,
                bottom - top + 2 * GROUP_PADDING + GROUP_LABEL_HEIGHT)

    def _translate(self, group: str | None, dx: float, dy: float,
                   local: dict[str | None, _Local], opened_in: dict[Key, list[int]],
                   placement: Placement) -> None:
        """Absolute boxes of the group's items, given where its local origin lands."""
        mine = local[group]
        for item, (x, y) in mine.positions.items():
            w, h = mine.sizes[item]
            box = placement.boxes[item] = Box(x + dx, y + dy, w, h)
            if item in local:
                inner = local[item]
                left = box.x - inner.width / 2
                top = box.top + GROUP_LABEL_HEIGHT + GROUP_PADDING
                placement.frames[item] = _below_label(box, box.w, box.h, GROUP_LABEL_HEIGHT)
                self._translate(item, left - inner.left, top - inner.top, local, opened_in,
                                placement)
            for node_id in opened_in.get(item, ()):
                placement.bodies[node_id] = self._body_in(node_id, box)
                placement.frames[node_id] = _below_label(box, *self._body_size(node_id),
                                                         BODY_LABEL_HEIGHT)

    def _order(self, group: str | None) -> LayerOrder:
        order = self._orders.get(group)
        if order is None:
            items = self._items[group]
            order = layered_order(items, self._edges[group], self.options,
                                  {item: self._closed_size(item) for item in items})
            self._orders[group] = order
        return order

    def _closed_size(self, item: Item) -> Size:
        if item in self.scopes.groups:
            return collapsed_size(self.scopes.groups[item])
        if isinstance(item, str):
            return self.options.node_width, IO_HEIGHT
        return self.options.node_size

    def _body_layout(self, node_id: int) -> dict[int, Position]:
        """The body's own layered layout, centred on (0, 0)."""
        layout = self._body_layouts.get(node_id)
        if layout is None:
            body = self.union.bodies[node_id]
            edges = [(a, b) for a, b in drawn_edges(body)
                     if isinstance(a, int) and isinstance(b, int)]
            raw = layered_layout([n.id for n in body.nodes], edges, self.options)
            sizes = {k: self.options.node_size for k in raw}
            left, top, right, bottom = _extent(raw, sizes)
            cx, cy = (left + right) / 2, (top + bottom) / 2
            layout = self._body_layouts[node_id] = {k: (x - cx, y - cy)
                                                    for k, (x, y) in raw.items()}
        return layout

    def _body_size(self, node_id: int) -> Size:
        layout = self._body_layout(node_id)
        sizes = {k: self.options.node_size for k in layout}
        left, top, right, bottom = _extent(layout, sizes)
        return (max(right - left, self.options.node_width) + 2 * BODY_PADDING,
                bottom - top + 2 * BODY_PADDING + BODY_LABEL_HEIGHT)

    def _body_in(self, node_id: int, box: Box) -> dict[int, Position]:
        cx, cy = box.x, box.y + BODY_LABEL_HEIGHT / 2
        return {k: (cx + x, cy + y) for k, (x, y) in self._body_layout(node_id).items()}


def _below_label(box: Box, w: float, h: float, label: float) -> Box:
    """The frame of a ``w`` x ``h`` box centred in ``box``'s slot, its label strip cut off
    the top (the label is drawn above the frame)."""
    return Box(box.x, box.y + label / 2, w, h - label)


def _extent(positions: dict[Item, Position], sizes: dict[Item, Size]
            ) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) around the boxes."""
    if not positions:
        return 0.0, 0.0, 0.0, 0.0
    return (min(x - sizes[k][0] / 2 for k, (x, _) in positions.items()),
            min(y - sizes[k][1] / 2 for k, (_, y) in positions.items()),
            max(x + sizes[k][0] / 2 for k, (x, _) in positions.items()),
            max(y + sizes[k][1] / 2 for k, (_, y) in positions.items()))
