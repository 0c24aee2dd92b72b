"""Node attributes: ONNX AttributeProto <-> plain immutable Python values.

Passes read ``node.attrs["axis"]`` as an int, not a proto.  The original attribute type is kept
next to the value so that ambiguous cases (an empty list) export exactly as they were imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, numpy_helper

A = AttributeProto


def _decode(raw: bytes) -> str | bytes:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _readonly_tensor(proto: onnx.TensorProto) -> np.ndarray:
    array = numpy_helper.to_array(proto)
    array.flags.writeable = False
    return array


def from_proto(attr: AttributeProto) -> Any:
    """The Python value of an attribute (protos for graphs, sparse tensors and types)."""
    kind = attr.type
    if kind == A.INT:
        return attr.i
    if kind == A.FLOAT:
        return attr.f
    if kind == A.STRING:
        return _decode(attr.s)
    if kind == A.INTS:
        return tuple(attr.ints)
    if kind == A.FLOATS:
        return tuple(attr.floats)
    if kind == A.STRINGS:
        return tuple(_decode(s) for s in attr.strings)
    if kind == A.TENSOR:
        return _readonly_tensor(attr.t)
    if kind == A.TENSORS:
        return tuple(_readonly_tensor(t) for t in attr.tensors)
    if kind == A.GRAPH:
        return attr.g
    if kind == A.GRAPHS:
        return tuple(attr.graphs)
    if kind == A.SPARSE_TENSOR:
        return attr.sparse_tensor
    if kind == A.SPARSE_TENSORS:
        return tuple(attr.sparse_tensors)
    if kind == A.TYPE_PROTO:
        return attr.tp
    if kind == A.TYPE_PROTOS:
        return tuple(attr.type_protos)
    raise ValueError(f"attribute {attr.name!r} has an unknown type {kind}")


def to_proto(name: str, value: Any, attr_type: int | None = None) -> AttributeProto:
    """Build an AttributeProto; ``attr_type`` disambiguates empty lists and str/bytes."""
    if isinstance(value, np.ndarray):
        attr = AttributeProto(name=name, type=A.TENSOR)
        attr.t.CopyFrom(numpy_helper.from_array(value))
        return attr
    if isinstance(value, onnx.GraphProto):
        attr = AttributeProto(name=name, type=A.GRAPH)
        attr.g.CopyFrom(value)
        return attr
    if isinstance(value, tuple) and value and isinstance(value[0], np.ndarray):
        attr = AttributeProto(name=name, type=A.TENSORS)
        attr.tensors.extend(numpy_helper.from_array(v) for v in value)
        return attr
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, tuple) and not value and attr_type is not None:
        return AttributeProto(name=name, type=attr_type)
    if isinstance(value, tuple):
        value = [v.item() if isinstance(v, np.generic) else v for v in value]
        if attr_type == A.FLOATS:
            value = [float(v) for v in value]
    if attr_type == A.FLOAT and isinstance(value, int):
        value = float(value)
    return onnx.helper.make_attribute(name, value, attr_type=attr_type)
