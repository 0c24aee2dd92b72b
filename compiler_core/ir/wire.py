"""A serialized model's structure apart from its inline weights, found without copying them.

protobuf parses a message whole: the weights stored inline in an .onnx file (``raw_data``)
would be copied out of the file, and once more into arrays.  This scanner walks the wire
format down to the graph's initializers and to the tensors of its Constant nodes (a common
way to carry weights), notes where each large ``raw_data`` lies in the buffer and returns the
model's bytes without them, which parse in a moment; the importer then stores those weights
as ranges of the buffer itself (the mapped file or the uploaded bytes).
A file past protobuf's 2 GiB limit parses this way as well, when its structure is under it.
"""

from __future__ import annotations

from dataclasses import dataclass

# Field numbers (onnx.proto): ModelProto.graph, GraphProto.initializer, TensorProto.raw_data;
# GraphProto.node, NodeProto.op_type, .attribute and .domain; AttributeProto.name and .t.
MODEL_GRAPH, GRAPH_INITIALIZER, TENSOR_RAW_DATA = 7, 5, 9
GRAPH_NODE, NODE_OP_TYPE, NODE_ATTRIBUTE, NODE_DOMAIN = 1, 4, 5, 7
ATTRIBUTE_NAME, ATTRIBUTE_TENSOR = 1, 5
VARINT, FIXED64, LENGTH_DELIMITED, START_GROUP, END_GROUP, FIXED32 = range(6)


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message (the parser says why, in words)."""


@dataclass(frozen=True)
class Span:
    """Where one initializer's raw_data lies in the buffer."""

    offset: int
    length: int


@dataclass
class InlineWeights:
    """Where the large raw_data kept out of the parsed structure lies: one Span or None per
    initializer and per graph node (a Constant's ``value``), in the order protobuf lists them
    (a model may carry its graph in several pieces, which protobuf appends)."""

    initializers: list[Span | None]
    constants: list[Span | None]


def split_inline_weights(buffer, min_bytes: int) -> tuple[bytes, InlineWeights]:
    """(the model without the raw_data of its graph's initializers and Constant nodes of at
    least ``min_bytes``, where each lies)."""
    view = memoryview(buffer)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    found = InlineWeights([], [])

    def tensor(begin: int, end: int) -> bytes | None:
        return _tensor_without_data(view, begin, end, found.initializers, min_bytes)

    def node(begin: int, end: int) -> bytes | None:
        if end - begin < min_bytes or not _is_constant(view, begin, end):
            found.constants.append(None)   # too small to hold a large value, or no Constant
            return None
        spans: list[Span | None] = []
        rewritten = _with_fields_rewritten(view, begin, end, {NODE_ATTRIBUTE: lambda b, e:
            _constant_value_without_data(view, b, e, spans, min_bytes)})
        found.constants.append(next((span for span in spans if span), None))
        return rewritten

    def graph(begin: int, end: int) -> bytes | None:
        return _with_fields_rewritten(view, begin, end, {GRAPH_INITIALIZER: tensor,
                                                         GRAPH_NODE: node})

    model = _with_fields_rewritten(view, 0, len(view), {MODEL_GRAPH: graph})
    return (model if model is not None else bytes(view)), found


def _with_fields_rewritten(view: memoryview, begin: int, end: int, rewrites: dict
                           ) -> bytes | None:
    """The message between ``begin`` and ``end`` with each length-delimited field whose number
    ``rewrites`` lists replaced by ``rewrite(payload start, payload end)`` where that gives
    bytes; None when none gave any (the message stays as it is: no copy)."""
    pieces: list[bytes | memoryview] = []
    kept_from = begin   # the fields from here to the one being read are copied as one run
    for field, wire_type, start, tag_end, body, stop in _fields(view, begin, end):
        rewrite = rewrites.get(field)
        if rewrite is not None and wire_type == LENGTH_DELIMITED:
            payload = rewrite(body, stop)
            if payload is not None:
                pieces += [view[kept_from:tag_end], encode_varint(len(payload)), payload]
                kept_from = stop
    if not pieces:
        return None
    pieces.append(view[kept_from:end])
    return b"".join(pieces)


def _is_constant(view: memoryview, begin: int, end: int) -> bool:
    """Whether the NodeProto between ``begin`` and ``end`` is ONNX's own Constant."""
    op_type, domain = b"", b""
    for field, wire_type, _, _, body, stop in _fields(view, begin, end):
        if wire_type == LENGTH_DELIMITED and field == NODE_OP_TYPE:
            op_type = bytes(view[body:stop])
        elif wire_type == LENGTH_DELIMITED and field == NODE_DOMAIN:
            domain = bytes(view[body:stop])
    return op_type == b"Constant" and domain in (b"", b"ai.onnx")


def _constant_value_without_data(view: memoryview, begin: int, end: int, spans: list,
                                 min_bytes: int) -> bytes | None:
    """A Constant's attribute without its tensor's raw_data, when it is ``value``."""
    names = [bytes(view[body:stop]) for field, wire_type, _, _, body, stop
             in _fields(view, begin, end)
             if field == ATTRIBUTE_NAME and wire_type == LENGTH_DELIMITED]
    if names[-1:] != [b"value"]:
        return None
    return _with_fields_rewritten(view, begin, end, {ATTRIBUTE_TENSOR: lambda b, e:
                                  _tensor_without_data(view, b, e, spans, min_bytes)})


def _tensor_without_data(view: memoryview, begin: int, end: int, spans: list,
                         min_bytes: int) -> bytes | None:
    kept: list[memoryview] = []   # the runs of fields between raw_data fields
    kept_from = begin
    data: Span | None = None
    for field, wire_type, start, _, body, stop in _fields(view, begin, end):
        if field == TENSOR_RAW_DATA and wire_type == LENGTH_DELIMITED:
            data = Span(body, stop - body)   # the last occurrence wins, as in protobuf
            kept.append(view[kept_from:start])
            kept_from = stop
    if data is None or data.length < min_bytes:
        spans.append(None)
        return None
    spans.append(data)
    kept.append(view[kept_from:end])
    return b"".join(kept)


def _fields(view: memoryview, position: int, end: int):
    """(field number, wire type, start of the tag, end of the tag, start of the payload, end)
    of each field of the message between ``position`` and ``end``."""
    while position < end:
        start = position
        tag = view[position]
        if tag < 0x80:   # a one-byte key, as every field of an ONNX model has: read inline
            tag_end = position + 1
        else:
            tag, tag_end = _read_varint(view, position, end)
        if tag >> 3 == 0:
            raise WireError(f"field number 0 at byte {start}")
        if tag & 7 == LENGTH_DELIMITED and tag_end < end and view[tag_end] < 0x80:
            body, position = tag_end + 1, tag_end + 1 + view[tag_end]   # a short payload
            if position > end:
                raise WireError(f"field {tag >> 3} before byte {body} runs past the end of "
                                f"its message")
        else:
            body, position = _payload(view, tag, tag_end, end)
        yield tag >> 3, tag & 7, start, tag_end, body, position


def _payload(view: memoryview, tag: int, position: int, end: int) -> tuple[int, int]:
    """(start, end) of the payload of a field whose tag ends at ``position``."""
    wire_type = tag & 7
    if wire_type == VARINT:
        stop = _read_varint(view, position, end)[1]
    elif wire_type == FIXED64:
        stop = position + 8
    elif wire_type == FIXED32:
        stop = position + 4
    elif wire_type == LENGTH_DELIMITED:
        length, position = _read_varint(view, position, end)
        stop = position + length
    elif wire_type == START_GROUP:
        stop = _group_end(view, tag >> 3, position, end)
    else:
        raise WireError(f"unexpected wire type {wire_type} before byte {position}")
    if stop > end:
        raise WireError(f"field {tag >> 3} before byte {position} runs past the end of its "
                        f"message")
    return position, stop


def _group_end(view: memoryview, field: int, position: int, end: int) -> int:
    """Where a (long deprecated, but legal) group field ends, after its END_GROUP tag."""
    while position < end:
        tag, position = _read_varint(view, position, end)
        if tag & 7 == END_GROUP:
            if tag >> 3 != field:
                raise WireError(f"group {field} closed as group {tag >> 3}")
            return position
        position = _payload(view, tag, position, end)[1]
    raise WireError(f"group {field} is not closed")


def _read_varint(view: memoryview, position: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= end or shift > 63:
            raise WireError(f"a number at byte {position} is cut off")
        byte = view[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def encode_varint(number: int) -> bytes:
    """A non-negative number in protobuf's base-128 encoding."""
    out = bytearray()
    while True:
        byte = number & 0x7F
        number >>= 7
        if number:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def tag(field: int, wire_type: int) -> bytes:
    """A field's key: its number and wire type."""
    return encode_varint((field << 3) | wire_type)
