"""Conversions between ONNX type protos and IR values, shared by import, export and inference.

They live apart from the importer and exporter so that shape inference (which exports a light
model and reads types back) depends on neither direction's module as a whole.
"""

from __future__ import annotations

import functools
import re

import onnx

from .value import Value

FUSED_DOMAIN = "graphlab"     # the domain of fused nodes and of the functions they call
LIGHT_WEIGHT_BYTES = 1024     # a "light" model keeps constants up to this size (shape inference)
_BODY_SUFFIX = re.compile(r"_\d+$")


def fused_function_name(op_type: str, number: int) -> str:
    """The model-local function the exporter writes for the ``number``-th distinct body of a
    fused op: ONNX calls a function by name, so two bodies of Attention (two layers with
    other constants inside) are the functions Attention and Attention_2.  (ONNX's function
    overloads would keep one name, but onnx.reference ignores them and runs the wrong body.)"""
    return op_type if number <= 1 else f"{op_type}_{number}"


def fused_op_of(op_type: str, domain: str, calls_function: bool) -> str:
    """The op a node stands for: for a call of one of GraphLab's fused functions read back
    from a file ('Attention_2'), the fused op ('Attention'); anything else as it is."""
    if domain == FUSED_DOMAIN and calls_function:
        return _BODY_SUFFIX.sub("", op_type)
    return op_type


def value_from_type(name: str, type_proto: onnx.TypeProto) -> Value:
    """A Value carrying what a ValueInfo says about type and shape."""
    if type_proto.HasField("tensor_type"):
        return Value(name, *_tensor_type_read(type_proto.SerializeToString()))
    if type_proto.WhichOneof("value") is None:
        return Value(name)
    copy = onnx.TypeProto()
    copy.CopyFrom(type_proto)
    return Value(name, type_proto=copy)


@functools.lru_cache(maxsize=4096)
def _tensor_type_read(serialized: bytes) -> tuple[int | None, tuple | None]:
    """(elem type, shape) of a tensor type, read once per distinct type: a graph's values
    share a few, and reading a shape dim by dim costs more than serialising it."""
    tensor_type = onnx.TypeProto.FromString(serialized).tensor_type
    shape = None
    if tensor_type.HasField("shape"):
        shape = tuple(read_dim(d) for d in tensor_type.shape.dim)
    return tensor_type.elem_type or None, shape


def read_dim(dim: onnx.TensorShapeProto.Dimension) -> int | str | None:
    """A dim as the IR holds it: its size, its symbol, or None when unknown.  A negative
    size is unknown too: some converters write -1 for "any size", which no ONNX reader
    accepts as a size."""
    if dim.HasField("dim_value"):
        return dim.dim_value if dim.dim_value >= 0 else None
    return dim.dim_param or None


def to_value_info(value: Value) -> onnx.ValueInfoProto:
    if value.type_proto is not None:
        info = onnx.ValueInfoProto(name=value.name)
        info.type.CopyFrom(value.type_proto)
        return info
    if value.elem_type is None:
        return onnx.ValueInfoProto(name=value.name)
    return tensor_value_info(value.name, value.elem_type, value.shape)


def tensor_value_info(name: str, elem_type: int, shape: tuple | None) -> onnx.ValueInfoProto:
    """A tensor's value info (``onnx.helper.make_tensor_value_info``'s, without its cost)."""
    info = onnx.ValueInfoProto(name=name)
    info.type.CopyFrom(_tensor_type_proto(elem_type, shape))
    return info


@functools.lru_cache(maxsize=4096)
def _tensor_type_proto(elem_type: int, shape: tuple | None) -> onnx.TypeProto:
    """A tensor type, built once per distinct (elem type, shape) and copied from there (never
    handed out to be changed)."""
    type_proto = onnx.TypeProto()
    tensor_type = type_proto.tensor_type
    tensor_type.elem_type = elem_type
    if shape is not None:
        shape_proto = tensor_type.shape
        shape_proto.SetInParent()
        for dim in shape:
            entry = shape_proto.dim.add()
            if isinstance(dim, int):
                entry.dim_value = dim
            elif dim is not None:
                entry.dim_param = dim
    return type_proto
