"""What each kind of edit checks and does to an ONNX graph, by node and value names.

Each function gets the model (a working copy), an index of it and the edit; it refuses with an
EditError before it changes anything, and returns what it touched: the nodes (for views to
mark) and the values whose type or shape may have changed (their stated types are dropped).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper

from ..errors import EditError
from .checking import light_copy
from .model_index import ModelIndex, fresh_name
from .records import Bypass, Delete, Insert, Rename, Rewire, SetAttribute, SetTensor, thawed
from .values import attribute_type, make_attribute, make_tensor, op_schema

CONSTANT_ATTRIBUTES = ("value", "value_float", "value_floats", "value_int", "value_ints",
                       "value_string", "value_strings", "sparse_value")


@dataclass
class Touched:
    """What an edit changed: node names (as they are after it) and values below it."""

    nodes: set[str] = field(default_factory=set)
    values: set[str] = field(default_factory=set)


def set_attribute(model: onnx.ModelProto, index: ModelIndex, edit: SetAttribute,
                  label: str) -> Touched:
    node = model.graph.node[index.node(edit.node, label)]
    if node.op_type == "Constant" and node.domain in ("", "ai.onnx") \
            and edit.name in CONSTANT_ATTRIBUTES:
        raise EditError(f"{label}: set a Constant's value with set_tensor on its output "
                        f"{node.output[0]!r}", where=node.name)
    schema = op_schema(node.op_type, node.domain, index.opset(node.domain))
    kind = attribute_type(node, edit.name, schema, label)
    position = next((i for i, a in enumerate(node.attribute) if a.name == edit.name), None)
    if edit.value is None:
        if position is None:
            raise EditError(f"{label}: {node.op_type} {node.name!r} has no attribute "
                            f"{edit.name!r} set, so there is nothing to remove")
        if schema is not None and schema.attributes[edit.name].required:
            raise EditError(f"{label}: attribute {edit.name!r} of {node.op_type} is required")
        del node.attribute[position]
    else:
        old = node.attribute[position] if position is not None else None
        made = make_attribute(edit.name, kind, edit.value, label, old)
        if position is None:
            node.attribute.append(made)
        else:
            node.attribute[position].CopyFrom(made)
    return Touched({node.name}, set(node.output))


def set_tensor(model: onnx.ModelProto, index: ModelIndex, edit: SetTensor,
               label: str) -> Touched:
    g = model.graph
    name = edit.name
    if name in index.initializers:
        old = g.initializer[index.initializers[name]]
        made = make_tensor(name, old.data_type, tuple(old.dims), edit.value, edit.shape,
                           f"{label}: tensor {name!r}")
        made.doc_string = old.doc_string
        old.CopyFrom(made)
        for vi in g.input:   # IR < 4 lists initializers among the inputs too
            if vi.name == name:
                vi.CopyFrom(onnx.helper.make_tensor_value_info(name, made.data_type,
                                                               list(made.dims)))
        readers = {model.graph.node[i].name for i, _ in index.readers.get(name, ())}
        return Touched(readers, {name})
    constant = _constant_node(model, index, name)
    if constant is None:
        if name in index.graph_inputs:
            why = "a graph input: its value comes from the caller"
        elif name in index.producer:
            producer = index.producer[name][0]
            why = f"computed at run time by {index.node_text(producer)}"
        else:
            index.value(name, label)   # raises: no such value
            why = "not a constant"
        raise EditError(f"{label}: {name!r} is {why}", where=name,
                        hint="set_tensor sets an initializer or a Constant node's value")
    current = _constant_tensor(constant, label)
    made = make_tensor(name, current.data_type, tuple(current.dims), edit.value, edit.shape,
                       f"{label}: tensor {name!r}")
    kept = [a for a in constant.attribute if a.name not in CONSTANT_ATTRIBUTES]
    del constant.attribute[:]
    constant.attribute.extend(kept)
    constant.attribute.append(onnx.helper.make_attribute("value", made))
    return Touched({constant.name}, {name})


def bypass(model: onnx.ModelProto, index: ModelIndex, edit: Bypass, label: str) -> Touched:
    g = model.graph
    position = index.node(edit.node, label)
    node = g.node[position]
    if not node.input or not node.input[0]:
        raise EditError(f"{label}: {node.op_type} {node.name!r} has no first input to pass "
                        f"on", where=node.name, hint="delete it instead")
    source, output = node.input[0], node.output[0]
    for extra in node.output[1:]:
        if extra and index.is_read(extra):
            raise EditError(f"{label}: its output {extra!r} is read too, and a bypass keeps "
                            f"only the first", where=node.name)
    index.refuse_body_reads(output, label, "bypassed")
    readers = [(g.node[i].name, slot) for i, slot in index.readers.get(output, ())]
    touched = Touched({name for name, _ in readers}, {output, source})
    if output in index.graph_outputs:
        # The graph keeps its output's name: what computes the source now writes it.
        if source in index.graph_inputs or source in index.initializers \
                or source in index.graph_outputs:
            raise EditError(f"{label}: its output {output!r} is a graph output and its input "
                            f"{source!r} is a graph input, constant or output itself, so "
                            f"nothing would compute {output!r}", where=node.name,
                            hint="delete the node, or insert what should compute it")
        index.refuse_body_reads(source, label, "renamed")
        _remove_node(model, position)
        rename_value(model, source, output)
        touched.values = {output}
        touched.nodes.add(g.node[_position_of(model, output)].name)
    else:
        for reader in g.node:
            for slot, name in enumerate(reader.input):
                if name == output:
                    reader.input[slot] = source
        _remove_node(model, position)
    prune(model, [name for name in node.input[1:] if name])
    return touched


def rewire(model: onnx.ModelProto, index: ModelIndex, edit: Rewire, label: str) -> Touched:
    node = model.graph.node[index.node(edit.node, label)]
    schema = op_schema(node.op_type, node.domain, index.opset(node.domain))
    most = len(node.input)
    if schema is not None and schema.max_input > most:
        most = min(schema.max_input, most + 8)
    if edit.input >= most:
        raise EditError(f"{label}: {node.op_type} {node.name!r} has inputs 0..{most - 1}, "
                        f"not {edit.input}", where=node.name)
    if edit.value:
        index.value(edit.value, label)
    elif not _optional_input(schema, edit.input, len(node.input)):
        raise EditError(f"{label}: input {edit.input} of {node.op_type} is not optional, so "
                        f"it cannot be left out", where=node.name)
    old = node.input[edit.input] if edit.input < len(node.input) else ""
    while len(node.input) <= edit.input:
        node.input.append("")
    node.input[edit.input] = edit.value
    while node.input and not node.input[-1]:
        node.input.pop()   # trailing optional inputs left out are dropped
    if old and old != edit.value:
        prune(model, [old])
    return Touched({node.name}, set(node.output))


def delete(model: onnx.ModelProto, index: ModelIndex, edit: Delete, label: str) -> Touched:
    g = model.graph
    position = index.node(edit.node, label)
    node = g.node[position]
    for name in node.output:
        if not name:
            continue
        readers = index.readers.get(name, [])
        if readers:
            raise EditError(f"{label}: its output {name!r} is read by "
                            f"{index.node_text(readers[0][0])}", where=node.name,
                            hint="bypass it instead, or delete what reads it first")
        index.refuse_body_reads(name, label, "removed")
    outputs = [o for o in g.output if o.name not in set(node.output)]
    if not outputs:
        raise EditError(f"{label}: it computes every output of the graph; the model would "
                        f"compute nothing", where=node.name)
    if len(outputs) != len(g.output):
        kept = [onnx.ValueInfoProto() for _ in outputs]
        for copy, output in zip(kept, outputs):
            copy.CopyFrom(output)
        del g.output[:]
        g.output.extend(kept)
    inputs = [name for name in node.input if name]
    _remove_node(model, position)
    prune(model, inputs)
    return Touched(set(), set())


def insert(model: onnx.ModelProto, index: ModelIndex, edit: Insert, label: str) -> Touched:
    g = model.graph
    on = index.value(edit.on, label)
    schema = op_schema(edit.op, edit.domain, index.opset(edit.domain))
    if schema is None:
        domain = edit.domain or "ai.onnx"
        raise EditError(f"{label}: no op {edit.op!r} in {domain} at the model's opset "
                        f"{index.opset(edit.domain)}", where=edit.op,
                        hint="name an ONNX op, such as Relu, Mul or Cast")
    readers = [(i, slot) for i, slot in index.readers.get(on, ())]
    if edit.consumers is not None:
        wanted = {index.node(name, label) for name in edit.consumers}
        for position in wanted:
            if not any(i == position for i, _ in readers):
                raise EditError(f"{label}: {index.node_text(position)} does not read {on!r}",
                                where=g.node[position].name)
        readers = [(i, slot) for i, slot in readers if i in wanted]
    if not readers:
        raise EditError(f"{label}: no node reads {on!r}, so nothing would read the new "
                        f"{edit.op}", where=on)
    taken = index.taken_names()
    names, constants = [on], []
    elem_type = _elem_type(model, index, on)
    for position, entry in enumerate(edit.inputs, start=1):
        if isinstance(entry, str):
            names.append(index.value(entry, label) if entry else "")
            continue
        name = fresh_name(f"{edit.name or edit.op}_input{position}", taken)
        taken.add(name)
        constants.append(make_tensor(name, elem_type, (), entry, _shape_of(entry),
                                     f"{label}: input {position}"))
        names.append(name)
    count = len(names)
    if not schema.min_input <= count <= schema.max_input:
        raise EditError(f"{label}: {edit.op} takes {schema.min_input}..{schema.max_input} "
                        f"inputs, not {count}", where=edit.op)
    node_name = edit.name or fresh_name(f"{edit.op}_{on}",
                                        set(index.nodes_by_name) | taken)
    if edit.name and edit.name in index.nodes_by_name:
        raise EditError(f"{label}: a node called {edit.name!r} exists already")
    output = fresh_name(f"{node_name}_out", taken)
    attributes = []
    for name, value in edit.attributes:
        if name not in schema.attributes:
            raise EditError(f"{label}: {edit.op} has no attribute {name!r}",
                            hint=f"its attributes: {', '.join(sorted(schema.attributes))}"
                            if schema.attributes else f"{edit.op} takes no attributes")
        kind = int(schema.attributes[name].type.value)
        attributes.append(make_attribute(name, kind, value, label))
    given = {a.name for a in attributes}
    missing = [n for n, a in schema.attributes.items() if a.required and n not in given]
    if missing:
        raise EditError(f"{label}: {edit.op} needs attribute {', '.join(missing)}")
    new = onnx.helper.make_node(edit.op, names, [output], name=node_name, domain=edit.domain)
    new.attribute.extend(attributes)
    first = min(i for i, _ in readers)
    for i, slot in readers:
        g.node[i].input[slot] = output
    g.node.insert(first, new)
    g.initializer.extend(constants)
    return Touched({node_name}, {output})


def rename(model: onnx.ModelProto, index: ModelIndex, edit: Rename, label: str) -> Touched:
    if edit.node is not None:
        node = model.graph.node[index.node(edit.node, label)]
        if edit.to in index.nodes_by_name:
            raise EditError(f"{label}: a node called {edit.to!r} exists already")
        node.name = edit.to
        return Touched({edit.to}, set())
    old = index.value(edit.value, label)
    if edit.to in index.taken_names():
        raise EditError(f"{label}: a value called {edit.to!r} exists already")
    index.refuse_body_reads(old, label, "renamed")
    rename_value(model, old, edit.to)
    readers = {model.graph.node[i].name for i, _ in index.readers.get(old, ())}
    producer = index.producer.get(old)
    if producer is not None:
        readers.add(model.graph.node[producer[0]].name)
    return Touched(readers, set())


APPLY = {SetAttribute: set_attribute, SetTensor: set_tensor, Bypass: bypass, Rewire: rewire,
         Delete: delete, Insert: insert, Rename: rename}


# ----------------------------------------------------------------------------------- helpers
def rename_value(model: onnx.ModelProto, old: str, new: str) -> None:
    """Every mention of value ``old`` in the main graph becomes ``new``."""
    g = model.graph
    for node in g.node:
        for fields in (node.input, node.output):
            for slot, name in enumerate(fields):
                if name == old:
                    fields[slot] = new
    for entries in (g.input, g.output, g.value_info, g.initializer):
        for entry in entries:
            if entry.name == old:
                entry.name = new


def prune(model: onnx.ModelProto, names: list[str]) -> None:
    """Remove what only fed a removed reader: constants and nodes nothing reads any more,
    going up from ``names``.  Graph inputs stay (they are the model's signature)."""
    stack = list(dict.fromkeys(names))
    while stack:
        name = stack.pop()
        index = ModelIndex(model)
        if index.is_read(name):
            continue
        if name in index.initializers:
            _remove_initializer(model, name)
        elif name in index.producer:
            position = index.producer[name][0]
            node = model.graph.node[position]
            if not any(index.is_read(o) for o in node.output if o):
                stack += [i for i in node.input if i]
                _remove_node(model, position)


def _remove_node(model: onnx.ModelProto, position: int) -> None:
    g = model.graph
    gone = set(g.node[position].output)
    del g.node[position]
    kept = [vi for vi in g.value_info if vi.name not in gone]
    if len(kept) != len(g.value_info):
        del g.value_info[:]
        g.value_info.extend(kept)


def _remove_initializer(model: onnx.ModelProto, name: str) -> None:
    g = model.graph
    for entries in (g.initializer, g.input, g.value_info):
        for position in reversed(range(len(entries))):
            if entries[position].name == name:
                del entries[position]


def _position_of(model: onnx.ModelProto, output: str) -> int:
    return next(i for i, n in enumerate(model.graph.node) if output in n.output)


def _constant_node(model: onnx.ModelProto, index: ModelIndex, name: str
                   ) -> onnx.NodeProto | None:
    producer = index.producer.get(name)
    if producer is None:
        return None
    node = model.graph.node[producer[0]]
    if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
        return node
    return None


def _constant_tensor(node: onnx.NodeProto, label: str) -> onnx.TensorProto:
    """A Constant node's value as a tensor, whichever attribute holds it."""
    for attr in node.attribute:
        if attr.name in CONSTANT_ATTRIBUTES and attr.name != "sparse_value":
            value = onnx.helper.get_attribute_value(attr)
            if isinstance(value, onnx.TensorProto):
                return value
            return numpy_helper.from_array(_constant_array(attr.name, value))
    raise EditError(f"{label}: Constant {node.name!r} holds a sparse tensor, which edits "
                    f"cannot set", where=node.name)


def _constant_array(attribute: str, value):
    if attribute in ("value_float", "value_floats"):
        return np.asarray(value, dtype=np.float32)
    if attribute in ("value_int", "value_ints"):
        return np.asarray(value, dtype=np.int64)
    return np.asarray([v.decode("utf-8") if isinstance(v, bytes) else v
                       for v in np.atleast_1d(value)], dtype=object).reshape(np.shape(value))


def _elem_type(model: onnx.ModelProto, index: ModelIndex, name: str) -> int:
    """The element type of value ``name`` as the file states it (float32 when it does not)."""
    g = model.graph
    if name in index.initializers:
        return g.initializer[index.initializers[name]].data_type
    for vi in [*g.input, *g.output, *g.value_info]:
        if vi.name == name and vi.type.HasField("tensor_type"):
            return vi.type.tensor_type.elem_type or onnx.TensorProto.FLOAT
    try:
        inferred = onnx.shape_inference.infer_shapes(light_copy(model))
        for vi in inferred.graph.value_info:
            if vi.name == name and vi.type.HasField("tensor_type"):
                return vi.type.tensor_type.elem_type or onnx.TensorProto.FLOAT
    except Exception:  # noqa: BLE001 - no type known: the common case below
        pass
    return onnx.TensorProto.FLOAT


def _shape_of(value) -> tuple[int, ...]:
    return tuple(np.shape(thawed(value)))


def _optional_input(schema, position: int, count: int) -> bool:
    if schema is None:
        return position >= count - 1
    inputs = schema.inputs
    if not inputs:
        return False
    formal = inputs[min(position, len(inputs) - 1)]
    return formal.option == onnx.defs.OpSchema.FormalParameterOption.Optional
