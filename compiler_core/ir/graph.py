"""The Graph: nodes in SSA form, with the mutation API passes use and an invariant checker.

Design notes (see docs/architecture.md):
- Node ids are stable across copies; a copy shares the read-only weight arrays and copies only
  structure, so a snapshot per pass is cheap even for a 440 MB model.
- Nodes are kept in a dict by id; the execution order is a topological sort computed on demand
  and cached.  Each node carries an ``order`` key that breaks ties, so a node made by a rewrite
  takes the place of the node it replaced and printed graphs read in a familiar order.
- Every mutation goes through methods that keep ``Value.uses`` consistent; ``check()`` verifies
  that they did (tests run it after every pass).
"""

from __future__ import annotations

import heapq
from operator import attrgetter
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np
import onnx

from ..errors import InvalidGraphError
from .lazy_tensors import LazyTensor, data_elem_type
from .node import Node, Provenance
from . import write_guard
from .spill import keep
from .value import Value

write_guard.watch_attribute_sets(Node, Value)


@dataclass
class ModelInfo:
    """Model-level fields carried through unchanged so an exported model says what it was."""

    ir_version: int = 0
    producer_name: str = ""
    producer_version: str = ""
    domain: str = ""
    model_version: int = 0
    doc_string: str = ""
    metadata_props: dict[str, str] = field(default_factory=dict)


class Graph:
    """A computation graph: values in SSA form, nodes with stable ids, opsets and functions."""

    def __init__(self, name: str = "graph"):
        self.name = name
        self.doc_string = ""
        self.values: dict[str, Value] = {}
        self.initializers: dict[str, Value] = {}
        self.opset_imports: dict[str, int] = {}
        # Model-local functions imported with the model, keyed by (domain, name, overload).
        self.functions: dict[tuple[str, str, str], onnx.FunctionProto] = {}
        self.model_info = ModelInfo()
        self.metadata: dict[str, str] = {}
        self.warnings: list[str] = []
        self.next_id = 0
        self._nodes: dict[int, Node] = {}
        self._inputs: list[Value] = []
        self._outputs: list[Value] = []
        self._name_counters: dict[str, int] = {}
        self._node_names: dict[str, Node] = {}
        self._order: list[Node] | None = None
        self._max_order = 0.0

    # ------------------------------------------------------------------ reading
    @property
    def nodes(self) -> list[Node]:
        """Nodes in execution (topological) order; computed once per mutation."""
        if self._order is None:
            self._order = self._toposort()
        return self._order

    def __len__(self) -> int:
        return len(self._nodes)

    def __repr__(self) -> str:
        inputs = ", ".join(v.name for v in self._inputs if not v.is_initializer)
        outputs = ", ".join(v.name for v in self._outputs)
        return f"<Graph {self.name!r}: {len(self)} nodes, ({inputs}) -> ({outputs})>"

    @property
    def inputs(self) -> tuple[Value, ...]:
        return tuple(self._inputs)

    @property
    def outputs(self) -> tuple[Value, ...]:
        return tuple(self._outputs)

    def node_by_id(self, node_id: int) -> Node | None:
        return self._nodes.get(node_id)

    def node_by_name(self, name: str) -> Node | None:
        return self._node_names.get(name)

    def has_node(self, node: Node) -> bool:
        return self._nodes.get(node.id) is node

    def node_ids(self) -> set[int]:
        return set(self._nodes)

    def nodes_of_type(self, op_type: str, domain: str = "") -> list[Node]:
        return [n for n in self.nodes if n.op_type == op_type and n.domain == domain]

    def will_change(self) -> None:
        """Say a change is coming before building what it needs: a write guard copies the
        graph now, instead of watching every object the rewrite builds on the way (a fused
        body's thousands of nodes and values)."""
        if write_guard._armed:
            write_guard.touch_graph(self)

    # ------------------------------------------------------------------ names
    def unique_name(self, hint: str) -> str:
        """A value name not used in this graph, derived from ``hint``."""
        if hint not in self.values:
            return hint
        count = self._name_counters.get(hint, 0)
        while True:
            count += 1
            candidate = f"{hint}_{count}"
            if candidate not in self.values:
                self._name_counters[hint] = count
                return candidate

    def _unique_node_name(self, hint: str) -> str:
        if hint not in self._node_names:
            return hint
        count = 1
        while f"{hint}_{count}" in self._node_names:
            count += 1
        return f"{hint}_{count}"

    def _register(self, value: Value) -> Value:
        if write_guard._armed:
            write_guard.touch_graph(self)
        existing = self.values.get(value.name)
        if existing is not None and existing is not value:
            raise InvalidGraphError(f"two values are named {value.name!r}", where=value.name)
        self.values[value.name] = value
        return value

    def new_value(self, hint: str, elem_type: int | None = None,
                  shape: Sequence | None = None) -> Value:
        """Create and register a fresh value (no producer yet)."""
        return self._register(Value(self.unique_name(hint), elem_type,
                                    tuple(shape) if shape is not None else None))

    def rename_value(self, value: Value, new_name: str) -> None:
        """Rename a value everywhere, including inside If/Loop/Scan bodies that read it."""
        if write_guard._armed:
            write_guard.touch_graph(self)
        if new_name == value.name:
            return
        if new_name in self.values:
            raise InvalidGraphError(f"cannot rename {value.name!r}: {new_name!r} is taken",
                                    where=value.name)
        from .subgraphs import rename_free_variable  # local: subgraphs imports onnx helpers

        write_guard.note_renamed(value)
        old_name = value.name
        del self.values[old_name]
        if old_name in self.initializers:
            self.initializers[new_name] = self.initializers.pop(old_name)
        value.name = new_name
        self.values[new_name] = value
        for node, index in value.uses:
            if index < 0:
                _rename_in_subgraphs(node, old_name, new_name, rename_free_variable)

    # ------------------------------------------------------------------ inputs, outputs, constants
    def add_input(self, value: Value) -> Value:
        if write_guard._armed:
            write_guard.touch_graph(self)
        self._register(value)
        value.is_graph_input = True
        self._inputs.append(value)
        return value

    def set_outputs(self, values: Iterable[Value]) -> None:
        if write_guard._armed:
            write_guard.touch_graph(self)
        for value in self._outputs:
            value.is_graph_output = False
        self._outputs = list(values)
        for value in self._outputs:
            value.is_graph_output = True

    def add_initializer(self, hint: str, array: "np.ndarray | LazyTensor") -> Value:
        """Register a constant, kept read-only so copies can share it safely (a large one a
        pass made goes to a scratch file: ``spill.keep``)."""
        if write_guard._armed:
            write_guard.touch_graph(self)
        name = self.unique_name(hint)
        data = keep(array, name)
        value = Value(name, data_elem_type(data), data.shape, const=data)
        self._register(value)
        self.initializers[value.name] = value
        return value

    def remove_initializer(self, value: Value) -> None:
        if write_guard._armed:
            write_guard.touch_graph(self)
        if value.uses or value.is_graph_output:
            raise InvalidGraphError(f"initializer {value.name!r} is still used", where=value.name)
        self.initializers.pop(value.name, None)
        self.values.pop(value.name, None)

    # ------------------------------------------------------------------ nodes
    def add_node(self, op_type: str, inputs: Sequence[Value | None], outputs: int | Sequence = 1,
                 *, attrs: dict[str, Any] | None = None, domain: str = "", name: str | None = None,
                 provenance: Provenance | None = None, body: "Graph | None" = None,
                 order: float | None = None, node_id: int | None = None) -> Node:
        """Create a node and wire it in.

        ``outputs`` is a count (fresh values are made) or a list of existing producer-less Values,
        names, or None for omitted optional outputs.  ``order`` places the node among its peers
        in the printed order (default: after everything).
        """
        if write_guard._armed:
            write_guard.touch_graph(self)
        if node_id is None:
            node_id = self.next_id
        if node_id in self._nodes:
            raise InvalidGraphError(f"node id {node_id} is already used", where=str(node_id))
        if node_id >= self.next_id:
            self.next_id = node_id + 1
        node = Node(node_id, op_type, domain, self._unique_node_name(name or f"{op_type}_{node_id}"))
        if attrs:
            node.attrs = {k: _freeze(v) for k, v in attrs.items()}
        node.provenance = provenance
        node.body = body
        if order is None:
            order = self._max_order + 1.0
        node.order = order
        if order > self._max_order:
            self._max_order = order
        node.attach_inputs(inputs)
        if isinstance(outputs, int):
            specs: Sequence = [f"{node.name}_out{i}" if outputs > 1 else f"{node.name}_out"
                               for i in range(outputs)]
        else:
            specs = outputs
        for index, spec in enumerate(specs):
            node.outputs.append(self._attach_output(node, index, spec))
        self._nodes[node.id] = node
        self._node_names[node.name] = node
        self._order = None
        return node

    def add_copies(self, nodes: Iterable[Node], reads: dict[str, Value]) -> None:
        """Copies of another graph's ``nodes`` (in execution order), each what ``add_node``
        makes of it given its op, attributes, name, body, order key and id: no provenance,
        fresh output values of the same names and types.  A copy reads ``reads``' values by
        name; its outputs join ``reads`` for the copies after it.

        Built field by field, as ``copy`` builds nodes: a fused body's thousands of copies are
        in no graph a write guard watches, and their ids are the source graph's, unique
        already, so ``add_node``'s checks could only say yes."""
        by_id, names, new_node = self._nodes, self._node_names, Node.__new__
        for old in nodes:
            node = new_node(Node)
            node.id, node.op_type, node.domain, node.overload = old.id, old.op_type, \
                old.domain, ""
            node.name = self._unique_node_name(old.name or f"{old.op_type}_{old.id}")
            node.attrs = {k: _freeze(v) for k, v in old.attrs.items()} if old.attrs else {}
            node.attr_types, node.body, node.order = old.attr_types, old.body, old.order
            node.provenance, node.metadata, node.doc_string = None, {}, ""
            node.implicit_inputs = []
            inputs = node._inputs = tuple([reads[v.name] if v is not None else None
                                           for v in old._inputs])
            for index, value in enumerate(inputs):
                if value is not None:
                    value.uses.append((node, index))
            node.outputs = [self._copy_output(node, index, v, reads) if v is not None else None
                            for index, v in enumerate(old.outputs)]
            by_id[node.id] = names[node.name] = node
            self.next_id = max(self.next_id, node.id + 1)
            self._max_order = max(self._max_order, node.order)
        self._order = None

    def _copy_output(self, node: Node, index: int, old: Value, reads: dict[str, Value]) -> Value:
        """Output ``index`` of ``node``, a copy's: a fresh value named and typed as ``old``."""
        value = reads[old.name] = self.values[old.name] = Value(old.name, old.elem_type,
                                                                 old.shape)
        value.producer, value.output_index = node, index
        return value

    def _attach_output(self, node: Node, index: int, spec: Value | str | None) -> Value | None:
        if spec is None:
            return None
        value = self.new_value(spec) if isinstance(spec, str) else spec
        if value.producer is not None:
            raise InvalidGraphError(f"value {value.name!r} already has a producer "
                                    f"({value.producer.name})", where=value.name)
        if isinstance(spec, Value):
            self._register(value)
        value.producer = node
        value.output_index = index
        return value

    def remove_node(self, node: Node) -> None:
        """Take a node out.  Its outputs keep their uses (to be re-produced) or are forgotten."""
        self.remove_nodes((node,))

    def remove_nodes(self, nodes: Iterable[Node]) -> None:
        """Take nodes out, one after the other, as ``remove_node`` takes one (a set that
        becomes one fused node: its readers first, so a value's uses are gone when its
        producer leaves)."""
        if write_guard._armed:
            write_guard.touch_graph(self)
        by_id, names, values, changed = self._nodes, self._node_names, self.values, \
            write_guard.changed_nodes
        for node in nodes:
            if by_id.get(node.id) is not node:
                raise InvalidGraphError(f"{node.name!r} is not in this graph", where=node.name)
            if changed is not None:
                changed.add(node.id)
            node.detach_inputs()
            for value in node.outputs:
                if value is None:
                    continue
                value.producer = None
                value.output_index = -1
                if not value.uses and not value.is_graph_output:
                    values.pop(value.name, None)
            del by_id[node.id]
            if names.get(node.name) is node:
                del names[node.name]
        self._order = None

    def can_replace_uses(self, old: Value, new: Value) -> bool:
        """True if every use of ``old`` can read ``new`` without changing the graph's interface."""
        if not old.is_graph_output:
            return True
        return not (new.is_graph_input or new.is_initializer or new.is_graph_output)

    def replace_all_uses(self, old: Value, new: Value) -> None:
        """Make every reader of ``old`` read ``new``.

        If ``old`` is a graph output, ``new`` takes its place and its name, so the model's
        interface does not change (check ``can_replace_uses`` first).
        """
        if write_guard._armed:
            write_guard.touch_graph(self)
        if old is new:
            return
        if old.is_graph_output and not self.can_replace_uses(old, new):
            raise InvalidGraphError(
                f"cannot replace graph output {old.name!r} by {new.name!r}: that would rename "
                f"the model's output", where=old.name)
        for node, index in list(old.uses):
            node.replace_input(index, new)
            if index < 0:
                from .subgraphs import rename_free_variable

                _rename_in_subgraphs(node, old.name, new.name, rename_free_variable)
        if old.is_graph_output:
            self._outputs = [new if v is old else v for v in self._outputs]
            old.is_graph_output = False
            new.is_graph_output = True
            output_name = old.name
            if old.producer is None and old.name not in self.initializers:
                self.values.pop(old.name, None)
            else:
                self.rename_value(old, self.unique_name(old.name + "_replaced"))
            self.rename_value(new, output_name)
        self._order = None

    def set_node_attr(self, node: Node, name: str, value: Any) -> None:
        if write_guard._armed:
            write_guard.touch_graph(self)
        if write_guard.changed_nodes is not None:
            write_guard.changed_nodes.add(node.id)
        node.attrs[name] = _freeze(value)

    def remove_node_attr(self, node: Node, name: str) -> None:
        if write_guard._armed:
            write_guard.touch_graph(self)
        if write_guard.changed_nodes is not None:
            write_guard.changed_nodes.add(node.id)
        node.attrs.pop(name, None)

    # ------------------------------------------------------------------ order
    def _toposort(self) -> list[Node]:
        by_key = sorted(self._nodes.values(), key=order_key)
        if reads_only_earlier(by_key, self._nodes):
            return by_key
        indegree: dict[int, int] = {}
        consumers: dict[int, list[Node]] = {}
        heap: list[tuple[float, int]] = []
        for node in self._nodes.values():
            producers = {v.producer.id for v in _all_inputs(node)
                         if v.producer is not None and v.producer.id in self._nodes}
            indegree[node.id] = len(producers)
            for pid in producers:
                consumers.setdefault(pid, []).append(node)
            if not producers:
                heap.append((node.order, node.id))
        heapq.heapify(heap)
        ordered: list[Node] = []
        while heap:
            _, node_id = heapq.heappop(heap)
            node = self._nodes[node_id]
            ordered.append(node)
            for consumer in consumers.get(node_id, ()):
                indegree[consumer.id] -= 1
                if indegree[consumer.id] == 0:
                    heapq.heappush(heap, (consumer.order, consumer.id))
        if len(ordered) != len(self._nodes):
            stuck = next(n for n in self._nodes.values() if indegree[n.id] > 0)
            raise InvalidGraphError(f"the graph has a cycle through node {stuck.name!r} "
                                    f"({stuck.op_type})", where=stuck.name,
                                    hint="an ONNX graph must be acyclic")
        return ordered

    # ------------------------------------------------------------------ copy and pickle
    def copy(self) -> "Graph":
        """Structural copy: new Graph/Node/Value objects, same ids, shared weight arrays.

        The same graph as ``__setstate__(__getstate__())`` builds (values, nodes and each
        value's uses in the same order), made object to object: no records in between."""
        g = Graph.__new__(Graph)
        Graph.__init__(g)
        g._copy_fields_from(self)
        # Every field set once, the wiring inline: the new nodes and values are in no graph a
        # write guard watches, so ``attach_inputs``'s checks could only say no.
        twin: dict[int, Value] = {}
        values, new_value = g.values, Value.__new__
        for name, old in self.values.items():
            value = new_value(Value)
            shape = old.shape
            value.name, value.elem_type, value.type_proto = name, old.elem_type, old.type_proto
            value.shape = tuple(shape) if shape is not None else None   # as Value() made it
            value.stored, value.producer, value.output_index, value.uses = old.stored, None, -1, []
            value.is_graph_input = value.is_graph_output = False
            value.doc_string = old.doc_string
            values[name] = twin[id(old)] = value
        g.initializers = {name: values[name] for name in self.initializers}
        for old in self._inputs:
            value = twin[id(old)]
            value.is_graph_input = True
            g._inputs.append(value)
        nodes, node_names, new_node = g._nodes, g._node_names, Node.__new__
        for old in self._nodes.values():
            node = new_node(Node)
            node.id, node.op_type, node.domain, node.name = old.id, old.op_type, old.domain, \
                old.name
            node.overload, node.attrs, node.attr_types = old.overload, dict(old.attrs), \
                old.attr_types
            node.body, node.provenance, node.metadata = old.body, old.provenance, old.metadata
            node.doc_string, node.order = old.doc_string, old.order
            inputs = node._inputs = tuple([twin[id(v)] if v is not None else None
                                           for v in old._inputs])
            for index, value in enumerate(inputs):
                if value is not None:
                    value.uses.append((node, index))
            outputs = node.outputs = [twin[id(v)] if v is not None else None
                                      for v in old.outputs]
            for index, value in enumerate(outputs):
                if value is not None:
                    value.producer, value.output_index = node, index
            node.implicit_inputs = []
            if old.implicit_inputs:   # a node with a subgraph: rare, wired as pickling does
                node.implicit_inputs = [twin[id(v)] for v in old.implicit_inputs]
                _wire_implicit(node)
            nodes[node.id] = node
            node_names[node.name] = node
        g.set_outputs(twin[id(v)] for v in self._outputs)
        if self._order is not None:   # the same order: no need to sort again
            g._order = [g._nodes[n.id] for n in self._order]
        return g

    def _copy_fields_from(self, other: "Graph") -> None:
        """The graph-wide fields of ``other`` (containers copied, functions shared)."""
        for key in _SCALARS:
            setattr(self, key, getattr(other, key))
        self.opset_imports = dict(other.opset_imports)
        self.functions = dict(other.functions)
        self.model_info = ModelInfo(**{**other.model_info.__dict__, "metadata_props": dict(
            other.model_info.metadata_props)})
        self.metadata = dict(other.metadata)
        self.warnings = list(other.warnings)
        self._name_counters = dict(other._name_counters)

    def renumbered(self, new_id: dict[int, int]) -> "Graph":
        """A structural copy whose node ids are mapped through ``new_id`` (every id, one to one),
        e.g. to give a second model's nodes the ids of the first model's nodes they match.
        Provenance keeps only the source ids the map covers: the others name nodes of another
        numbering."""
        state = self.__getstate__()
        nodes = []
        for record in state["nodes"]:
            provenance = record[11]
            if provenance is not None:
                provenance = Provenance(provenance.pass_name, provenance.rule, tuple(
                    new_id[s] for s in provenance.sources if s in new_id), provenance.source,
                    tuple(new_id[s] for s in provenance.replaced if s in new_id))
            nodes.append((new_id[record[0]],) + record[1:11] + (provenance,) + record[12:])
        state["nodes"] = nodes
        state["scalars"] = {**state["scalars"],
                            "next_id": max(new_id.values(), default=-1) + 1}
        graph = Graph.__new__(Graph)
        graph.__setstate__(state)
        return graph

    def __getstate__(self) -> dict:
        """The graph as flat records that name values instead of pointing at them.

        Pickling the object web directly recurses once per edge on a deep graph; flat records
        pickle in constant stack depth, so a workspace can travel between server processes.
        Weight arrays, attribute values and fused bodies are referenced, not copied.
        """
        values = [(v.name, v.elem_type, v.shape, v.stored, v.type_proto, v.doc_string)
                  for v in self.values.values()]
        nodes = [(n.id, n.op_type, n.domain, n.overload, n.name, dict(n.attrs), n.attr_types,
                  [v.name if v is not None else None for v in n.inputs],
                  [v.name for v in n.implicit_inputs],
                  [v.name if v is not None else None for v in n.outputs],
                  n.body, n.provenance, n.metadata, n.doc_string, n.order)
                 for n in self._nodes.values()]
        scalars = {key: getattr(self, key) for key in _SCALARS}
        return {"scalars": scalars, "opset_imports": dict(self.opset_imports),
                "functions": dict(self.functions), "model_info": ModelInfo(**{
                    **self.model_info.__dict__,
                    "metadata_props": dict(self.model_info.metadata_props)}),
                "metadata": dict(self.metadata), "warnings": list(self.warnings),
                "name_counters": dict(self._name_counters), "values": values, "nodes": nodes,
                "inputs": [v.name for v in self._inputs],
                "outputs": [v.name for v in self._outputs],
                "initializers": list(self.initializers)}

    def structure_key(self) -> tuple:
        """Everything a pass may change, comparable with ``==`` (weights, attribute values and
        bodies by identity: they are replaced, never changed in place).  The PassManager's
        check mode compares it around passes that went unseen by the write guard."""
        state = self.__getstate__()
        values = tuple((name, elem_type, shape, id(stored), id(type_proto), doc)
                       for name, elem_type, shape, stored, type_proto, doc in state["values"])
        nodes = tuple(record[:5] + (tuple((k, id(v)) for k, v in record[5].items()),
                                    tuple(record[6].items()), tuple(record[7]),
                                    tuple(record[8]), tuple(record[9]), id(record[10]),
                                    record[11], tuple(record[12].items())) + record[13:]
                      for record in state["nodes"])
        return (tuple(state["scalars"].items()), tuple(state["opset_imports"].items()),
                tuple((k, id(f)) for k, f in state["functions"].items()),
                state["model_info"], tuple(state["metadata"].items()), tuple(state["warnings"]),
                values, nodes,
                tuple(state["inputs"]), tuple(state["outputs"]), tuple(state["initializers"]))

    def __setstate__(self, state: dict) -> None:
        Graph.__init__(self)
        for key, value in state["scalars"].items():
            setattr(self, key, value)
        self.opset_imports = state["opset_imports"]
        self.functions = state["functions"]
        self.model_info = state["model_info"]
        self.metadata = state["metadata"]
        self.warnings = state["warnings"]
        self._name_counters = state["name_counters"]
        values = self.values
        for name, elem_type, shape, const, type_proto, doc in state["values"]:
            value = Value(name, elem_type, shape, const, type_proto)
            value.doc_string = doc
            values[name] = value
        self.initializers = {name: values[name] for name in state["initializers"]}
        for name in state["inputs"]:
            values[name].is_graph_input = True
            self._inputs.append(values[name])
        for (node_id, op_type, domain, overload, name, attrs, attr_types, inputs, implicit,
             outputs, body, provenance, metadata, doc, order) in state["nodes"]:
            node = Node(node_id, op_type, domain, name)
            node.overload, node.attrs, node.attr_types = overload, attrs, attr_types
            node.body, node.provenance, node.metadata = body, provenance, metadata
            node.doc_string, node.order = doc, order
            node.attach_inputs([values[n] if n is not None else None for n in inputs])
            node.implicit_inputs = [values[n] for n in implicit]
            node.outputs = [values[n] if n is not None else None for n in outputs]
            _wire_outputs_and_implicit(node)
            self._nodes[node_id] = node
            self._node_names[name] = node
        self.set_outputs(values[name] for name in state["outputs"])

    # ------------------------------------------------------------------ invariants
    def check(self) -> None:
        """Raise InvalidGraphError on the first broken invariant (tests run this after passes)."""
        for name, value in self.values.items():
            if value.name != name:
                raise InvalidGraphError(f"value registered as {name!r} is named {value.name!r}",
                                        where=name)
            for node, index in value.uses:
                if self._nodes.get(node.id) is not node:
                    raise InvalidGraphError(f"value {name!r} lists a use by {node.name!r}, which "
                                            f"is not in the graph", where=name)
                held = node.inputs[index] if index >= 0 else node.implicit_inputs[-1 - index]
                if held is not value:
                    raise InvalidGraphError(f"value {name!r} lists a stale use by {node.name!r}",
                                            where=node.name)
            if value.producer is None and value.uses and not (
                    value.is_graph_input or value.is_initializer):
                user = value.uses[0][0]
                raise InvalidGraphError(f"node {user.name!r} reads {name!r}, which nothing "
                                        f"produces", where=user.name)
        for node in self._nodes.values():
            for index, value in enumerate(node.inputs):
                if value is not None and (self.values.get(value.name) is not value
                                          or (node, index) not in value.uses):
                    raise InvalidGraphError(f"input {index} of {node.name!r} ({value.name!r}) is "
                                            f"not wired into the graph", where=node.name)
            for index, value in enumerate(node.outputs):
                if value is None:
                    continue
                if value.producer is not node or value.output_index != index:
                    raise InvalidGraphError(f"output {value.name!r} of {node.name!r} names "
                                            f"another producer", where=node.name)
                if self.values.get(value.name) is not value:
                    raise InvalidGraphError(f"output {value.name!r} of {node.name!r} is not "
                                            f"registered", where=node.name)
        for value in self._outputs:
            if value.producer is None and not (value.is_graph_input or value.is_initializer):
                raise InvalidGraphError(f"graph output {value.name!r} is produced by no node",
                                        where=value.name)
        self._order = None
        self._toposort()


_SCALARS = ("name", "doc_string", "next_id", "_max_order")   # copied as they are


def _wire_outputs_and_implicit(node: Node) -> None:
    """A node just rebuilt from another: it is its outputs' producer and a reader of the
    outer values its subgraphs read."""
    _wire_implicit(node)
    for index, value in enumerate(node.outputs):
        if value is not None:
            value.producer = node
            value.output_index = index


def _wire_implicit(node: Node) -> None:
    """A node just rebuilt from another reads the outer values its subgraphs read."""
    for k, value in enumerate(node.implicit_inputs):
        value.uses.append((node, -1 - k))


def _all_inputs(node: Node) -> Iterable[Value]:
    for value in node.inputs:
        if value is not None:
            yield value
    yield from node.implicit_inputs


# A node's place among the nodes ready to run: its order key, ties broken by id.
order_key = attrgetter("order", "id")


def reads_only_earlier(ordered: Sequence[Node], members: dict[int, Node]) -> bool:
    """Every node of ``ordered`` reads only members that come before it.

    Then ``ordered`` sorted by ``order_key`` is the topological sort's own order: each node
    is the smallest key of those left, so the smallest of those ready.  Most graphs pass (one
    read from a file, a fused body, a graph whose rewrites put each new node at the place of
    those it replaced), so one sort and one scan stand in for the heap."""
    seen: set[int] = set()
    for node in ordered:
        for value in (*node.inputs, *node.implicit_inputs):
            producer = value.producer if value is not None else None
            if producer is not None and producer.id not in seen and producer.id in members:
                return False
        seen.add(node.id)
    return True


def _rename_in_subgraphs(node: Node, old: str, new: str, rename) -> None:
    for key, attr in list(node.attrs.items()):
        if isinstance(attr, onnx.GraphProto):
            node.attrs[key] = rename(attr, old, new)
        elif isinstance(attr, tuple) and attr and isinstance(attr[0], onnx.GraphProto):
            node.attrs[key] = tuple(rename(g, old, new) for g in attr)


def _freeze(value: Any) -> Any:
    """Attribute values are immutable so structural copies can share them."""
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, np.ndarray) and value.flags.writeable:
        value = value.copy()
        value.flags.writeable = False
    return value
