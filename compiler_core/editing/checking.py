"""After each edit: the nodes back in an order that runs, and the graph still well typed.

Order: ONNX files list nodes so each comes after what it reads; an edit may break that (a
rewire to a later value), so the nodes are sorted again, keeping the file's order where it
can; no order at all means the edit made a cycle, which is refused.

Types: the model is checked as onnx checks it (``onnx.checker`` and strict shape inference
with type checks), on a light copy without its big weights.  A model that already fails a
check before any edit (an op onnx has no schema for, an exporter's quirk) is held to the
checks it passes, so an edit is refused only for what it broke.
"""

from __future__ import annotations

import heapq
from collections import defaultdict

import onnx

from ..errors import EditError
from .model_index import SUBGRAPH_TYPES

STRICT, CHECKER, NONE = "strict", "checker", "none"
LIGHT_WEIGHT_VALUES = 1024   # an initializer bigger than this becomes a typed input to check


def name_every_node(model: onnx.ModelProto) -> None:
    """Give every node the name the importer calls it by — its own, ``{op}_{index}`` when it
    has none, and a second node of a name ``{name}_1`` — so an edit names nodes as every view
    shows them, whatever the edits before it removed or added."""
    from ..ir.importer import node_name   # the one naming rule
    taken: set[str] = set()
    for index, node in enumerate(model.graph.node):
        hint = name = node_name(node, index)
        count = 1
        while name in taken:
            name = f"{hint}_{count}"
            count += 1
        node.name = name
        taken.add(name)


def sort_nodes(model: onnx.ModelProto, label: str) -> None:
    """Put the nodes in an order that runs (the file's, where it already does); refuse a
    cycle, naming a node on it."""
    g = model.graph
    producer: dict[str, int] = {}
    for index, node in enumerate(g.node):
        for name in node.output:
            if name:
                producer[name] = index
    waiting = [0] * len(g.node)
    readers: dict[int, list[int]] = defaultdict(list)
    for index, node in enumerate(g.node):
        before = {producer[name] for name in _inputs_read(node) if name in producer}
        for source in before:
            readers[source].append(index)
        waiting[index] = len(before)
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        index = heapq.heappop(ready)
        order.append(index)
        for reader in readers[index]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                heapq.heappush(ready, reader)
    if len(order) < len(g.node):
        stuck = next(i for i, count in enumerate(waiting) if count > 0)
        node = g.node[stuck]
        raise EditError(f"{label}: it would make a cycle through {node.op_type} "
                        f"{node.name!r} (a node would read what it computes)", where=node.name)
    if order != sorted(order):
        nodes = [g.node[i] for i in order]
        kept = [onnx.NodeProto() for _ in nodes]
        for copy, node in zip(kept, nodes):
            copy.CopyFrom(node)
        del g.node[:]
        g.node.extend(kept)


def _inputs_read(node: onnx.NodeProto) -> list[str]:
    """A node's inputs and the outer values its bodies read."""
    from ..ir.subgraphs import free_variables
    names = [name for name in node.input if name]
    for attr in node.attribute:
        if attr.type in SUBGRAPH_TYPES:
            for body in ([attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs):
                names += free_variables(body)
    return names


class TypeCheck:
    """The strictest check the model passes before any edit, applied after each edit."""

    def __init__(self, model: onnx.ModelProto):
        self.level = NONE
        for level in (STRICT, CHECKER):
            if _failure(model, level) is None:
                self.level = level
                break

    def check(self, model: onnx.ModelProto, label: str) -> None:
        if self.level == NONE:
            return
        failure = _failure(model, self.level)
        if failure is not None:
            raise EditError(f"{label}: the edited graph is not well typed: {failure}",
                            hint="an op would read a value of a type or shape it does not "
                                 "take; undo this edit or change the values around it")


def _failure(model: onnx.ModelProto, level: str) -> str | None:
    light = light_copy(model)
    try:
        if level == STRICT:   # first: its messages name the op and the input at fault
            onnx.shape_inference.infer_shapes(light, check_type=True, strict_mode=True,
                                              data_prop=True)
        onnx.checker.check_model(light)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as err:
        return _first_line(str(err))
    except Exception as err:  # noqa: BLE001 - onnx raises plain RuntimeErrors from C++ too
        return _first_line(str(err)) or type(err).__name__
    return None


def light_copy(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model to check: its big initializers as typed graph inputs (checks read only the
    small ones, such as shapes), no value_info (the edits may have made it stale; the
    graph's outputs keep their declared types)."""
    light = onnx.ModelProto()
    light.ir_version = model.ir_version
    light.opset_import.extend(model.opset_import)
    light.functions.extend(model.functions)
    g, lg = model.graph, light.graph
    lg.name = g.name or "graph"
    lg.node.extend(g.node)
    listed = {vi.name for vi in g.input}
    lg.input.extend(g.input)
    for tensor in g.initializer:
        count = 1
        for dim in tensor.dims:
            count *= dim
        if count <= LIGHT_WEIGHT_VALUES and tensor.data_location != onnx.TensorProto.EXTERNAL:
            lg.initializer.append(tensor)
        elif tensor.name not in listed:
            lg.input.append(onnx.helper.make_tensor_value_info(tensor.name, tensor.data_type,
                                                               list(tensor.dims)))
    lg.sparse_initializer.extend(g.sparse_initializer)
    lg.output.extend(g.output)
    return light


def forget_types_below(model: onnx.ModelProto, roots: set[str]) -> None:
    """Drop what the file states about the types and shapes of values an edit may have
    changed (``roots`` and everything computed from them): the importer infers them again.
    A graph output below keeps its element type (its callers rely on it, and the type
    check holds the edit to it) and takes the shape inference gives it now."""
    g = model.graph
    readers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for node in g.node:
        for name in node.input:
            readers[name].append(node)
    below, stack = set(roots), list(roots)
    while stack:
        for node in readers.get(stack.pop(), ()):
            for name in node.output:
                if name and name not in below:
                    below.add(name)
                    stack.append(name)
    kept = [vi for vi in g.value_info if vi.name not in below]
    if len(kept) != len(g.value_info):
        del g.value_info[:]
        g.value_info.extend(kept)
    cleared = set()
    for output in g.output:
        if output.name in below and output.type.HasField("tensor_type"):
            output.type.tensor_type.ClearField("shape")
            cleared.add(output.name)
    if cleared:
        _infer_output_shapes(model, cleared)


def _infer_output_shapes(model: onnx.ModelProto, names: set[str]) -> None:
    try:
        inferred = onnx.shape_inference.infer_shapes(light_copy(model))
    except Exception:  # noqa: BLE001 - the type check that follows says what is wrong
        return
    shapes = {o.name: o.type.tensor_type.shape for o in inferred.graph.output
              if o.name in names and o.type.tensor_type.HasField("shape")}
    for output in model.graph.output:
        if output.name in shapes:
            output.type.tensor_type.shape.CopyFrom(shapes[output.name])


def _first_line(text: str) -> str:
    line = next((part.strip() for part in text.strip().splitlines() if part.strip()), "")
    return line[:300]
