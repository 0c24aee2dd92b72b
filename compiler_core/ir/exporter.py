"""GraphLab IR -> ONNX ModelProto / bytes / file that onnx.checker and onnxruntime accept.

Fused nodes (nodes with a ``body``) become calls of model-local functions, one function per
distinct body, so every snapshot of a pipeline — fused or not — runs in onnxruntime.

Nodes are written in canonical form: an optional input or output left out at the end of the
list is omitted, not written as an empty name.  ONNX allows both spellings, but onnxruntime's
graph optimizer (its default level) dereferences some trailing empty names and crashes — e.g.
LayerNormalization(x, scale, "") kills the process at ORT_ENABLE_EXTENDED and above.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Callable, Iterable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from . import attributes, wire
from .dtypes import from_numpy, raw_bytes
from .graph import Graph
from .lazy_tensors import LazyTensor, StoredTensor
from .node import Node
from .model_limits import check_fits_in_one_message
from .proto_types import FUSED_DOMAIN, LIGHT_WEIGHT_BYTES, fused_function_name, to_value_info
from .schema_checks import ASSUMED_OPSET
from .value import Value
from .wire import encode_varint

PREFERRED_IR_VERSION = 10     # onnx 1.23 writes 14 by default, which onnxruntime cannot read
FUNCTION_MIN_IR_VERSION = 8   # model-local functions need IR >= 8


def to_model_proto(graph: Graph, *, weights: str = "all", value_info: bool = True,
                   ir_version: int | None = None) -> onnx.ModelProto:
    """Export the graph.

    ``weights``: "all" writes every initializer; "light" turns initializers larger than
    LIGHT_WEIGHT_BYTES, and Constant nodes whose value is stored in a file, into typed graph
    inputs (for fast shape inference of big models); "none" leaves both out (``write_model``
    streams them beside the rest).
    """
    functions = _FunctionTable(graph)
    g = onnx.GraphProto(name=graph.name, doc_string=graph.doc_string)
    for key, value in graph.metadata.items():
        g.metadata_props.add(key=key, value=value)
    g.input.extend(to_value_info(v) for v in graph.inputs)
    for value in graph.initializers.values():
        if weights == "light" and value.stored.nbytes > LIGHT_WEIGHT_BYTES:
            g.input.append(to_value_info(value))
        elif weights != "none":
            g.initializer.append(_tensor(value))
    for node in graph.nodes:
        if weights != "all" and _streamed_constant(node) is not None:
            if weights == "light":
                g.input.append(to_value_info(node.outputs[0]))
            continue
        g.node.append(_node_proto(node, functions))
    g.output.extend(to_value_info(v) for v in graph.outputs)
    if value_info:
        io = {v.name for v in graph.inputs} | {v.name for v in graph.outputs}
        for node in graph.nodes:
            for out in node.outputs:
                if out is not None and out.name not in io and _has_type(out):
                    g.value_info.append(to_value_info(out))
    opsets = dict(graph.opset_imports)
    opsets.setdefault("", ASSUMED_OPSET)
    if functions.protos:
        opsets.setdefault(FUSED_DOMAIN, 1)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid(d, v)
                                                for d, v in opsets.items()])
    model.functions.extend(graph.functions.values())
    for function in model.functions:   # the imported ones (ours are written canonical)
        _drop_empty_tails(function.node)
    model.functions.extend(functions.protos)
    model.ir_version = ir_version or _ir_version(graph, opsets, bool(model.functions))
    if model.ir_version < 4:  # before IR 4 every initializer must also be listed as an input
        listed = {i.name for i in model.graph.input}
        model.graph.input.extend(to_value_info(v) for v in graph.initializers.values()
                                 if v.name not in listed)
    info = graph.model_info
    model.producer_name = info.producer_name or "graphlab"
    model.producer_version = info.producer_version
    model.domain = info.domain
    model.model_version = info.model_version
    model.doc_string = info.doc_string
    for key, value in info.metadata_props.items():
        model.metadata_props.add(key=key, value=value)
    return model


def write_model(graph: Graph, write: Callable[[Piece], object],
                external: "ExternalData | None" = None) -> None:
    """Serialise the model piece by piece: the Constant nodes whose value is stored in a
    file, the structure, then one initializer at a time.

    Protobuf merges repeated occurrences of an embedded message field, so each initializer can
    travel in its own ``graph`` field (ModelProto field 7 holding GraphProto field 5), and
    each stored Constant in its own ``graph`` field's node (written first, so the nodes are
    still in topological order).  A
    plain numeric tensor's bytes are written straight from its numpy buffer or its file (its
    raw_data field is encoded by hand), so saving copies no weight at all: a stored tensor is
    handed to ``write`` as itself, to be streamed (``write_pieces``).  With ``external``,
    tensors of at least ``external.min_bytes`` go to its data file instead and the model only
    points at them.
    """
    for node in graph.nodes:
        data = _streamed_constant(node)
        if data is not None:
            for piece in _constant_pieces(node, data, external):
                write(piece)
    write(to_model_proto(graph, weights="none").SerializeToString())
    for value in graph.initializers.values():
        for piece in _initializer_pieces(value, external):
            write(piece)


Piece = "bytes | memoryview | LazyTensor"


def write_pieces(write: Callable[[bytes | memoryview], object], pieces) -> None:
    """Write pieces through ``write``; a lazy tensor a chunk at a time, each chunk's pages
    released once written (so a 16 GB model is written with megabytes resident)."""
    for piece in pieces:
        if isinstance(piece, LazyTensor):
            for chunk in piece.chunks():
                write(chunk)
        else:
            write(piece)


# A stored tensor at least this big is copied by the kernel; a smaller one is written from
# the mapping (opening its file to copy a few kilobytes costs more than writing them).
KERNEL_COPY_BYTES = 1 << 20


def write_to_file(handle, pieces) -> None:
    """``write_pieces`` into an open file; a large stored tensor is copied by the kernel from
    its own file when it can be (``StoredTensor.copy_into``), which costs a third of the
    time."""
    for piece in pieces:
        if not (isinstance(piece, StoredTensor) and piece.nbytes >= KERNEL_COPY_BYTES
                and piece.copy_into(handle)):
            write_pieces(handle.write, [piece])


def piece_size(piece) -> int:
    return len(piece) if isinstance(piece, bytes) else piece.nbytes


class ExternalData:
    """The one data file beside a model that holds its large tensors (ONNX "external data").

    Each tensor starts on an ``alignment`` boundary, so a reader can memory-map it."""

    def __init__(self, handle, location: str, min_bytes: int = 1024, alignment: int = 4096):
        self.handle, self.location = handle, location
        self.min_bytes, self.alignment = min_bytes, alignment
        self.size = 0

    def append(self, data: "memoryview | LazyTensor") -> tuple[int, int]:
        """Write ``data`` at the next aligned offset; its (offset, length)."""
        offset = -(-self.size // self.alignment) * self.alignment
        if offset > self.size:
            self.handle.write(bytes(offset - self.size))
        write_to_file(self.handle, [data])
        self.size = offset + data.nbytes
        return offset, data.nbytes


def _initializer_pieces(value: Value, external: ExternalData | None = None) -> list:
    data = _raw_bytes(value)
    if data is not None:
        header = onnx.TensorProto(name=value.name, data_type=value.elem_type,
                                  dims=value.stored.shape, doc_string=value.doc_string)
        tensor_head, data = _tensor_head(header, data, external)
    else:
        tensor_head = _tensor(value).SerializeToString()
    length = data.nbytes if data is not None else 0
    head = _wrap(_MODEL_GRAPH_TAG, _wrap(_GRAPH_INITIALIZER_TAG, tensor_head, length), length)
    return [head, data] if length else [head]


def _constant_pieces(node: Node, data: LazyTensor, external: ExternalData | None) -> list:
    """A Constant node whose value is stored in a file, as its own ``graph`` field: the
    tensor's bytes stream from the file (inline, or into the external data file)."""
    header = onnx.TensorProto(data_type=data.elem_type, dims=data.shape)
    tensor_head, streamed = _tensor_head(header, data, external)
    length = streamed.nbytes if streamed is not None else 0
    attribute = onnx.AttributeProto(name="value", type=onnx.AttributeProto.TENSOR)
    attribute_head = attribute.SerializeToString() + _wrap(_ATTRIBUTE_TENSOR_TAG, tensor_head,
                                                           length)
    node_head = _node_proto(node, None, skip="value").SerializeToString() \
        + _wrap(_NODE_ATTRIBUTE_TAG, attribute_head, length)
    head = _wrap(_MODEL_GRAPH_TAG, _wrap(_GRAPH_NODE_TAG, node_head, length), length)
    return [head, streamed] if length else [head]


def _tensor_head(header: onnx.TensorProto, data: "memoryview | LazyTensor",
                 external: ExternalData | None) -> tuple[bytes, "memoryview | LazyTensor | None"]:
    """A tensor's serialized fields up to its raw_data's bytes, and those bytes (None when
    they went to ``external``)."""
    if external is not None and data.nbytes >= external.min_bytes:
        offset, length = external.append(data)
        header.data_location = onnx.TensorProto.EXTERNAL
        for key, text in (("location", external.location), ("offset", str(offset)),
                          ("length", str(length))):
            header.external_data.add(key=key, value=text)
        return header.SerializeToString(), None
    return header.SerializeToString() + _RAW_DATA_TAG + encode_varint(data.nbytes), data


def _wrap(tag: bytes, head: bytes, streamed: int) -> bytes:
    """``head`` as the start of a length-delimited field whose last ``streamed`` bytes follow
    it separately."""
    return tag + encode_varint(len(head) + streamed) + head


def _streamed_constant(node: Node) -> LazyTensor | None:
    """A Constant's value when it is a tensor kept in a file whose bytes can be written as
    they lie (the exporter streams it instead of copying it into a proto)."""
    if node.op_type != "Constant" or node.domain or node.body is not None:
        return None
    data = node.attrs.get("value")
    if isinstance(data, LazyTensor) and (isinstance(data, StoredTensor) or data.zero_copy):
        return data
    return None


def _raw_bytes(value: Value) -> "memoryview | LazyTensor | None":
    """The tensor's bytes exactly as ONNX's raw_data holds them, without copying: a lazy
    tensor itself (a stored one's bytes are already in that form; a computed one's once it
    is a plain numeric array), or a view of a plain numeric array; None when it must be
    converted (strings, packed types, another byte order)."""
    data = value.stored
    if isinstance(data, LazyTensor):
        streams = isinstance(data, StoredTensor) or data.zero_copy
        return data if streams and data.elem_type == value.elem_type else None
    array = np.asarray(data)
    if array.dtype.kind in "biuf" and value.elem_type == from_numpy(array.dtype):
        return raw_bytes(array)
    return None


_MODEL_GRAPH_TAG = wire.tag(wire.MODEL_GRAPH, wire.LENGTH_DELIMITED)
_GRAPH_INITIALIZER_TAG = wire.tag(wire.GRAPH_INITIALIZER, wire.LENGTH_DELIMITED)
_GRAPH_NODE_TAG = wire.tag(wire.GRAPH_NODE, wire.LENGTH_DELIMITED)
_NODE_ATTRIBUTE_TAG = wire.tag(wire.NODE_ATTRIBUTE, wire.LENGTH_DELIMITED)
_ATTRIBUTE_TENSOR_TAG = wire.tag(wire.ATTRIBUTE_TENSOR, wire.LENGTH_DELIMITED)
_RAW_DATA_TAG = wire.tag(wire.TENSOR_RAW_DATA, wire.LENGTH_DELIMITED)


def to_bytes(graph: Graph) -> bytes:
    """The whole model as one protobuf message; refused past protobuf's 2 GiB limit, which
    no reader could parse (save it to a file with external data instead)."""
    pieces = model_pieces(graph)
    check_fits_in_one_message(graph, pieces_size(pieces))
    buffers: list[bytes | memoryview] = []
    write_pieces(buffers.append, pieces)
    return b"".join(buffers)


def model_pieces(graph: Graph, external: ExternalData | None = None) -> list:
    """``write_model``'s output as a list; weights are views of their arrays or the stored
    tensors themselves, not copies, so the exact size of the file is known before anything
    is written."""
    pieces: list = []
    write_model(graph, pieces.append, external)
    return pieces


def pieces_size(pieces: list) -> int:
    return sum(piece_size(p) for p in pieces)


def _ir_version(graph: Graph, opsets: dict[str, int], has_functions: bool) -> int:
    """The lowest IR version the model needs, but not above the original (capped at 10):
    older readers (onnxruntime reads at most 13; older releases 10) then accept the file."""
    needed = helper.find_min_ir_version_for(
        [helper.make_opsetid(d, v) for d, v in opsets.items()], ignore_unknown=True)
    if has_functions:
        needed = max(needed, FUNCTION_MIN_IR_VERSION)
    original = graph.model_info.ir_version or PREFERRED_IR_VERSION
    return max(needed, min(original, PREFERRED_IR_VERSION))


def _has_type(value: Value) -> bool:
    return value.type_proto is not None or value.elem_type is not None


def _tensor(value: Value) -> onnx.TensorProto:
    array = value.const
    tensor = numpy_helper.from_array(array, value.name)
    if value.elem_type is not None and tensor.data_type != value.elem_type:
        tensor = numpy_helper.from_array(array.astype(
            helper.tensor_dtype_to_np_dtype(value.elem_type)), value.name)
    tensor.doc_string = value.doc_string
    return tensor


def node_to_proto(node: Node) -> onnx.NodeProto:
    """One plain (unfused) node as a NodeProto, e.g. to evaluate it on its own."""
    if node.body is not None:
        raise ValueError(f"{node.name!r} is fused: it exports as a call of a function")
    return _node_proto(node, None)


def _drop_empty_tails(nodes: Iterable[onnx.NodeProto]) -> None:
    """Omit trailing empty input and output names of written nodes, in place, also inside
    control-flow bodies (the nodes of imported functions and of subgraph attributes; the
    exporter writes its own nodes without them: ``_empty_tail_dropped``)."""
    for node in nodes:
        inputs, outputs = list(node.input), list(node.output)
        kept = _empty_tail_dropped(inputs, 0)
        if len(kept) < len(inputs):
            del node.input[len(kept):]
        kept = _empty_tail_dropped(outputs, _required_outputs(node.op_type, node.domain))
        if len(kept) < len(outputs):
            del node.output[len(kept):]
        for attr in node.attribute:
            for body in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                _drop_empty_tails(body.node)


def _empty_tail_dropped(names: list[str], keep: int) -> list[str]:
    """``names`` without the empty ones at the end, down to ``keep`` names: the canonical
    form (tests put back the old spelling by making this return ``names``)."""
    end = len(names)
    while end > keep and not names[end - 1]:
        end -= 1
    return names[:end] if end < len(names) else names


def _required_outputs(op_type: str, domain: str) -> int:
    """How many outputs a node must list: its schema's minimum, and never none at all."""
    if domain == FUSED_DOMAIN:
        return 1  # a call of a fused body's function (one name each: no schema to look up)
    return _schema_outputs(op_type, domain)


@functools.lru_cache(maxsize=None)
def _schema_outputs(op_type: str, domain: str) -> int:
    try:
        schema = onnx.defs.get_schema(op_type, domain="" if domain == "ai.onnx" else domain)
    except onnx.defs.SchemaError:
        return 1  # a function call or another runtime's op: it defines its own outputs
    return max(1, schema.min_output)


def _node_proto(node: Node, functions: "_FunctionTable", skip: str = "") -> onnx.NodeProto:
    """The node in canonical form (no empty names at the end of its inputs and outputs);
    ``skip``: an attribute the caller writes itself."""
    if node.body is not None:  # a call of its body's function; its attributes only describe it
        op_type, domain = functions.name_for(node), FUSED_DOMAIN
    else:
        op_type, domain = node.op_type, node.domain
    proto = onnx.NodeProto(
        op_type=op_type, domain=domain, name=node.name, doc_string=node.doc_string,
        overload=node.overload,
        input=_empty_tail_dropped([v.name if v is not None else "" for v in node.inputs], 0),
        output=_empty_tail_dropped([v.name if v is not None else "" for v in node.outputs],
                                   _required_outputs(op_type, domain)))
    for key, value in node.metadata.items():
        proto.metadata_props.add(key=key, value=value)
    if node.body is None and node.attrs:
        written = [attributes.to_proto(k, v, node.attr_types.get(k))
                   for k, v in node.attrs.items() if k != skip]
        for attr in written:
            if attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                for body in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs:
                    _drop_empty_tails(body.node)
        proto.attribute.extend(written)
    return proto


def node_proto(node: Node) -> onnx.NodeProto:
    """A node without a body as the exporter writes it (onnx's node-level inference reads
    one alone)."""
    return _node_proto(node, None)


def body_function(graph: Graph, node: Node) -> tuple[onnx.FunctionProto, list[onnx.FunctionProto]]:
    """A fused node's body as the function the exporter writes for it, with the functions of
    the fused nodes inside it."""
    table = _FunctionTable(graph)
    function = table._function(node.body, node.op_type)
    function.name = node.op_type
    return function, table.protos


class _FunctionTable:
    """Turns fused bodies into model-local functions, sharing one function per distinct body."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.protos: list[onnx.FunctionProto] = []
        self._by_digest: dict[str, str] = {}
        self._taken = {name for (_, name, _) in graph.functions}
        # per op type, the suffix its last new function took: every smaller one is taken, so
        # the search for a free name starts there (not at 1 for each of thousands of bodies)
        self._last_suffix: dict[str, int] = {}
        self._opsets: dict[bool, list[onnx.OperatorSetIdProto]] = {}

    def name_for(self, node: Node) -> str:
        function = self._function(node.body, node.op_type)
        digest = hashlib.sha1(function.SerializeToString(deterministic=True)).hexdigest()
        if digest not in self._by_digest:
            suffix = self._last_suffix.get(node.op_type, 1)
            name = fused_function_name(node.op_type, suffix)
            while name in self._taken:
                suffix += 1
                name = fused_function_name(node.op_type, suffix)
            self._last_suffix[node.op_type] = suffix
            self._taken.add(name)
            function.name = name
            self.protos.append(function)
            self._by_digest[digest] = name
        return self._by_digest[digest]

    def _function(self, body: Graph, op_type: str) -> onnx.FunctionProto:
        nodes = []
        for value in body.initializers.values():  # functions have no initializers
            nodes.append(helper.make_node("Constant", [], [value.name],
                                          value=numpy_helper.from_array(value.const)))
        nodes.extend(_node_proto(n, self) for n in body.nodes)
        return onnx.FunctionProto(
            domain=FUSED_DOMAIN, name=op_type, input=[v.name for v in body.inputs],
            output=[v.name for v in body.outputs], node=nodes,
            opset_import=self._opsets_of(any(n.domain == FUSED_DOMAIN for n in nodes)))

    def _opsets_of(self, calls_fused: bool) -> list[onnx.OperatorSetIdProto]:
        """A body's opsets: the graph's, and the fused domain's when the body calls fused
        functions; the same for every body, so built once per table, not for each."""
        if calls_fused not in self._opsets:
            opsets = dict(self.graph.opset_imports)
            opsets.setdefault("", ASSUMED_OPSET)
            if calls_fused:
                opsets.setdefault(FUSED_DOMAIN, 1)
            self._opsets[calls_fused] = [onnx.OperatorSetIdProto(domain=d, version=v)
                                         for d, v in opsets.items()]
        return self._opsets[calls_fused]
