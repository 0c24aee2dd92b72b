"""Rewrite primitives shared by the passes: bypass a node, insert one after a value, fuse a set
of nodes into one (and open it again), replace a set of nodes by one standard op — and the
small local edits the cleanup passes build from them, which keep the model's interface: a
rewrite that would rename a graph output is declined, and the decline says why.

Fused nodes keep their original subgraph as a ``body`` (like an XLA fusion computation) whose
nodes keep their ids, so the app can open a fused node and show what it was made of, and the
exporter can turn it into a model-local function that onnxruntime runs.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable, Iterable, Mapping, Sequence

import onnx

from ...ir import FUSED_DOMAIN, Graph, Node, Provenance, Value
from ...ir.graph import order_key, reads_only_earlier
from .base import PassContext, PassResult
from ..analyses.constants import remove_dead
from .runtime_faults import exposed_fault


def bypass_node(graph: Graph, node: Node, replacement: Value) -> bool:
    """Remove a single-output node, its readers reading ``replacement`` instead.

    Returns False (and changes nothing) when that would rename a graph output.
    """
    output = node.outputs[0]
    if output is None or not graph.can_replace_uses(output, replacement):
        return False
    graph.replace_all_uses(output, replacement)
    graph.remove_node(node)
    return True


def insert_after(graph: Graph, value: Value, op_type: str, *, renamed: str,
                 operands: Sequence[Value] = (), attrs: dict | None = None,
                 keep: Iterable[Node] = (), provenance: Provenance | None = None,
                 name: str | None = None) -> Node:
    """Insert a node reading ``value`` (then ``operands``) between ``value`` and its readers.

    The new node's output takes over ``value``'s readers (except the nodes in ``keep``), its
    place among the graph outputs and its name, so the rest of the model and the model's
    interface still refer to the same name; ``value`` itself is renamed after ``renamed``.
    """
    original = value.name
    kept = {node.id for node in keep}
    held = [(node, index) for node, index in value.uses if node.id in kept]
    order = value.producer.order + 0.5 if value.producer is not None else None
    node = graph.add_node(op_type, [value, *operands], 1, attrs=attrs, provenance=provenance,
                          name=name, order=order)
    graph.replace_all_uses(value, node.outputs[0])
    node.replace_input(0, value)
    for reader, index in held:
        reader.replace_input(index, value)
    graph.rename_value(value, graph.unique_name(renamed))
    graph.rename_value(node.outputs[0], original)
    return node


def boundary(nodes: Sequence[Node]) -> tuple[list[Value], list[Value]]:
    """Values a node set reads from outside, and values it makes that are read outside."""
    members = {n.id for n in nodes}
    inputs: dict[str, Value] = {}
    outputs: dict[str, Value] = {}
    for node in nodes:
        for value in list(node.inputs) + list(node.implicit_inputs):
            if value is not None and (value.producer is None or value.producer.id not in members):
                inputs.setdefault(value.name, value)
        for value in node.outputs:
            if value is None:
                continue
            if value.is_graph_output or any(u.id not in members for u, _ in value.uses):
                outputs.setdefault(value.name, value)
    return list(inputs.values()), list(outputs.values())


def creates_cycle(graph: Graph, nodes: Sequence[Node]) -> bool:
    """True if some path leaves the node set and comes back (fusing would make a cycle)."""
    members = {n.id for n in nodes}
    exits = [n for n in nodes if any(u.id not in members for v in n.outputs if v is not None
                                     for u, _ in v.uses)]
    if not exits or len(exits) == 1 and _reached_by_all(exits[0], members):
        return False  # every path out starts at the one exit, which every member feeds
    frontier = [u for n in exits for v in n.outputs if v is not None
                for u, _ in v.uses if u.id not in members]
    seen: set[int] = set()
    while frontier:
        node = frontier.pop()
        if node.id in seen:
            continue
        seen.add(node.id)
        for value in node.outputs:
            if value is None:
                continue
            for user, _ in value.uses:
                if user.id in members:
                    return True
                frontier.append(user)
    return False


def _reached_by_all(exit_node: Node, members: set[int]) -> bool:
    """True if every member reaches ``exit_node`` without leaving the set (a path from the exit
    back into such a set would close a cycle the graph already had)."""
    seen = {exit_node.id}
    stack = [exit_node]
    while stack:
        node = stack.pop()
        for value in list(node.inputs) + list(node.implicit_inputs):
            producer = value.producer if value is not None else None
            if producer is not None and producer.id in members and producer.id not in seen:
                seen.add(producer.id)
                stack.append(producer)
    return len(seen) == len(members)


def extract_body(nodes: Sequence[Node], inputs: Sequence[Value],
                 outputs: Sequence[Value], constants: Sequence[Value] = ()) -> Graph:
    """A standalone copy of ``nodes`` (in execution order; same ids and names) reading
    ``inputs``; the values in ``constants`` are copied into the body as its own initializers."""
    body = Graph("body")
    mapping: dict[str, Value] = {}
    for value in inputs:
        mapping[value.name] = body.add_input(Value(value.name, value.elem_type, value.shape,
                                                   type_proto=value.type_proto))
    for value in constants:
        mapping[value.name] = body.add_initializer(value.name, value.constant_data())
    body.add_copies(nodes, mapping)
    body.set_outputs(mapping[v.name] for v in outputs)
    body.opset_imports = {}
    return body


_SHAPE_INTEGERS = frozenset({onnx.TensorProto.INT64, onnx.TensorProto.INT32})


def with_private_shape_arithmetic(nodes: Sequence[Node]) -> list[Node]:
    """``nodes`` plus the integer shape arithmetic that only they read.

    Without bindings, exporters compute Reshape targets at run time from Shape → Gather →
    Unsqueeze → Concat chains, and some read the fused set's own intermediates: those must
    move inside, or the fused node would feed itself.  A node joins once every reader of its
    outputs is a member, so arithmetic shared with another layer stays outside (an input).
    """
    members = {node.id: node for node in nodes}
    frontier = list(nodes)
    while frontier:
        for value in frontier.pop().inputs:
            producer = value.producer if value is not None else None
            if (producer is not None and producer.id not in members
                    and all(v is None or v.elem_type in _SHAPE_INTEGERS
                            for v in producer.outputs)
                    and all(v is None or (not v.is_graph_output and all(
                        u.id in members for u in v.users())) for v in producer.outputs)):
                members[producer.id] = producer
                frontier.append(producer)
    return list(members.values())


def outside_reader(nodes: Sequence[Node], results: Sequence[Value],
                   ) -> tuple[Node, Node | None, str] | None:
    """The first member whose output is read outside the set (or is a graph output) although
    it is not among ``results``: (the member, the reader or None for a graph output, the
    reader in words); None when the set can become one node with exactly those outputs."""
    inside = {node.id for node in nodes}
    kept = {id(value) for value in results}
    for node in nodes:
        for value in filter(None, node.outputs):
            if id(value) in kept:
                continue
            reader = next((u for u in value.users() if u.id not in inside), None)
            if reader is not None:
                return node, reader, f"{reader.op_type} '{reader.name}'"
            if value.is_graph_output:
                return node, None, f"graph output '{value.name}'"
    return None


def fuse_nodes(graph: Graph, ctx: PassContext, nodes: Iterable[Node], op_type: str, rule: str,
               attrs: dict | None = None, operands: Sequence[Value | None] | None = None,
               source: str = "", results: Sequence[Value] | None = None) -> Node | None:
    """Replace ``nodes`` by one fused node whose body is their subgraph.

    The fused node reads the set's external inputs (weights included) and produces the values
    the rest of the graph reads, reusing those Value objects so shapes and names survive.
    With ``operands`` the fused node reads exactly those, in that order (the signature of the
    op it stands for, e.g. LayerNormalization's X, Scale, B; trailing Nones are dropped), and
    the other constants the set reads (epsilon, 0.5, Clip bounds) move into the body.
    With ``results`` the fused node's outputs come in that order (the op's signature: a skip
    normalization's result, then the sum it also returns); they must be exactly the values
    read outside.  Returns None when the set cannot be fused (fusing it would create a
    cycle).  ``source`` is where the rule is written (kept in the provenance).
    """
    members = in_execution_order(graph, nodes)
    with ctx.working_on(members[-1]):
        return _fuse(graph, ctx, members, op_type, rule, attrs, operands, source, results)


def _fuse(graph: Graph, ctx: PassContext, members: list[Node], op_type: str, rule: str,
          attrs: dict | None, operands: Sequence[Value | None] | None,
          source: str, results: Sequence[Value] | None) -> Node | None:
    if creates_cycle(graph, members):
        return None
    graph.will_change()
    inputs, outputs = boundary(members)
    if results is not None:
        if {v.name for v in results} != {v.name for v in outputs}:
            raise ValueError(f"the fused node would return {[v.name for v in results]} but "
                             f"{[v.name for v in outputs]} are read outside")
        outputs = list(results)
    constants: list[Value] = []
    if operands is not None:
        inputs, constants = _split_operands(inputs, operands)
    body = extract_body(members, inputs, outputs, constants)
    body.opset_imports = dict(graph.opset_imports)
    order = max(n.order for n in members)
    provenance = ctx.provenance(rule, members, source)
    graph.remove_nodes(reversed(members))
    return graph.add_node(op_type, inputs, outputs, attrs=attrs, domain=FUSED_DOMAIN,
                          name=fused_name(op_type, members), provenance=provenance,
                          body=body, order=order)


def open_fused_node(graph: Graph, ctx: PassContext, node: Node,
                    rule: str = "open_fused_node") -> list[Node]:
    """Replace the fused ``node`` by its body's nodes (the reverse of ``fuse_nodes``); the
    copies keep the body nodes' ids and provenance."""
    body = node.body
    mapping: dict[str, Value] = {inner.name: outer for inner, outer
                                 in zip(body.inputs, node.inputs)}
    for name, constant in body.initializers.items():
        mapping[name] = graph.add_initializer(name, constant.stored)
    results = {inner.name: outer for inner, outer in zip(body.outputs, node.outputs)}
    start, step = node.order - 1.0, 1.0 / (len(body) + 1)
    graph.remove_node(node)
    opened = []
    for k, inner in enumerate(body.nodes):
        outputs = [None if v is None else results.get(v.name) or
                   graph.new_value(v.name, v.elem_type, v.shape) for v in inner.outputs]
        copy = graph.add_node(
            inner.op_type, [None if v is None else mapping[v.name] for v in inner.inputs],
            outputs, attrs=inner.attrs, domain=inner.domain, name=inner.name, body=inner.body,
            provenance=inner.provenance or ctx.provenance(rule, [inner]),
            order=start + (k + 1) * step,
            node_id=None if graph.node_by_id(inner.id) is not None else inner.id)
        copy.attr_types = inner.attr_types
        for old, new in zip(inner.outputs, outputs):
            if old is not None:
                mapping[old.name] = new
        opened.append(copy)
    return opened


def replace_by_op(graph: Graph, ctx: PassContext, nodes: Iterable[Node], op_type: str,
                  rule: str, inputs: Sequence[Value | None], attrs: dict | None = None,
                  name: str | None = None, source: str = "") -> Node:
    """Replace ``nodes`` by one standard ``op_type`` node computing their result from ``inputs``.

    The set must have exactly one result read outside it (a matched pattern's root output);
    the new node takes that Value over (name, readers, graph-output role) and the set's place
    in the order.  It is named ``name`` or after the set's scope, and its provenance names
    every replaced node.
    """
    members = in_execution_order(graph, nodes)
    with ctx.working_on(members[-1]):
        _, outputs = boundary(members)
        if len(outputs) != 1:
            raise ValueError(f"{len(outputs)} results of the replaced nodes are read elsewhere; "
                             f"one op can stand for one")
        order = max(n.order for n in members)
        provenance = ctx.provenance(rule, members, source)
        name = name or fused_name(op_type, members)
        graph.remove_nodes(reversed(members))
        return graph.add_node(op_type, inputs, outputs, attrs=attrs, name=name,
                              provenance=provenance, order=order)


def _split_operands(inputs: Sequence[Value], operands: Sequence[Value | None],
                    ) -> tuple[list[Value], list[Value]]:
    """The fused node's inputs (``operands`` without trailing Nones) and the constants that
    move into the body (every other external input, which must be constant)."""
    kept = list(operands)
    while kept and kept[-1] is None:
        kept.pop()
    if None in kept:
        raise ValueError("only trailing operands may be omitted")
    names = {v.name for v in kept if v is not None}
    constants = [v for v in inputs if v.name not in names]
    for value in constants:
        if not value.is_constant:
            raise ValueError(f"{value.name!r} is read by the fused nodes but is neither an "
                             f"operand nor a constant")
    return kept, constants


def in_execution_order(graph: Graph, nodes: Iterable[Node]) -> list[Node]:
    """``nodes`` as the graph runs them.  Not by ``order`` keys alone: those only break ties,
    and a rewrite may give a node and its reader the same key (horizontal fusion puts the
    fused MatMul and the Split of its result both at the first sibling's place).

    The set is sorted on its own (its edges, ties by order key as in ``graph.nodes``): sorting
    the whole graph for every fusion made fusing a model's N sites cost N whole-graph sorts.
    A set a path leaves and re-enters would fuse into a cycle and is refused after this.

    Most sets are already in order once sorted by key (a chain, the nodes of one layer): a
    scan checks that each reads only members before it, and that order is the sort's own
    (every node the smallest key of those left, so the smallest of those ready)."""
    members = {node.id: node for node in nodes}
    by_key = sorted(members.values(), key=order_key)
    if reads_only_earlier(by_key, members):
        return by_key
    readers: dict[int, list[Node]] = {i: [] for i in members}
    waiting: dict[int, int] = {}
    for node in members.values():
        producers = {v.producer.id for v in (*node.inputs, *node.implicit_inputs)
                     if v is not None and v.producer is not None and v.producer.id in members}
        waiting[node.id] = len(producers)
        for producer in producers:
            readers[producer].append(node)
    ready = [(n.order, n.id) for n in members.values() if waiting[n.id] == 0]
    heapq.heapify(ready)
    ordered = []
    while ready:
        node = members[heapq.heappop(ready)[1]]
        ordered.append(node)
        for reader in readers[node.id]:
            waiting[reader.id] -= 1
            if waiting[reader.id] == 0:
                heapq.heappush(ready, (reader.order, reader.id))
    return ordered


def fused_name(op_type: str, members: Sequence[Node]) -> str:
    """Name a fused node after the last node it replaces, keeping its scope for grouping."""
    last = members[-1].name
    scope = last.rsplit("/", 1)[0] + "/" if "/" in last else ""
    return f"{scope}{op_type}"


# A per-op rule of a sweep: True when it dealt with the node (the op's later rules are skipped).
NodeRule = Callable[[Graph, PassContext, Node, PassResult], "bool | None"]


def sweep_by_op(graph: Graph, ctx: PassContext, rules: Mapping[str, Sequence[NodeRule]],
                otherwise: Sequence[NodeRule] = ()) -> PassResult:
    """One sweep of a pass that rewrites node by node: each default-domain node, in execution
    order, goes to the rules of its op type (``otherwise`` when its op has none) in turn, until
    one says it dealt with it.  Nodes a rewrite earlier in the sweep removed are skipped
    (rewrites may delete nodes ahead)."""
    result = PassResult()
    for node in graph.nodes:
        if graph.has_node(node) and not node.domain:
            for rule in rules.get(node.op_type, otherwise):
                if rule(graph, ctx, node, result):
                    break
    return result


def bypass_or_decline(graph: Graph, node: Node, replacement: Value, rule: str,
                      result: PassResult) -> bool:
    """Remove a single-output node whose readers can read ``replacement`` instead.

    Nodes left without readers (the producers of the node's other inputs) go too.  Declined
    where the readers would then meet a known onnxruntime fault (``runtime_faults``).
    """
    output = node.outputs[0]
    fault = exposed_fault(node, replacement)
    if fault is not None:
        result.decline(node, rule, f"{fault}: {node.op_type} stays between them")
        return False
    producers = [v.producer for v in node.inputs if v is not None and v.producer is not None]
    if not bypass_node(graph, node, replacement):
        result.decline(node, rule, (
            f"{output.name!r} is a graph output and {replacement.name!r} is a graph "
            f"{_interface_role(replacement)}: removing {node.op_type} would rename the "
            f"model's output"))
        return False
    remove_dead(graph, producers)
    result.rewrites += 1
    return True


def _interface_role(value: Value) -> str:
    if value.is_graph_input:
        return "input"
    if value.is_initializer:
        return "initializer"
    return "output too"


def replace_node(graph: Graph, ctx: PassContext, rule: str, root: Node, op_type: str,
                 inputs: Sequence[Value | None], attrs: dict[str, Any] | None = None,
                 absorbed: Sequence[Node] = ()) -> Node:
    """Replace ``root`` by a new ``op_type`` node computing root's outputs from ``inputs``.

    The new node takes over root's output values (names, types, readers, graph outputs
    unchanged) and its place in the order; ``absorbed`` nodes (folded into the new one) are
    removed once nobody reads them.  Provenance names root and the absorbed nodes.
    """
    with ctx.working_on(root):
        provenance = ctx.provenance(rule, [*absorbed, root])
        outputs = list(root.outputs)
        name, order = root.name, root.order
        graph.remove_node(root)
        node = graph.add_node(op_type, inputs, outputs, attrs=attrs, name=name,
                              provenance=provenance, order=order)
        remove_dead(graph, absorbed)
        return node
