"""ONNX model (path, bytes or ModelProto) -> GraphLab IR, with validation that explains itself.

Malformed models are refused with one clear ModelLoadError naming the problem and the offending
node or value (never a traceback).  Ops GraphLab does not know load as opaque nodes with a
warning: passes treat them as barriers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import numpy_helper

from ..errors import InvalidGraphError, ModelLoadError
from . import attributes, contrib_shapes
from .collection import collection_paused
from .external_data import external_tensor, iter_tensors, load_external_data
from .graph import Graph
from .lazy_tensors import InMemory, LazyTensor, MappedFile, StoredTensor
from .model_limits import PROTOBUF_LIMIT, format_size
from .proto_types import (FUSED_DOMAIN, LIGHT_WEIGHT_BYTES, tensor_value_info,
                          value_from_type)
from .quantization_params import broken_scales
from .schema_checks import check_schemas, opset_versions
from .shape_inference import infer_shapes as run_inference
from .subgraphs import free_variables, subgraph_attributes
from .tensors import check_tensor, memory_limit_bytes, sparse_to_dense, to_readonly_array
from .value import Value
from .wire import InlineWeights, Span, WireError, split_inline_weights


@collection_paused
def load_model(source: str | os.PathLike | bytes, *, infer_shapes: bool = True) -> Graph:
    """Import an ONNX model from a file path or from its bytes.

    The file is mapped, not read: its structure is parsed and every weight of at least
    LIGHT_WEIGHT_BYTES stays where it is (inline or in its external data file) until a
    computation asks for its values (``lazy_tensors``)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        buffer, base_dir, label = InMemory(bytes(source)), None, "the uploaded data"
    else:
        path = Path(source)
        label = str(path)
        if not path.exists():
            raise ModelLoadError(f"no such file: {label}", where=label,
                                 hint="give a path to an .onnx file or the name of a sample")
        if not path.is_file():
            raise ModelLoadError(f"{label} is not a file", where=label)
        buffer, base_dir = MappedFile.open(str(path)), str(path.parent)
    model, inline = read_structure(buffer, label)
    graph = _import(model, base_dir, infer_shapes, owned=True,
                    placed=[(buffer, span) if span else None for span in inline.initializers],
                    constants=[(buffer, span) if span else None for span in inline.constants])
    if buffer.size > PROTOBUF_LIMIT:
        graph.warnings.append(
            f"{label} is {format_size(buffer.size)} in one file, over protobuf's 2 GiB limit: "
            f"GraphLab reads it, but onnxruntime and onnx cannot; write it with its weights "
            f"in an external data file (graphlab compile MODEL -p clean -o OUT.onnx does)")
    return graph


def read_structure(buffer: MappedFile | InMemory, label: str
                   ) -> tuple[onnx.ModelProto, InlineWeights]:
    """The parsed model without the raw_data of its large initializers and Constant nodes, and
    where each one's data lies in ``buffer`` (``wire``: they are neither parsed nor copied)."""
    data = buffer.buffer(0, buffer.size)
    try:
        structure, inline = split_inline_weights(data, LIGHT_WEIGHT_BYTES)
    except WireError:
        parse_model_bytes(data, label)  # says why the bytes are not a model
        raise ModelLoadError(f"{label} could not be read as an ONNX model", where=label,
                             hint="re-export or re-download the model") from None
    return parse_model_bytes(structure, label, size=buffer.size), inline


def parse_model_bytes(data: bytes | memoryview, label: str,
                      size: int | None = None) -> onnx.ModelProto:
    """Parse bytes as a ModelProto, telling "not ONNX at all" from "damaged ONNX".  ``size``
    is the whole file's when ``data`` is its structure alone."""
    if not len(data):
        raise ModelLoadError(f"{label} is empty, not an ONNX model", where=label)
    size = len(data) if size is None else size
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as err:
        if size > PROTOBUF_LIMIT:
            raise ModelLoadError(
                f"{label} is {format_size(size)}, over protobuf's 2 GiB limit for one "
                f"message, so no ONNX reader can parse it: it was most likely written without "
                f"external data (protobuf says: {err})", where=label,
                hint="re-export it with its weights in an external data file, e.g. "
                     "onnx.save(model, path, save_as_external_data=True)") from None
        if _looks_like_onnx(data):
            raise ModelLoadError(f"{label} is a truncated or corrupt ONNX file (protobuf "
                                 f"decoding failed: {err})", where=label,
                                 hint="re-export or re-download the model") from None
        raise ModelLoadError(f"{label} is not an ONNX file (it does not decode as an ONNX "
                             f"protobuf)", where=label,
                             hint="GraphLab reads .onnx model files") from None
    if not model.HasField("graph") or (model.ir_version == 0 and not model.opset_import):
        raise ModelLoadError(f"{label} is not an ONNX model (no graph or version found)",
                             where=label, hint="GraphLab reads .onnx model files")
    return model


def _looks_like_onnx(data: bytes | memoryview) -> bool:
    # A ModelProto starts with field 1 (ir_version, varint: 0x08) or field 8 (opset_import: 0x42)
    # or field 7 (graph: 0x3a); random text or images start otherwise.
    return bytes(data[:1]) in (b"\x08", b"\x3a", b"\x42", b"\x12", b"\x1a")


def from_proto(model: onnx.ModelProto, *, base_dir: str | None = None,
               infer_shapes: bool = True, owned: bool = False) -> Graph:
    """Build the IR from a parsed ModelProto (weights inline in it, or in external data files
    in ``base_dir``).

    With ``owned`` (the proto is ours to change) shape inference runs on the parsed proto
    itself, stripped of its big weights, instead of on a fresh export.
    """
    return _import(model, base_dir, infer_shapes, owned, placed=[], constants=[])


def _import(model: onnx.ModelProto, base_dir: str | None, infer_shapes: bool, owned: bool,
            placed: list[tuple[MappedFile | InMemory, Span] | None],
            constants: list[tuple[MappedFile | InMemory, Span] | None]) -> Graph:
    """``placed[i]``: (buffer, span) of initializer i's raw_data when the wire scan kept it
    out of the proto, else None; ``constants[i]`` the same for graph node i's Constant value.
    Every weight then lies in a buffer: the mapped file, the uploaded bytes, a data file, or
    the bytes protobuf returns for a raw_data field."""
    limit = memory_limit_bytes()
    g = model.graph
    weights = []
    for index, tensor in enumerate(g.initializer):
        what = f"initializer {tensor.name!r}"
        where = placed[index] if index < len(placed) else None
        if where is None and tensor.HasField("raw_data"):
            raw = tensor.raw_data   # one copy out of the proto, viewed from here on
            where = InMemory(raw), Span(0, len(raw))
        check_tensor(tensor, what, limit, raw_bytes=where[1].length if where else None)
        weights.append(_weight(tensor, what, base_dir, where))
    stored = _stored_constants(g, constants, limit)
    nested = list(iter_tensors(g, initializers=False, skip_nodes=stored))  # protos: read now
    for tensor, what in nested:
        check_tensor(tensor, what, limit)
    if any(t.data_location == onnx.TensorProto.EXTERNAL for t, _ in nested):
        if not owned:
            copy = onnx.ModelProto()
            copy.CopyFrom(model)
            model, owned = copy, True
        load_external_data(iter_tensors(model.graph, initializers=False, skip_nodes=stored),
                           base_dir)
    nodes = _read_nodes(model.graph)
    _check_structure(model.graph, nodes)
    opsets = opset_versions(model)
    schema_warnings = check_schemas(model, opsets)
    graph = _build(model, nodes, opsets, weights, stored)
    graph.warnings.extend(schema_warnings)
    graph.nodes  # noqa: B018 - orders the nodes, raising InvalidGraphError on a cycle
    if infer_shapes:
        run_inference(graph, first_model=_light_model(model, opsets, weights, stored) if owned
                      else None)
    return graph


def _weight(tensor: onnx.TensorProto, what: str, base_dir: str | None, placed
            ) -> "np.ndarray | StoredTensor":
    """An initializer's data: stored where it lies when it is large (LIGHT_WEIGHT_BYTES and
    up), read now when it is small (shape constants, scalars: read all the time)."""
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        stored = external_tensor(tensor, what, base_dir)
    elif placed is not None:
        buffer, span = placed
        stored = StoredTensor(tensor.name, tensor.data_type, tuple(tensor.dims), buffer,
                              span.offset, span.length)
    else:
        return to_readonly_array(tensor)
    return stored if stored.nbytes >= LIGHT_WEIGHT_BYTES else stored.numpy(noted=False)


def _stored_constants(g: onnx.GraphProto, constants: list, limit: int
                      ) -> dict[int, StoredTensor]:
    """Node index -> its Constant value kept in the buffer (the wire scan left its raw_data
    out of the proto), checked like an initializer."""
    stored = {}
    for index, where in enumerate(constants):
        if where is None:
            continue
        node = g.node[index]
        tensor = next(a.t for a in node.attribute if a.name == "value")
        what = f"the value of Constant node {node.name or node.output[0]!r}"
        buffer, span = where
        check_tensor(tensor, what, limit, raw_bytes=span.length)
        stored[index] = StoredTensor(node.output[0], tensor.data_type, tuple(tensor.dims),
                                     buffer, span.offset, span.length)
    return stored


def _light_model(model: onnx.ModelProto, opsets: dict[str, int], weights: list,
                 stored: dict[int, StoredTensor]) -> onnx.ModelProto:
    """The proto ready for shape inference: the opsets the IR uses (an assumed ai.onnx one
    included), large initializers and Constant values turned into typed inputs (inference
    needs only small constants, which were read at import)."""
    del model.opset_import[:]
    model.opset_import.extend(onnx.helper.make_opsetid(d, v) for d, v in opsets.items())
    g = model.graph
    if stored:
        g.input.extend(tensor_value_info(data.name, data.elem_type, tuple(data.shape))
                       for data in stored.values())
        for index in sorted(stored, reverse=True):
            del g.node[index]
    listed = {vi.name for vi in g.input}
    small = []
    for tensor, data in zip(g.initializer, weights):
        if not isinstance(data, LazyTensor):
            small.append((tensor, data))
        elif tensor.name not in listed:
            g.input.append(tensor_value_info(tensor.name, tensor.data_type,
                                             tuple(tensor.dims)))
    if len(small) != len(g.initializer) or any(
            t.data_location == onnx.TensorProto.EXTERNAL for t, _ in small):
        kept = [_small_tensor(tensor, data) for tensor, data in small]
        del g.initializer[:]
        g.initializer.extend(kept)
    return model


def _small_tensor(tensor: onnx.TensorProto, data: np.ndarray) -> onnx.TensorProto:
    """A small initializer with its data inside (it may have come from external data)."""
    if tensor.data_location != onnx.TensorProto.EXTERNAL:
        copy = onnx.TensorProto()
        copy.CopyFrom(tensor)
        return copy
    copy = numpy_helper.from_array(np.asarray(data), tensor.name)
    copy.data_type = tensor.data_type
    return copy


class _ReadNode(NamedTuple):
    """A node proto with its repeated fields read out once: each read of such a field builds
    a new container (about a microsecond), and the checks and the build read every node's."""

    proto: onnx.NodeProto
    inputs: list[str]
    outputs: list[str]
    attributes: list[onnx.AttributeProto]


def _read_nodes(g: onnx.GraphProto) -> list[_ReadNode]:
    return [_ReadNode(proto, list(proto.input), list(proto.output), list(proto.attribute))
            for proto in g.node]


def _check_structure(g: onnx.GraphProto, nodes: list[_ReadNode]) -> None:
    """Undefined inputs, values written twice, missing outputs: caught with names, up front."""
    producers: dict[str, int] = {}  # value name -> index of its producing node (-1: not a node)
    for vi in g.input:
        producers[vi.name] = -1
    for t in g.initializer:
        producers.setdefault(t.name, -1)
    for t in g.sparse_initializer:
        producers.setdefault(t.values.name, -1)
    for index, node in enumerate(nodes):
        for out in node.outputs:
            if not out:
                continue
            if out in producers:
                first = producers[out]
                owner = _node_label(g.node[first], first) if first >= 0 else "a graph input " \
                    "or initializer"
                raise ModelLoadError(f"value {out!r} is written by both {owner} and "
                                     f"{_node_label(node.proto, index)}",
                                     where=node.proto.name or out,
                                     hint="every value must have exactly one producer (SSA)")
            producers[out] = index
    for index, node in enumerate(nodes):
        needed = [n for n in node.inputs if n]
        if node.attributes:
            for sub in _graphs_of(node.attributes):
                needed += free_variables(sub)
        for name in needed:
            if name not in producers:
                raise ModelLoadError(f"{_node_label(node.proto, index)} reads {name!r}, which "
                                     f"no node, graph input or initializer produces",
                                     where=node.proto.name or name,
                                     hint="the model is incomplete or was edited by hand")
    for out in g.output:
        if out.name not in producers:
            raise ModelLoadError(f"graph output {out.name!r} is produced by no node",
                                 where=out.name, hint="the model is incomplete")


def _graphs_of(attributes: list[onnx.AttributeProto]):
    for attr in attributes:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.g
        elif attr.type == onnx.AttributeProto.GRAPHS:
            yield from attr.graphs


def node_name(proto: onnx.NodeProto, index: int) -> str:
    """The name a node goes by: its own, or ``{op_type}_{index}`` (its place in the file) when
    it has none; edits name nodes this way too (``compiler_core.editing``)."""
    return proto.name or f"{proto.op_type}_{index}"


def _node_label(node: onnx.NodeProto, index: int) -> str:
    return f"node {node.name!r} ({node.op_type})" if node.name else f"node #{index} ({node.op_type})"


def _name_anonymous_dims(value: Value) -> Value:
    """Call an input's unnamed dims `<input>_dim<axis>`, so users can bind them like any other.

    Some exporters (skl2onnx, tf2onnx with None dims) leave the batch dim unnamed; a name
    asserts nothing more (distinct names do not claim equal sizes) but makes `--bind` possible.
    """
    if value.shape is not None and None in value.shape:
        value.shape = tuple(f"{value.name}_dim{axis}" if dim is None else dim
                            for axis, dim in enumerate(value.shape))
    return value


def _build(model: onnx.ModelProto, nodes: list[_ReadNode], opsets: dict[str, int],
           weights: list, stored: dict[int, StoredTensor]) -> Graph:
    g = model.graph
    graph = Graph(g.name or "graph")
    graph.doc_string = g.doc_string
    info = graph.model_info
    info.ir_version = model.ir_version
    info.producer_name = model.producer_name
    info.producer_version = model.producer_version
    info.domain = model.domain
    info.model_version = model.model_version
    info.doc_string = model.doc_string
    info.metadata_props = {p.key: p.value for p in model.metadata_props}
    graph.metadata = {p.key: p.value for p in g.metadata_props}
    graph.opset_imports = dict(opsets)
    for function in model.functions:
        own = onnx.FunctionProto()
        own.CopyFrom(function)  # a private copy: the parsed model can then be freed
        graph.functions[(function.domain, function.name, function.overload)] = own

    initializer_names = {t.name for t in g.initializer} | {t.values.name
                                                           for t in g.sparse_initializer}
    for vi in g.input:
        if vi.name not in initializer_names:  # IR<4 lists weights as inputs too: they are weights
            graph.add_input(_name_anonymous_dims(value_from_type(vi.name, vi.type)))
    for tensor, data in zip(g.initializer, weights):
        value = Value(tensor.name, tensor.data_type, tuple(tensor.dims), const=data)
        value.doc_string = tensor.doc_string
        graph._register(value)
        graph.initializers[value.name] = value
    for sparse in g.sparse_initializer:
        array = sparse_to_dense(sparse)
        value = Value(sparse.values.name, sparse.values.data_type, array.shape, const=array)
        graph._register(value)
        graph.initializers[value.name] = value

    declared = {vi.name: vi.type for vi in list(g.value_info) + list(g.output)}
    for node in nodes:  # all values first: files are not always in topological order
        for name in node.outputs:
            if name:
                graph._register(value_from_type(name, declared[name]) if name in declared
                                else Value(name))
    known_ops = _KnownOps(graph)
    for index, node in enumerate(nodes):
        _add_node(graph, node, index, known_ops, stored.get(index))
    graph.set_outputs(graph.values[o.name] for o in g.output)
    graph._max_order = float(len(g.node))
    for op in sorted(known_ops.unknown):
        graph.warnings.append(
            f"op {op} is not known to GraphLab: loaded as an opaque node; passes will not "
            f"rewrite across it and its cost is not modelled")
    scales = broken_scales(graph)
    if scales:
        graph.warnings.append(scales)
    return graph


def _add_node(graph: Graph, read: _ReadNode, index: int, known_ops: "_KnownOps",
              stored: StoredTensor | None = None) -> None:
    """``stored``: a Constant's value kept in the model's buffer (its proto has no data)."""
    values, proto = graph.values, read.proto
    inputs = [values[name] if name else None for name in read.inputs]
    outputs = [values[name] if name else None for name in read.outputs]
    domain = proto.domain if proto.domain != "ai.onnx" else ""
    node = graph.add_node(proto.op_type, inputs, outputs, domain=domain,
                          name=node_name(proto, index), order=float(index),
                          node_id=index)
    has_subgraph = False
    for attr in read.attributes:
        if attr.ref_attr_name:
            raise ModelLoadError(f"node {node.name!r} uses an attribute reference outside a "
                                 f"function", where=node.name)
        node.attrs[attr.name] = (stored if stored is not None and attr.name == "value"
                                 else attributes.from_proto(attr))
        node.attr_types[attr.name] = attr.type
        has_subgraph |= attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
    if stored is not None and outputs[0] is not None:
        outputs[0].elem_type, outputs[0].shape = stored.elem_type, stored.shape
    if proto.overload:
        node.overload = proto.overload
    if proto.doc_string:
        node.doc_string = proto.doc_string
    if len(proto.metadata_props):
        node.metadata = {p.key: p.value for p in proto.metadata_props}
    if has_subgraph:
        _wire_implicit_inputs(graph, node)
    known_ops.note(node)


def _wire_implicit_inputs(graph: Graph, node) -> None:
    """Outer values an If/Loop/Scan body reads become uses, so no pass deletes them."""
    for sub in subgraph_attributes(node.attrs):
        for name in free_variables(sub):
            if name not in {v.name for v in node.implicit_inputs}:
                value = graph.values[name]
                node.implicit_inputs.append(value)
                value.uses.append((node, -len(node.implicit_inputs)))


class _KnownOps:
    """Remembers which ops GraphLab knows (through onnx's schemas, its rules for onnxruntime's
    operators, or the model's functions); others are opaque."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.unknown: set[str] = set()
        self._cache: dict[tuple[str, str], bool] = {}

    def note(self, node) -> None:
        key = (node.op_type, node.domain)
        if key not in self._cache:
            self._cache[key] = self._is_known(*key)
        if not self._cache[key]:
            self.unknown.add(node.qualified_op)

    def _is_known(self, op_type: str, domain: str) -> bool:
        if any(d == domain and n == op_type for d, n, _ in self.graph.functions):
            return True
        if domain == FUSED_DOMAIN or contrib_shapes.knows(op_type, domain):
            return True
        try:
            return onnx.defs.has(op_type, domain)
        except Exception:  # noqa: BLE001 - onnx raises varied errors for odd domains
            return False


__all__ = ["load_model", "from_proto", "parse_model_bytes", "InvalidGraphError"]
