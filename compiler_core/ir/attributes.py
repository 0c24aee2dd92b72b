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


def _own(message):
    """A private copy of a sub-message, so the parsed model's memory can be freed."""
    copy = type(message)()
    copy.CopyFrom(message)
    return copy


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
        return _own(attr.g)
    if kind == A.GRAPHS:
        return tuple(_own(g) for g in attr.graphs)
    if kind == A.SPARSE_TENSOR:
        return _own(attr.sparse_tensor)
    if kind == A.SPARSE_TENSORS:
        return tuple(_own(t) for t in attr.sparse_tensors)
    if kind == A.TYPE_PROTO:
        return _own(attr.tp)
    if kind == A.TYPE_PROTOS:
        return tuple(_own(t) for t in attr.type_protos)
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
    fast = _fast_proto(name, value, attr_type)
    if fast is not None:
        return fast
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


def _fast_proto(name: str, value: Any, attr_type: int | None) -> AttributeProto | None:
    """Direct construction for the common kinds (helper.make_attribute is slow per call)."""
    kind = type(value)
    if kind is int and attr_type in (None, A.INT):
        return AttributeProto(name=name, type=A.INT, i=value)
    if kind is float and attr_type in (None, A.FLOAT):
        return AttributeProto(name=name, type=A.FLOAT, f=value)
    if kind is str and attr_type in (None, A.STRING):
        return AttributeProto(name=name, type=A.STRING, s=value.encode("utf-8"))
    if kind is tuple and value and attr_type in (None, A.INTS) and \
            all(type(v) is int for v in value):
        attr = AttributeProto(name=name, type=A.INTS)
        attr.ints.extend(value)
        return attr
    return None
