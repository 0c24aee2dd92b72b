"""Node attributes: ONNX AttributeProto <-> plain immutable Python values.

Passes read ``node.attrs["axis"]`` as an int, not a proto.  The original attribute type is kept
next to the value so that ambiguous cases (an empty list) export exactly as they were imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, numpy_helper

from .lazy_tensors import LazyTensor
from .tensors import to_readonly_array

A = AttributeProto


def _decode(raw: bytes) -> str | bytes:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


def _own(message):
    """A private copy of a sub-message, so the parsed model's memory can be freed."""
    copy = type(message)()
    copy.CopyFrom(message)
    return copy


def from_proto(attr: AttributeProto) -> Any:
    """The Python value of an attribute (protos for graphs, sparse tensors and types)."""
    kind = attr.type
    if kind in _SINGLE:
        field, convert = _SINGLE[kind]
        return convert(getattr(attr, field))
    if kind in _REPEATED:
        field, convert = _REPEATED[kind]
        return tuple(convert(item) for item in getattr(attr, field))
    raise ValueError(f"attribute {attr.name!r} has an unknown type {kind}")


def _same(item: Any) -> Any:
    return item


# attribute type -> (proto field, conversion of one item); lists convert item by item
_SINGLE = {A.INT: ("i", _same), A.FLOAT: ("f", _same), A.STRING: ("s", _decode),
           A.TENSOR: ("t", to_readonly_array), A.GRAPH: ("g", _own),
           A.SPARSE_TENSOR: ("sparse_tensor", _own), A.TYPE_PROTO: ("tp", _own)}
_REPEATED = {A.INTS: ("ints", _same), A.FLOATS: ("floats", _same),
             A.STRINGS: ("strings", _decode), A.TENSORS: ("tensors", to_readonly_array),
             A.GRAPHS: ("graphs", _own), A.SPARSE_TENSORS: ("sparse_tensors", _own),
             A.TYPE_PROTOS: ("type_protos", _own)}


def to_proto(name: str, value: Any, attr_type: int | None = None) -> AttributeProto:
    """Build an AttributeProto; ``attr_type`` disambiguates empty lists and str/bytes."""
    if isinstance(value, np.ndarray):
        attr = AttributeProto(name=name, type=A.TENSOR)
        attr.t.CopyFrom(numpy_helper.from_array(value))
        return attr
    if isinstance(value, LazyTensor):   # a weight kept in a file: read into the proto
        attr = AttributeProto(name=name, type=A.TENSOR)
        attr.t.CopyFrom(numpy_helper.from_array(value.numpy()))
        attr.t.data_type = value.elem_type
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
