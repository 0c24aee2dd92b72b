"""Layout conversion: convolution regions run channels-last (NHWC), with transposes at the edges."""

from __future__ import annotations

import numpy as np

from ...ir import Graph, Node, Value
from ...wording import plural
from ..framework.base import Pass, PassContext, PassResult
from .rules import (TO_NCHW, TO_NHWC, adapt, is_kernel, layout_inputs, permute,
                           read_shape_in_nchw_order, reads_shape_only, why_not)
from ..framework.pass_registry import register_pass
from ..framework.rewrite import bypass_node, fuse_nodes, insert_after

RULE = "convert_layout_nhwc"


@register_pass
class ConvertLayoutNHWC(Pass):
    """Run each convolutional region of the model channels-last (NHWC instead of NCHW), with
    Transposes only where the region meets the rest of the model.

    Where a tensor's channels are the innermost dimension, the channels of one pixel sit side by
    side in memory: a vector unit or a systolic array can load them in one go, and a 1x1
    convolution becomes a plain matrix multiply.  That is why most accelerators, mobile runtimes
    and vectorised CPU kernels want NHWC, while ONNX (like PyTorch) defines Conv, pooling and
    BatchNormalization on NCHW only.  The pass finds connected regions of convolutions, pools,
    normalizations and the layout-agnostic ops between them (element-wise ops, Concat, Softmax,
    reductions, Pad), converts them as a whole and pays for it once, with a Transpose where data
    enters and leaves the region.  Each NCHW-only op (or an earlier fusion built around one, such
    as Conv+Relu) becomes an `Nhwc...` fused node whose body is Transpose -> op -> Transpose, the
    stand-in for a channels-last kernel that lets it run anywhere; element-wise constants are
    re-laid out and axis attributes remapped; transposes that meet an inverse transpose cancel.
    """

    name = "convert_layout_nhwc"
    family = "layout"

    def run(self, graph: Graph, ctx: PassContext) -> PassResult:
        result = PassResult()
        opset = graph.opset_imports.get("", 1)
        converter = _Converter(graph, ctx)
        for number, region in enumerate(_find_regions(graph, opset, result), 1):
            entries, exits = converter.convert(region)
            kernels = sum(is_kernel(n) for n in region)
            result.rewrites += len(region)
            result.notes.append(f"region {number}: {plural(len(region), 'op')} "
                                f"({plural(kernels, 'channels-last kernel')}), "
                                f"{plural(entries + exits, 'transpose')} ({entries} entry, "
                                f"{exits} exit)")
        cancelled = converter.cancel_transpose_pairs()
        if cancelled:
            result.notes.append(f"folded {plural(cancelled, 'transpose pair')} at region edges")
        converter.drop_orphaned_constants()
        return result


# ---------------------------------------------------------------------------------- regions
def _find_regions(graph: Graph, opset: int, result: PassResult) -> list[list[Node]]:
    """Maximal connected sets of convertible ops around NCHW kernels, trimmed of fringe ops that
    would only move a transpose; each list is in execution order."""
    regions: list[list[Node]] = []
    assigned: set[int] = set()
    for node in graph.nodes:
        if node.id in assigned or not is_kernel(node):
            continue
        reason = why_not(node, opset)
        if reason is not None:
            result.decline(node, RULE, reason)
            continue
        members = _trim(_grow(node, opset, result))
        assigned.update(members)
        regions.append([n for n in graph.nodes if n.id in members])
    return regions


def _grow(seed: Node, opset: int, result: PassResult) -> dict[int, Node]:
    members = {seed.id: seed}
    queue = [seed]
    while queue:
        for neighbour in _layout_neighbours(queue.pop()):
            if neighbour.id in members:
                continue
            reason = why_not(neighbour, opset)
            if reason is None:
                members[neighbour.id] = neighbour
                queue.append(neighbour)
            elif reason:  # "" means no layout rule: an ordinary region boundary, not a miss
                result.decline(neighbour, RULE, reason)
    return members


def _layout_neighbours(node: Node) -> list[Node]:
    """Producers of the node's activation inputs and readers of its results as activations."""
    neighbours = [node.inputs[i].producer for i in layout_inputs(node)
                  if node.inputs[i] is not None and node.inputs[i].producer is not None]
    for value in node.outputs:
        for reader, index in (value.uses if value is not None else ()):
            if index in layout_inputs(reader):
                neighbours.append(reader)
    return neighbours


def _trim(members: dict[int, Node]) -> dict[int, Node]:
    """Drop layout-agnostic ops at the fringe while that costs no extra transpose.

    A Relu between the last convolution and a Flatten runs equally well in either layout;
    keeping it in the region only moves the exit transpose, and two such ops fanning out from
    one value would need two exits instead of one.
    """
    trimmed = True
    while trimmed:
        trimmed = False
        for node in list(members.values()):
            if is_kernel(node) or not _on_fringe(node, members):
                continue
            without = {k: n for k, n in members.items() if k != node.id}
            if _edge_transposes(without) <= _edge_transposes(members):
                members, trimmed = without, True
    return members


def _on_fringe(node: Node, members: dict[int, Node]) -> bool:
    feeds_region = any(reader.id in members for v in node.outputs if v is not None
                       for reader, _ in v.uses)
    fed_by_region = any(v.producer is not None and v.producer.id in members
                        for v in _runtime_activations(node))
    return not feeds_region or not fed_by_region


def _edge_transposes(members: dict[int, Node]) -> int:
    """How many transposes converting ``members`` costs: one per entering and leaving value,
    except where the model's own inverse Transpose is there to cancel it."""
    entering = {v.name for n in members.values() for v in _runtime_activations(n)
                if (v.producer is None or v.producer.id not in members)
                and not _is_transpose(v.producer, TO_NCHW)}
    leaving = {v.name for n in members.values() for v in n.outputs
               if v is not None and (v.is_graph_output or any(
                   r.id not in members and not reads_shape_only(r)
                   and not _is_transpose(r, TO_NHWC) for r, _ in v.uses))}
    return len(entering) + len(leaving)


def _runtime_activations(node: Node) -> list[Value]:
    """Activation inputs that a transpose would have to re-lay out at run time."""
    values = [node.inputs[i] for i in layout_inputs(node)]
    return [v for v in values if v is not None and not _is_broadcast_scalar(v)
            and not v.is_constant]


def _leaves(value: Value, members: dict[int, Node] | set[int]) -> bool:
    """True if something outside the region needs ``value`` in NCHW (Shape readers do not)."""
    return value.is_graph_output or any(reader.id not in members and not reads_shape_only(reader)
                                        for reader, _ in value.uses)


def _is_broadcast_scalar(value: Value) -> bool:
    """A value with one element looks the same in every layout."""
    return value.shape is not None and all(d == 1 for d in value.shape)


# ---------------------------------------------------------------------------------- rewriting
class _Converter:
    """Rewrites regions to NHWC; remembers the transposes and constants it made along the way."""

    def __init__(self, graph: Graph, ctx: PassContext):
        self.graph = graph
        self.ctx = ctx
        self.entries: dict[str, Value] = {}     # NCHW value name -> its NHWC transpose
        self.relaid: dict[str, Value] = {}      # constant name -> the constant in NHWC
        self.made: set[int] = set()             # ids of the edge transposes this pass made
        self.replaced_constants: list[Value] = []

    def convert(self, region: list[Node]) -> tuple[int, int]:
        """Rewrite one region; returns how many entry and exit transposes it got."""
        members = {n.id for n in region}
        entries_before = len(self.entries)
        for node in region:
            self._feed_nhwc(node, members)
        exits = 0
        for node in region:
            if is_kernel(node):
                node, nchw_shapes = self._channels_last_kernel(node)
                members.add(node.id)
            else:
                nchw_shapes = [v.shape if v is not None else None for v in node.outputs]
                adapt(self.graph, self.ctx, node)
            for value, shape in zip(node.outputs, nchw_shapes):
                if value is not None:
                    exits += self._settle(value, shape, members, node)
        return len(self.entries) - entries_before, exits

    def _feed_nhwc(self, node: Node, members: set[int]) -> None:
        """Make every activation input from outside the region NHWC: constants are re-laid out
        once, run-time values pass through an entry Transpose shared by all their readers."""
        for index in layout_inputs(node):
            value = node.inputs[index]
            if (value is None or _is_broadcast_scalar(value)
                    or value.producer is not None and value.producer.id in members):
                continue
            if value.is_constant:
                node.replace_input(index, self._relaid_constant(value))
            else:
                node.replace_input(index, self._entry(value, node))

    def _relaid_constant(self, value: Value) -> Value:
        if value.name not in self.relaid:
            array = value.constant_value()
            array = array.reshape((1,) * (4 - array.ndim) + array.shape)  # broadcast to 4-D
            self.relaid[value.name] = self.graph.add_initializer(
                f"{value.name}_nhwc", np.transpose(array, TO_NHWC))
            self.replaced_constants.append(value)
        return self.relaid[value.name]

    def _entry(self, value: Value, reader: Node) -> Value:
        if value.name not in self.entries:
            node = self.graph.add_node(
                "Transpose", [value], [f"{value.name}_nhwc"], attrs={"perm": TO_NHWC},
                name=f"{reader.name}_entry", order=reader.order - 0.5,
                provenance=self.ctx.provenance("entry_transpose", [reader]))
            _type(node.outputs[0], value, permute(value.shape, TO_NHWC))
            self.made.add(node.id)
            self.entries[value.name] = node.outputs[0]
        return self.entries[value.name]

    def _channels_last_kernel(self, node: Node) -> tuple[Node, list]:
        """Replace an NCHW-only op by a fused Nhwc<op> whose body is Transpose -> op -> Transpose.

        Returns the fused node and the NCHW shape of its result."""
        graph, ctx = self.graph, self.ctx
        source = ctx.provenance("channels_last_kernel", [node])
        to_nchw = []
        for index in layout_inputs(node):
            nhwc_input = node.inputs[index]
            transpose = graph.add_node("Transpose", [nhwc_input], 1, attrs={"perm": TO_NCHW},
                                       name=f"{node.name}_to_nchw", provenance=source,
                                       order=node.order - 0.5)
            _type(transpose.outputs[0], nhwc_input, permute(nhwc_input.shape, TO_NCHW))
            node.replace_input(index, transpose.outputs[0])
            to_nchw.append(transpose)
        result = node.outputs[0]
        to_nhwc = insert_after(graph, result, "Transpose", renamed=f"{result.name}_nchw",
                               attrs={"perm": TO_NHWC}, name=f"{node.name}_to_nhwc",
                               provenance=source)
        _type(to_nhwc.outputs[0], result, permute(result.shape, TO_NHWC))
        fused = fuse_nodes(graph, ctx, [*to_nchw, node, to_nhwc], f"Nhwc{node.op_type}",
                           "channels_last_kernel", attrs=dict(node.attrs))
        return fused, [result.shape]

    def _settle(self, value: Value, nchw_shape, members: set[int], producer: Node) -> int:
        """Give a region value its NHWC name and shape; add an exit transpose if it is read
        outside the region (the exit keeps the old name, so readers and outputs are unchanged).
        Returns the number of exits made (0 or 1)."""
        graph = self.graph
        renamed = f"{value.name}_nhwc"
        nhwc_readers = [r for r, _ in value.uses if r.id in members or reads_shape_only(r)]
        for reader in nhwc_readers:
            if reads_shape_only(reader):
                read_shape_in_nchw_order(graph, self.ctx, reader)
        exits = 0
        if _leaves(value, members):
            node = insert_after(graph, value, "Transpose", renamed=renamed,
                                attrs={"perm": TO_NCHW}, keep=nhwc_readers,
                                name=f"{producer.name}_exit",
                                provenance=self.ctx.provenance("exit_transpose", [producer]))
            _type(node.outputs[0], value, nchw_shape)
            self.made.add(node.id)
            exits = 1
        else:
            graph.rename_value(value, graph.unique_name(renamed))
        value.shape = permute(nchw_shape, TO_NHWC)
        return exits

    def cancel_transpose_pairs(self) -> int:
        """Fold each Transpose that reads a Transpose (one of them an edge transpose made here)
        into one Transpose with the composed permutation, or into nothing when that is the
        identity: a model that transposes NHWC input to NCHW loses both transposes."""
        folded = 0
        while True:
            pair = next(((n, n.inputs[0].producer) for n in self.graph.nodes_of_type("Transpose")
                         if _is_transpose(n.inputs[0].producer)
                         and self.made & {n.id, n.inputs[0].producer.id}), None)
            if pair is None:
                return folded
            self._fold(*pair)
            folded += 1

    def _fold(self, outer: Node, inner: Node) -> None:
        graph = self.graph
        perm = tuple(_perm(inner)[axis] for axis in _perm(outer))
        source = inner.inputs[0]
        outer.replace_input(0, source)
        if not inner.outputs[0].uses and not inner.outputs[0].is_graph_output:
            graph.remove_node(inner)
            self.made.discard(inner.id)
        if perm == tuple(range(len(perm))) and bypass_node(graph, outer, source):
            self.made.discard(outer.id)
        else:
            graph.set_node_attr(outer, "perm", perm)
            self.made.add(outer.id)

    def drop_orphaned_constants(self) -> None:
        for value in self.replaced_constants:
            if value.is_initializer and not value.uses and not value.is_graph_output:
                self.graph.remove_initializer(value)


def _is_transpose(node: Node | None, perm: tuple[int, ...] | None = None) -> bool:
    """Is ``node`` a Transpose (with permutation ``perm``, if given)?"""
    return (node is not None and node.op_type == "Transpose" and node.domain == ""
            and (perm is None or _perm(node) == perm))


def _perm(node: Node) -> tuple[int, ...]:
    perm = node.attr("perm")
    if perm is None:  # ONNX default: reverse the axes
        perm = tuple(reversed(range(node.inputs[0].rank)))
    return tuple(perm)


def _type(value: Value, like: Value, shape) -> None:
    value.elem_type = like.elem_type
    value.shape = shape
